//! Bedrock through the public client, beyond the grid: bearer tokens, credentials from AWS
//! profile files, unsupported credential sources, exceptions before and after content, and a
//! corrupt event-stream message.

use std::sync::Arc;

use filo_ai::{
    Client, ContentBlock, Env, FixtureResponse, FixtureTransport, ProviderRegistry, StopReason,
    StreamOptions, complete,
};
use filo_testkit::{Fault, MockProvider, Protocol, Reply, Turn};
use tokio_util::sync::CancellationToken;

use super::common::{AWS_KEY_ID, AWS_SECRET, pi_catalog_model, user};

const P: Protocol = Protocol::BedrockConverseStream;

/// One call of the catalog's Claude Sonnet 4 (US), at `base_url` when given.
async fn run(env: Env, base_url: Option<String>) -> filo_ai::AssistantMessage {
    let mut model = pi_catalog_model(P).unwrap();
    if let Some(url) = base_url {
        model.base_url = url;
    }
    let client = Client::new(ProviderRegistry::builtin().unwrap(), env).unwrap();
    complete(
        &client,
        &model,
        &user("hi"),
        &StreamOptions::default(),
        CancellationToken::new(),
    )
    .await
}

#[tokio::test]
async fn a_bearer_token_replaces_sigv4() {
    let mock = MockProvider::start(vec![Turn::text("hello")]).await;
    let env = Env::from_vars([("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-1")]);
    let msg = run(env, Some(mock.url())).await;
    assert_eq!(msg.text(), "hello", "{:?}", msg.error_message);
    let req = mock.requests().remove(0);
    assert_eq!(
        req.header("authorization"),
        Some("Bearer bedrock-api-key-1")
    );
    assert_eq!(req.header("x-amz-date"), None);
    assert_eq!(req.header("x-amz-content-sha256"), None);
}

#[tokio::test]
async fn profile_credentials_and_region_from_the_aws_files() {
    let home = tempfile::tempdir().unwrap();
    let aws = home.path().join(".aws");
    std::fs::create_dir_all(&aws).unwrap();
    std::fs::write(
        aws.join("credentials"),
        format!("[work]\naws_access_key_id = {AWS_KEY_ID}\naws_secret_access_key = {AWS_SECRET}\naws_session_token = tok-work\n"),
    )
    .unwrap();
    std::fs::write(
        aws.join("config"),
        "[profile work]\nregion = eu-central-1\n",
    )
    .unwrap();
    let mock = MockProvider::start(vec![Turn::text("from the profile")]).await;
    let env = Env::from_vars([
        ("HOME", home.path().display().to_string()),
        ("AWS_PROFILE", "work".to_string()),
        ("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", mock.url()),
    ]);
    // The catalog's standard us-east-1 URL: with a profile, the SDK's endpoint applies.
    let msg = run(env, None).await;
    assert_eq!(msg.text(), "from the profile", "{:?}", msg.error_message);
    let req = mock.requests().remove(0);
    assert_eq!(req.header("x-amz-security-token"), Some("tok-work"));
    let auth = req.header("authorization").unwrap();
    assert!(
        auth.contains(&format!("Credential={AWS_KEY_ID}/"))
            && auth.contains("/eu-central-1/bedrock/aws4_request"),
        "{auth}"
    );
}

#[tokio::test]
async fn unsupported_credentials_fail_before_any_request() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".aws")).unwrap();
    std::fs::write(
        home.path().join(".aws/config"),
        "[profile corp]\nsso_session = corp\nsso_account_id = 1\nregion = us-east-2\n",
    )
    .unwrap();
    let mock = MockProvider::start(vec![Turn::text("never")]).await;
    let env = Env::from_vars([
        ("HOME", home.path().display().to_string()),
        ("AWS_PROFILE", "corp".to_string()),
    ]);
    let msg = run(env, Some(mock.url())).await;
    assert_eq!(msg.stop_reason, StopReason::Error);
    let text = msg.error_message.unwrap();
    assert!(
        text.contains("IAM Identity Center (SSO) in AWS profile `corp`"),
        "{text}"
    );
    assert!(mock.requests().is_empty());
}

fn keys() -> Env {
    Env::from_vars([
        ("AWS_ACCESS_KEY_ID", AWS_KEY_ID),
        ("AWS_SECRET_ACCESS_KEY", AWS_SECRET),
    ])
}

#[tokio::test]
async fn an_exception_before_any_content_is_retried_by_its_status() {
    // messageStart, then serviceUnavailableException (503): nothing streamed yet, so retried.
    let mock = MockProvider::start(vec![
        Turn::Fault(Fault::ErrorEvent {
            after_events: 1,
            reply: Reply::text("lost"),
            message: "Overloaded".into(),
        }),
        Turn::text("second try"),
    ])
    .await;
    let msg = run(keys(), Some(mock.url())).await;
    assert_eq!(msg.text(), "second try", "{:?}", msg.error_message);
    assert_eq!(mock.requests().len(), 2);
    // After content: not retried; pi's wording, the exception's status class kept.
    let mock = MockProvider::start(vec![Turn::Fault(Fault::ErrorEvent {
        after_events: 3,
        reply: Reply::text("one two three four"),
        message: "Overloaded".into(),
    })])
    .await;
    let msg = run(keys(), Some(mock.url())).await;
    assert_eq!(msg.stop_reason, StopReason::Error);
    assert_eq!(
        msg.error_message.as_deref(),
        Some("Service unavailable: Overloaded")
    );
    assert_eq!(msg.error_status, Some(503));
    assert_eq!(msg.content[0].as_text(), Some("one two "));
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn a_corrupt_message_is_a_clear_error_that_keeps_the_partial_text() {
    let frames = |text: &str| {
        let ctx = filo_testkit::StreamContext::new("m");
        filo_testkit::frames(P, &Reply::text(text), &ctx)
    };
    let good = filo_testkit::encode(P, &frames("alpha beta gamma")[..3]);
    let mut bad = P.encode_frame(&frames("alpha beta gamma")[3]);
    let at = bad.len() - 6;
    bad[at] ^= 0x01;
    let transport = FixtureTransport::new(vec![
        FixtureResponse::sse(vec![good.into(), bad.into()])
            .with_header("content-type", "application/vnd.amazon.eventstream"),
    ]);
    let mut model = pi_catalog_model(P).unwrap();
    model.base_url = "http://127.0.0.1:9".into();
    let client = Client::with_transport(
        ProviderRegistry::builtin().unwrap(),
        keys(),
        Arc::new(transport),
    );
    let msg = complete(
        &client,
        &model,
        &user("hi"),
        &StreamOptions::default(),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(msg.stop_reason, StopReason::Error);
    let text = msg.error_message.unwrap();
    assert!(
        text.starts_with("Malformed stream data: event-stream message has a bad message checksum"),
        "{text}"
    );
    assert!(
        matches!(&msg.content[0], ContentBlock::Text(t) if t.text == "alpha beta "),
        "{:?}",
        msg.content
    );
}
