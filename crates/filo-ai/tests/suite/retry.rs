//! Requests per failure, `retry-after` in all its forms, bodies that are not event streams.

use std::time::{Duration, Instant, SystemTime};

use filo_ai::StreamOptions;
use filo_testkit::{Fault, MockProvider, Protocol, Turn};
use tokio_util::sync::CancellationToken;

use super::common::{PROTOCOLS, collect, model, user};

fn raw(status: u16, headers: &[(&str, &str)]) -> Turn {
    Turn::Fault(Fault::Raw {
        status,
        headers: headers
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect(),
        body: r#"{"error":{"message":"slow down"}}"#.into(),
    })
}

#[tokio::test]
async fn retry_after_ms_and_http_dates_are_honoured_on_every_attempt() {
    // An HTTP-date has whole seconds: this one is more than 2 s after the start of the test.
    let in_three_seconds = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(3));
    let mock = MockProvider::start(vec![
        raw(429, &[("retry-after-ms", "300"), ("retry-after", "100")]),
        raw(503, &[("retry-after", in_three_seconds.as_str())]),
        Turn::text("finally"),
    ])
    .await;
    let m = model(Protocol::OpenAiCompletions, &mock);
    let started = Instant::now();
    let (_, msg) = collect(
        &m,
        &user("x"),
        &StreamOptions::default(),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(msg.text(), "finally", "{:?}", msg.error_message);
    assert_eq!(mock.requests().len(), 3);
    // The second wait lasts until the date, which is more than 2 s after the start; the test
    // client's own backoff is at most 50 ms, so only honouring the date explains the wait.
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "waited only {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_persistent_429_costs_max_retries_plus_one_requests_and_says_so() {
    for protocol in PROTOCOLS {
        let mock = MockProvider::start(vec![Turn::Fault(Fault::http(429)); 5]).await;
        let m = model(protocol, &mock);
        let (_, msg) = collect(
            &m,
            &user("x"),
            &StreamOptions::default(),
            CancellationToken::new(),
        )
        .await;
        assert_eq!(mock.requests().len(), 3, "{protocol:?}: 2 retries");
        assert_eq!(
            msg.error_status,
            Some(429),
            "{protocol:?}: the status is kept through retries"
        );
        let text = msg.error_message.unwrap();
        let start = match protocol {
            Protocol::GoogleGenerativeAi | Protocol::GoogleVertex => r#"{"error":{"code":429,"#,
            Protocol::MistralConversations => "Mistral API error (429): ",
            // pi's name for Bedrock's ThrottlingException (x-amzn-errortype).
            Protocol::BedrockConverseStream => "Throttling error: mock provider: HTTP 429",
            _ => "429 ",
        };
        assert!(text.starts_with(start), "{text}");
        assert!(text.ends_with(" (gave up after 3 requests)"), "{text}");
        assert!(filo_ai::error::client_gave_up(&text));

        let opts = StreamOptions {
            max_retries: Some(0),
            ..StreamOptions::default()
        };
        let before = mock.requests().len();
        let (_, msg) = collect(&m, &user("x"), &opts, CancellationToken::new()).await;
        assert_eq!(mock.requests().len(), before + 1, "{protocol:?}: no retry");
        assert_eq!(msg.error_status, Some(429));
        let text = msg.error_message.unwrap();
        assert!(!filo_ai::error::client_gave_up(&text), "{text}");
    }
}

#[tokio::test]
async fn a_later_retry_after_above_the_cap_fails_at_once_with_the_requested_delay() {
    let mock = MockProvider::start(vec![
        raw(429, &[("retry-after", "0")]),
        raw(429, &[("retry-after", "3600")]),
        Turn::text("never"),
    ])
    .await;
    let m = model(Protocol::AnthropicMessages, &mock);
    let opts = StreamOptions {
        max_retry_delay_ms: Some(2000),
        ..StreamOptions::default()
    };
    let (_, msg) = collect(&m, &user("x"), &opts, CancellationToken::new()).await;
    assert_eq!(mock.requests().len(), 2);
    let text = msg.error_message.unwrap();
    assert!(
        text.starts_with("Server requested 3600s retry delay (max: 2s). 429 "),
        "{text}"
    );
    assert!(filo_ai::error::client_gave_up(&text));
}

#[tokio::test]
async fn a_200_whose_body_is_not_an_event_stream_is_a_provider_error() {
    for protocol in PROTOCOLS {
        let json_200 = Fault::Raw {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: r#"{"error":"upstream misconfigured"}"#.into(),
        };
        let mock =
            MockProvider::start(vec![Turn::Fault(Fault::html_page()), json_200.into()]).await;
        let m = model(protocol, &mock);
        let (_, msg) = collect(
            &m,
            &user("x"),
            &StreamOptions::default(),
            CancellationToken::new(),
        )
        .await;
        let text = msg.error_message.unwrap();
        assert_eq!(
            text,
            "Provider answered HTTP 200 with content-type `text/html; charset=utf-8` instead of \
             an event stream; the body starts: <!DOCTYPE html><html><head><title>Sign in</title>\
             </head><body>Please sign in to continue.</body></html>",
            "{protocol:?}"
        );
        assert_eq!(mock.requests().len(), 1, "{protocol:?}: not retried");
        let (_, msg) = collect(
            &m,
            &user("x"),
            &StreamOptions::default(),
            CancellationToken::new(),
        )
        .await;
        assert_eq!(
            msg.error_message.as_deref(),
            Some(
                "Provider answered HTTP 200 with content-type `application/json` instead of an \
                 event stream; the body starts: {\"error\":\"upstream misconfigured\"}"
            ),
            "{protocol:?}"
        );
    }
}

#[tokio::test]
async fn a_refused_connection_names_each_cause_once() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mock = MockProvider::start(vec![]).await;
    let mut m = model(Protocol::OpenAiCompletions, &mock);
    m.base_url = format!("http://127.0.0.1:{port}/v1");
    let opts = StreamOptions {
        max_retries: Some(0),
        ..StreamOptions::default()
    };
    let (_, msg) = collect(&m, &user("x"), &opts, CancellationToken::new()).await;
    let text = msg.error_message.unwrap();
    assert!(text.starts_with("Connection error: "), "{text}");
    let parts: Vec<&str> = text.split(": ").collect();
    for (i, p) in parts.iter().enumerate() {
        assert!(
            !parts[i + 1..]
                .iter()
                .any(|q| q.contains(p) || p.contains(q)),
            "`{p}` repeats in {text}"
        );
    }
}

#[tokio::test]
async fn an_html_error_page_is_summarised_and_retried_by_status() {
    let page = format!(
        "<html><head><title>502 Bad Gateway</title></head><body>{}</body></html>",
        "<p>nginx</p>".repeat(2000)
    );
    let bad_gateway = || {
        Turn::Fault(Fault::Raw {
            status: 502,
            headers: vec![("content-type".into(), "text/html".into())],
            body: page.clone(),
        })
    };
    let mock = MockProvider::start(vec![bad_gateway(), bad_gateway(), bad_gateway()]).await;
    let m = model(Protocol::OpenAiResponses, &mock);
    let (_, msg) = collect(
        &m,
        &user("x"),
        &StreamOptions::default(),
        CancellationToken::new(),
    )
    .await;
    assert_eq!(mock.requests().len(), 3, "502 is retried");
    let text = msg.error_message.unwrap();
    assert!(
        text.starts_with(&format!(
            "502 (HTML page, {} bytes, content-type `text/html`) <html><head><title>502 Bad Gateway",
            page.len()
        )),
        "{text}"
    );
    assert!(text.len() < 400, "{} bytes: {text}", text.len());
    assert!(text.ends_with("(gave up after 3 requests)"), "{text}");
}
