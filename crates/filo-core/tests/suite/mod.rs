mod persist;
mod playfilo;
mod playfilo_hub;
mod playfilo_lock;
mod session;

use std::sync::Arc;
use std::time::Duration;

use filo_agent::{AgentTool, Concurrency, ToolCallContext, ToolError, ToolOutput};
use filo_ai::{Client, Env, Model, ProviderRegistry, RetryPolicy};
use filo_core::{AgentSession, AgentSessionOptions, Resources, Settings};
use filo_session::SessionManager;
use filo_testkit::MockProvider;
use futures::future::BoxFuture;
use serde_json::{Value, json};

/// A tool that echoes its `text` argument.
pub struct Echo;

impl AgentTool for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn label(&self) -> &str {
        "Echo"
    }
    fn description(&self) -> &str {
        "Echo the text back"
    }
    fn parameters(&self) -> Value {
        json!({"type":"object","properties":{"text":{"type":"string"}},"required":["text"]})
    }
    fn concurrency(&self) -> Concurrency {
        Concurrency::Shared
    }
    fn execute(&self, ctx: ToolCallContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let t = ctx.args["text"].as_str().unwrap_or_default().to_string();
            Ok(ToolOutput::text(format!("echo: {t}")))
        })
    }
}

pub fn mock_model(mock: &MockProvider, context_window: u64) -> Model {
    serde_json::from_value(json!({
        "id": "mock-model", "name": "Mock", "api": "openai-completions", "provider": "mock",
        "baseUrl": format!("{}/v1", mock.url()), "reasoning": false, "input": ["text"],
        "cost": {"input": 1.0, "output": 2.0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": context_window, "maxTokens": 1000
    }))
    .unwrap()
}

pub struct Fixture {
    pub session: AgentSession,
    pub _dir: tempfile::TempDir,
}

/// A real client with no transport-level retries (the session's own retry is under test).
pub fn fast_client() -> Client {
    Client::new(ProviderRegistry::empty(), Env::default())
        .unwrap()
        .with_retry(RetryPolicy {
            max_retries: 0,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(1),
        })
}

/// A session in a temp dir against the mock, with fast retries.
pub fn session_with(mock: &MockProvider, context_window: u64, settings: Value) -> Fixture {
    session_with_extensions(mock, context_window, settings, Vec::new())
}

pub fn session_with_extensions(
    mock: &MockProvider,
    context_window: u64,
    settings: Value,
    extensions: Vec<Arc<dyn filo_core::Extension>>,
) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let client = fast_client();
    let model = mock_model(mock, context_window);
    let session = AgentSession::create(AgentSessionOptions {
        cwd: dir.path().to_path_buf(),
        client: Arc::new(client),
        models: vec![model.clone()].into(),
        model: Some(model),
        thinking_level: None,
        tools: vec![Arc::new(Echo)],
        session: SessionManager::create(dir.path().to_str().unwrap(), &dir.path().join("sessions")),
        settings: Settings::in_memory(settings),
        api_key: Arc::new(|_| Some("test-key".to_string())),
        resources: Resources::default(),
        extensions,
        date: "2026-11-30".into(),
    })
    .unwrap();
    Fixture { session, _dir: dir }
}
