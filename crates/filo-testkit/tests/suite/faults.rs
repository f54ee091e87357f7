//! Every fault, in every protocol.

use std::time::{Duration, Instant};

use filo_testkit::{Fault, MockProvider, Protocol, SseFrame, encode, frames};
use pretty_assertions::assert_eq;
use serde_json::Value;
use tokio::io::AsyncReadExt;

use super::sse::{Event, parse};
use super::{MODEL, ask, body_for, client, ctx_for, rich_reply};

/// The frames the mock sends for [`rich_reply`] as the first request of `p`.
fn rich_frames(p: Protocol) -> Vec<SseFrame> {
    frames(p, &rich_reply(), &ctx_for(p, 1))
}

fn as_events(frames: &[SseFrame]) -> Vec<Event> {
    frames
        .iter()
        .map(|f| Event {
            event: f.event.clone(),
            data: f.data.clone(),
        })
        .collect()
}

async fn one(p: Protocol, fault: Fault) -> client::RawResponse {
    let mock = MockProvider::start(vec![fault.into()]).await;
    ask(&mock, p).await
}

#[tokio::test]
async fn http_429_has_retry_after_and_the_protocol_error_body() {
    for p in Protocol::ALL {
        let resp = one(p, Fault::rate_limited(7)).await;
        assert_eq!(resp.status, 429, "{p:?}");
        assert_eq!(resp.header("retry-after"), Some("7"));
        assert_eq!(resp.header("content-type"), Some("application/json"));
        let body = resp.json();
        match p {
            Protocol::AnthropicMessages => {
                assert_eq!(body["type"], "error");
                assert_eq!(body["error"]["type"], "rate_limit_error");
            }
            Protocol::OpenAiCompletions
            | Protocol::OpenAiResponses
            | Protocol::AzureOpenAiResponses => {
                assert_eq!(body["error"]["code"], "rate_limit_exceeded");
                assert!(body["error"]["message"].is_string());
            }
            Protocol::GoogleGenerativeAi | Protocol::GoogleVertex => {
                assert_eq!(body["error"]["code"], 429);
                assert_eq!(body["error"]["status"], "RESOURCE_EXHAUSTED");
                assert_eq!(body["error"]["details"][0]["retryDelay"], "7s");
            }
            Protocol::MistralConversations => {
                assert_eq!(body["object"], "error");
                assert_eq!(body["type"], "rate_limited");
            }
            Protocol::BedrockConverseStream => {
                assert!(body["message"].is_string());
                assert_eq!(
                    resp.header("x-amzn-errortype"),
                    Some(
                        "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"
                    )
                );
            }
        }
    }
}

#[tokio::test]
async fn http_500_and_529_bodies_name_the_failure() {
    for p in Protocol::ALL {
        let resp = one(p, Fault::http(500)).await;
        assert_eq!(resp.status, 500);
        assert_eq!(resp.header("retry-after"), None);
        let body = resp.json();
        let kind = match p {
            Protocol::AnthropicMessages => &body["error"]["type"],
            Protocol::OpenAiCompletions
            | Protocol::OpenAiResponses
            | Protocol::AzureOpenAiResponses => &body["error"]["type"],
            Protocol::GoogleGenerativeAi | Protocol::GoogleVertex => &body["error"]["status"],
            Protocol::MistralConversations => &body["type"],
            Protocol::BedrockConverseStream => {
                let kind = resp.header("x-amzn-errortype").unwrap_or_default();
                assert!(kind.starts_with("InternalServerException:"), "{kind}");
                assert!(body["message"].is_string());
                continue;
            }
        };
        let want = [
            "api_error",
            "server_error",
            "INTERNAL",
            "internal_server_error",
        ];
        assert!(want.contains(&kind.as_str().unwrap()), "{p:?}: {body}");
    }
    let resp = one(Protocol::AnthropicMessages, Fault::overloaded()).await;
    assert_eq!(resp.status, 529);
    assert_eq!(resp.json()["error"]["type"], "overloaded_error");
}

#[tokio::test]
async fn a_scripted_body_is_sent_verbatim_and_a_bad_status_is_reported() {
    let body = r#"{"error":{"message":"prompt is too long: 250000 tokens > 200000 maximum"}}"#;
    let fault = Fault::Http {
        status: 400,
        retry_after: None,
        body: Some(body.to_owned()),
    };
    let resp = one(Protocol::AnthropicMessages, fault).await;
    assert_eq!((resp.status, resp.body.as_str()), (400, body));
    let resp = one(Protocol::OpenAiCompletions, Fault::http(1000)).await;
    assert_eq!(resp.status, 500);
    assert!(resp.body.contains("1000"), "{}", resp.body);
}

#[tokio::test]
async fn error_event_follows_the_first_frames_and_ends_the_stream() {
    for p in Protocol::SSE {
        let fault = Fault::ErrorEvent {
            after_events: 3,
            reply: rich_reply(),
            message: "Overloaded".to_owned(),
        };
        let resp = one(p, fault).await;
        assert_eq!(resp.status, 200);
        assert!(resp.complete, "{p:?}: the HTTP body ends properly");
        let events = parse(&resp.body);
        assert_eq!(events.len(), 4, "{p:?}");
        assert_eq!(events[..3], as_events(&rich_frames(p)[..3]));
        let error = &events[3];
        let j = error.json();
        match p {
            Protocol::AnthropicMessages => {
                assert_eq!(error.event.as_deref(), Some("error"));
                assert_eq!(j["error"]["type"], "overloaded_error");
                assert_eq!(j["error"]["message"], "Overloaded");
            }
            Protocol::OpenAiCompletions => {
                assert_eq!(error.event, None);
                assert_eq!(j["error"]["message"], "Overloaded");
            }
            Protocol::OpenAiResponses | Protocol::AzureOpenAiResponses => {
                assert_eq!(error.event.as_deref(), Some("response.failed"));
                assert_eq!(j["response"]["status"], "failed");
                assert_eq!(j["response"]["error"]["message"], "Overloaded");
                assert_eq!(j["sequence_number"], 3);
            }
            Protocol::GoogleGenerativeAi | Protocol::GoogleVertex => {
                assert_eq!(j["error"]["status"], "UNAVAILABLE");
                assert_eq!(j["error"]["message"], "Overloaded");
            }
            Protocol::MistralConversations => {
                assert_eq!(error.event, None);
                assert_eq!(j["object"], "error");
                assert_eq!(j["message"], "Overloaded");
            }
            Protocol::BedrockConverseStream => unreachable!("binary: see the bedrock module"),
        }
    }
}

#[tokio::test]
async fn cut_closes_the_connection_without_ending_the_body() {
    for p in Protocol::ALL {
        let resp = one(
            p,
            Fault::Cut {
                after_events: 4,
                reply: rich_reply(),
            },
        )
        .await;
        assert_eq!(resp.status, 200);
        assert!(!resp.complete, "{p:?}: no chunked terminator after a cut");
        assert_eq!(resp.bytes, encode(p, &rich_frames(p)[..4]), "{p:?}");
    }
}

#[tokio::test]
async fn after_events_beyond_the_reply_sends_the_whole_reply_first() {
    let p = Protocol::OpenAiCompletions;
    let resp = one(
        p,
        Fault::Cut {
            after_events: 10_000,
            reply: rich_reply(),
        },
    )
    .await;
    assert!(!resp.complete);
    assert_eq!(resp.bytes, encode(p, &rich_frames(p)));
}

#[tokio::test]
async fn malformed_frame_is_inserted_and_the_stream_goes_on() {
    for p in Protocol::SSE {
        let resp = one(
            p,
            Fault::Malformed {
                after_events: 2,
                reply: rich_reply(),
            },
        )
        .await;
        assert!(resp.complete);
        let mut events = parse(&resp.body);
        let broken = events.remove(2);
        assert!(
            serde_json::from_str::<Value>(&broken.data).is_err(),
            "{p:?}: {}",
            broken.data
        );
        assert!(broken.data.starts_with('{'));
        assert_eq!(
            events,
            as_events(&rich_frames(p)),
            "{p:?}: the reply is otherwise intact"
        );
    }
}

#[tokio::test]
async fn stall_goes_silent_then_sends_the_rest() {
    futures::future::join_all(Protocol::ALL.map(stall_in)).await;
}

async fn stall_in(p: Protocol) {
    let stall = Duration::from_millis(400);
    let all = rich_frames(p);
    let fault = Fault::Stall {
        after_events: 2,
        reply: rich_reply(),
        stall,
    };
    let mock = MockProvider::start(vec![fault.into()]).await;
    let started = Instant::now();
    let body = body_for(p).to_string();
    let mut conn = client::send(mock.addr(), "POST", &p.request_path(MODEL), &[], &body).await;
    let second = p.encode_frame(&all[1]);
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    while !raw.windows(second.len()).any(|w| w == second.as_slice()) {
        let read = tokio::time::timeout(Duration::from_secs(5), conn.read(&mut buf)).await;
        let n = read.unwrap().unwrap();
        assert!(n > 0, "{p:?}: closed before the stall");
        raw.extend_from_slice(&buf[..n]);
    }
    let silent = tokio::time::timeout(Duration::from_millis(100), conn.read(&mut buf)).await;
    assert!(silent.is_err(), "{p:?}: nothing arrives during the stall");
    raw.extend(client::read_raw(&mut conn).await);
    assert!(started.elapsed() >= stall);
    let full = client::parse(&raw);
    assert!(full.complete);
    assert_eq!(full.bytes, encode(p, &all), "{p:?}");
}

#[tokio::test]
async fn raw_faults_send_status_headers_and_body_as_given() {
    for p in Protocol::ALL {
        let resp = one(p, Fault::html_page()).await;
        assert_eq!(resp.status, 200, "{p:?}");
        assert_eq!(
            resp.header("content-type"),
            Some("text/html; charset=utf-8")
        );
        assert!(resp.body.starts_with("<!DOCTYPE html>"), "{}", resp.body);
        let dated = Fault::Raw {
            status: 429,
            headers: vec![
                ("retry-after".into(), "Wed, 21 Oct 2015 07:28:00 GMT".into()),
                ("retry-after-ms".into(), "1500".into()),
            ],
            body: "{}".into(),
        };
        let resp = one(p, dated).await;
        assert_eq!(resp.status, 429);
        assert_eq!(
            resp.header("retry-after"),
            Some("Wed, 21 Oct 2015 07:28:00 GMT")
        );
        assert_eq!(resp.header("retry-after-ms"), Some("1500"));
        assert_eq!(resp.body, "{}");
    }
}

#[tokio::test]
async fn raw_tool_call_arguments_are_sent_verbatim() {
    let cut = r#"{"command":"echo one; rm -rf /tmp/filo-"#;
    for p in Protocol::ALL {
        let reply = filo_testkit::Reply::empty()
            .with_raw_tool_call("call_1", "bash", cut)
            .with_stop(filo_testkit::Stop::Length);
        let sent =
            String::from_utf8_lossy(&encode(p, &frames(p, &reply, &ctx_for(p, 1)))).into_owned();
        match p {
            // Google carries arguments as an object: the cut text makes the frame malformed.
            Protocol::GoogleGenerativeAi | Protocol::GoogleVertex => {
                assert!(sent.contains(&format!("\"args\":{cut}")), "{sent}");
            }
            // The others stream the text in fragments; no fragment crosses a frame.
            Protocol::AnthropicMessages
            | Protocol::OpenAiCompletions
            | Protocol::OpenAiResponses
            | Protocol::AzureOpenAiResponses
            | Protocol::MistralConversations
            | Protocol::BedrockConverseStream => {
                let fragments: String = frames(p, &reply, &ctx_for(p, 1))
                    .iter()
                    .filter_map(SseFrame::json_data)
                    .filter_map(|v| {
                        [
                            "/delta/partial_json",
                            "/choices/0/delta/tool_calls/0/function/arguments",
                            "/delta",
                            "/delta/toolUse/input",
                        ]
                        .iter()
                        .find_map(|ptr| v.pointer(ptr).and_then(Value::as_str).map(str::to_owned))
                        .filter(|_| {
                            v["type"] != "response.output_text.delta"
                                && v.pointer("/choices/0/delta/content").is_none()
                        })
                    })
                    .collect();
                assert_eq!(fragments, cut, "{p:?}");
            }
        }
    }
}
