//! The failing half of the grid: errors, silence, broken frames, rate limits, aborts.

use std::time::{Duration, Instant};

use filo_ai::ModelClient;
use filo_ai::{AssistantEvent, ContentBlock, StopReason, StreamOptions};
use filo_testkit::{Fault, MockProvider, Protocol, Reply, Turn};
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::common::{PROTOCOLS, check, client, collect, model, user};

fn long_reply() -> Reply {
    Reply::text("one two three four five six seven eight nine ten eleven twelve")
}

#[tokio::test]
async fn error_event_mid_stream_keeps_partial_content() {
    for protocol in PROTOCOLS {
        let fault = Fault::ErrorEvent {
            after_events: 7,
            reply: long_reply(),
            message: "Overloaded".into(),
        };
        let mock = MockProvider::start(vec![Turn::Fault(fault)]).await;
        let m = model(protocol, &mock);
        let (_, msg) = collect(
            &m,
            &user("x"),
            &StreamOptions::default(),
            CancellationToken::new(),
        )
        .await;
        assert_eq!(msg.stop_reason, StopReason::Error, "{protocol:?}");
        let text = msg.error_message.clone().unwrap();
        assert!(text.contains("Overloaded"), "{protocol:?}: {text}");
        let partial = msg
            .content
            .first()
            .and_then(ContentBlock::as_text)
            .unwrap_or_default();
        assert!(
            !partial.is_empty() && partial.len() < 60,
            "{protocol:?}: {partial:?}"
        );
        // Bedrock's stream carries no response id.
        assert!(
            protocol == Protocol::BedrockConverseStream
                || msg
                    .response_id
                    .as_deref()
                    .is_some_and(|id| id.ends_with("1")),
            "{protocol:?}: the failed message keeps the response id: {:?}",
            msg.response_id
        );
        assert_eq!(
            mock.requests().len(),
            1,
            "{protocol:?}: no retry after content was streamed"
        );
    }
}

#[tokio::test]
async fn idle_timeout_on_a_silent_stream() {
    for protocol in PROTOCOLS {
        let fault = Fault::Stall {
            after_events: 3,
            reply: long_reply(),
            stall: Duration::from_secs(5),
        };
        let mock = MockProvider::start(vec![Turn::Fault(fault)]).await;
        let m = model(protocol, &mock);
        let started = Instant::now();
        let (_, msg) = collect(
            &m,
            &user("x"),
            &StreamOptions {
                idle_timeout: Some(Duration::from_millis(200)),
                ..StreamOptions::default()
            },
            CancellationToken::new(),
        )
        .await;
        assert!(started.elapsed() < Duration::from_secs(3), "{protocol:?}");
        assert_eq!(msg.stop_reason, StopReason::Error, "{protocol:?}");
        assert!(
            msg.error_message.unwrap().contains("idle timeout"),
            "{protocol:?}"
        );
    }
}

/// The idle timeout is the longest silence, not the stream's length: a stream that trickles one
/// frame every 120 ms for well over the 300 ms limit completes.
#[tokio::test]
async fn a_slow_stream_whose_gaps_stay_under_the_idle_timeout_completes() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut request = Vec::new();
        let mut buf = [0u8; 4096];
        // The request's headers and body (small): read until the body's length is in.
        loop {
            let n = socket.read(&mut buf).await.unwrap();
            request.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&request);
            if let Some(end) = text.find("\r\n\r\n") {
                let length = text
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse::<usize>().unwrap())
                    })
                    .unwrap_or(0);
                if request.len() >= end + 4 + length {
                    break;
                }
            }
        }
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        socket.write_all(head.as_bytes()).await.unwrap();
        let chunk = |delta: serde_json::Value, finish: Option<&str>| {
            let frame = format!(
                "data: {}\n\n",
                serde_json::json!({"id": "c", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            );
            format!("{:x}\r\n{frame}\r\n", frame.len())
        };
        let mut frames = vec![chunk(
            serde_json::json!({"role": "assistant", "content": ""}),
            None,
        )];
        for word in ["one ", "two ", "three ", "four ", "five"] {
            frames.push(chunk(serde_json::json!({"content": word}), None));
        }
        frames.push(chunk(serde_json::json!({}), Some("stop")));
        frames.push("e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n".to_owned());
        for frame in frames {
            socket.write_all(frame.as_bytes()).await.unwrap();
            tokio::time::sleep(Duration::from_millis(120)).await;
        }
    });
    let mock = MockProvider::start(vec![]).await;
    let mut m = model(Protocol::OpenAiCompletions, &mock);
    m.base_url = format!("http://{addr}/v1");
    let started = Instant::now();
    let (_, msg) = collect(
        &m,
        &user("x"),
        &StreamOptions {
            idle_timeout: Some(Duration::from_millis(300)),
            ..StreamOptions::default()
        },
        CancellationToken::new(),
    )
    .await;
    assert!(
        started.elapsed() > Duration::from_millis(600),
        "the stream trickled"
    );
    assert_eq!(msg.stop_reason, StopReason::Stop, "{:?}", msg.error_message);
    assert_eq!(
        msg.content,
        vec![filo_ai::ContentBlock::text("one two three four five")]
    );
    server.await.unwrap();
}

#[tokio::test]
async fn malformed_frame_is_an_error() {
    for protocol in PROTOCOLS {
        let fault = Fault::Malformed {
            after_events: 3,
            reply: long_reply(),
        };
        let mock = MockProvider::start(vec![Turn::Fault(fault)]).await;
        let m = model(protocol, &mock);
        let (_, msg) = collect(
            &m,
            &user("x"),
            &StreamOptions::default(),
            CancellationToken::new(),
        )
        .await;
        assert_eq!(msg.stop_reason, StopReason::Error, "{protocol:?}");
        let text = msg.error_message.unwrap();
        assert!(
            text.starts_with("Malformed stream data"),
            "{protocol:?}: {text}"
        );
    }
}

#[tokio::test]
async fn rate_limited_then_success_honours_retry_after() {
    let runs = PROTOCOLS.map(|protocol| async move {
        let mock = MockProvider::start(vec![
            Turn::Fault(Fault::rate_limited(1)),
            Turn::text("after the wait"),
        ])
        .await;
        let m = model(protocol, &mock);
        let started = Instant::now();
        let (events, msg) = collect(
            &m,
            &user("x"),
            &StreamOptions::default(),
            CancellationToken::new(),
        )
        .await;
        assert!(
            started.elapsed() >= Duration::from_millis(950),
            "{protocol:?}: waited {:?}",
            started.elapsed()
        );
        assert_eq!(
            msg.stop_reason,
            StopReason::Stop,
            "{protocol:?}: {:?}",
            msg.error_message
        );
        assert_eq!(msg.text(), "after the wait");
        let reqs = mock.requests();
        assert_eq!(reqs.len(), 2);
        // The driver keeps the request and lends it to each attempt: the retry sends it again.
        assert_eq!(reqs[0].body, reqs[1].body, "{protocol:?}: the retried body");
        assert!(!reqs[0].body.is_null(), "{protocol:?}: a body was sent");
        assert_eq!(events.iter().filter(|e| e.kind() == "start").count(), 1);
    });
    futures::future::join_all(runs).await;
}

#[tokio::test]
async fn retry_after_above_the_cap_fails_at_once() {
    let mock = MockProvider::start(vec![Turn::Fault(Fault::rate_limited(30))]).await;
    let m = model(filo_testkit::Protocol::AnthropicMessages, &mock);
    let opts = StreamOptions {
        max_retry_delay_ms: Some(2000),
        ..StreamOptions::default()
    };
    let (_, msg) = collect(&m, &user("x"), &opts, CancellationToken::new()).await;
    let text = msg.error_message.unwrap();
    assert!(
        text.starts_with("Server requested 30s retry delay (max: 2s). 429 "),
        "{text}"
    );
}

#[tokio::test]
async fn overloaded_and_server_errors_retry_with_a_cap() {
    for protocol in PROTOCOLS {
        let mock = MockProvider::start(vec![
            Turn::Fault(Fault::overloaded()),
            Turn::Fault(Fault::http(500)),
            Turn::Fault(Fault::http(503)),
            Turn::text("never reached"),
        ])
        .await;
        let m = model(protocol, &mock);
        let (events, msg) = collect(
            &m,
            &user("x"),
            &StreamOptions::default(),
            CancellationToken::new(),
        )
        .await;
        assert_eq!(events.len(), 1, "{protocol:?}: the error alone, no Start");
        assert_eq!(
            mock.requests().len(),
            3,
            "{protocol:?}: first try + 2 retries"
        );
        // pi's wording: the status first, except Google's (the body as JSON).
        let text = msg.error_message.unwrap();
        let start = match protocol {
            Protocol::GoogleGenerativeAi | Protocol::GoogleVertex => r#"{"error":{"code":503,"#,
            Protocol::MistralConversations => "Mistral API error (503): ",
            // pi's name for Bedrock's ServiceUnavailableException.
            Protocol::BedrockConverseStream => "Service unavailable: mock provider: HTTP 503",
            _ => "503 ",
        };
        assert!(text.starts_with(start), "{protocol:?}: {text}");
        assert_eq!(msg.error_status, Some(503));
        // A 400 is not retried.
        let mock = MockProvider::start(vec![Turn::Fault(Fault::http(400)), Turn::text("x")]).await;
        let m = model(protocol, &mock);
        let (_, msg) = collect(
            &m,
            &user("x"),
            &StreamOptions::default(),
            CancellationToken::new(),
        )
        .await;
        assert_eq!(msg.error_status, Some(400), "{protocol:?}");
        assert_eq!(mock.remaining(), 1);
    }
}

#[tokio::test]
async fn cut_connection_is_an_error() {
    for protocol in PROTOCOLS {
        let fault = Fault::Cut {
            after_events: 7,
            reply: long_reply(),
        };
        let mock = MockProvider::start(vec![Turn::Fault(fault)]).await;
        let m = model(protocol, &mock);
        let (_, msg) = collect(
            &m,
            &user("x"),
            &StreamOptions::default(),
            CancellationToken::new(),
        )
        .await;
        assert_eq!(msg.stop_reason, StopReason::Error, "{protocol:?}");
        assert!(msg.error_message.is_some());
    }
}

#[tokio::test]
async fn abort_mid_stream_keeps_partial_content() {
    for protocol in PROTOCOLS {
        let fault = Fault::Stall {
            after_events: 7,
            reply: long_reply(),
            stall: Duration::from_secs(10),
        };
        let mock = MockProvider::start(vec![Turn::Fault(fault)]).await;
        let m = model(protocol, &mock);
        let cancel = CancellationToken::new();
        let opts = StreamOptions {
            idle_timeout: Some(Duration::from_secs(20)),
            ..StreamOptions::default()
        };
        let mut stream = client().stream(&m, &user("x"), &opts, cancel.clone());
        let mut events = Vec::new();
        let started = Instant::now();
        while let Some(e) = stream.next().await {
            // Mistral's role chunk opens the text with an empty delta; wait for real text.
            if matches!(&e, AssistantEvent::TextDelta { delta, .. } if !delta.is_empty()) {
                cancel.cancel();
            }
            events.push(e);
        }
        assert!(started.elapsed() < Duration::from_secs(5), "{protocol:?}");
        let msg = check(&events);
        assert_eq!(msg.stop_reason, StopReason::Aborted, "{protocol:?}");
        assert_eq!(msg.error_message.as_deref(), Some("Request was aborted"));
        assert!(!msg.text().is_empty(), "{protocol:?}");
        assert!(matches!(events.last(), Some(AssistantEvent::Error { .. })));
    }
}

#[tokio::test]
async fn missing_key_and_unknown_api() {
    let mock = MockProvider::start(vec![]).await;
    let m = model(filo_testkit::Protocol::AnthropicMessages, &mock);
    let c = filo_ai::Client::new(
        filo_ai::ProviderRegistry::builtin().unwrap(),
        filo_ai::Env::default(),
    )
    .unwrap();
    let events: Vec<_> = c
        .stream(
            &m,
            &user("x"),
            &StreamOptions::default(),
            CancellationToken::new(),
        )
        .collect()
        .await;
    let msg = check(&events);
    assert_eq!(
        msg.error_message.as_deref(),
        Some("No API key for provider: anthropic")
    );
    assert_eq!(msg.error_status, None, "no request, no status");
    let mut odd = m.clone();
    odd.api = "openai-codex-responses".into();
    let events: Vec<_> = c
        .stream(
            &odd,
            &user("x"),
            &StreamOptions::default(),
            CancellationToken::new(),
        )
        .collect()
        .await;
    assert_eq!(
        check(&events).error_message.as_deref(),
        Some("No API provider registered for api: openai-codex-responses")
    );
    assert!(mock.requests().is_empty());
}
