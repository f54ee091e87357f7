//! Vertex without an API key: Application Default Credentials from the file the environment
//! names, a refresh-token exchange at the file's `token_uri` (the mock's token endpoint), the
//! access token sent as a bearer and reused while it is fresh; broken credentials fail clearly
//! before any model request.

use filo_ai::{Client, Env, ModelClient, ProviderRegistry, StopReason, StreamOptions};
use filo_testkit::{MockProvider, Protocol, TempHome, Turn};
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::common::{check, pi_catalog_model, user};

fn adc(home: &TempHome, mock: &MockProvider, refresh_token: &str) -> std::path::PathBuf {
    let path = home.path().join("adc.json");
    let json = serde_json::json!({
        "type": "authorized_user", "client_id": "cid.apps.googleusercontent.com",
        "client_secret": "d-secret", "refresh_token": refresh_token,
        "token_uri": format!("{}/token", mock.url()),
    });
    std::fs::write(&path, json.to_string()).unwrap();
    path
}

async fn ask(client: &Client, mock: &MockProvider) -> filo_ai::AssistantMessage {
    let mut model = pi_catalog_model(Protocol::GoogleVertex).unwrap();
    model.base_url = mock.base_url(Protocol::GoogleVertex);
    let events: Vec<_> = client
        .stream(
            &model,
            &user("hi"),
            &StreamOptions::default(),
            CancellationToken::new(),
        )
        .collect()
        .await;
    check(&events)
}

#[tokio::test]
async fn vertex_adc_exchanges_a_refresh_token_once_and_sends_the_bearer() {
    let mock = MockProvider::start(vec![Turn::text("first"), Turn::text("second")]).await;
    let home = TempHome::new().unwrap();
    let file = adc(&home, &mock, "1//refresh-token");
    let env = Env::from_vars([
        ("GOOGLE_APPLICATION_CREDENTIALS", file.to_str().unwrap()),
        ("GOOGLE_CLOUD_PROJECT", "proj"),
        ("GOOGLE_CLOUD_LOCATION", "us-central1"),
    ]);
    let client = Client::new(ProviderRegistry::builtin().unwrap(), env).unwrap();
    for want in ["first", "second"] {
        let msg = ask(&client, &mock).await;
        assert_eq!(msg.stop_reason, StopReason::Stop, "{:?}", msg.error_message);
        assert_eq!(msg.text(), want);
    }
    let tokens = mock.token_requests();
    assert_eq!(tokens.len(), 1, "the access token is reused while fresh");
    assert_eq!(
        tokens[0].content_type.as_deref(),
        Some("application/x-www-form-urlencoded")
    );
    assert_eq!(tokens[0].field("grant_type"), Some("refresh_token"));
    assert_eq!(tokens[0].field("refresh_token"), Some("1//refresh-token"));
    assert_eq!(tokens[0].field("client_secret"), Some("d-secret"));
    for request in mock.requests() {
        assert_eq!(request.header("authorization"), Some("Bearer ya29.mock-1"));
        assert_eq!(request.header("x-goog-api-key"), None);
        assert_eq!(
            request.path,
            "/v1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
    }
}

#[tokio::test]
async fn vertex_adc_failures_are_clear_and_send_nothing() {
    let mock = MockProvider::start(vec![Turn::text("never")]).await;
    let home = TempHome::new().unwrap();
    let file = adc(&home, &mock, "revoked");
    let base = [
        ("GOOGLE_CLOUD_PROJECT", "proj"),
        ("GOOGLE_CLOUD_LOCATION", "us-central1"),
    ];
    let env = Env::from_vars(
        base.into_iter()
            .chain([("GOOGLE_APPLICATION_CREDENTIALS", file.to_str().unwrap())]),
    );
    let client = Client::new(ProviderRegistry::builtin().unwrap(), env).unwrap();
    let msg = ask(&client, &mock).await;
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert_eq!(msg.error_status, Some(400));
    let text = msg.error_message.unwrap();
    assert!(
        text.contains("Google token endpoint") && text.contains("invalid_grant"),
        "{text}"
    );
    // A service-account file is refused by name, before any request.
    std::fs::write(
        &file,
        r#"{"type": "service_account", "client_email": "x@y"}"#,
    )
    .unwrap();
    let msg = ask(&client, &mock).await;
    let text = msg.error_message.unwrap();
    assert!(text.contains("type `service_account`"), "{text}");
    // No credentials file and no key: no key for the provider (pi's text).
    let env = Env::from_vars(
        base.into_iter()
            .chain([("HOME", home.path().to_str().unwrap())]),
    );
    let client = Client::new(ProviderRegistry::builtin().unwrap(), env).unwrap();
    let msg = ask(&client, &mock).await;
    assert_eq!(
        msg.error_message.as_deref(),
        Some("No API key for provider: google-vertex")
    );
    assert!(mock.requests().is_empty(), "no model request was sent");
    assert_eq!(mock.remaining(), 1);
}
