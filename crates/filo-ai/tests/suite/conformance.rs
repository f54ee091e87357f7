//! The happy half of the grid: every codec against the mock.

use filo_ai::{ContentBlock, StopReason, StreamOptions, ThinkingLevel};
use filo_testkit::{Block, MockProvider, Protocol, Reply, Turn, Usage};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::common::{PROTOCOLS, collect, model, user};

#[tokio::test]
async fn plain_text() {
    for protocol in PROTOCOLS {
        let mock = MockProvider::start(vec![Turn::text("Hello there, how are you today?")]).await;
        let m = model(protocol, &mock);
        let (events, msg) = collect(
            &m,
            &user("hi"),
            &StreamOptions::default(),
            CancellationToken::new(),
        )
        .await;
        assert_eq!(
            msg.stop_reason,
            StopReason::Stop,
            "{protocol:?}: {:?}",
            msg.error_message
        );
        assert_eq!(msg.content.len(), 1, "{protocol:?}");
        assert_eq!(msg.text(), "Hello there, how are you today?");
        assert_eq!(
            (msg.api.as_str(), msg.model.as_str()),
            (m.api.as_str(), m.id.as_str())
        );
        let deltas = events.iter().filter(|e| e.kind() == "text_delta").count();
        assert!(
            deltas > 1,
            "{protocol:?}: streamed word by word, got {deltas}"
        );
        assert_eq!(mock.remaining(), 0);
        assert_eq!(mock.requests()[0].protocol, protocol);
    }
}

#[tokio::test]
async fn response_id_as_each_protocol_sends_it() {
    for protocol in PROTOCOLS {
        let mock = MockProvider::start(vec![
            Turn::text("first"),
            Turn::Reply(Reply::tool_call("call_1", "ls", json!({"path": "."}))),
        ])
        .await;
        let m = model(protocol, &mock);
        for n in 1..=2 {
            let (events, msg) = collect(
                &m,
                &user("hi"),
                &StreamOptions::default(),
                CancellationToken::new(),
            )
            .await;
            // Anthropic: message_start's message.id; Chat Completions: the chunk id; Responses:
            // response.id; Google: the chunk's responseId.
            let want = match protocol {
                Protocol::AnthropicMessages => Some(format!("msg_mock_{n}")),
                Protocol::OpenAiCompletions => Some(format!("chatcmpl-mock-{n}")),
                Protocol::OpenAiResponses | Protocol::AzureOpenAiResponses => {
                    Some(format!("resp_mock_{n}"))
                }
                Protocol::GoogleGenerativeAi | Protocol::GoogleVertex => {
                    Some(format!("mock-response-{n}"))
                }
                Protocol::MistralConversations => Some(format!("mistral-mock-{n}")),
                // ConverseStream carries no response id (pi sets none).
                Protocol::BedrockConverseStream => None,
            };
            assert_eq!(msg.response_id, want, "{protocol:?}");
            let Some(filo_ai::AssistantEvent::Start { message }) = events.first() else {
                panic!("{protocol:?}")
            };
            assert_eq!(
                message.response_id, msg.response_id,
                "{protocol:?}: in the partial too"
            );
            let json = serde_json::to_value(&msg).unwrap();
            assert_eq!(
                json.get("responseId").and_then(serde_json::Value::as_str),
                want.as_deref(),
                "{protocol:?}"
            );
        }
    }
}

#[tokio::test]
async fn thinking_with_signature() {
    for protocol in PROTOCOLS {
        let sig = match protocol {
            Protocol::OpenAiCompletions => "reasoning_content",
            _ => "c2lnbmF0dXJlLWJ5dGVzLzEyMys=",
        };
        let reply = Reply::default()
            .with_block(Block::Thinking {
                text: "Let me think about it.".into(),
                signature: sig.into(),
            })
            .with_block(Block::Text("Done thinking.".into()));
        let mock = MockProvider::start(vec![Turn::Reply(reply)]).await;
        let m = model(protocol, &mock);
        let opts = StreamOptions {
            reasoning: ThinkingLevel::High,
            ..StreamOptions::default()
        };
        let (_, msg) = collect(&m, &user("think"), &opts, CancellationToken::new()).await;
        assert_eq!(
            msg.stop_reason,
            StopReason::Stop,
            "{protocol:?}: {:?}",
            msg.error_message
        );
        // Mistral's role chunk opens an empty text block first, as it does in pi.
        let first = usize::from(protocol == Protocol::MistralConversations);
        let ContentBlock::Thinking(t) = &msg.content[first] else {
            panic!("{protocol:?}: {msg:?}")
        };
        assert_eq!(t.thinking, "Let me think about it.", "{protocol:?}");
        if protocol == Protocol::MistralConversations {
            // Mistral carries no thinking signature.
            assert_eq!(t.thinking_signature, None);
            assert_eq!(msg.content[first + 1].as_text(), Some("Done thinking."));
            continue;
        }
        let got = t.thinking_signature.clone().unwrap();
        match protocol {
            Protocol::OpenAiResponses | Protocol::AzureOpenAiResponses => {
                let item: Value = serde_json::from_str(&got).unwrap();
                assert_eq!(item["type"], "reasoning");
                assert_eq!(item["encrypted_content"], sig);
            }
            _ => assert_eq!(got, sig, "{protocol:?}"),
        }
        assert_eq!(msg.content[1].as_text(), Some("Done thinking."));
    }
}

#[tokio::test]
async fn parallel_tool_calls_with_interleaved_argument_deltas() {
    for protocol in PROTOCOLS {
        let long = "x".repeat(60);
        let reply = Reply::tool_call(
            "call_1",
            "read",
            json!({"path": "src/main.rs", "note": long}),
        )
        .with_block(Block::ToolCall {
            id: "call_2".into(),
            name: "ls".into(),
            arguments: json!({"path": ".", "limit": 20}),
        });
        let mock = MockProvider::start(vec![Turn::Reply(reply)]).await;
        let m = model(protocol, &mock);
        let (events, msg) = collect(
            &m,
            &user("go"),
            &StreamOptions::default(),
            CancellationToken::new(),
        )
        .await;
        assert_eq!(
            msg.stop_reason,
            StopReason::ToolUse,
            "{protocol:?}: {:?}",
            msg.error_message
        );
        let calls: Vec<_> = msg.tool_calls().collect();
        assert_eq!(calls.len(), 2, "{protocol:?}");
        assert!(
            calls[0].id.starts_with("call_1"),
            "{protocol:?}: {}",
            calls[0].id
        );
        assert!(
            calls[1].id.starts_with("call_2"),
            "{protocol:?}: {}",
            calls[1].id
        );
        assert_eq!(calls[0].name, "read");
        assert_eq!(
            calls[0].arguments,
            json!({"path": "src/main.rs", "note": long})
        );
        assert_eq!(calls[1].arguments, json!({"path": ".", "limit": 20}));
        let ends = events.iter().filter(|e| e.kind() == "toolcall_end").count();
        assert_eq!(ends, 2, "{protocol:?}");
    }
}

#[tokio::test]
async fn usage_from_the_final_chunk() {
    for protocol in PROTOCOLS {
        let reply = Reply::text("Counting tokens.").with_usage(Usage {
            input: 1200,
            output: 80,
            cache_read: 300,
            cache_write: 40,
        });
        let mock = MockProvider::start(vec![Turn::Reply(reply)]).await;
        let m = model(protocol, &mock);
        let (_, msg) = collect(
            &m,
            &user("count"),
            &StreamOptions::default(),
            CancellationToken::new(),
        )
        .await;
        let u = msg.usage;
        let expected = match protocol {
            // Anthropic and Bedrock report cache writes; the others report none.
            Protocol::AnthropicMessages | Protocol::BedrockConverseStream => (1200, 80, 300, 40),
            Protocol::OpenAiCompletions
            | Protocol::OpenAiResponses
            | Protocol::GoogleGenerativeAi
            | Protocol::AzureOpenAiResponses
            | Protocol::GoogleVertex => (1200, 80, 300, 0),
            // Mistral reports no cache figures: cached prompt tokens count as input.
            Protocol::MistralConversations => (1500, 80, 0, 0),
        };
        assert_eq!(
            (u.input, u.output, u.cache_read, u.cache_write),
            expected,
            "{protocol:?}"
        );
        assert!(u.total_tokens >= u.input + u.output, "{protocol:?}");
        let c = m.cost;
        #[allow(clippy::cast_precision_loss)]
        let want = (c.input * u.input as f64
            + c.output * u.output as f64
            + c.cache_read * u.cache_read as f64
            + c.cache_write * u.cache_write as f64)
            / 1e6;
        assert!((u.cost.total - want).abs() < 1e-12, "{protocol:?}");
        assert!(u.cost.total > 0.0);
    }
}

#[tokio::test]
async fn complete_returns_the_final_message() {
    let mock = MockProvider::start(vec![
        Turn::text("All done."),
        Turn::Fault(filo_testkit::Fault::http(400)),
    ])
    .await;
    let m = model(Protocol::OpenAiResponses, &mock);
    let client = super::common::client();
    let ok = filo_ai::complete(
        &client,
        &m,
        &user("x"),
        &StreamOptions::default(),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(
        (ok.stop_reason, ok.text().as_str()),
        (StopReason::Stop, "All done.")
    );
    let failed = filo_ai::complete(
        &client,
        &m,
        &user("x"),
        &StreamOptions::default(),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(failed.stop_reason, StopReason::Error);
    assert!(failed.error_message.unwrap().starts_with("400 "));
}
