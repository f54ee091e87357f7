//! Shared helpers: models pointed at the mock, a client with test timings, stream collection.

use std::time::Duration;

use filo_ai::{
    Accumulator, AssistantEvent, AssistantMessage, Client, Context, Env, Model, ModelClient,
    ProviderRegistry, RetryPolicy, StreamOptions,
};
use filo_testkit::{MockProvider, Protocol};
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

pub const PROTOCOLS: [Protocol; 8] = [
    Protocol::AnthropicMessages,
    Protocol::OpenAiCompletions,
    Protocol::OpenAiResponses,
    Protocol::GoogleGenerativeAi,
    Protocol::AzureOpenAiResponses,
    Protocol::GoogleVertex,
    Protocol::MistralConversations,
    Protocol::BedrockConverseStream,
];

/// pi 0.73.1's catalog entry (`models.generated.js`) for the APIs filo's built-in catalog does
/// not list yet.
pub fn pi_catalog_model(protocol: Protocol) -> Option<Model> {
    let entry = match protocol {
        Protocol::AzureOpenAiResponses => serde_json::json!({
            "id": "gpt-5", "name": "GPT-5", "api": "azure-openai-responses",
            "provider": "azure", "baseUrl": "", "reasoning": true,
            "thinkingLevelMap": {"off": null}, "input": ["text", "image"],
            "cost": {"input": 1.25, "output": 10, "cacheRead": 0.125, "cacheWrite": 0},
            "contextWindow": 400000, "maxTokens": 128000
        }),
        Protocol::GoogleVertex => serde_json::json!({
            "id": "gemini-2.5-flash", "name": "Gemini 2.5 Flash (Vertex)", "api": "google-vertex",
            "provider": "google-vertex", "baseUrl": "https://{location}-aiplatform.googleapis.com",
            "reasoning": true, "input": ["text", "image"],
            "cost": {"input": 0.3, "output": 2.5, "cacheRead": 0.03, "cacheWrite": 0},
            "contextWindow": 1048576, "maxTokens": 65536
        }),
        Protocol::MistralConversations => serde_json::json!({
            "id": "magistral-medium-latest", "name": "Magistral Medium (latest)",
            "api": "mistral-conversations", "provider": "mistral",
            "baseUrl": "https://api.mistral.ai", "reasoning": true, "input": ["text"],
            "cost": {"input": 2, "output": 5, "cacheRead": 0, "cacheWrite": 0},
            "contextWindow": 128000, "maxTokens": 16384
        }),
        Protocol::BedrockConverseStream => serde_json::json!({
            "id": "us.anthropic.claude-sonnet-4-20250514-v1:0", "name": "Claude Sonnet 4 (US)",
            "api": "bedrock-converse-stream", "provider": "amazon-bedrock",
            "baseUrl": "https://bedrock-runtime.us-east-1.amazonaws.com", "reasoning": true,
            "input": ["text", "image"],
            "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75},
            "contextWindow": 200000, "maxTokens": 64000
        }),
        Protocol::AnthropicMessages
        | Protocol::OpenAiCompletions
        | Protocol::OpenAiResponses
        | Protocol::GoogleGenerativeAi => return None,
    };
    Some(serde_json::from_value(entry).unwrap())
}

/// A catalog model of the protocol, pointed at the mock.
pub fn model(protocol: Protocol, mock: &MockProvider) -> Model {
    if let Some(mut m) = pi_catalog_model(protocol) {
        m.base_url = mock.base_url(protocol);
        return m;
    }
    let (provider, id) = match protocol {
        Protocol::AnthropicMessages => ("anthropic", "claude-sonnet-4-5"),
        Protocol::OpenAiCompletions => ("groq", "openai/gpt-oss-120b"),
        Protocol::OpenAiResponses => ("openai", "gpt-5"),
        Protocol::GoogleGenerativeAi => ("google", "gemini-2.5-flash"),
        Protocol::AzureOpenAiResponses
        | Protocol::GoogleVertex
        | Protocol::MistralConversations
        | Protocol::BedrockConverseStream => unreachable!("from pi's catalog above"),
    };
    let mut m = ProviderRegistry::builtin()
        .unwrap()
        .model(provider, id)
        .unwrap();
    m.base_url = mock.base_url(protocol);
    m
}

/// The AWS credentials Bedrock calls are signed with (AWS's documentation example).
pub const AWS_KEY_ID: &str = "AKIDEXAMPLE";
pub const AWS_SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

pub fn env() -> Env {
    Env::from_vars([
        ("ANTHROPIC_API_KEY", "sk-ant-test"),
        ("GROQ_API_KEY", "gsk-test"),
        ("OPENAI_API_KEY", "sk-openai-test"),
        ("GEMINI_API_KEY", "gemini-test"),
        ("AZURE_OPENAI_API_KEY", "azure-test"),
        ("GOOGLE_CLOUD_API_KEY", "vertex-test"),
        ("MISTRAL_API_KEY", "mistral-test"),
        ("AWS_ACCESS_KEY_ID", AWS_KEY_ID),
        ("AWS_SECRET_ACCESS_KEY", AWS_SECRET),
    ])
}

/// A real HTTP client with fast retries. Its idle timeout is generous (a loaded CI machine may
/// pause a healthy stream); the idle-timeout test asks for 200 ms through `StreamOptions`.
pub fn client() -> Client {
    Client::new(ProviderRegistry::builtin().unwrap(), env())
        .unwrap()
        .with_retry(RetryPolicy {
            max_retries: 2,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(50),
        })
        .with_idle_timeout(Duration::from_secs(10))
}

pub fn user(text: &str) -> Context {
    serde_json::from_value(serde_json::json!({
        "messages": [{"role": "user", "content": text, "timestamp": 1}]
    }))
    .unwrap()
}

/// Collect a stream, check the contract (Start first, exactly one terminal last, a consumer
/// accumulator agrees with the terminal message) and return events and final message.
pub async fn collect(
    model: &Model,
    ctx: &Context,
    options: &StreamOptions,
    cancel: CancellationToken,
) -> (Vec<AssistantEvent>, AssistantMessage) {
    let events: Vec<AssistantEvent> = client().stream(model, ctx, options, cancel).collect().await;
    let msg = check(&events);
    (events, msg)
}

pub fn check(events: &[AssistantEvent]) -> AssistantMessage {
    // A call that failed before the provider answered is its error alone.
    if let [AssistantEvent::Error { message }] = events {
        assert!(message.content.is_empty(), "{events:?}");
        return message.clone();
    }
    let Some(AssistantEvent::Start { message }) = events.first() else {
        panic!("no Start first: {events:?}");
    };
    assert_eq!(
        events.iter().filter(|e| e.is_terminal()).count(),
        1,
        "{events:?}"
    );
    let last = events.last().unwrap();
    let mut acc = Accumulator::new(message.clone());
    for e in &events[..events.len() - 1] {
        assert!(!e.is_terminal());
        acc.apply(e);
    }
    let (AssistantEvent::Done { message: fin } | AssistantEvent::Error { message: fin }) = last
    else {
        panic!("last event not terminal: {last:?}");
    };
    assert_eq!(acc.partial().content, fin.content);
    fin.clone()
}
