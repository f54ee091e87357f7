use std::collections::BTreeMap;

use serde_json::json;

use super::*;
use crate::client::StreamOptions;
use crate::message::{Context, StopReason};
use crate::testutil::{chunked, model, run, sse, user_ctx};
use crate::transport::FixtureResponse;

fn data(frames: &[serde_json::Value]) -> bytes::Bytes {
    let texts: Vec<String> = frames.iter().map(ToString::to_string).collect();
    let pairs: Vec<(&str, &str)> = texts.iter().map(|t| ("", t.as_str())).collect();
    sse(&pairs)
}

#[tokio::test]
async fn thoughts_text_and_calls() {
    let m = model("google", "google-generative-ai", "gemini-2.5-pro");
    let body = data(&[
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "think", "thought": true}]}}]}),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "ing", "thought": true, "thoughtSignature": "c2ln"}]}}]}),
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Answer"}]}}]}),
        json!({"candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": "read", "args": {"path": "a"}}, "thoughtSignature": "Zm4x"},
            {"functionCall": {"name": "read", "args": {"path": "b"}}}
        ]}, "finishReason": "STOP"}],
         "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 5, "thoughtsTokenCount": 3, "cachedContentTokenCount": 2, "totalTokenCount": 20}}),
    ]);
    let r = run(
        &m,
        &user_ctx("x"),
        vec![FixtureResponse::sse(chunked(&body, 17))],
    )
    .await;
    let msg = r.message;
    assert_eq!(msg.stop_reason, StopReason::ToolUse);
    let ContentBlock::Thinking(t) = &msg.content[0] else {
        panic!("{msg:?}")
    };
    assert_eq!(t.thinking, "thinking");
    assert_eq!(t.thinking_signature.as_deref(), Some("c2ln"));
    assert_eq!(msg.content[1], ContentBlock::text("Answer"));
    let calls: Vec<_> = msg.tool_calls().collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].thought_signature.as_deref(), Some("Zm4x"));
    assert_eq!(calls[1].arguments, json!({"path": "b"}));
    assert_ne!(calls[0].id, calls[1].id);
    assert!(calls[0].id.starts_with("read_"));
    assert_eq!(
        (
            msg.usage.input,
            msg.usage.output,
            msg.usage.cache_read,
            msg.usage.total_tokens
        ),
        (10, 8, 2, 20)
    );
}

#[tokio::test]
async fn finish_reasons_and_errors() {
    let m = model("google", "google-generative-ai", "gemini-2.5-flash");
    let chunk = |reason: &str| json!({"candidates": [{"content": {"parts": [{"text": "a"}]}, "finishReason": reason}]});
    let r = run(
        &m,
        &user_ctx("x"),
        vec![FixtureResponse::sse(vec![data(&[chunk("MAX_TOKENS")])])],
    )
    .await;
    assert_eq!(r.message.stop_reason, StopReason::Length);
    let r = run(
        &m,
        &user_ctx("x"),
        vec![FixtureResponse::sse(vec![data(&[chunk("SAFETY")])])],
    )
    .await;
    assert_eq!(
        r.message.error_message.as_deref(),
        Some("An unknown error occurred")
    );
    let err = json!({"error": {"code": 400, "message": "The input token count (2000000) exceeds the maximum number of tokens allowed (1048576).", "status": "INVALID_ARGUMENT"}});
    let r = run(
        &m,
        &user_ctx("x"),
        vec![FixtureResponse::sse(vec![data(&[err])])],
    )
    .await;
    assert!(
        crate::overflow::is_context_overflow(&r.message, None),
        "{:?}",
        r.message.error_message
    );
}

#[test]
fn request_contents_and_thinking() {
    let m = model("google", "google-generative-ai", "gemini-3-pro-preview");
    let ctx: Context = serde_json::from_value(json!({
        "systemPrompt": "sys",
        "messages": [
            {"role": "user", "content": "hi", "timestamp": 1},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "t", "thinkingSignature": "c2ln"},
                {"type": "text", "text": "a", "textSignature": "not base64!"},
                {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"p": 1}}
            ], "api": "google-generative-ai", "provider": "google", "model": "gemini-3-pro-preview", "usage": {}, "stopReason": "toolUse", "timestamp": 2},
            {"role": "toolResult", "toolCallId": "c1", "toolName": "read", "content": [{"type": "text", "text": "bad"}], "isError": true, "timestamp": 3}
        ],
        "tools": [{"name": "read", "description": "d", "parameters": {"type": "object"}}]
    }))
    .unwrap();
    let opts = StreamOptions {
        reasoning: ThinkingLevel::Medium,
        ..StreamOptions::default()
    };
    let headers = BTreeMap::new();
    let input = RequestInput {
        env: &crate::env::Env::default(),
        model: &m,
        context: &ctx,
        options: &opts,
        api_key: Some("gk"),
        provider_headers: &headers,
        now_ms: 0,
    };
    let req = build_request(&input);
    assert_eq!(
        req.url,
        "http://127.0.0.1:1/v1/models/gemini-3-pro-preview:streamGenerateContent?alt=sse"
    );
    assert_eq!(req.header("x-goog-api-key"), Some("gk"));
    let b = &req.body;
    assert_eq!(b["systemInstruction"], json!({"parts": [{"text": "sys"}]}));
    assert_eq!(
        b["contents"][1]["parts"],
        json!([
            {"thought": true, "text": "t", "thoughtSignature": "c2ln"},
            {"text": "a"},
            {"functionCall": {"name": "read", "args": {"p": 1}}, "thoughtSignature": SKIP_SIGNATURE}
        ])
    );
    assert_eq!(
        b["contents"][2]["parts"][0],
        json!({"functionResponse": {"name": "read", "response": {"error": "bad"}}})
    );
    assert_eq!(
        b["generationConfig"]["thinkingConfig"],
        json!({"includeThoughts": true, "thinkingLevel": "HIGH"})
    );
    assert_eq!(
        b["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"],
        json!({"type": "object"})
    );
}

#[test]
fn thinking_budgets() {
    let headers = BTreeMap::new();
    let ctx = user_ctx("x");
    let budget = |id: &str, level: ThinkingLevel| {
        let m = model("google", "google-generative-ai", id);
        let opts = StreamOptions {
            reasoning: level,
            ..StreamOptions::default()
        };
        let input = RequestInput {
            env: &crate::env::Env::default(),
            model: &m,
            context: &ctx,
            options: &opts,
            api_key: None,
            provider_headers: &headers,
            now_ms: 0,
        };
        thinking_config(&input)
    };
    assert_eq!(
        budget("gemini-2.5-pro", ThinkingLevel::High).unwrap()["thinkingBudget"],
        32768
    );
    assert_eq!(
        budget("gemini-2.5-flash", ThinkingLevel::Xhigh).unwrap()["thinkingBudget"],
        24576
    );
    assert_eq!(
        budget("gemini-2.0-flash-thinking", ThinkingLevel::Low).unwrap()["thinkingBudget"],
        -1
    );
    assert_eq!(
        budget("gemini-3-flash-preview", ThinkingLevel::Minimal).unwrap()["thinkingLevel"],
        "MINIMAL"
    );
    assert_eq!(budget("gemini-2.5-pro", ThinkingLevel::Off), None);
    assert!(is_base64_signature("c2ln"));
    assert!(!is_base64_signature("c2l"));
    assert!(!is_base64_signature("not base64!"));
}

#[tokio::test]
async fn response_id_is_the_first_non_empty_one() {
    let m = model("google", "google-generative-ai", "gemini-2.5-flash");
    let body = data(&[
        json!({"candidates": [{"content": {"parts": [{"text": "a"}]}}]}),
        json!({"responseId": "Zk8iaOuPD5bCz7IPs_ql0A0", "candidates": [{"content": {"parts": [{"text": "b"}]}}]}),
        json!({"responseId": "later", "candidates": [{"content": {"parts": [{"text": "c"}]}, "finishReason": "STOP"}]}),
    ]);
    let r = run(&m, &user_ctx("x"), vec![FixtureResponse::sse(vec![body])]).await;
    assert_eq!(r.message.text(), "abc");
    assert_eq!(
        r.message.response_id.as_deref(),
        Some("Zk8iaOuPD5bCz7IPs_ql0A0")
    );
}
