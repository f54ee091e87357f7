//! Test modules plus the helpers they share.

mod anthropic;
mod bedrock;
mod client;
mod completions;
mod faults;
mod google;
mod responses;
mod roundtrip;
mod server;
mod sse;

use filo_testkit::{MockProvider, Protocol, Reply, StreamContext, Usage};
use serde_json::{Value, json};

pub use client::RawResponse;

/// The model every request names.
pub const MODEL: &str = "mock-model-1";

/// A typical request body for `protocol` (Chat Completions asks for the usage chunk).
pub fn body_for(protocol: Protocol) -> Value {
    match protocol {
        Protocol::AnthropicMessages => json!({
            "model": MODEL, "max_tokens": 1024, "stream": true,
            "messages": [{"role": "user", "content": "hi"}],
        }),
        Protocol::OpenAiCompletions => json!({
            "model": MODEL, "stream": true, "stream_options": {"include_usage": true},
            "messages": [{"role": "user", "content": "hi"}],
        }),
        Protocol::MistralConversations => json!({
            "model": MODEL, "stream": true,
            "messages": [{"role": "user", "content": "hi"}],
        }),
        Protocol::OpenAiResponses | Protocol::AzureOpenAiResponses => json!({
            "model": MODEL, "stream": true, "store": false,
            "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
        }),
        Protocol::GoogleGenerativeAi | Protocol::GoogleVertex => json!({
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        }),
        Protocol::BedrockConverseStream => json!({
            "messages": [{"role": "user", "content": [{"text": "hi"}]}],
        }),
    }
}

/// The context the mock derives from [`body_for`] for the `n`-th request.
pub fn ctx_for(protocol: Protocol, n: usize) -> StreamContext {
    StreamContext {
        model: MODEL.to_owned(),
        include_usage: protocol == Protocol::OpenAiCompletions,
        request_number: n,
    }
}

/// Post [`body_for`] `protocol` to the mock.
pub async fn ask(mock: &MockProvider, protocol: Protocol) -> RawResponse {
    ask_with(mock, protocol, &body_for(protocol)).await
}

pub async fn ask_with(mock: &MockProvider, protocol: Protocol, body: &Value) -> RawResponse {
    client::post(
        mock.addr(),
        &protocol.request_path(MODEL),
        &[],
        &body.to_string(),
    )
    .await
}

/// Thinking, text and two tool calls, with every usage figure set.
pub fn rich_reply() -> Reply {
    Reply::thinking("Let me look around.", "sig-abc123==")
        .with_text("I will list both directories.")
        .with_tool_call("call_1", "ls", json!({"path": "/tmp/a", "limit": 10}))
        .with_tool_call("call_2", "ls", json!({"path": "/tmp/bé", "limit": 20}))
        .with_usage(Usage::new(120, 45).with_cache(30, 7))
}

/// Answer one request for `reply` in `protocol`, checking the HTTP envelope.
pub async fn stream_of(protocol: Protocol, reply: Reply) -> Vec<sse::Event> {
    let mock = MockProvider::start(vec![reply.into()]).await;
    let resp = ask(&mock, protocol).await;
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert!(resp.complete, "stream body not terminated");
    assert!(
        resp.header("content-type")
            .unwrap()
            .starts_with("text/event-stream")
    );
    assert!(sse::ends_cleanly(&resp.body));
    sse::parse(&resp.body)
}
