//! Shared harness: a temp state dir, the mock provider as provider `openai` (and `mock2`), a
//! manual clock, and a recording sink.

mod history;
mod lanes;
mod memory;
mod rotation;
mod streaming;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use filo_ai::{Env, ProviderRegistry};
use filo_embed::clock::ManualClock;
use filo_embed::{
    BlockReply, EmbedConfig, EmbedDeps, EmbedPaths, Embedder, PartialReply, ReplySink, RunParams,
};
use filo_testkit::{MockProvider, Protocol, Turn};
use futures::future::BoxFuture;
use serde_json::{Value, json};

pub const NOW: i64 = 1_800_000_000_000;

pub struct Harness {
    pub mock: MockProvider,
    pub dir: tempfile::TempDir,
    pub clock: Arc<ManualClock>,
    pub embedder: Embedder,
}

impl Harness {
    pub async fn new(turns: Vec<Turn>, config: Value) -> Harness {
        Self::with_env(turns, config, &[("OPENAI_API_KEY", "sk-env")]).await
    }

    pub async fn with_env(turns: Vec<Turn>, config: Value, env: &[(&str, &str)]) -> Harness {
        let mock = MockProvider::start(turns).await;
        let dir = tempfile::tempdir().unwrap();
        let mut registry = ProviderRegistry::empty();
        let base = mock.base_url(Protocol::OpenAiCompletions);
        let anthropic = mock.base_url(Protocol::AnthropicMessages);
        let models = json!({"providers": {
            "openai": {"baseUrl": base, "api": "openai-completions", "apiKey": "OPENAI_API_KEY",
                "models": [{"id": "mock-model", "reasoning": true, "contextWindow": 100000, "maxTokens": 1000}]},
            "mock2": {"baseUrl": base, "api": "openai-completions", "apiKey": "MOCK2_KEY",
                "models": [{"id": "other-model", "contextWindow": 100000, "maxTokens": 1000}]},
            "anthropic": {"baseUrl": anthropic, "api": "anthropic-messages", "apiKey": "ANTHROPIC_API_KEY",
                "models": [{"id": "claude-mock", "contextWindow": 20000, "maxTokens": 1000}]}
        }});
        registry.apply_models_json(&models.to_string()).unwrap();
        let clock = Arc::new(ManualClock::new(NOW));
        let paths = EmbedPaths::new(
            Some(dir.path().join("state")),
            dir.path().join("home"),
            dir.path().join("tmp"),
        );
        std::fs::create_dir_all(&paths.temp).unwrap();
        let mut config = config;
        if config.pointer("/agents/defaults/model").is_none() {
            config["agents"]["defaults"]["model"] = json!({"primary": "openai/mock-model"});
        }
        let embedder = Embedder::new(EmbedDeps {
            config: EmbedConfig::from_value(config),
            paths,
            registry,
            env: Env::from_vars(env.iter().copied()),
            client: None,
            clock: clock.clone(),
            api_key: None,
        })
        .unwrap();
        Harness {
            mock,
            dir,
            clock,
            embedder,
        }
    }

    pub fn workspace(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    pub fn params(&self, session: &str, prompt: &str) -> RunParams {
        RunParams::new(session, self.workspace(), prompt)
    }

    pub fn agent_dir(&self) -> PathBuf {
        self.embedder.paths().agent_dir("main")
    }

    pub fn session_file(&self, session: &str) -> PathBuf {
        self.embedder
            .paths()
            .session_file("main", session, None)
            .unwrap()
    }

    pub fn write_auth_profiles(&self, value: Value) {
        std::fs::create_dir_all(self.agent_dir()).unwrap();
        std::fs::write(
            self.agent_dir().join("auth-profiles.json"),
            serde_json::to_string_pretty(&value).unwrap(),
        )
        .unwrap();
    }

    pub fn auth_profiles(&self) -> Value {
        let text = std::fs::read_to_string(self.agent_dir().join("auth-profiles.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }
}

/// An HTTP error answer from the mock (no `retry-after`).
pub fn http(status: u16, body: Option<&str>) -> Turn {
    filo_testkit::Fault::Http {
        status,
        retry_after: None,
        body: body.map(str::to_owned),
    }
    .into()
}

/// The text of every user/assistant message in a request body (`messages[].content`).
pub fn request_texts(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .map(|ms| {
            ms.iter()
                .map(|m| {
                    let role = m["role"].as_str().unwrap_or("").to_owned();
                    let content = match &m["content"] {
                        Value::String(s) => s.clone(),
                        Value::Array(parts) => parts
                            .iter()
                            .filter_map(|p| p["text"].as_str())
                            .collect::<Vec<_>>()
                            .join(""),
                        _ => String::new(),
                    };
                    (role, content)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// What a recording sink saw, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Seen {
    Partial(String),
    Block(BlockReply),
    Flush,
    Tool(String),
}

#[derive(Default)]
pub struct Recorder {
    pub seen: Mutex<Vec<Seen>>,
    pub block_delay: Option<std::time::Duration>,
}

impl Recorder {
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
    pub fn blocks(&self) -> Vec<BlockReply> {
        self.seen()
            .into_iter()
            .filter_map(|s| match s {
                Seen::Block(b) => Some(b),
                _ => None,
            })
            .collect()
    }
    pub fn partials(&self) -> Vec<String> {
        self.seen()
            .into_iter()
            .filter_map(|s| match s {
                Seen::Partial(p) => Some(p),
                _ => None,
            })
            .collect()
    }
}

impl ReplySink for Recorder {
    fn partial_reply(&self, p: &PartialReply) {
        self.seen
            .lock()
            .unwrap()
            .push(Seen::Partial(p.text.clone()));
    }
    fn block_reply(&self, b: BlockReply) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Some(d) = self.block_delay {
                tokio::time::sleep(d).await;
            }
            self.seen.lock().unwrap().push(Seen::Block(b));
        })
    }
    fn block_reply_flush(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move { self.seen.lock().unwrap().push(Seen::Flush) })
    }
    fn tool_result(&self, p: filo_embed::run::payloads::ReplyPayload) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.seen
                .lock()
                .unwrap()
                .push(Seen::Tool(p.text.unwrap_or_default()))
        })
    }
}
