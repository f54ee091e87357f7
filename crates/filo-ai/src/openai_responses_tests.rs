use std::collections::BTreeMap;

use serde_json::json;

use super::*;
use crate::client::StreamOptions;
use crate::message::{Context, StopReason};
use crate::testutil::{chunked, model, run, sse, user_ctx};
use crate::transport::FixtureResponse;

fn events(frames: &[serde_json::Value]) -> bytes::Bytes {
    let texts: Vec<(String, String)> = frames
        .iter()
        .map(|f| (f["type"].as_str().unwrap().to_string(), f.to_string()))
        .collect();
    let pairs: Vec<(&str, &str)> = texts
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    sse(&pairs)
}

#[tokio::test]
async fn reasoning_text_and_parallel_calls() {
    let m = model("openai", "openai-responses", "gpt-5");
    let reasoning = json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "A"}, {"type": "summary_text", "text": "B"}], "encrypted_content": "enc=="});
    let body = events(&[
        json!({"type": "response.created", "response": {"id": "resp_1"}}),
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
        json!({"type": "response.reasoning_summary_part.added", "item_id": "rs_1", "summary_index": 0}),
        json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "delta": "A"}),
        json!({"type": "response.reasoning_summary_part.added", "item_id": "rs_1", "summary_index": 1}),
        json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "delta": "B"}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": reasoning}),
        json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}}),
        json!({"type": "response.output_text.delta", "item_id": "msg_1", "delta": "Hi"}),
        json!({"type": "response.output_item.done", "output_index": 1, "item": {"type": "message", "id": "msg_1", "phase": "final_answer"}}),
        json!({"type": "response.output_item.added", "output_index": 2, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read", "arguments": ""}}),
        json!({"type": "response.output_item.added", "output_index": 3, "item": {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "ls", "arguments": ""}}),
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_2", "delta": "{\"path\""}),
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": "{\"path\":\"a\"}"}),
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_2", "delta": ":\".\"}"}),
        json!({"type": "response.output_item.done", "output_index": 2, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read", "arguments": "{\"path\":\"a\"}"}}),
        json!({"type": "response.output_item.done", "output_index": 3, "item": {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "ls", "arguments": "{\"path\":\".\"}"}}),
        json!({"type": "response.completed", "response": {"status": "completed", "usage": {"input_tokens": 50, "output_tokens": 7, "total_tokens": 57, "input_tokens_details": {"cached_tokens": 20}}}}),
    ]);
    let r = run(
        &m,
        &user_ctx("x"),
        vec![FixtureResponse::sse(chunked(&body, 31))],
    )
    .await;
    let msg = r.message;
    assert_eq!(msg.stop_reason, StopReason::ToolUse);
    let ContentBlock::Thinking(t) = &msg.content[0] else {
        panic!("{msg:?}")
    };
    assert_eq!(t.thinking, "A\n\nB");
    assert_eq!(
        t.thinking_signature.as_deref(),
        Some(reasoning.to_string().as_str())
    );
    let ContentBlock::Text(text) = &msg.content[1] else {
        panic!()
    };
    assert_eq!(text.text, "Hi");
    assert_eq!(
        text.text_signature.as_deref(),
        Some(r#"{"v":1,"id":"msg_1","phase":"final_answer"}"#)
    );
    let calls: Vec<_> = msg.tool_calls().collect();
    assert_eq!(calls[0].id, "call_1|fc_1");
    assert_eq!(calls[0].arguments, json!({"path": "a"}));
    assert_eq!(calls[1].id, "call_2|fc_2");
    assert_eq!(calls[1].arguments, json!({"path": "."}));
    assert_eq!(
        (
            msg.usage.input,
            msg.usage.cache_read,
            msg.usage.total_tokens
        ),
        (30, 20, 57)
    );
}

#[tokio::test]
async fn failures() {
    let m = model("openai", "openai-responses", "gpt-5");
    let cases = [
        (
            json!({"type": "response.failed", "response": {"error": {"code": "server_error", "message": "boom"}}}),
            "server_error: boom",
        ),
        (
            json!({"type": "response.failed", "response": {"incomplete_details": {"reason": "max_output_tokens"}}}),
            "incomplete: max_output_tokens",
        ),
        (
            json!({"type": "response.failed", "response": {}}),
            "Unknown error (no error details in response)",
        ),
        (
            json!({"type": "error", "code": "rate_limit_exceeded", "message": "slow down"}),
            "Error Code rate_limit_exceeded: slow down (gave up after 3 requests)",
        ),
    ];
    for (frame, expected) in cases {
        let r = run(
            &m,
            &user_ctx("x"),
            vec![FixtureResponse::sse(vec![events(std::slice::from_ref(&frame))]); 3],
        )
        .await;
        assert_eq!(r.message.error_message.as_deref(), Some(expected));
    }
    let body =
        events(&[json!({"type": "response.completed", "response": {"status": "incomplete"}})]);
    let r = run(&m, &user_ctx("x"), vec![FixtureResponse::sse(vec![body])]).await;
    assert_eq!(r.message.stop_reason, StopReason::Length);
}

#[test]
fn input_conversion_replays_items() {
    let m = model("openai", "openai-responses", "gpt-5");
    let item =
        json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "enc"});
    let long_id = "x".repeat(70);
    let ctx: Context = serde_json::from_value(json!({
        "systemPrompt": "sys",
        "messages": [
            {"role": "user", "content": "hi", "timestamp": 1},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "t", "thinkingSignature": item.to_string()},
                {"type": "text", "text": "a", "textSignature": r#"{"v":1,"id":"msg_7","phase":"commentary"}"#},
                {"type": "text", "text": "b", "textSignature": long_id},
                {"type": "toolCall", "id": "call_1|fc_1", "name": "ls", "arguments": {"p": 1}}
            ], "api": "openai-responses", "provider": "openai", "model": "gpt-5", "usage": {}, "stopReason": "toolUse", "timestamp": 2},
            {"role": "toolResult", "toolCallId": "call_1|fc_1", "toolName": "ls", "content": [{"type": "text", "text": "out"}], "isError": false, "timestamp": 3}
        ]
    }))
    .unwrap();
    let opts = StreamOptions {
        session_id: Some("sess".into()),
        reasoning: ThinkingLevel::Low,
        ..StreamOptions::default()
    };
    let headers = BTreeMap::new();
    let input = RequestInput {
        env: &crate::env::Env::default(),
        model: &m,
        context: &ctx,
        options: &opts,
        api_key: Some("k"),
        provider_headers: &headers,
        now_ms: 0,
    };
    let b = build_request(&input).body;
    let items = b["input"].as_array().unwrap();
    assert_eq!(items[0], json!({"role": "developer", "content": "sys"}));
    assert_eq!(
        items[1]["content"][0],
        json!({"type": "input_text", "text": "hi"})
    );
    assert_eq!(items[2], item);
    assert_eq!(items[3]["id"], "msg_7");
    assert_eq!(items[3]["phase"], "commentary");
    assert_eq!(
        items[4]["id"],
        format!("msg_{}", short_hash(&"x".repeat(70)))
    );
    assert_eq!(
        items[5],
        json!({"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "ls", "arguments": "{\"p\":1}"})
    );
    assert_eq!(
        items[6],
        json!({"type": "function_call_output", "call_id": "call_1", "output": "out"})
    );
    assert_eq!(b["reasoning"], json!({"effort": "low", "summary": "auto"}));
    assert_eq!(b["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(b["prompt_cache_key"], "sess");
    assert_eq!(b["store"], false);
}

#[test]
fn short_hash_is_stable_and_base36() {
    let a = short_hash("hello");
    assert_eq!(a, short_hash("hello"));
    assert_ne!(a, short_hash("hellp"));
    assert!(
        a.chars()
            .all(|c| c.is_ascii_digit() || c.is_ascii_lowercase())
    );
    assert_eq!(base36(0), "0");
    assert_eq!(base36(35), "z");
    assert_eq!(base36(36), "10");
}

#[test]
fn id_normaliser() {
    let m = model("openai", "openai-responses", "gpt-5");
    let src: AssistantMessage = serde_json::from_value(json!({"content": [], "api": "a", "provider": "p", "model": "x", "usage": {}, "stopReason": "stop", "timestamp": 0})).unwrap();
    assert_eq!(normalize_id("call.1|item.2", &m, &src), "call_1|fc_item_2");
    assert_eq!(normalize_id("toolu_abc", &m, &src), "toolu_abc");
    let other = model("openrouter", "openai-responses", "x");
    assert_eq!(normalize_id("a.b|c", &other, &src), "a.b|c");
}

#[tokio::test]
async fn service_tier_scales_cost() {
    let m = model("openai", "openai-responses", "gpt-5");
    let done = |tier: &str| {
        events(&[
            json!({"type": "response.completed", "response": {"status": "completed", "service_tier": tier,
            "usage": {"input_tokens": 1000, "output_tokens": 1000, "total_tokens": 2000}}}),
        ])
    };
    let opts = StreamOptions {
        service_tier: Some("flex".into()),
        ..StreamOptions::default()
    };
    let r = crate::testutil::run_with(
        &m,
        &user_ctx("x"),
        vec![FixtureResponse::sse(vec![done("flex")])],
        &opts,
    )
    .await;
    assert_eq!(r.requests[0].body["service_tier"], "flex");
    // (1000 * 1 + 1000 * 2) / 1e6 = 0.003, halved.
    assert!((r.message.usage.cost.total - 0.0015).abs() < 1e-12);
    let r = run(
        &m,
        &user_ctx("x"),
        vec![FixtureResponse::sse(vec![done("priority")])],
    )
    .await;
    assert!((r.message.usage.cost.total - 0.006).abs() < 1e-12);
    let r = run(
        &m,
        &user_ctx("x"),
        vec![FixtureResponse::sse(vec![done("default")])],
    )
    .await;
    assert!((r.message.usage.cost.total - 0.003).abs() < 1e-12);
}

#[tokio::test]
async fn response_id_from_created_and_completed() {
    let m = model("openai", "openai-responses", "gpt-5");
    let text = |id: &str| {
        vec![
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "id": id, "role": "assistant", "content": []}}),
            json!({"type": "response.output_text.delta", "item_id": id, "delta": "Hi"}),
            json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "message", "id": id}}),
        ]
    };
    let run_frames = |frames: Vec<serde_json::Value>| {
        let m = m.clone();
        async move {
            run(
                &m,
                &user_ctx("x"),
                vec![FixtureResponse::sse(vec![events(&frames)])],
            )
            .await
        }
    };
    // The completed response's id wins; one without an id keeps the created one.
    for (completed, want) in [
        (
            json!({"id": "resp_final", "status": "completed"}),
            "resp_final",
        ),
        (json!({"id": "", "status": "completed"}), "resp_created"),
        (json!({"status": "completed"}), "resp_created"),
    ] {
        let mut frames =
            vec![json!({"type": "response.created", "response": {"id": "resp_created"}})];
        frames.extend(text("msg_1"));
        frames.push(json!({"type": "response.completed", "response": completed}));
        let r = run_frames(frames).await;
        assert_eq!(r.message.stop_reason, StopReason::Stop);
        assert_eq!(r.message.response_id.as_deref(), Some(want));
    }
    // A failed response keeps the id it was created with.
    let mut frames = vec![json!({"type": "response.created", "response": {"id": "resp_x"}})];
    frames.extend(text("msg_1"));
    frames.push(json!({"type": "response.failed", "response": {"id": "resp_x", "error": {"code": "server_error", "message": "boom"}}}));
    let r = run_frames(frames).await;
    assert_eq!(r.message.stop_reason, StopReason::Error);
    assert_eq!(r.message.response_id.as_deref(), Some("resp_x"));
}

#[tokio::test]
async fn max_effort_follows_the_thinking_level_map() {
    let body =
        events(&[json!({"type": "response.completed", "response": {"status": "completed"}})]);
    let effort = |m: Model| {
        let body = body.clone();
        async move {
            let opts = StreamOptions {
                reasoning: ThinkingLevel::Max,
                ..StreamOptions::default()
            };
            let r = crate::testutil::run_with(
                &m,
                &user_ctx("x"),
                vec![FixtureResponse::sse(vec![body])],
                &opts,
            )
            .await;
            r.requests[0].body["reasoning"]["effort"].clone()
        }
    };
    let mut m = model("openai", "openai-responses", "gpt-6.2-sol");
    assert_eq!(effort(m.clone()).await, json!("high"), "no max: high");
    m.thinking_level_map = Some(
        [(ThinkingLevel::Xhigh, Some("xhigh".to_string()))]
            .into_iter()
            .collect(),
    );
    assert_eq!(effort(m.clone()).await, json!("xhigh"), "nearest below");
    m.thinking_level_map = Some(
        [(ThinkingLevel::Max, Some("max".to_string()))]
            .into_iter()
            .collect(),
    );
    assert_eq!(effort(m).await, json!("max"));
}

/// pi 1.6 (1.5.1): the affinity headers `session-id` and `x-client-request-id` (OpenRouter:
/// `x-session-id`) with the prompt cache on; no `strict` on tools unless
/// `compat.supportsStrictMode`; `compat.supportsMaxOutputTokens: false` drops the limit.
#[test]
fn pi_16_affinity_headers_strict_and_output_limit() {
    let ctx: Context = serde_json::from_value(json!({
        "messages": [{"role": "user", "content": "hi", "timestamp": 1}],
        "tools": [{"name": "ls", "description": "list", "parameters": {"type": "object"}}]
    }))
    .unwrap();
    let build = |m: &Model| {
        let opts = StreamOptions {
            session_id: Some("sess-1".into()),
            ..StreamOptions::default()
        };
        let headers = BTreeMap::new();
        build_request(&RequestInput {
            env: &crate::env::Env::default(),
            model: m,
            context: &ctx,
            options: &opts,
            api_key: Some("k"),
            provider_headers: &headers,
            now_ms: 0,
        })
    };
    let mut m = model("openai", "openai-responses", "gpt-6.2-sol");
    let req = build(&m);
    assert_eq!(req.header("session-id"), Some("sess-1"));
    assert_eq!(req.header("x-client-request-id"), Some("sess-1"));
    assert!(req.body["tools"][0].get("strict").is_none());
    assert!(req.body.get("max_output_tokens").is_some());
    m.compat = Some(json!({"supportsStrictMode": true, "supportsMaxOutputTokens": false}));
    let req = build(&m);
    assert_eq!(req.body["tools"][0]["strict"], json!(false));
    assert!(req.body.get("max_output_tokens").is_none());
    m.provider = "openrouter".into();
    let req = build(&m);
    assert_eq!(req.header("x-session-id"), Some("sess-1"));
    assert_eq!(req.header("session-id"), None);
}
