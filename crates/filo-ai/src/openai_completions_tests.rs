use serde_json::json;

use super::*;
use crate::client::StreamOptions;
use crate::codec::RequestInput;
use crate::event::AssistantEvent;
use crate::message::Context;
use crate::testutil::{chunked, model, run, run_with, sse, user_ctx};
use crate::transport::FixtureResponse;

fn data(frames: &[&str]) -> bytes::Bytes {
    let pairs: Vec<(&str, &str)> = frames.iter().map(|f| ("", *f)).collect();
    sse(&pairs)
}

#[tokio::test]
async fn parallel_tool_calls_with_interleaved_arguments() {
    let m = model("openai", "openai-completions", "gpt-4o");
    let body = data(&[
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"plan"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"Running two."}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"read","arguments":""}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"ls","arguments":"{\"pa"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"th\":\".\"}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"a.rs\"}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":20,"prompt_tokens_details":{"cached_tokens":30},"completion_tokens_details":{"reasoning_tokens":5}}}"#,
        "[DONE]",
    ]);
    let r = run(
        &m,
        &user_ctx("x"),
        vec![FixtureResponse::sse(chunked(&body, 13))],
    )
    .await;
    let msg = r.message;
    assert_eq!(msg.stop_reason, StopReason::ToolUse);
    let ContentBlock::Thinking(t) = &msg.content[0] else {
        panic!("{msg:?}")
    };
    assert_eq!(t.thinking, "plan");
    assert_eq!(t.thinking_signature.as_deref(), Some("reasoning_content"));
    assert_eq!(msg.content[1], ContentBlock::text("Running two."));
    let calls: Vec<_> = msg.tool_calls().collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0].id.as_str(), calls[0].name.as_str()),
        ("call_a", "read")
    );
    assert_eq!(calls[0].arguments, json!({"path": "a.rs"}));
    assert_eq!(
        (calls[1].id.as_str(), calls[1].name.as_str()),
        ("call_b", "ls")
    );
    assert_eq!(calls[1].arguments, json!({"path": "."}));
    assert_eq!(msg.usage.input, 70);
    assert_eq!(
        msg.usage.output, 20,
        "reasoning tokens are part of completion_tokens"
    );
    assert_eq!(msg.usage.cache_read, 30);
    assert_eq!(msg.usage.total_tokens, 120);
    let deltas = r
        .events
        .iter()
        .filter(|e| matches!(e, AssistantEvent::ToolCallDelta { .. }))
        .count();
    // One per tool-call chunk, call_a's opening chunk (empty arguments) included, as pi 1.6.
    assert_eq!(deltas, 5);
}

#[tokio::test]
async fn error_chunk_and_malformed_frame() {
    let m = model("openrouter", "openai-completions", "x/y");
    let body = data(&[
        r#"{"choices":[{"index":0,"delta":{"content":"half"}}]}"#,
        r#"{"error":{"message":"Provider returned error","code":502,"metadata":{"raw":"upstream exploded"}}}"#,
    ]);
    let r = run(&m, &user_ctx("x"), vec![FixtureResponse::sse(vec![body])]).await;
    assert_eq!(
        r.message.error_message.as_deref(),
        Some("Provider returned error\nupstream exploded")
    );
    assert_eq!(r.message.content, vec![ContentBlock::text("half")]);

    let body = data(&[
        r#"{"choices":[{"index":0,"delta":{"content":"ok"}}]}"#,
        r#"{"choices":[{"#,
    ]);
    let r = run(&m, &user_ctx("x"), vec![FixtureResponse::sse(vec![body])]).await;
    assert_eq!(r.message.stop_reason, StopReason::Error);
    assert!(
        r.message
            .error_message
            .unwrap()
            .starts_with("Malformed stream data: ")
    );
}

#[tokio::test]
async fn finish_reasons() {
    let m = model("groq", "openai-completions", "m");
    for (reason, expected) in [
        ("stop", Some(StopReason::Stop)),
        ("length", Some(StopReason::Length)),
        ("content_filter", None),
    ] {
        let chunk = format!(
            r#"{{"choices":[{{"index":0,"delta":{{"content":"a"}},"finish_reason":"{reason}"}}]}}"#
        );
        let r = run(
            &m,
            &user_ctx("x"),
            vec![FixtureResponse::sse(vec![data(&[&chunk, "[DONE]"])])],
        )
        .await;
        match expected {
            Some(stop) => assert_eq!(r.message.stop_reason, stop),
            None => assert_eq!(
                r.message.error_message.as_deref(),
                Some("An unknown error occurred")
            ),
        }
    }
}

fn assistant_with_thinking() -> Context {
    serde_json::from_value(json!({
        "systemPrompt": "be brief",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image", "data": "AAAA", "mimeType": "image/png"}], "timestamp": 1},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hmm", "thinkingSignature": "reasoning_content"},
                {"type": "text", "text": "ok"},
                {"type": "toolCall", "id": "call_1|fc_item", "name": "read", "arguments": {"path": "a"}}
            ], "api": "openai-completions", "provider": "groq", "model": "m", "usage": {}, "stopReason": "toolUse", "timestamp": 2},
            {"role": "toolResult", "toolCallId": "call_1|fc_item", "toolName": "read", "content": [{"type": "text", "text": "file"}, {"type": "image", "data": "BBBB", "mimeType": "image/png"}], "isError": false, "timestamp": 3},
            {"role": "user", "content": "next", "timestamp": 4}
        ]
    }))
    .unwrap()
}

#[test]
fn request_conversion() {
    let m = model("groq", "openai-completions", "m");
    let ctx = assistant_with_thinking();
    let opts = StreamOptions {
        reasoning: ThinkingLevel::High,
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
    let req = build_request(&input);
    let b = &req.body;
    assert_eq!(req.url, "http://127.0.0.1:1/v1/chat/completions");
    assert_eq!(req.header("authorization"), Some("Bearer k"));
    // pi 1.6.0: only OpenAI's own API gets `developer`; this host gets `system`.
    assert_eq!(
        b["messages"][0],
        json!({"role": "system", "content": "be brief"})
    );
    assert_eq!(
        b["messages"][1]["content"][1]["image_url"]["url"],
        "data:image/png;base64,AAAA"
    );
    let a = &b["messages"][2];
    assert_eq!(a["content"], "ok");
    assert_eq!(a["reasoning_content"], "hmm");
    assert_eq!(
        a["tool_calls"][0]["id"], "call_1|fc_item",
        "same model: ids untouched"
    );
    assert_eq!(
        a["tool_calls"][0]["function"]["arguments"],
        r#"{"path":"a"}"#
    );
    assert_eq!(
        b["messages"][3],
        json!({"role": "tool", "content": "file", "tool_call_id": "call_1|fc_item"})
    );
    assert_eq!(
        b["messages"][4]["content"][0]["text"],
        "Attached image(s) from tool result:"
    );
    assert_eq!(b["messages"][5], json!({"role": "user", "content": "next"}));
    assert!(b.get("tools").is_none(), "pi 1.6 sends no empty tools list");
    assert_eq!(b["reasoning_effort"], "high");
    assert_eq!(b["max_completion_tokens"], 8000);
    assert_eq!(b["stream_options"], json!({"include_usage": true}));
}

#[test]
fn compat_detection_and_overrides() {
    let mut m = model("xai", "openai-completions", "grok-4");
    m.base_url = "https://api.x.ai/v1".into();
    let c = Compat::for_model(&m);
    assert!(!c.supports_store && !c.supports_developer_role && !c.supports_reasoning_effort);
    let mut m = model("groq", "openai-completions", "qwen/qwen3-32b");
    m.compat = Some(json!({"maxTokensField": "max_tokens", "thinkingFormat": "qwen"}));
    let c = Compat::for_model(&m);
    assert_eq!(
        c.reasoning_effort_map.get("high").map(String::as_str),
        Some("default")
    );
    assert_eq!(c.max_tokens_field, "max_tokens");
    assert_eq!(c.thinking_format, "qwen");
    let mut z = model("zai", "openai-completions", "glm");
    z.base_url = "https://api.z.ai/api/paas/v4".into();
    assert_eq!(Compat::for_model(&z).thinking_format, "zai");
}

#[tokio::test]
async fn other_model_history_gets_normalised_ids() {
    let m = model("openai", "openai-completions", "gpt-4o");
    let ctx: Context = serde_json::from_value(json!({"messages": [
        {"role": "user", "content": "go", "timestamp": 1},
        {"role": "assistant", "content": [{"type": "toolCall", "id": "call_9|fc_abc", "name": "ls", "arguments": {}}],
         "api": "openai-responses", "provider": "openai", "model": "gpt-5", "usage": {}, "stopReason": "toolUse", "timestamp": 2},
        {"role": "toolResult", "toolCallId": "call_9|fc_abc", "toolName": "ls", "content": [{"type": "text", "text": "."}], "isError": false, "timestamp": 3}
    ]}))
    .unwrap();
    let body = data(&[
        r#"{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}]}"#,
        "[DONE]",
    ]);
    let r = run_with(
        &m,
        &ctx,
        vec![FixtureResponse::sse(vec![body])],
        &StreamOptions::default(),
    )
    .await;
    let b = &r.requests[0].body;
    assert_eq!(b["messages"][1]["tool_calls"][0]["id"], "call_9");
    assert_eq!(b["messages"][2]["tool_call_id"], "call_9");
}

#[test]
fn mistral_ids_are_nine_alphanumerics() {
    assert_eq!(nine_char_id("abcDEF123"), "abcDEF123");
    let a = nine_char_id("toolu_01ABCdef|x");
    assert_eq!(a.len(), 9);
    assert!(a.bytes().all(|b| b.is_ascii_alphanumeric()));
    assert_ne!(a, nine_char_id("toolu_01ABCdeg|x"));
    let mut m = model("mistral", "openai-completions", "mistral-large-latest");
    m.base_url = "https://api.mistral.ai/v1".into();
    let src: AssistantMessage = serde_json::from_value(json!({"content": [], "api": "a", "provider": "p", "model": "x", "usage": {}, "stopReason": "stop", "timestamp": 0})).unwrap();
    assert_eq!(normalize_id("toolu_01ABCdef|x", &m, &src), a);
}

#[tokio::test]
async fn response_id_is_the_first_non_empty_chunk_id() {
    let m = model("openai", "openai-completions", "gpt-4o");
    let body = data(&[
        r#"{"id":"","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
        r#"{"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG","choices":[{"index":0,"delta":{"content":"Hi"}}]}"#,
        r#"{"id":"chatcmpl-other","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        "[DONE]",
    ]);
    let r = run(&m, &user_ctx("x"), vec![FixtureResponse::sse(vec![body])]).await;
    assert_eq!(r.message.stop_reason, StopReason::Stop);
    assert_eq!(
        r.message.response_id.as_deref(),
        Some("chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG")
    );
    let Some(AssistantEvent::Start { message }) = r.events.first() else {
        panic!()
    };
    assert_eq!(
        message.response_id, r.message.response_id,
        "known from the start"
    );
    // A server that numbers its chunks (or sends none) still streams; there is no id then.
    let body = data(&[
        r#"{"id":42,"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}"#,
        "[DONE]",
    ]);
    let r = run(&m, &user_ctx("x"), vec![FixtureResponse::sse(vec![body])]).await;
    assert_eq!(
        (r.message.text().as_str(), r.message.response_id),
        ("ok", None)
    );
}

/// pi 1.6: `developer` for OpenAI's own API only; no `"tools": []` without tools unless
/// `compat.requiresToolsWithToolHistory`; `""` for a text-less assistant message with
/// `compat.requiresNonNullAssistantContent`.
#[test]
fn pi_16_roles_tools_and_assistant_content() {
    let history: Context = serde_json::from_value(json!({
        "systemPrompt": "sys",
        "messages": [
            {"role": "user", "content": "go", "timestamp": 1},
            {"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "ls", "arguments": {}}],
             "api": "openai-completions", "provider": "p", "model": "m", "usage": {},
             "stopReason": "toolUse", "timestamp": 2},
            {"role": "toolResult", "toolCallId": "c1", "toolName": "ls", "content": [{"type": "text", "text": "a"}],
             "isError": false, "timestamp": 3}
        ]
    }))
    .unwrap();
    let build = |m: &Model| {
        let opts = StreamOptions::default();
        let headers = BTreeMap::new();
        build_request(&RequestInput {
            env: &crate::env::Env::default(),
            model: m,
            context: &history,
            options: &opts,
            api_key: Some("k"),
            provider_headers: &headers,
            now_ms: 0,
        })
        .body
    };
    let mut m = model("vllm", "openai-completions", "m");
    let b = build(&m);
    assert_eq!(b["messages"][0]["role"], "system");
    assert!(b.get("tools").is_none(), "{b}");
    assert_eq!(b["messages"][2]["content"], Value::Null);
    m.provider = "openai".into();
    assert_eq!(build(&m)["messages"][0]["role"], "developer");
    m.provider = "vllm".into();
    m.compat = Some(
        json!({"requiresToolsWithToolHistory": true, "requiresNonNullAssistantContent": true}),
    );
    let b = build(&m);
    assert_eq!(b["tools"], json!([]));
    assert_eq!(b["messages"][2]["content"], "");
}
