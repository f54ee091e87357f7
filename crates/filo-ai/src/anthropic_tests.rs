use serde_json::json;

use super::*;
use crate::client::StreamOptions;
use crate::event::AssistantEvent;
use crate::message::{Context, StopReason};
use crate::testutil::{chunked, model, run, run_with, sse, user_ctx};
use crate::transport::{FixtureEnd, FixtureResponse};

fn stream_frames() -> bytes::Bytes {
    sse(&[
        (
            "message_start",
            r#"{"type":"message_start","message":{"id":"m","usage":{"input_tokens":10,"output_tokens":1,"cache_read_input_tokens":4,"cache_creation_input_tokens":2}}}"#,
        ),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me "}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"think."}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCkYIBx+/="}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":0}"#,
        ),
        ("ping", r#"{"type":"ping"}"#),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"H\u00e9llo \"x\""}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":1}"#,
        ),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"BASH","input":{}}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"comm"}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"and\": \"ls\"}"}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":2}"#,
        ),
        (
            "message_delta",
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":25}}"#,
        ),
        ("message_stop", r#"{"type":"message_stop"}"#),
    ])
}

#[tokio::test]
async fn decodes_thinking_text_and_tool_use() {
    let m = model("anthropic", "anthropic-messages", "claude-sonnet-4-5");
    let mut ctx = user_ctx("hi");
    ctx.tools = Some(vec![crate::message::Tool {
        name: "bash".into(),
        description: "run".into(),
        parameters: json!({"type": "object"}),
    }]);
    for size in [7, 64, 100_000] {
        let r = run(
            &m,
            &ctx,
            vec![FixtureResponse::sse(chunked(&stream_frames(), size))],
        )
        .await;
        let msg = r.message;
        assert_eq!(
            msg.stop_reason,
            StopReason::ToolUse,
            "{:?}",
            msg.error_message
        );
        let ContentBlock::Thinking(t) = &msg.content[0] else {
            panic!("{msg:?}")
        };
        assert_eq!(t.thinking, "Let me think.");
        assert_eq!(t.thinking_signature.as_deref(), Some("EqQBCkYIBx+/="));
        assert_eq!(msg.content[1], ContentBlock::text("H\u{e9}llo \"x\""));
        let ContentBlock::ToolCall(tc) = &msg.content[2] else {
            panic!()
        };
        assert_eq!(tc.name, "bash", "mapped back to the context's spelling");
        assert_eq!(tc.arguments, json!({"command": "ls"}));
        assert_eq!(msg.usage.input, 10);
        assert_eq!(msg.usage.output, 25);
        assert_eq!(msg.usage.cache_read, 4);
        assert_eq!(msg.usage.cache_write, 2);
        assert_eq!(msg.usage.total_tokens, 41);
        // 10*1 + 25*2 + 4*0.5 + 2*1 = 64 → 64e-6 $
        assert!((msg.usage.cost.total - 64e-6).abs() < 1e-12);
    }
}

#[tokio::test]
async fn error_event_and_unknown_stop_reason() {
    let m = model("anthropic", "anthropic-messages", "claude-sonnet-4-5");
    let body = sse(&[
        (
            "message_start",
            r#"{"type":"message_start","message":{"usage":{"input_tokens":1}}}"#,
        ),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"partial"}}"#,
        ),
        (
            "error",
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ),
    ]);
    let r = run(&m, &user_ctx("x"), vec![FixtureResponse::sse(vec![body])]).await;
    assert_eq!(r.message.stop_reason, StopReason::Error);
    assert_eq!(r.message.content, vec![ContentBlock::text("partial")]);
    assert!(
        r.message
            .error_message
            .unwrap()
            .contains("overloaded_error")
    );
    assert_eq!(r.requests.len(), 1, "no retry once content was streamed");

    let body = sse(&[
        (
            "message_delta",
            r#"{"type":"message_delta","delta":{"stop_reason":"weird"},"usage":{}}"#,
        ),
        ("message_stop", r#"{"type":"message_stop"}"#),
    ]);
    let r = run(&m, &user_ctx("x"), vec![FixtureResponse::sse(vec![body])]).await;
    assert_eq!(
        r.message.error_message.as_deref(),
        Some("Unhandled stop reason: weird")
    );
    let body = sse(&[
        (
            "message_delta",
            r#"{"type":"message_delta","delta":{"stop_reason":"refusal"}}"#,
        ),
        ("message_stop", r#"{"type":"message_stop"}"#),
    ]);
    let r = run(&m, &user_ctx("x"), vec![FixtureResponse::sse(vec![body])]).await;
    assert_eq!(
        r.message.error_message.as_deref(),
        Some("An unknown error occurred")
    );
}

#[tokio::test]
async fn redacted_thinking_keeps_data() {
    let m = model("anthropic", "anthropic-messages", "claude-sonnet-4-5");
    let body = sse(&[
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"opaque=="}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":0}"#,
        ),
        (
            "message_delta",
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"}}"#,
        ),
        ("message_stop", r#"{"type":"message_stop"}"#),
    ]);
    let r = run(&m, &user_ctx("x"), vec![FixtureResponse::sse(vec![body])]).await;
    let ContentBlock::Thinking(t) = &r.message.content[0] else {
        panic!()
    };
    assert_eq!(t.thinking, "[Reasoning redacted]");
    assert_eq!(t.thinking_signature.as_deref(), Some("opaque=="));
    assert_eq!(t.redacted, Some(true));
}

#[tokio::test]
async fn http_errors_retry_then_fail_with_status_and_body() {
    let m = model("anthropic", "anthropic-messages", "claude-sonnet-4-5");
    let err = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 300000 tokens > 200000 maximum"}}"#;
    let r = run(&m, &user_ctx("x"), vec![FixtureResponse::status(400, err)]).await;
    assert_eq!(r.requests.len(), 1);
    assert_eq!(
        r.message.error_message.as_deref(),
        Some(&*format!("400 {err}"))
    );
    assert!(crate::overflow::is_context_overflow(&r.message, None));

    let r = run(
        &m,
        &user_ctx("x"),
        vec![
            FixtureResponse::status(529, "overloaded"),
            FixtureResponse::status(503, ""),
            FixtureResponse::status(500, "boom"),
        ],
    )
    .await;
    assert_eq!(r.requests.len(), 3, "2 retries then give up");
    assert_eq!(
        r.message.error_message.as_deref(),
        Some("500 boom (gave up after 3 requests)")
    );
    // Refused before any stream: the error alone, as pi's providers report it.
    assert!(matches!(r.events[..], [AssistantEvent::Error { .. }]));
}

#[tokio::test]
async fn idle_timeout_and_cut_connection() {
    let m = model("anthropic", "anthropic-messages", "claude-sonnet-4-5");
    let partial = sse(&[
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"so far"}}"#,
        ),
    ]);
    let r = run(
        &m,
        &user_ctx("x"),
        vec![FixtureResponse::sse(vec![partial.clone()]).ending(FixtureEnd::Stall)],
    )
    .await;
    assert_eq!(r.message.stop_reason, StopReason::Error);
    assert_eq!(r.message.content, vec![ContentBlock::text("so far")]);
    assert!(r.message.error_message.unwrap().contains("idle timeout"));

    let r = run(
        &m,
        &user_ctx("x"),
        vec![
            FixtureResponse::sse(vec![partial])
                .ending(FixtureEnd::Reset("connection reset".into())),
        ],
    )
    .await;
    assert_eq!(
        r.message.error_message.as_deref(),
        Some("Connection error: connection reset")
    );
}

#[test]
fn request_shape_thinking_cache_and_oauth() {
    let mut m = model("anthropic", "anthropic-messages", "claude-sonnet-4-5");
    m.max_tokens = 64000;
    let ctx: Context = serde_json::from_value(json!({
        "systemPrompt": "sys",
        "messages": [{"role": "user", "content": "hi", "timestamp": 1}],
        "tools": [{"name": "read", "description": "d", "parameters": {"type": "object", "properties": {"p": {"type": "string"}}, "required": ["p"], "additionalProperties": false}}]
    }))
    .unwrap();
    let opts = StreamOptions {
        reasoning: ThinkingLevel::Medium,
        temperature: Some(0.5),
        ..StreamOptions::default()
    };
    let headers = std::collections::BTreeMap::new();
    let input = RequestInput {
        env: &crate::env::Env::default(),
        model: &m,
        context: &ctx,
        options: &opts,
        api_key: Some("sk-ant-api"),
        provider_headers: &headers,
        now_ms: 0,
    };
    let req = build_request(&input);
    assert_eq!(req.url, "http://127.0.0.1:1/v1/v1/messages");
    assert_eq!(req.body["max_tokens"], 32000 + 8192);
    assert_eq!(
        req.body["thinking"],
        json!({"type": "enabled", "budget_tokens": 8192, "display": "summarized"})
    );
    assert!(
        req.body.get("temperature").is_none(),
        "no temperature with thinking"
    );
    assert_eq!(
        req.body["system"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert_eq!(
        req.body["messages"][0]["content"],
        json!([{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(
        req.body["tools"][0]["input_schema"],
        json!({"type": "object", "properties": {"p": {"type": "string"}}, "required": ["p"]})
    );
    assert_eq!(req.body["tools"][0]["eager_input_streaming"], true);
    assert_eq!(
        req.body["tools"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert_eq!(
        req.header("anthropic-beta"),
        Some("interleaved-thinking-2025-05-14")
    );
    assert_eq!(req.header("x-api-key"), Some("sk-ant-api"));
    let input = RequestInput {
        api_key: Some("sk-ant-oat01-x"),
        ..input
    };
    let req = build_request(&input);
    assert_eq!(req.header("authorization"), Some("Bearer sk-ant-oat01-x"));
    assert_eq!(
        req.header("anthropic-beta"),
        Some("claude-code-20250219,oauth-2025-04-20,interleaved-thinking-2025-05-14")
    );
    assert_eq!(req.body["system"][0]["text"], CLAUDE_CODE_IDENTITY);
    assert_eq!(req.body["tools"][0]["name"], "Read");
}

#[tokio::test]
async fn adaptive_models_use_effort() {
    let mut m = model("anthropic", "anthropic-messages", "claude-opus-4-6");
    m.thinking_level_map = Some(
        [(ThinkingLevel::Xhigh, Some("max".to_string()))]
            .into_iter()
            .collect(),
    );
    let opts = StreamOptions {
        reasoning: ThinkingLevel::Xhigh,
        ..StreamOptions::default()
    };
    let body = sse(&[
        (
            "message_delta",
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"}}"#,
        ),
        ("message_stop", "{}"),
    ]);
    let r = run_with(
        &m,
        &user_ctx("x"),
        vec![FixtureResponse::sse(vec![body])],
        &opts,
    )
    .await;
    let req = &r.requests[0];
    assert_eq!(
        req.body["thinking"],
        json!({"type": "adaptive", "display": "summarized"})
    );
    assert_eq!(req.body["output_config"], json!({"effort": "max"}));
    // No tools (so no fine-grained streaming beta) and adaptive (so no interleaved beta).
    assert_eq!(req.header("anthropic-beta"), None);
    assert_eq!(r.message.stop_reason, StopReason::Stop);
    // Without the map, xhigh is pi's default "high" (0.73 dropped the `supportsXhigh` check).
    m.thinking_level_map = None;
    let body = sse(&[("message_stop", "{}")]);
    let r = run_with(
        &m,
        &user_ctx("x"),
        vec![FixtureResponse::sse(vec![body])],
        &opts,
    )
    .await;
    assert_eq!(
        r.requests[0].body["output_config"],
        json!({"effort": "high"})
    );
}

#[tokio::test]
async fn overloaded_event_before_any_content_is_retried() {
    let m = model("anthropic", "anthropic-messages", "claude-sonnet-4-5");
    let overloaded = sse(&[
        (
            "message_start",
            r#"{"type":"message_start","message":{"usage":{"input_tokens":1}}}"#,
        ),
        (
            "error",
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ),
    ]);
    let ok = sse(&[
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"fine"}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":0}"#,
        ),
        (
            "message_delta",
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"}}"#,
        ),
        ("message_stop", r#"{"type":"message_stop"}"#),
    ]);
    let r = run(
        &m,
        &user_ctx("x"),
        vec![
            FixtureResponse::sse(vec![overloaded]),
            FixtureResponse::sse(vec![ok]),
        ],
    )
    .await;
    assert_eq!(r.requests.len(), 2);
    assert_eq!(r.message.text(), "fine");
    assert_eq!(r.events.iter().filter(|e| e.kind() == "start").count(), 1);
}

#[tokio::test]
async fn cancelled_before_sending() {
    use crate::client::ModelClient;
    use futures::StreamExt;
    let m = model("anthropic", "anthropic-messages", "claude-sonnet-4-5");
    let transport = std::sync::Arc::new(crate::transport::FixtureTransport::new(vec![]));
    let client = crate::client::Client::with_transport(
        crate::registry::ProviderRegistry::empty(),
        crate::env::Env::from_vars([("ANTHROPIC_API_KEY", "k")]),
        transport.clone(),
    );
    let cancel = tokio_util::sync::CancellationToken::new();
    cancel.cancel();
    let events: Vec<_> = client
        .stream(&m, &user_ctx("x"), &StreamOptions::default(), cancel)
        .collect()
        .await;
    let msg = crate::testutil::check_contract(&events);
    assert_eq!(msg.stop_reason, StopReason::Aborted);
    assert_eq!(msg.error_message.as_deref(), Some("Request was aborted"));
    assert!(transport.requests().len() <= 1);
}

#[tokio::test]
async fn headers_that_never_come_hit_the_idle_timeout() {
    let m = model("anthropic", "anthropic-messages", "claude-sonnet-4-5");
    let slow = || FixtureResponse::sse(vec![]).delayed(std::time::Duration::from_secs(30));
    let started = std::time::Instant::now();
    let r = run(&m, &user_ctx("x"), vec![slow(), slow(), slow()]).await;
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(
        r.requests.len(),
        3,
        "an idle timeout before any event is retried"
    );
    assert_eq!(
        r.message.error_message.as_deref(),
        Some("Stream idle timeout: no data received for 200 ms (gave up after 3 requests)")
    );
}

/// The id of the Start message and of the terminal message of a run.
fn start_and_final_ids(events: &[AssistantEvent]) -> (Option<String>, Option<String>) {
    let Some(AssistantEvent::Start { message }) = events.first() else {
        panic!("{events:?}")
    };
    let (AssistantEvent::Done { message: fin } | AssistantEvent::Error { message: fin }) =
        events.last().unwrap()
    else {
        panic!("{events:?}")
    };
    (message.response_id.clone(), fin.response_id.clone())
}

#[tokio::test]
async fn response_id_is_the_message_start_id_also_after_a_mid_stream_error() {
    let m = model("anthropic", "anthropic-messages", "claude-sonnet-4-5");
    for size in [5, 100_000] {
        let r = run(
            &m,
            &user_ctx("hi"),
            vec![FixtureResponse::sse(chunked(&stream_frames(), size))],
        )
        .await;
        let m_id = Some("m".to_string());
        assert_eq!(start_and_final_ids(&r.events), (m_id.clone(), m_id));
    }
    let body = sse(&[
        (
            "message_start",
            r#"{"type":"message_start","message":{"id":"msg_01Q7","usage":{"input_tokens":1}}}"#,
        ),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        ),
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"cut"}}"#,
        ),
        (
            "error",
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ),
    ]);
    let r = run(&m, &user_ctx("x"), vec![FixtureResponse::sse(vec![body])]).await;
    assert_eq!(r.message.stop_reason, StopReason::Error);
    assert_eq!(r.message.response_id.as_deref(), Some("msg_01Q7"));
    let line = serde_json::to_value(&r.message).unwrap();
    assert_eq!(line["responseId"], "msg_01Q7");
    // No id on the wire: no field in the message.
    let body = sse(&[
        (
            "message_start",
            r#"{"type":"message_start","message":{"id":17,"usage":{}}}"#,
        ),
        (
            "message_delta",
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"}}"#,
        ),
        ("message_stop", r#"{"type":"message_stop"}"#),
    ]);
    let r = run(&m, &user_ctx("x"), vec![FixtureResponse::sse(vec![body])]).await;
    assert_eq!(r.message.stop_reason, StopReason::Stop);
    assert_eq!(r.message.response_id, None);
    assert!(
        serde_json::to_value(&r.message)
            .unwrap()
            .get("responseId")
            .is_none()
    );
}
