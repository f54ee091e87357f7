//! The seam between the agent and the provider layer: a model client turns a context into a stream
//! of [`AssistantEvent`](crate::AssistantEvent)s. The real client dispatches on `model.api` to one
//! of the wire codecs; tests may substitute their own.

use std::collections::BTreeMap;
use std::time::Duration;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::codec::{RequestInput, WireApi, build_request, new_decoder, prepare};
use crate::driver::{Call, RetryPolicy, failed, run};
use crate::env::{Env, resolve_config_value};
use crate::error::AiError;
use crate::event::{AssistantEvent, AssistantStream};
use crate::message::{AssistantMessage, Context, StopReason, Usage};
use crate::model::{Model, ThinkingLevel};
use crate::registry::ProviderRegistry;
use crate::transport::{HttpRequest, ReqwestTransport, Transport};

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
    /// `Some(0)` = no cap). A larger request fails at once (settings key
    /// `retry.provider.maxRetryDelayMs`).
    pub max_retry_delay_ms: Option<u64>,
    /// Retries after the first request for failures before anything streamed (`None` = the
    /// client's [`RetryPolicy`], 2 by default; settings key `retry.provider.maxRetries`). See
    /// [`RetryPolicy`] for how many requests a failure costs.
    pub max_retries: Option<u32>,
    /// Prompt caching: pi's `cacheRetention` (default `short`).
    pub cache_retention: CacheRetention,
    /// End the stream with an error when no bytes arrive for this long, before the response
    /// headers or between body chunks (`None` = the client's default, 120 s; settings key
    /// `retry.provider.timeoutMs`).
    pub idle_timeout: Option<Duration>,
    /// Anthropic `metadata.user_id`.
    pub user_id: Option<String>,
    /// OpenAI Responses `service_tier` (`flex`, `priority`, …); flex halves and priority doubles
    /// the computed cost, as pi does.
    pub service_tier: Option<String>,
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

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The real model client: resolves keys and headers from the [`ProviderRegistry`] and an explicit
/// [`Env`], builds the request with the codec of `model.api`, and runs it through the shared
/// driver (retry, idle timeout, SSE, accumulator) over a [`Transport`].
#[derive(Clone)]
pub struct Client {
    registry: Arc<ProviderRegistry>,
    env: Arc<Env>,
    transport: Arc<dyn Transport>,
    retry: RetryPolicy,
    idle_timeout: Duration,
    /// Access tokens from Application Default Credentials (Vertex), shared by this client's calls.
    tokens: Arc<crate::google_vertex::AccessTokens>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("providers", &self.registry.providers().len())
            .field("retry", &self.retry)
            .field("idle_timeout", &self.idle_timeout)
            .finish_non_exhaustive()
    }
}

/// The default idle timeout for silent streams.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(120);

impl Client {
    /// A client over HTTPS (reqwest + rustls).
    pub fn new(registry: ProviderRegistry, env: Env) -> Result<Self, AiError> {
        Ok(Client::with_transport(
            registry,
            env,
            Arc::new(ReqwestTransport::new()?),
        ))
    }

    /// A client over any transport (fixtures, recording proxies).
    pub fn with_transport(
        registry: ProviderRegistry,
        env: Env,
        transport: Arc<dyn Transport>,
    ) -> Self {
        Client {
            registry: Arc::new(registry),
            env: Arc::new(env),
            transport,
            retry: RetryPolicy::default(),
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            tokens: Arc::default(),
        }
    }

    /// Replace the retry policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Replace the default idle timeout (a call's `StreamOptions::idle_timeout` still wins).
    pub fn with_idle_timeout(mut self, idle: Duration) -> Self {
        self.idle_timeout = idle;
        self
    }

    pub fn registry(&self) -> &ProviderRegistry {
        &self.registry
    }

    /// The key a call would use: options, then models.json / the provider's env variables. Like
    /// pi's `streamSimple`, there is no cross-provider fallback (an `OPENAI_API_KEY` is never sent
    /// to another vendor or a local server).
    fn resolve_key(&self, model: &Model, options: &StreamOptions) -> Option<String> {
        if let Some(k) = options.api_key.as_ref().filter(|k| !k.is_empty()) {
            return Some(k.clone());
        }
        self.registry.api_key(&model.provider, &self.env)
    }

    /// Build the HTTP request a call would send, without sending it.
    pub fn build_request(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
    ) -> Result<HttpRequest, AiError> {
        let api = WireApi::parse(&model.api)?;
        let key = self.resolve_key(model, options);
        if key.is_none() && !self.registry.is_keyless(&model.provider) {
            return Err(AiError::NoApiKey {
                provider: model.provider.clone(),
            });
        }
        let mut headers =
            self.registry
                .provider_headers(&model.provider, key.as_deref(), &self.env);
        let mut model = model.clone();
        model.base_url = fill_url_placeholders(&model, &self.env)?;
        for (k, v) in model.headers.take().into_iter().flatten() {
            if let Some(v) = resolve_config_value(&v, &self.env) {
                headers.insert(k, v);
            }
        }
        // pi: `PI_CACHE_RETENTION=long` upgrades the default retention.
        let upgraded;
        let options = if options.cache_retention == CacheRetention::Short
            && self.env.get("PI_CACHE_RETENTION") == Some("long")
        {
            upgraded = StreamOptions {
                cache_retention: CacheRetention::Long,
                ..options.clone()
            };
            &upgraded
        } else {
            options
        };
        let input = RequestInput {
            model: &model,
            context,
            options,
            api_key: key.as_deref(),
            provider_headers: &headers,
            now_ms: now_ms(),
            env: &self.env,
        };
        build_request(api, &input)
    }
}

impl ModelClient for Client {
    fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: &StreamOptions,
        cancel: CancellationToken,
    ) -> AssistantStream {
        let initial = AssistantMessage {
            content: Vec::new(),
            api: model.api.clone(),
            provider: model.provider.clone(),
            model: model.id.clone(),
            usage: Usage::default(),
            stop_reason: StopReason::Stop,
            timestamp: now_ms(),
            error_message: None,
            error_status: None,
            response_id: None,
        };
        let request = match self.build_request(model, context, options) {
            Ok(r) => r,
            Err(e) => return failed(initial, &e),
        };
        let api = match WireApi::parse(&model.api) {
            Ok(api) => api,
            Err(e) => return failed(initial, &e),
        };
        let key = self.resolve_key(model, options);
        let prepare = match prepare(api, model, key.as_deref(), &self.env, &self.tokens) {
            Ok(p) => p,
            Err(e) => return failed(initial, &e),
        };
        let decoder_model = model.clone();
        let decoder_context = Context {
            system_prompt: None,
            messages: Vec::new(),
            tools: context.tools.clone(),
        };
        run(Call {
            api,
            transport: self.transport.clone(),
            request,
            new_decoder: Box::new(move || new_decoder(api, &decoder_model, &decoder_context)),
            initial,
            prices: model.cost,
            retry: RetryPolicy {
                max_retries: options.max_retries.unwrap_or(self.retry.max_retries),
                ..self.retry
            },
            idle_timeout: options.idle_timeout.unwrap_or(self.idle_timeout),
            max_retry_delay: options.max_retry_delay_ms.map(Duration::from_millis),
            cancel,
            prepare,
        })
    }
}

/// pi's `complete`: run a stream to its end and return the final message (errors included as
/// `stopReason` `error`/`aborted`).
pub async fn complete(
    client: &dyn ModelClient,
    model: &Model,
    context: &Context,
    options: &StreamOptions,
    cancel: CancellationToken,
) -> AssistantMessage {
    use futures::StreamExt;
    let mut stream = client.stream(model, context, options, cancel);
    let mut last = None;
    while let Some(event) = stream.next().await {
        if let AssistantEvent::Done { message } | AssistantEvent::Error { message } = event {
            last = Some(message);
        }
    }
    last.unwrap_or_else(|| AssistantMessage {
        content: Vec::new(),
        api: model.api.clone(),
        provider: model.provider.clone(),
        model: model.id.clone(),
        usage: Usage::default(),
        stop_reason: StopReason::Error,
        timestamp: now_ms(),
        error_message: Some(AiError::Unknown.to_string()),
        error_status: None,
        response_id: None,
    })
}

/// A base URL's `{NAME}` placeholders (upper-case variable names, as pi's Cloudflare providers
/// have `{CLOUDFLARE_ACCOUNT_ID}`) filled from the environment; pi's error when one is unset.
/// Lower-case placeholders (Vertex's `{location}`) are the protocol's to fill.
fn fill_url_placeholders(model: &Model, env: &Env) -> Result<String, AiError> {
    let url = &model.base_url;
    let mut out = String::with_capacity(url.len());
    let mut rest = url.as_str();
    while let Some(open) = rest.find('{') {
        let (head, tail) = rest.split_at(open);
        out.push_str(head);
        let name = tail[1..].split('}').next().filter(|n| {
            tail[1..].contains('}')
                && n.starts_with(|c: char| c.is_ascii_uppercase() || c == '_')
                && n.chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        });
        match name {
            Some(name) => {
                let value = env.get(name).ok_or_else(|| {
                    AiError::Provider(format!(
                        "{name} is required for provider {} but is not set.",
                        model.provider
                    ))
                })?;
                out.push_str(value);
                rest = &tail[name.len() + 2..];
            }
            None => {
                out.push('{');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::FixtureTransport;

    #[test]
    fn cloudflare_urls_take_the_account_from_the_environment() {
        let c = client(&[
            ("CLOUDFLARE_API_KEY", "cf-key"),
            ("CLOUDFLARE_ACCOUNT_ID", "acc1"),
        ]);
        let m = c
            .registry()
            .model("cloudflare-workers-ai", "@cf/moonshotai/kimi-k2.6")
            .unwrap();
        let req = c
            .build_request(&m, &ctx(), &StreamOptions::default())
            .unwrap();
        assert_eq!(
            req.url,
            "https://api.cloudflare.com/client/v4/accounts/acc1/ai/v1/chat/completions"
        );
        assert_eq!(req.header("authorization"), Some("Bearer cf-key"));
        let unset = client(&[("CLOUDFLARE_API_KEY", "cf-key")]);
        assert_eq!(
            unset
                .build_request(&m, &ctx(), &StreamOptions::default())
                .unwrap_err()
                .to_string(),
            "CLOUDFLARE_ACCOUNT_ID is required for provider cloudflare-workers-ai but is not set."
        );
        // Vertex's lower-case `{location}` is left to its protocol.
        let mut vertex = m.clone();
        vertex.base_url = "https://{location}-aiplatform.googleapis.com/{".into();
        assert_eq!(
            fill_url_placeholders(&vertex, &Env::default()).unwrap(),
            vertex.base_url
        );
    }

    fn client(vars: &[(&str, &str)]) -> Client {
        Client::with_transport(
            ProviderRegistry::builtin().unwrap(),
            Env::from_vars(vars.iter().copied()),
            Arc::new(FixtureTransport::new(vec![])),
        )
    }

    fn ctx() -> Context {
        serde_json::from_value(serde_json::json!({
            "systemPrompt": "s", "messages": [{"role": "user", "content": "hi", "timestamp": 1}]
        }))
        .unwrap()
    }

    #[test]
    fn keys_headers_and_cache_retention_from_env() {
        let c = client(&[
            ("ANTHROPIC_API_KEY", "env-key"),
            ("PI_CACHE_RETENTION", "long"),
        ]);
        let m = c.registry().model("anthropic", "claude-haiku-4-5").unwrap();
        let req = c
            .build_request(&m, &ctx(), &StreamOptions::default())
            .unwrap();
        assert_eq!(req.header("x-api-key"), Some("env-key"));
        assert_eq!(
            req.body["system"][0]["cache_control"],
            serde_json::json!({"type": "ephemeral", "ttl": "1h"})
        );
        let opts = StreamOptions {
            api_key: Some("explicit".into()),
            cache_retention: CacheRetention::None,
            headers: [("X-Extra".to_string(), "1".to_string())].into(),
            ..StreamOptions::default()
        };
        let req = c.build_request(&m, &ctx(), &opts).unwrap();
        assert_eq!(req.header("x-api-key"), Some("explicit"));
        assert_eq!(req.header("x-extra"), Some("1"));
        assert!(req.body["system"][0].get("cache_control").is_none());
    }

    #[test]
    fn keyless_local_and_no_cross_provider_key() {
        let c = client(&[("OPENAI_API_KEY", "sk-o")]);
        let local = c.registry().model("ollama", "qwen3:8b").unwrap();
        let req = c
            .build_request(&local, &ctx(), &StreamOptions::default())
            .unwrap();
        assert_eq!(req.url, "http://127.0.0.1:11434/v1/chat/completions");
        assert_eq!(req.header("authorization"), None);
        assert_eq!(req.body["max_tokens"], 16384);
        assert_eq!(req.body["messages"][0]["role"], "system");
        // No cross-provider fallback: OPENAI_API_KEY is not sent to Groq.
        let groq = c
            .registry()
            .model("groq", "llama-3.3-70b-versatile")
            .unwrap();
        assert_eq!(
            c.build_request(&groq, &ctx(), &StreamOptions::default()),
            Err(AiError::NoApiKey {
                provider: "groq".into()
            })
        );
        let gemini = c.registry().model("google", "gemini-2.5-flash").unwrap();
        assert_eq!(
            c.build_request(&gemini, &ctx(), &StreamOptions::default()),
            Err(AiError::NoApiKey {
                provider: "google".into()
            })
        );
    }
}
