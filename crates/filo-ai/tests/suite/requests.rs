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
        Protocol::AzureOpenAiResponses => ("azure-openai-responses", "azure", "gpt-5"),
        Protocol::GoogleVertex => ("google-vertex", "google-vertex", "gemini-2.5-flash"),
        Protocol::MistralConversations => (
            "mistral-conversations",
            "mistral",
            "magistral-medium-latest",
        ),
        Protocol::BedrockConverseStream => (
            "bedrock-converse-stream",
            "amazon-bedrock",
            "us.anthropic.claude-sonnet-4-20250514-v1:0",
        ),
    };
    let (thinking_sig, call_id) = match protocol {
        Protocol::AnthropicMessages | Protocol::BedrockConverseStream => {
            ("EqQBCkYIBxgCKkBsig==".to_string(), "toolu_01A")
        }
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

/// A SigV4 `authorization` value without its date and signature (they change with the time;
/// `bedrock_requests_carry_a_valid_sigv4_signature` checks the signature itself).
fn stable(name: &str, value: &str) -> String {
    let Some(rest) = value
        .strip_prefix("AWS4-HMAC-SHA256 Credential=")
        .filter(|_| name == "authorization")
    else {
        return value.to_string();
    };
    let mut parts = rest.split(", ");
    let credential = parts.next().unwrap_or_default();
    let signed = parts.next().unwrap_or_default();
    let (key, scope) = credential.split_once('/').unwrap_or_default();
    let scope = scope.split_once('/').map_or("", |(_, s)| s);
    format!("AWS4-HMAC-SHA256 Credential={key}/<date>/{scope}, {signed}, Signature=<signature>")
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
        "x-amz-security-token",
    ];
    let mut headers: Vec<String> = req
        .headers
        .iter()
        .filter(|(k, _)| keep.contains(&k.as_str()))
        .map(|(k, v)| format!("{k}: {}", stable(k, v)))
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
            Protocol::BedrockConverseStream => "bedrock_converse_stream",
        };
        insta::assert_snapshot!(name, render(&req));
    }
}

/// The Bedrock request the mock received carries a SigV4 signature that verifies: recomputed
/// here from the recorded method, path, headers and raw body with the credentials the client
/// had (temporary ones, so `x-amz-security-token` is signed too).
#[tokio::test]
async fn bedrock_requests_carry_a_valid_sigv4_signature() {
    use filo_ai::aws_sigv4::{Credentials, Scope, Signable, authorization, sha256_hex};

    let p = Protocol::BedrockConverseStream;
    let mock = MockProvider::start(vec![Turn::text("ok")]).await;
    let m = model(p, &mock);
    let env = filo_ai::Env::from_vars([
        ("AWS_ACCESS_KEY_ID", super::common::AWS_KEY_ID),
        ("AWS_SECRET_ACCESS_KEY", super::common::AWS_SECRET),
        ("AWS_SESSION_TOKEN", "session-token-1"),
        ("AWS_REGION", "eu-west-3"),
    ]);
    let client = filo_ai::Client::new(filo_ai::ProviderRegistry::builtin().unwrap(), env).unwrap();
    let ctx = conversation(p);
    let msg = filo_ai::complete(
        &client,
        &m,
        &ctx,
        &StreamOptions::default(),
        CancellationToken::new(),
    )
    .await;
    assert!(msg.error_message.is_none(), "{:?}", msg.error_message);
    let req = mock.requests().remove(0);
    let hash = req.header("x-amz-content-sha256").unwrap();
    assert_eq!(
        hash,
        sha256_hex(&req.raw_body),
        "the signed hash is the body's"
    );
    assert_eq!(req.header("x-amz-security-token"), Some("session-token-1"));
    let auth = req.header("authorization").unwrap().to_string();
    let signed: Vec<&str> = auth
        .split("SignedHeaders=")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .unwrap()
        .split(';')
        .collect();
    assert_eq!(
        signed,
        [
            "content-type",
            "host",
            "x-amz-content-sha256",
            "x-amz-date",
            "x-amz-security-token"
        ]
    );
    let headers: Vec<(String, String)> = signed
        .iter()
        .map(|name| ((*name).to_string(), req.header(name).unwrap().to_string()))
        .collect();
    // The request time, back from x-amz-date.
    let date = req.header("x-amz-date").unwrap();
    let secs = filo_ai::aws_sigv4::parse_amz_date(date).expect("x-amz-date is a time");
    let credentials = Credentials {
        access_key_id: super::common::AWS_KEY_ID.into(),
        secret_access_key: super::common::AWS_SECRET.into(),
        session_token: Some("session-token-1".into()),
    };
    let want = authorization(
        &Signable {
            method: &req.method,
            path: &req.path,
            query: Vec::new(),
            headers: &headers,
            payload_hash: hash,
        },
        &Scope {
            credentials: &credentials,
            region: "eu-west-3",
            service: "bedrock",
            time: secs,
        },
    );
    assert_eq!(auth, want);
    assert!(auth.contains("/eu-west-3/bedrock/aws4_request"), "{auth}");
    // A wrong secret gives another signature: the check can fail.
    let wrong = Credentials {
        secret_access_key: "other".into(),
        ..credentials.clone()
    };
    let other = authorization(
        &Signable {
            method: &req.method,
            path: &req.path,
            query: Vec::new(),
            headers: &headers,
            payload_hash: hash,
        },
        &Scope {
            credentials: &wrong,
            region: "eu-west-3",
            service: "bedrock",
            time: secs,
        },
    );
    assert_ne!(auth, other);
}
