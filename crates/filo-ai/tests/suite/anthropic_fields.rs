//! The Anthropic request fields pi 0.73 sends, per case, as the mock received them: thinking
//! `display`, `disabled` thinking, adaptive effort from `thinkingLevelMap`, eager tool input
//! streaming and the beta header that stands in for it, and the long cache TTL switch.

use filo_ai::{CacheRetention, Context, Model, ProviderRegistry, StreamOptions, ThinkingLevel};
use filo_testkit::{MockProvider, Protocol, RecordedRequest, Turn};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::common::collect;

fn catalog(id: &str) -> Model {
    ProviderRegistry::builtin()
        .unwrap()
        .model("anthropic", id)
        .unwrap()
}

fn ctx(tools: bool) -> Context {
    let mut c = json!({
        "systemPrompt": "sys",
        "messages": [{"role": "user", "content": "hi", "timestamp": 1}]
    });
    if tools {
        c["tools"] = json!([
            {"name": "read", "description": "Read a file.", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
            {"name": "ls", "description": "List.", "parameters": {"type": "object"}}
        ]);
    }
    serde_json::from_value(c).unwrap()
}

fn opts(level: ThinkingLevel) -> StreamOptions {
    StreamOptions {
        reasoning: level,
        max_tokens: Some(4096),
        ..StreamOptions::default()
    }
}

/// Send one request for `model` to the mock and return what it received.
async fn sent(mut model: Model, ctx: &Context, options: &StreamOptions) -> RecordedRequest {
    let mock = MockProvider::start(vec![Turn::text("ok")]).await;
    model.base_url = mock.base_url(Protocol::AnthropicMessages);
    let (_, msg) = collect(&model, ctx, options, CancellationToken::new()).await;
    assert!(msg.error_message.is_none(), "{:?}", msg.error_message);
    mock.requests().remove(0)
}

fn beta(req: &RecordedRequest) -> Option<&str> {
    req.headers
        .iter()
        .find(|(k, _)| k == "anthropic-beta")
        .map(|(_, v)| v.as_str())
}

fn with_compat(mut m: Model, compat: Value) -> Model {
    m.compat = Some(compat);
    m
}

#[tokio::test]
async fn budget_thinking_carries_display_and_tools_stream_eagerly() {
    let req = sent(
        catalog("claude-sonnet-4-5"),
        &ctx(true),
        &opts(ThinkingLevel::Medium),
    )
    .await;
    assert_eq!(
        req.body["thinking"],
        json!({"type": "enabled", "budget_tokens": 8192, "display": "summarized"})
    );
    assert!(req.body.get("output_config").is_none());
    assert_eq!(req.body["max_tokens"], 4096 + 8192);
    assert_eq!(
        req.body["tools"],
        json!([
            {"name": "read", "description": "Read a file.", "eager_input_streaming": true,
             "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
            {"name": "ls", "description": "List.", "eager_input_streaming": true,
             "input_schema": {"type": "object", "properties": {}, "required": []},
             "cache_control": {"type": "ephemeral"}}
        ])
    );
    // Eager streaming replaces the fine-grained beta; budget models still ask for interleaving.
    assert_eq!(beta(&req), Some("interleaved-thinking-2025-05-14"));
}

#[tokio::test]
async fn adaptive_thinking_carries_display_and_sends_no_beta() {
    let req = sent(
        catalog("claude-sonnet-4-6"),
        &ctx(true),
        &opts(ThinkingLevel::High),
    )
    .await;
    assert_eq!(
        req.body["thinking"],
        json!({"type": "adaptive", "display": "summarized"})
    );
    assert_eq!(req.body["output_config"], json!({"effort": "high"}));
    assert_eq!(req.body["max_tokens"], 4096, "no budget added");
    assert_eq!(beta(&req), None);
}

#[tokio::test]
async fn adaptive_detection_covers_opus_4_7_with_either_separator() {
    for id in [
        "claude-opus-4-7",
        "anthropic/claude-opus-4.7",
        "claude-opus-4.6-x",
    ] {
        let mut m = catalog("claude-sonnet-4-5");
        m.id = id.into();
        let req = sent(m, &ctx(false), &opts(ThinkingLevel::Low)).await;
        assert_eq!(req.body["thinking"]["type"], "adaptive", "{id}");
        assert_eq!(req.body["output_config"], json!({"effort": "low"}), "{id}");
        assert_eq!(beta(&req), None, "{id}");
    }
}

#[tokio::test]
async fn adaptive_effort_defaults_per_level() {
    let cases = [
        (ThinkingLevel::Minimal, "low"),
        (ThinkingLevel::Low, "low"),
        (ThinkingLevel::Medium, "medium"),
        (ThinkingLevel::High, "high"),
        (ThinkingLevel::Xhigh, "high"),
    ];
    for (level, effort) in cases {
        let req = sent(catalog("claude-sonnet-4-6"), &ctx(false), &opts(level)).await;
        assert_eq!(
            req.body["output_config"],
            json!({"effort": effort}),
            "{level:?}"
        );
    }
}

#[tokio::test]
async fn adaptive_effort_comes_from_the_thinking_level_map() {
    // The catalog maps Opus 4.6's max to "max", as pi 1.6's does.
    let req = sent(
        catalog("claude-opus-4-6"),
        &ctx(false),
        &opts(ThinkingLevel::Max),
    )
    .await;
    assert_eq!(req.body["output_config"], json!({"effort": "max"}));
    // A string wins over the default; a null (unsupported) falls back to the default mapping.
    let mut m = catalog("claude-sonnet-4-6");
    m.thinking_level_map =
        Some(serde_json::from_value(json!({"minimal": "medium", "high": null})).unwrap());
    let req = sent(m.clone(), &ctx(false), &opts(ThinkingLevel::Minimal)).await;
    assert_eq!(req.body["output_config"], json!({"effort": "medium"}));
    let req = sent(m, &ctx(false), &opts(ThinkingLevel::High)).await;
    assert_eq!(req.body["output_config"], json!({"effort": "high"}));
}

#[tokio::test]
async fn thinking_off_disables_it_on_reasoning_models_only() {
    let off = StreamOptions {
        temperature: Some(0.3),
        ..opts(ThinkingLevel::Off)
    };
    for id in ["claude-sonnet-4-5", "claude-opus-4-6"] {
        let req = sent(catalog(id), &ctx(false), &off).await;
        assert_eq!(req.body["thinking"], json!({"type": "disabled"}), "{id}");
        assert!(req.body.get("output_config").is_none(), "{id}");
        assert_eq!(
            req.body["temperature"], 0.3,
            "{id}: temperature goes with thinking off"
        );
        assert_eq!(req.body["max_tokens"], 4096, "{id}");
    }
    let mut plain = catalog("claude-sonnet-4-5");
    plain.reasoning = false;
    let req = sent(plain.clone(), &ctx(false), &off).await;
    assert!(req.body.get("thinking").is_none());
    // A level asked of a model that does not reason sends nothing either.
    let req = sent(plain, &ctx(false), &opts(ThinkingLevel::High)).await;
    assert!(req.body.get("thinking").is_none());
}

#[tokio::test]
async fn without_eager_streaming_the_fine_grained_beta_is_sent_when_there_are_tools() {
    let no_eager = json!({"supportsEagerToolInputStreaming": false});
    let m = with_compat(catalog("claude-sonnet-4-5"), no_eager.clone());
    let req = sent(m.clone(), &ctx(true), &opts(ThinkingLevel::Off)).await;
    assert!(req.body["tools"][0].get("eager_input_streaming").is_none());
    assert!(req.body["tools"][1].get("eager_input_streaming").is_none());
    assert_eq!(
        beta(&req),
        Some("fine-grained-tool-streaming-2025-05-14,interleaved-thinking-2025-05-14")
    );
    let req = sent(m, &ctx(false), &opts(ThinkingLevel::Off)).await;
    assert_eq!(beta(&req), Some("interleaved-thinking-2025-05-14"));
    let adaptive = with_compat(catalog("claude-sonnet-4-6"), no_eager);
    let req = sent(adaptive, &ctx(true), &opts(ThinkingLevel::Off)).await;
    assert_eq!(beta(&req), Some("fine-grained-tool-streaming-2025-05-14"));
}

#[tokio::test]
async fn long_cache_retention_follows_the_compat_switch() {
    let long = StreamOptions {
        cache_retention: CacheRetention::Long,
        ..opts(ThinkingLevel::Off)
    };
    let req = sent(catalog("claude-sonnet-4-5"), &ctx(true), &long).await;
    let hour = json!({"type": "ephemeral", "ttl": "1h"});
    assert_eq!(req.body["system"][0]["cache_control"], hour);
    assert_eq!(req.body["tools"][1]["cache_control"], hour);
    let m = with_compat(
        catalog("claude-sonnet-4-5"),
        json!({"supportsLongCacheRetention": false}),
    );
    let req = sent(m, &ctx(true), &long).await;
    assert_eq!(
        req.body["system"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
}
