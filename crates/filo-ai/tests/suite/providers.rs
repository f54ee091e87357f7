//! Providers are data: a custom provider from models.json and a keyless local server, end to end
//! against the mock.

use filo_ai::{Client, Env, ModelClient, ProviderRegistry, StopReason, StreamOptions};
use filo_testkit::{MockProvider, Protocol, Turn};
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::common::{check, user};

#[tokio::test]
async fn custom_provider_from_models_json() {
    let mock = MockProvider::start(vec![Turn::text("proxied")]).await;
    let mut registry = ProviderRegistry::builtin().unwrap();
    let json = format!(
        r#"{{"providers": {{"corp-proxy": {{
            "baseUrl": "{}", "api": "anthropic-messages", "apiKey": "CORP_KEY",
            "authHeader": true, "headers": {{"X-Tenant": "TENANT"}},
            "models": [{{"id": "claude-corp", "reasoning": false, "input": ["text"],
                         "cost": {{"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0}}}}]
        }}}}}}"#,
        mock.base_url(Protocol::AnthropicMessages)
    );
    registry.apply_models_json(&json).unwrap();
    let env = Env::from_vars([("CORP_KEY", "sk-corp"), ("TENANT", "acme")]);
    let client = Client::new(registry, env).unwrap();
    let model = client
        .registry()
        .model("corp-proxy", "claude-corp")
        .unwrap();
    let events: Vec<_> = client
        .stream(
            &model,
            &user("hi"),
            &StreamOptions::default(),
            CancellationToken::new(),
        )
        .collect()
        .await;
    let msg = check(&events);
    assert_eq!(msg.stop_reason, StopReason::Stop, "{:?}", msg.error_message);
    assert_eq!(msg.text(), "proxied");
    assert_eq!(msg.provider, "corp-proxy");
    let req = mock.requests().remove(0);
    assert_eq!(req.path, "/v1/messages");
    assert_eq!(req.header("x-api-key"), Some("sk-corp"));
    assert_eq!(req.header("authorization"), Some("Bearer sk-corp"));
    assert_eq!(req.header("x-tenant"), Some("acme"));
    assert_eq!(req.body["model"], "claude-corp");
}

#[tokio::test]
async fn keyless_local_server_takes_any_model() {
    let mock = MockProvider::start(vec![Turn::text("local answer")]).await;
    let mut registry = ProviderRegistry::builtin().unwrap();
    let json = format!(
        r#"{{"providers": {{"ollama": {{"baseUrl": "{}"}}}}}}"#,
        mock.base_url(Protocol::OpenAiCompletions)
    );
    registry.apply_models_json(&json).unwrap();
    let client = Client::new(
        registry,
        Env::from_vars([("OPENAI_API_KEY", "sk-never-sent")]),
    )
    .unwrap();
    let model = client.registry().model("ollama", "qwen3:8b").unwrap();
    let events: Vec<_> = client
        .stream(
            &model,
            &user("hi"),
            &StreamOptions::default(),
            CancellationToken::new(),
        )
        .collect()
        .await;
    assert_eq!(check(&events).text(), "local answer");
    let req = mock.requests().remove(0);
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(req.header("authorization"), None);
    assert_eq!(req.body["model"], "qwen3:8b");
    assert_eq!(req.body["max_tokens"], 16384);
    assert!(req.body.get("store").is_none());
}
