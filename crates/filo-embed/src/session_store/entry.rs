//! One `sessions.json` entry: what the embedder remembers about a session key.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Who chose an auth profile override.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OverrideSource {
    /// Picked by rotation; may be replaced by rotation.
    Auto,
    /// Chosen by the user; rotation keeps it.
    User,
}

/// A session store entry (`sessions.json` value), camelCase as OpenClaw writes it. Fields this
/// code does not know are kept in `extra` and written back unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionEntry {
    pub session_id: String,
    /// Last update, ms since the Unix epoch.
    pub updated_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verbose_level: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_level: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_override: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_override: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_profile_override: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_profile_override_source: Option<OverrideSource>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_debounce_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_cap: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_drop: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction_count: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aborted_last_run: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spawned_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spawn_depth: Option<u64>,
    /// Fields this code does not know, written back as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl SessionEntry {
    /// A fresh entry for `session_id` updated at `now_ms`.
    pub fn new(session_id: impl Into<String>, now_ms: i64) -> Self {
        Self {
            session_id: session_id.into(),
            updated_at: now_ms,
            session_file: None,
            chat_type: None,
            thinking_level: None,
            verbose_level: None,
            reasoning_level: None,
            provider_override: None,
            model_override: None,
            auth_profile_override: None,
            auth_profile_override_source: None,
            queue_mode: None,
            queue_debounce_ms: None,
            queue_cap: None,
            queue_drop: None,
            input_tokens: None,
            output_tokens: None,
            total_tokens: None,
            model_provider: None,
            model: None,
            context_tokens: None,
            compaction_count: None,
            aborted_last_run: None,
            label: None,
            spawned_by: None,
            spawn_depth: None,
            extra: Map::new(),
        }
    }
}
