//! OAuth credentials that keep working: an expired credential in auth.json is refreshed at a
//! local token endpoint under pi's lock before the model is called, written back without
//! losing anything else in the file, refreshed once when two processes start together, and a
//! refresh that fails is named and changes nothing.

use std::time::Duration;

use filo_testkit::{MockProvider, Protocol, TokenConfig, TokenEndpoint, Turn};
use serde_json::{Value, json};

use super::common::Home;

const PRINT: [&str; 7] = [
    "--provider",
    "anthropic",
    "--model",
    "claude-haiku-4-5",
    "--no-dag",
    "-p",
    "hi",
];

/// A home whose `anthropic` provider is the mock (Anthropic Messages) and whose auth.json holds
/// an expired OAuth credential next to another provider's key and an entry filo does not know.
fn home_with_expired_credential(mock: &MockProvider) -> (Home, Value) {
    let home = Home::new(mock);
    let agent = home.path().join(".filo/agent");
    let models = json!({"providers": {
        "anthropic": {"baseUrl": mock.base_url(Protocol::AnthropicMessages)},
    }});
    std::fs::write(agent.join("models.json"), models.to_string()).unwrap();
    let auth = json!({
        "openai": {"type": "api_key", "key": "sk-openai"},
        "anthropic": {"type": "oauth", "access": "sk-ant-oat01-expired", "refresh": "r-0",
                      "expires": 1_000, "note": "kept"},
        "someone-else": {"type": "custom", "data": [1, 2]}
    });
    std::fs::write(
        agent.join("auth.json"),
        serde_json::to_string_pretty(&auth).unwrap(),
    )
    .unwrap();
    (home, auth)
}

fn auth_json(home: &Home) -> Value {
    let text = std::fs::read_to_string(home.path().join(".filo/agent/auth.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn lock_dir(home: &Home) -> std::path::PathBuf {
    home.path().join(".filo/agent/auth.json.lock")
}

fn token_env(t: &TokenEndpoint) -> [(&'static str, String); 1] {
    [("FILO_OAUTH_ANTHROPIC_TOKEN_URL", t.token_url())]
}

async fn run(home: &Home, env: &[(&'static str, String)]) -> (i32, String, String) {
    let vars: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    home.filo_with_env(&PRINT, &vars).await
}

fn assert_refreshed_file(home: &Home, before: &Value, access: &str) {
    let after = auth_json(home);
    assert_eq!(after["anthropic"]["access"], access);
    assert_eq!(after["anthropic"]["refresh"], "refresh-1");
    assert_eq!(after["anthropic"]["note"], "kept");
    assert_eq!(after["openai"], before["openai"]);
    assert_eq!(after["someone-else"], before["someone-else"]);
    assert!(!lock_dir(home).exists(), "the lock is released");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_credential_is_refreshed_and_the_request_carries_the_new_token() {
    let mock = MockProvider::start(vec![Turn::text("fresh answer")]).await;
    let tokens = TokenEndpoint::start(TokenConfig::new("r-0", "sk-ant-oat01-fresh-")).await;
    let (home, before) = home_with_expired_credential(&mock);
    let (code, out, err) = run(&home, &token_env(&tokens)).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "fresh answer");
    let calls = tokens.calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].fields["refresh_token"], "r-0");
    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer sk-ant-oat01-fresh-1")
    );
    assert_refreshed_file(&home, &before, "sk-ant-oat01-fresh-1");

    // The next run finds the refreshed token unexpired and asks the endpoint nothing.
    mock.push(Turn::text("again"));
    let (code, out, err) = run(&home, &token_env(&tokens)).await;
    assert_eq!((code, out.trim()), (0, "again"), "{err}");
    assert_eq!(tokens.calls().len(), 1);
    let last = mock.last_request().unwrap();
    assert_eq!(
        last.header("authorization"),
        Some("Bearer sk-ant-oat01-fresh-1")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_starting_together_refresh_once() {
    let mock = MockProvider::start(vec![Turn::text("one"), Turn::text("two")]).await;
    // The endpoint answers slowly, so the second process reaches the lock while the first holds
    // it; the refresh token rotates, so a second refresh with the old one would be refused.
    let config =
        TokenConfig::new("r-0", "sk-ant-oat01-fresh-").with_delay(Duration::from_millis(800));
    let tokens = TokenEndpoint::start(config).await;
    let (home, before) = home_with_expired_credential(&mock);
    let env = token_env(&tokens);
    let (a, b) = tokio::join!(run(&home, &env), run(&home, &env));
    assert_eq!(a.0, 0, "{}", a.2);
    assert_eq!(b.0, 0, "{}", b.2);
    let mut answers = [a.1.trim().to_string(), b.1.trim().to_string()];
    answers.sort();
    assert_eq!(answers, ["one", "two"]);
    assert_eq!(tokens.calls().len(), 1, "{:?}", tokens.calls());
    let auths: Vec<_> = mock
        .requests()
        .iter()
        .map(|r| r.header("authorization").map(str::to_string))
        .collect();
    let fresh = Some("Bearer sk-ant-oat01-fresh-1".to_string());
    assert_eq!(auths, vec![fresh.clone(), fresh]);
    assert_refreshed_file(&home, &before, "sk-ant-oat01-fresh-1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_refresh_is_named_and_auth_json_is_left_as_it_was() {
    let mock = MockProvider::start(vec![Turn::text("never sent")]).await;
    let body = r#"{"error":"invalid_grant","error_description":"Refresh token revoked"}"#;
    let tokens = TokenEndpoint::start(TokenConfig::new("r-0", "x-").failing(400, body)).await;
    let (home, _) = home_with_expired_credential(&mock);
    let path = home.path().join(".filo/agent/auth.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
    let (code, out, err) = run(&home, &token_env(&tokens)).await;
    assert_ne!(code, 0);
    assert_eq!(out, "");
    let expected = format!(
        "Warning: Failed to refresh OAuth token for anthropic: the token endpoint {} answered 400: {body}",
        tokens.token_url()
    );
    assert!(err.lines().any(|l| l == expected), "{err}");
    assert!(err.contains("No API key found for anthropic"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    assert_eq!(
        std::fs::metadata(&path).unwrap().modified().unwrap(),
        modified
    );
    assert!(!lock_dir(&home).exists());
    assert!(mock.requests().is_empty(), "no model call without a key");
}
