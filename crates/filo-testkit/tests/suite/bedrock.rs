//! Bedrock's binary event stream, read back with a decoder written here from the format
//! (prelude, both CRC-32s, string headers), independent of the crate's encoder.

use filo_testkit::{Fault, MockProvider, Protocol, frames};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{ask, ctx_for, rich_reply};

const P: Protocol = Protocol::BedrockConverseStream;

#[derive(Debug, PartialEq)]
struct Message {
    headers: Vec<(String, String)>,
    payload: String,
}

impl Message {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

fn be32(b: &[u8]) -> usize {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize
}

/// Split a body into messages, checking both checksums of each.
fn decode(mut body: &[u8]) -> Vec<Message> {
    let mut out = Vec::new();
    while !body.is_empty() {
        let total = be32(body);
        let headers_len = be32(&body[4..]);
        assert_eq!(
            crc32fast::hash(&body[..8]) as usize,
            be32(&body[8..]),
            "prelude CRC"
        );
        assert_eq!(
            crc32fast::hash(&body[..total - 4]) as usize,
            be32(&body[total - 4..]),
            "message CRC"
        );
        let mut h = &body[12..12 + headers_len];
        let mut headers = Vec::new();
        while !h.is_empty() {
            let n = usize::from(h[0]);
            let name = String::from_utf8(h[1..1 + n].to_vec()).unwrap();
            assert_eq!(h[1 + n], 7, "string headers only");
            let len = usize::from(u16::from_be_bytes([h[2 + n], h[3 + n]]));
            let value = String::from_utf8(h[4 + n..4 + n + len].to_vec()).unwrap();
            headers.push((name, value));
            h = &h[4 + n + len..];
        }
        let payload = String::from_utf8(body[12 + headers_len..total - 4].to_vec()).unwrap();
        out.push(Message { headers, payload });
        body = &body[total..];
    }
    out
}

#[tokio::test]
async fn a_reply_is_an_event_stream_with_valid_checksums() {
    let mock = MockProvider::start(vec![rich_reply().into()]).await;
    let resp = ask(&mock, P).await;
    assert_eq!(resp.status, 200);
    assert!(resp.complete);
    assert_eq!(
        resp.header("content-type"),
        Some("application/vnd.amazon.eventstream")
    );
    let messages = decode(&resp.bytes);
    let want = frames(P, &rich_reply(), &ctx_for(P, 1));
    assert_eq!(messages.len(), want.len());
    for (m, f) in messages.iter().zip(&want) {
        assert_eq!(m.header(":message-type"), Some("event"));
        assert_eq!(m.header(":content-type"), Some("application/json"));
        assert_eq!(m.header(":event-type"), f.event.as_deref());
        assert_eq!(m.payload, f.data);
    }
    let kinds: Vec<&str> = messages
        .iter()
        .filter_map(|m| m.header(":event-type"))
        .collect();
    assert_eq!(kinds.first(), Some(&"messageStart"));
    assert_eq!(&kinds[kinds.len() - 2..], ["messageStop", "metadata"]);
    let last: Value = serde_json::from_str(&messages.last().unwrap().payload).unwrap();
    assert_eq!(
        last["usage"],
        json!({"inputTokens": 120, "outputTokens": 45, "totalTokens": 202,
               "cacheReadInputTokens": 30, "cacheWriteInputTokens": 7})
    );
    // The signature follows the thinking text, the tool input arrives in fragments.
    let sig = messages
        .iter()
        .find(|m| m.payload.contains("\"signature\""))
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&sig.payload).unwrap(),
        json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "sig-abc123=="}}})
    );
    let input: String = messages
        .iter()
        .filter_map(|m| serde_json::from_str::<Value>(&m.payload).ok())
        .filter(|v| v["contentBlockIndex"] == 3)
        .filter_map(|v| {
            v.pointer("/delta/toolUse/input")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(input, json!({"path": "/tmp/bé", "limit": 20}).to_string());
    // The model id in the path is percent-decoded.
    assert_eq!(mock.requests()[0].protocol, P);
}

#[tokio::test]
async fn an_error_event_is_an_exception_message() {
    let fault = Fault::ErrorEvent {
        after_events: 3,
        reply: rich_reply(),
        message: "Overloaded".to_owned(),
    };
    let mock = MockProvider::start(vec![fault.into()]).await;
    let resp = ask(&mock, P).await;
    let messages = decode(&resp.bytes);
    assert_eq!(messages.len(), 4);
    let e = &messages[3];
    assert_eq!(e.header(":message-type"), Some("exception"));
    assert_eq!(
        e.header(":exception-type"),
        Some("serviceUnavailableException")
    );
    assert_eq!(e.header(":event-type"), None);
    assert_eq!(e.payload, r#"{"message":"Overloaded"}"#);
}

#[tokio::test]
async fn a_malformed_frame_has_valid_checksums_and_cut_json() {
    let fault = Fault::Malformed {
        after_events: 2,
        reply: rich_reply(),
    };
    let mock = MockProvider::start(vec![fault.into()]).await;
    let resp = ask(&mock, P).await;
    let mut messages = decode(&resp.bytes);
    let broken = messages.remove(2);
    assert!(serde_json::from_str::<Value>(&broken.payload).is_err());
    assert_eq!(broken.header(":event-type"), Some("contentBlockDelta"));
    assert_eq!(
        messages.len(),
        frames(P, &rich_reply(), &ctx_for(P, 1)).len()
    );
}

#[tokio::test]
async fn the_model_id_comes_from_the_path() {
    let mock = MockProvider::start(vec![rich_reply().into()]).await;
    let path = P.request_path("us.anthropic.claude-sonnet-4-20250514-v1:0");
    assert_eq!(
        path,
        "/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0/converse-stream"
    );
    let resp = super::client::post(mock.addr(), &path, &[], "{}").await;
    assert_eq!(resp.status, 200);
    assert_eq!(mock.requests()[0].raw_body, b"{}");
}
