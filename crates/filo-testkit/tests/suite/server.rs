//! The server: recording, script order across protocols, exhaustion, push, shutdown.

use std::time::Duration;

use filo_testkit::{EXHAUSTED_BODY, Fault, MockProvider, Protocol, Reply, Turn};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};

use super::{MODEL, ask, body_for, client, sse};

fn text_of(p: Protocol, body: &str) -> String {
    let events = sse::parse(body);
    let pick = |e: &sse::Event| -> Option<String> {
        let j: Value = serde_json::from_str(&e.data).ok()?;
        let piece = match p {
            Protocol::AnthropicMessages => j.pointer("/delta/text"),
            Protocol::OpenAiCompletions | Protocol::MistralConversations => {
                j.pointer("/choices/0/delta/content")
            }
            Protocol::OpenAiResponses | Protocol::AzureOpenAiResponses => {
                (j["type"] == "response.output_text.delta").then(|| &j["delta"])
            }
            Protocol::GoogleGenerativeAi | Protocol::GoogleVertex => {
                j.pointer("/candidates/0/content/parts/0/text")
            }
            Protocol::BedrockConverseStream => unreachable!("binary: see the bedrock module"),
        };
        piece.and_then(Value::as_str).map(str::to_owned)
    };
    events.iter().filter_map(pick).collect()
}

#[tokio::test]
async fn requests_are_recorded_with_lower_cased_headers_and_parsed_bodies() {
    let mock = MockProvider::start(vec![Turn::text("a"), Turn::text("b")]).await;
    let p = Protocol::AnthropicMessages;
    let headers = [
        ("X-Api-Key", "sk-test"),
        ("Anthropic-Version", "2023-06-01"),
    ];
    let resp = client::post(
        mock.addr(),
        "/v1/messages",
        &headers,
        &body_for(p).to_string(),
    )
    .await;
    assert_eq!(resp.status, 200);
    let g = Protocol::GoogleGenerativeAi;
    let path = g.request_path(MODEL);
    let resp = client::post(mock.addr(), &path, &[("x-goog-api-key", "g")], "not json").await;
    assert_eq!(resp.status, 200);
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let first = &requests[0];
    assert_eq!(first.method, "POST");
    assert_eq!(first.path, "/v1/messages");
    assert_eq!(first.protocol, p);
    assert_eq!(first.body, body_for(p));
    assert_eq!(first.header("x-api-key"), Some("sk-test"));
    assert_eq!(first.header("ANTHROPIC-VERSION"), Some("2023-06-01"));
    assert!(
        first
            .headers
            .iter()
            .all(|(n, _)| *n == n.to_ascii_lowercase())
    );
    assert!(
        first
            .headers
            .iter()
            .any(|(n, v)| n == "content-type" && v == "application/json")
    );
    let second = &requests[1];
    assert_eq!(
        second.path,
        "/v1beta/models/mock-model-1:streamGenerateContent?alt=sse"
    );
    assert_eq!(second.protocol, g);
    assert_eq!(
        second.body,
        Value::Null,
        "a body that is not JSON records as Null"
    );
}

#[tokio::test]
async fn one_script_serves_every_protocol_in_arrival_order() {
    let order = [
        Protocol::AnthropicMessages,
        Protocol::GoogleGenerativeAi,
        Protocol::OpenAiCompletions,
        Protocol::OpenAiResponses,
    ];
    let mock = MockProvider::start(vec![
        Turn::text("first answer"),
        Turn::text("second answer"),
        Turn::text("third answer"),
        Turn::text("fourth answer"),
    ])
    .await;
    assert_eq!(mock.remaining(), 4);
    let want = [
        "first answer",
        "second answer",
        "third answer",
        "fourth answer",
    ];
    for (p, text) in order.iter().zip(want) {
        let resp = ask(&mock, *p).await;
        assert_eq!(text_of(*p, &resp.body), text, "{p:?}");
    }
    assert_eq!(mock.remaining(), 0);
    let seen: Vec<Protocol> = mock.requests().iter().map(|r| r.protocol).collect();
    assert_eq!(seen, order);
}

#[tokio::test]
async fn an_exhausted_script_answers_500_until_a_turn_is_pushed() {
    let mock = MockProvider::start(Vec::new()).await;
    let p = Protocol::OpenAiCompletions;
    let resp = ask(&mock, p).await;
    assert_eq!(resp.status, 500);
    assert_eq!(resp.body, EXHAUSTED_BODY);
    assert_eq!(resp.json(), json!({"error": "mock script exhausted"}));
    mock.push(Turn::text("late answer"));
    mock.push(Fault::http(503));
    assert_eq!(mock.remaining(), 2);
    let resp = ask(&mock, p).await;
    assert_eq!(resp.status, 200);
    assert_eq!(text_of(p, &resp.body), "late answer");
    assert_eq!(ask(&mock, p).await.status, 503);
    assert_eq!(mock.remaining(), 0);
    assert_eq!(
        mock.requests().len(),
        3,
        "the exhausted request is recorded too"
    );
}

#[tokio::test]
async fn unknown_paths_and_methods_do_not_consume_turns() {
    let mock = MockProvider::start(vec![Turn::text("kept")]).await;
    let resp = client::post(mock.addr(), "/v2/complete", &[], "{}").await;
    assert_eq!(resp.status, 404);
    assert!(resp.body.contains("/v2/complete"), "{}", resp.body);
    assert!(mock.requests().is_empty(), "unknown paths are not recorded");
    let mut conn = client::send(mock.addr(), "GET", "/v1/responses", &[], "").await;
    let resp = client::read_all(&mut conn).await;
    assert_eq!(resp.status, 405);
    assert_eq!(mock.requests()[0].method, "GET");
    assert_eq!(mock.remaining(), 1);
}

#[tokio::test]
async fn base_urls_per_protocol() {
    let mock = MockProvider::start(Vec::new()).await;
    let url = mock.url();
    assert!(url.starts_with("http://127.0.0.1:"));
    assert_eq!(mock.base_url(Protocol::AnthropicMessages), url);
    assert_eq!(
        mock.base_url(Protocol::OpenAiResponses),
        format!("{url}/v1")
    );
    assert_eq!(
        mock.base_url(Protocol::GoogleGenerativeAi),
        format!("{url}/v1beta")
    );
}

#[tokio::test]
async fn dropping_the_mock_ends_a_stalled_stream_and_frees_the_port() {
    let stall = Fault::Stall {
        after_events: 1,
        reply: Reply::text("never finished"),
        stall: Duration::from_secs(60),
    };
    let mock = MockProvider::start(vec![stall.into()]).await;
    let addr = mock.addr();
    let p = Protocol::AnthropicMessages;
    let mut conn = client::send(
        addr,
        "POST",
        &p.request_path(MODEL),
        &[],
        &body_for(p).to_string(),
    )
    .await;
    let mut buf = [0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(5), conn.read(&mut buf))
        .await
        .unwrap()
        .unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).contains("message_start"));
    drop(mock);
    let rest = tokio::time::timeout(Duration::from_secs(5), client::read_raw(&mut conn)).await;
    assert!(
        rest.is_ok(),
        "the stalled connection is closed when the mock is dropped"
    );
    let mut refused = false;
    for _ in 0..100 {
        if TcpStream::connect(addr).await.is_err() {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(refused, "the listener is closed after drop");
}

#[tokio::test]
async fn shutdown_waits_until_the_port_is_free() {
    let mock = MockProvider::start(vec![Turn::text("x")]).await;
    let addr = mock.addr();
    mock.shutdown().await;
    assert!(TcpStream::connect(addr).await.is_err());
    let rebound = TcpListener::bind(addr).await;
    assert!(rebound.is_ok(), "the port can be bound again: {rebound:?}");
}

#[tokio::test]
async fn a_kept_alive_connection_serves_the_next_turn() {
    use tokio::io::AsyncWriteExt;
    let mock = MockProvider::start(vec![
        Fault::rate_limited(1).into(),
        Turn::text("after retry"),
    ])
    .await;
    let p = Protocol::OpenAiCompletions;
    let (addr, path, body) = (mock.addr(), p.request_path(MODEL), body_for(p).to_string());
    let mut conn = TcpStream::connect(addr).await.unwrap();
    let keep = client::request_text(addr, "POST", &path, &[], &body)
        .replace("Connection: close", "Connection: keep-alive");
    conn.write_all(keep.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    let first = loop {
        let n = tokio::time::timeout(Duration::from_secs(5), conn.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(n > 0, "the connection stays open after the 429");
        raw.extend_from_slice(&buf[..n]);
        if let Some(head_end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            let parsed = client::parse(&raw);
            if parsed.complete {
                assert_eq!(raw.len(), head_end + 4 + parsed.body.len());
                break parsed;
            }
        }
    };
    assert_eq!(first.status, 429);
    let again = client::request_text(addr, "POST", &path, &[], &body);
    conn.write_all(again.as_bytes()).await.unwrap();
    let second = client::read_all(&mut conn).await;
    assert_eq!(second.status, 200);
    assert_eq!(text_of(p, &second.body), "after retry");
    assert_eq!(mock.requests().len(), 2);
}

#[tokio::test]
async fn requests_that_do_not_ask_for_a_stream_get_400_without_consuming_a_turn() {
    let mock = MockProvider::start(vec![Turn::text("kept")]).await;
    for p in [
        Protocol::AnthropicMessages,
        Protocol::OpenAiCompletions,
        Protocol::OpenAiResponses,
    ] {
        let mut body = body_for(p);
        body["stream"] = json!(false);
        let resp = super::ask_with(&mock, p, &body).await;
        assert_eq!(resp.status, 400, "{p:?}");
        assert!(resp.body.contains("stream"), "{}", resp.body);
    }
    let path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent";
    let resp = client::post(
        mock.addr(),
        path,
        &[],
        &body_for(Protocol::GoogleGenerativeAi).to_string(),
    )
    .await;
    assert_eq!(resp.status, 400);
    assert!(resp.body.contains("alt=sse"), "{}", resp.body);
    assert_eq!(mock.requests().len(), 4, "recorded all the same");
    assert_eq!(mock.remaining(), 1);
    let ok = client::post(mock.addr(), &format!("{path}?key=k&alt=sse"), &[], "{}").await;
    assert_eq!(ok.status, 200);
    assert_eq!(mock.remaining(), 0);
}
