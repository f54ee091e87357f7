//! The seam between the agent and the provider layer: a model client turns a context into a stream
//! of [`AssistantEvent`](crate::AssistantEvent)s. The real client dispatches on `model.api` to one
//! of the wire codecs; tests may substitute their own.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::event::AssistantStream;
use crate::message::Context;
use crate::model::{Model, ThinkingLevel};

/// Per-call options (pi spec §1.6). Build with `..Default::default()`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamOptions {
    pub temperature: Option<f64>,
    /// Defaults to `min(model.max_tokens, 32000)` when unset.
    pub max_tokens: Option<u64>,
    /// Overrides the key resolved from the environment / auth storage.
    pub api_key: Option<String>,
    /// `Off` sends no reasoning option.
    pub reasoning: ThinkingLevel,
    /// Token budgets per level, overriding the defaults (minimal, low, medium, high).
    pub thinking_budgets: Option<BTreeMap<ThinkingLevel, u64>>,
    pub session_id: Option<String>,
    /// Extra HTTP headers; these win over provider and model headers.
    pub headers: BTreeMap<String, String>,
    /// Upper bound for a server-requested retry delay, in ms (`None` = the default 60,000;
    /// `Some(0)` = no cap).
    pub max_retry_delay_ms: Option<u64>,
    /// Prompt caching: pi's `cacheRetention` (default `short`).
    pub cache_retention: CacheRetention,
    /// End the stream with an error when no bytes arrive for this long (`None` = the client's
    /// default, 120 s).
    pub idle_timeout: Option<Duration>,
    /// Anthropic `metadata.user_id`.
    pub user_id: Option<String>,
}

/// How long providers should keep the prompt cache (pi's `cacheRetention`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CacheRetention {
    /// No cache markers, no cache key.
    None,
    /// The provider's default (Anthropic ephemeral, 5 minutes).
    #[default]
    Short,
    /// Anthropic `ttl: 1h`, OpenAI `prompt_cache_retention: 24h` on their own endpoints.
    Long,
}

/// Something that can stream a model's answer.
///
/// Contract: the returned stream yields `Start`, block events, then exactly one terminal `Done` or
/// `Error`; it never panics, and cancelling `cancel` ends it with an `aborted` message that keeps
/// the partial content.
pub trait ModelClient: Send + Sync {
    fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
        cancel: CancellationToken,
    ) -> AssistantStream;
}
