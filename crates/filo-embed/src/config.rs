//! The embed configuration (design §4.4): `filo-embed.json` in the state directory, with
//! OpenClaw's key names so an `openclaw.json` section ports as it is.
//!
//! Only what the runner reads is typed; the whole document is kept as [`EmbedConfig::raw`]
//! (unknown keys are kept and ignored). A section whose value has the wrong shape falls back to
//! its default and leaves a warning in [`EmbedConfig::warnings`]: a typo in one section never
//! stops the runner, and never passes silently.

use std::path::Path;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::auth::AuthConfig;
use crate::history::limit::ChannelsConfig;
use crate::tools::policy::ToolPolicyConfig;

/// The file name of the embed config in the state directory.
pub const CONFIG_FILE: &str = "filo-embed.json";
/// Default context window when neither config nor the model says (spec §1.3).
pub const DEFAULT_CONTEXT_TOKENS: u64 = 200_000;
/// Default run timeout (OpenClaw's `agents.defaults.timeoutSeconds` default: 600 s).
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 600;
/// Floor of `compaction.reserveTokens` for embedded runs.
pub const DEFAULT_RESERVE_TOKENS_FLOOR: u64 = 20_000;
/// Default idle timeout of a model stream.
pub const DEFAULT_IDLE_TIMEOUT_SECONDS: u64 = 60;
/// Default global concurrency of the main lane.
pub const DEFAULT_MAX_CONCURRENT: usize = 4;

/// `agents.defaults.model`: a `provider/model` string or `{primary, fallbacks}`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelChoice {
    pub primary: Option<String>,
    pub fallbacks: Vec<String>,
}

impl<'de> Deserialize<'de> for ModelChoice {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Full {
            primary: Option<String>,
            #[serde(default)]
            fallbacks: Vec<String>,
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Plain(String),
            Full(Full),
        }
        Ok(match Either::deserialize(de)? {
            Either::Plain(s) => ModelChoice {
                primary: Some(s),
                fallbacks: Vec::new(),
            },
            Either::Full(f) => ModelChoice {
                primary: f.primary,
                fallbacks: f.fallbacks,
            },
        })
    }
}

/// `agents.defaults.compaction`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CompactionConfig {
    /// `default` or `safeguard`.
    pub mode: String,
    pub reserve_tokens_floor: u64,
    pub max_history_share: f64,
    /// `provider/model` or a bare model id used for compaction summaries.
    pub model: Option<String>,
    pub timeout_seconds: u64,
}

impl Default for CompactionConfig {
    fn default() -> Self {
        Self {
            mode: "default".into(),
            reserve_tokens_floor: DEFAULT_RESERVE_TOKENS_FLOOR,
            max_history_share: 0.5,
            model: None,
            timeout_seconds: 600,
        }
    }
}

/// `agents.defaults.llm`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LlmConfig {
    /// 0 disables the idle timeout.
    pub idle_timeout_seconds: u64,
}

impl Default for LlmConfig {
    fn default() -> Self {
        Self {
            idle_timeout_seconds: DEFAULT_IDLE_TIMEOUT_SECONDS,
        }
    }
}

/// `agents.defaults`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AgentDefaults {
    pub model: ModelChoice,
    pub context_tokens: Option<u64>,
    pub timeout_seconds: Option<u64>,
    pub thinking_default: Option<String>,
    pub compaction: CompactionConfig,
    /// The raw `contextPruning` block (parsed by the pruning extension).
    pub context_pruning: Value,
    pub llm: LlmConfig,
    pub max_concurrent: Option<usize>,
    pub workspace: Option<String>,
}

/// One entry of `agents.list`.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentEntry {
    pub id: String,
    pub workspace: Option<String>,
    pub model: Option<ModelChoice>,
    pub tools: Option<ToolPolicyConfig>,
    pub system_prompt: Option<String>,
}

/// `memory`: filo's Playfilo memory for embedded sessions (on by default).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MemoryConfig {
    pub enabled: bool,
    /// The DAG database; default `<home>/.playfilo/playfilo.db`.
    pub db: Option<String>,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            db: None,
        }
    }
}

/// The typed part of `filo-embed.json`.
#[derive(Debug, Clone, Default)]
pub struct EmbedConfig {
    pub defaults: AgentDefaults,
    pub agents: Vec<AgentEntry>,
    pub auth: AuthConfig,
    pub tools: ToolPolicyConfig,
    pub channels: ChannelsConfig,
    pub memory: MemoryConfig,
    /// The whole document as read.
    pub raw: Value,
    /// Sections that had the wrong shape and fell back to their default.
    pub warnings: Vec<String>,
}

/// Why the config file could not be used at all.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is not valid JSON: {source}")]
    Json {
        path: String,
        source: serde_json::Error,
    },
    #[error("{path} must hold a JSON object")]
    NotObject { path: String },
}

impl EmbedConfig {
    /// Reads `path`; a missing file is the default config, an unreadable or non-JSON file an
    /// error (never silently ignored).
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let shown = path.display().to_string();
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(source) => {
                return Err(ConfigError::Read {
                    path: shown,
                    source,
                });
            }
        };
        let value: Value = serde_json::from_str(&text).map_err(|source| ConfigError::Json {
            path: shown.clone(),
            source,
        })?;
        if !value.is_object() {
            return Err(ConfigError::NotObject { path: shown });
        }
        // A value of the wrong type falls back to its default; the warning names the file and
        // the key, and the file is never rewritten.
        let mut config = Self::from_value(value);
        for w in &mut config.warnings {
            *w = format!("{shown}: {w}");
        }
        Ok(config)
    }

    /// The typed view of a config document.
    pub fn from_value(raw: Value) -> Self {
        let mut warnings = Vec::new();
        let defaults_v = raw
            .pointer("/agents/defaults")
            .cloned()
            .unwrap_or(Value::Null);
        let agents: Vec<AgentEntry> = section(&raw, "/agents/list", &mut warnings);
        let auth: AuthConfig = section(&raw, "/auth", &mut warnings);
        let tools: ToolPolicyConfig = section(&raw, "/tools", &mut warnings);
        let channels: ChannelsConfig = section(&raw, "/channels", &mut warnings);
        let memory: MemoryConfig = section(&raw, "/memory", &mut warnings);
        let defaults = AgentDefaults {
            model: section_of(&defaults_v, "model", "agents.defaults.model", &mut warnings),
            context_tokens: section_of(
                &defaults_v,
                "contextTokens",
                "agents.defaults.contextTokens",
                &mut warnings,
            ),
            timeout_seconds: section_of(
                &defaults_v,
                "timeoutSeconds",
                "agents.defaults.timeoutSeconds",
                &mut warnings,
            ),
            thinking_default: section_of(
                &defaults_v,
                "thinkingDefault",
                "agents.defaults.thinkingDefault",
                &mut warnings,
            ),
            compaction: section_of(
                &defaults_v,
                "compaction",
                "agents.defaults.compaction",
                &mut warnings,
            ),
            context_pruning: defaults_v
                .get("contextPruning")
                .cloned()
                .unwrap_or(Value::Null),
            llm: section_of(&defaults_v, "llm", "agents.defaults.llm", &mut warnings),
            max_concurrent: section_of(
                &defaults_v,
                "maxConcurrent",
                "agents.defaults.maxConcurrent",
                &mut warnings,
            ),
            workspace: section_of(
                &defaults_v,
                "workspace",
                "agents.defaults.workspace",
                &mut warnings,
            ),
        };
        Self {
            defaults,
            agents,
            auth,
            tools,
            channels,
            memory,
            raw,
            warnings,
        }
    }

    /// The `agents.list` entry of `agent_id`, if any.
    pub fn agent(&self, agent_id: &str) -> Option<&AgentEntry> {
        self.agents.iter().find(|a| a.id == agent_id)
    }

    /// The run timeout.
    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(
            self.defaults
                .timeout_seconds
                .unwrap_or(DEFAULT_TIMEOUT_SECONDS),
        )
    }

    /// A raw value by JSON pointer (`/gateway/port`).
    pub fn pointer(&self, pointer: &str) -> Option<&Value> {
        self.raw.pointer(pointer)
    }
}

fn section<T: DeserializeOwned + Default>(
    raw: &Value,
    pointer: &str,
    warnings: &mut Vec<String>,
) -> T {
    let name = pointer.trim_start_matches('/').replace('/', ".");
    parse_or_default(raw.pointer(pointer), &name, warnings)
}

fn section_of<T: DeserializeOwned + Default>(
    parent: &Value,
    key: &str,
    name: &str,
    warnings: &mut Vec<String>,
) -> T {
    parse_or_default(parent.get(key), name, warnings)
}

fn parse_or_default<T: DeserializeOwned + Default>(
    value: Option<&Value>,
    name: &str,
    warnings: &mut Vec<String>,
) -> T {
    match value {
        None | Some(Value::Null) => T::default(),
        Some(v) => T::deserialize(v).unwrap_or_else(|e| {
            warnings.push(format!("{name}: {e}; using the default"));
            T::default()
        }),
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
