//! What goes on the wire, per codec: the recorded request (path, the headers that matter, body)
//! for one rich conversation, pinned as snapshots.

use filo_ai::{Context, StreamOptions, ThinkingLevel};
use filo_testkit::{MockProvider, Protocol, RecordedRequest, Turn};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::common::{PROTOCOLS, collect, model};

/// A conversation the model itself produced (so signatures replay), with an image, a tool round
/// trip with an error result, and a follow-up.
fn conversation(protocol: Protocol) -> Context {
    let m = match protocol {
        Protocol::AnthropicMessages => ("anthropic-messages", "anthropic", "claude-sonnet-4-5"),
        Protocol::OpenAiCompletions => ("openai-completions", "groq", "openai/gpt-oss-120b"),
        Protocol::OpenAiResponses => ("openai-responses", "openai", "gpt-5"),
        Protocol::GoogleGenerativeAi => ("google-generative-ai", "google", "gemini-2.5-flash"),
        Protocol::AzureOpenAiResponses => {
            ("azure-openai-responses", "azure-openai-responses", "gpt-5")
        }
        Protocol::GoogleVertex => ("google-vertex", "google-vertex", "gemini-2.5-flash"),
        Protocol::MistralConversations => (
            "mistral-conversations",
            "mistral",
            "magistral-medium-latest",
        ),
    };
    let (thinking_sig, call_id) = match protocol {
        Protocol::AnthropicMessages => ("EqQBCkYIBxgCKkBsig==".to_string(), "toolu_01A"),
        Protocol::OpenAiCompletions | Protocol::MistralConversations => {
            ("reasoning_content".to_string(), "call_01A")
        }
        Protocol::OpenAiResponses | Protocol::AzureOpenAiResponses => (
            json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Plan."}], "encrypted_content": "gAAAA"}).to_string(),
            "call_01A|fc_01A",
        ),
        Protocol::GoogleGenerativeAi | Protocol::GoogleVertex => {
            ("c2lnbmF0dXJl".to_string(), "read_1")
        }
    };
    serde_json::from_value(json!({
        "systemPrompt": "You are a careful coding agent.",
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "What is in this screenshot and in src/lib.rs?"},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
            ], "timestamp": 1},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "Plan.", "thinkingSignature": thinking_sig},
                {"type": "text", "text": "Reading the file."},
                {"type": "toolCall", "id": call_id, "name": "read", "arguments": {"path": "src/lib.rs"}}
            ], "api": m.0, "provider": m.1, "model": m.2,
             "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
             "stopReason": "toolUse", "timestamp": 2},
            {"role": "toolResult", "toolCallId": call_id, "toolName": "read",
             "content": [{"type": "text", "text": "ENOENT: no such file"}], "isError": true, "timestamp": 3},
            {"role": "user", "content": "Try lib/mod.rs instead.", "timestamp": 4}
        ],
        "tools": [{"name": "read", "description": "Read a file.", "parameters": {
            "type": "object", "properties": {"path": {"type": "string", "description": "File path"}},
            "required": ["path"]
        }}]
    }))
    .unwrap()
}

fn render(req: &RecordedRequest) -> String {
    let keep = [
        "content-type",
        "accept",
        "authorization",
        "x-api-key",
        "x-goog-api-key",
        "api-key",
        "anthropic-version",
        "anthropic-beta",
        "anthropic-dangerous-direct-browser-access",
        "x-team",
    ];
    let mut headers: Vec<String> = req
        .headers
        .iter()
        .filter(|(k, _)| keep.contains(&k.as_str()))
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    headers.sort();
    format!(
        "{} {}\n{}\n\n{}",
        req.method,
        req.path,
        headers.join("\n"),
        serde_json::to_string_pretty(&req.body).unwrap()
    )
}

#[tokio::test]
async fn request_bodies() {
    for protocol in PROTOCOLS {
        let mock = MockProvider::start(vec![Turn::text("ok")]).await;
        let mut m = model(protocol, &mock);
        m.headers = Some([("X-Team".to_string(), "filo".to_string())].into());
        let opts = StreamOptions {
            reasoning: ThinkingLevel::Medium,
            max_tokens: Some(4096),
            session_id: Some("session-1".into()),
            ..StreamOptions::default()
        };
        let (_, msg) = collect(&m, &conversation(protocol), &opts, CancellationToken::new()).await;
        assert!(
            msg.error_message.is_none(),
            "{protocol:?}: {:?}",
            msg.error_message
        );
        let req = mock.requests().remove(0);
        let name = match protocol {
            Protocol::AnthropicMessages => "anthropic_messages",
            Protocol::OpenAiCompletions => "openai_completions",
            Protocol::OpenAiResponses => "openai_responses",
            Protocol::GoogleGenerativeAi => "google_generative_ai",
            Protocol::AzureOpenAiResponses => "azure_openai_responses",
            Protocol::GoogleVertex => "google_vertex",
            Protocol::MistralConversations => "mistral_conversations",
        };
        insta::assert_snapshot!(name, render(&req));
    }
}
