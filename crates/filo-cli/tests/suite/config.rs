//! Configuration files as a user meets them: `models.json` and `settings.json` problems are
//! named on stderr, valid parts keep working, and nothing the user wrote is lost.

use filo_testkit::{MockProvider, Reply, Turn};
use serde_json::json;

use super::common::Home;

/// models.json with the working `mock` provider plus one that lacks `apiKey`.
fn write_models_with_a_broken_provider(home: &Home, mock: &MockProvider) {
    let models = json!({"providers": {
        "mock": {
            "baseUrl": format!("{}/v1", mock.url()),
            "api": "openai-completions",
            "apiKey": "MOCK_API_KEY",
            "models": [{"id": "mock-model"}]
        },
        "nokey": {
            "baseUrl": "http://127.0.0.1:9/v1",
            "api": "openai-completions",
            "models": [{"id": "nokey-model"}]
        }
    }});
    std::fs::write(
        home.path().join(".filo/agent/models.json"),
        models.to_string(),
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_without_api_key_is_named_and_the_others_still_work() {
    let mock = MockProvider::start(vec![
        Turn::Reply(Reply::text("still here")),
        Turn::Reply(Reply::text("json too")),
    ])
    .await;
    let home = Home::new(&mock);
    write_models_with_a_broken_provider(&home, &mock);
    let file = home.path().join(".filo/agent/models.json");
    let expected = format!(
        "{}: Invalid models.json schema: Provider nokey: \"apiKey\" is required when defining custom models.",
        file.display()
    );

    let (code, out, err) = home
        .filo(&["--provider", "mock", "--model", "mock-model", "-p", "hi"])
        .await;
    assert_eq!(code, 0, "stderr: {err}");
    assert_eq!(out.trim(), "still here");
    assert!(err.contains(&expected), "stderr: {err}");

    let (code, out, err) = home.filo(&["--list-models", "mock"]).await;
    assert_eq!(code, 0, "stderr: {err}");
    assert!(out.contains("mock-model"), "stdout: {out}");
    assert!(err.contains(&expected), "stderr: {err}");

    let (code, _, err) = home
        .filo(&["--provider", "mock", "--model", "mock-model", "--mode", "json", "hi"])
        .await;
    assert_eq!(code, 0, "stderr: {err}");
    assert!(err.contains(&expected), "json mode stderr: {err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_key_command_in_models_json_is_run_and_its_output_sent() {
    let mock = MockProvider::start(vec![Turn::Reply(Reply::text("ok"))]).await;
    let home = Home::new(&mock);
    let models = json!({"providers": {"mock": {
        "baseUrl": format!("{}/v1", mock.url()),
        "api": "openai-completions",
        "authHeader": true,
        "apiKey": "!printf 'sk-%s' from-command",
        "models": [{"id": "mock-model"}]
    }}});
    std::fs::write(
        home.path().join(".filo/agent/models.json"),
        models.to_string(),
    )
    .unwrap();
    let (code, out, err) = home
        .filo(&["--provider", "mock", "--model", "mock-model", "-p", "hi"])
        .await;
    assert_eq!(code, 0, "stderr: {err}");
    assert_eq!(out.trim(), "ok");
    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer sk-from-command")
    );
}
