//! Anthropic Messages framing.

use filo_testkit::{Protocol, Reply, Stop, Usage};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::sse::Event;
use super::{rich_reply, stream_of};

const P: Protocol = Protocol::AnthropicMessages;

fn names(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| e.event.clone().unwrap_or_default())
        .collect()
}

/// Concatenate the `field` of every delta of type `delta_type` for block `index`.
fn deltas(events: &[Event], index: u64, delta_type: &str, field: &str) -> (usize, String) {
    let parts: Vec<String> = events
        .iter()
        .map(Event::json)
        .filter(|j| j["type"] == "content_block_delta" && j["index"] == index)
        .filter(|j| j["delta"]["type"] == delta_type)
        .map(|j| j["delta"][field].as_str().unwrap().to_owned())
        .collect();
    (parts.len(), parts.concat())
}

#[tokio::test]
async fn text_reply_is_framed_like_the_messages_api() {
    let reply = Reply::text("Hello there, world").with_usage(Usage::new(12, 5).with_cache(3, 2));
    let events = stream_of(P, reply).await;
    assert_eq!(
        names(&events),
        [
            "message_start",
            "content_block_start",
            "ping",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );
    for e in &events {
        assert_eq!(
            e.event.as_deref(),
            Some(e.kind().as_str()),
            "event name = data.type"
        );
    }
    let start = events[0].json();
    assert_eq!(start["message"]["model"], super::MODEL);
    assert_eq!(start["message"]["role"], "assistant");
    assert_eq!(
        start["message"]["usage"],
        json!({"input_tokens": 12, "cache_creation_input_tokens": 2, "cache_read_input_tokens": 3, "output_tokens": 1})
    );
    assert_eq!(
        events[1].json()["content_block"],
        json!({"type": "text", "text": ""})
    );
    assert_eq!(
        deltas(&events, 0, "text_delta", "text"),
        (3, "Hello there, world".to_owned())
    );
    let delta = events[7].json();
    assert_eq!(delta["delta"]["stop_reason"], "end_turn");
    assert_eq!(delta["usage"], json!({"output_tokens": 5}));
}

#[tokio::test]
async fn thinking_streams_its_text_then_one_signature_delta() {
    let events = stream_of(
        P,
        Reply::thinking("I should greet.", "EqQBsig==").with_text("Hi"),
    )
    .await;
    let start = events[1].json();
    assert_eq!(start["content_block"]["type"], "thinking");
    assert_eq!(
        deltas(&events, 0, "thinking_delta", "thinking"),
        (3, "I should greet.".to_owned())
    );
    assert_eq!(
        deltas(&events, 0, "signature_delta", "signature"),
        (1, "EqQBsig==".to_owned())
    );
    let stop_at = events
        .iter()
        .position(|e| e.kind() == "content_block_stop")
        .unwrap();
    assert_eq!(
        events[stop_at - 1].json()["delta"]["type"],
        "signature_delta"
    );
    assert_eq!(
        deltas(&events, 1, "text_delta", "text"),
        (1, "Hi".to_owned())
    );
}

#[tokio::test]
async fn tool_use_arguments_arrive_in_fragments_that_concatenate() {
    let args = json!({"command": "ls -la /tmp", "timeout": 30});
    let reply = Reply::tool_call("toolu_01", "bash", args.clone()).with_tool_call(
        "toolu_02",
        "read",
        json!({"path": "ü.txt"}),
    );
    let events = stream_of(P, reply).await;
    let starts: Vec<Value> = events
        .iter()
        .map(Event::json)
        .filter(|j| j["type"] == "content_block_start")
        .map(|j| j["content_block"].clone())
        .collect();
    assert_eq!(
        starts,
        [
            json!({"type": "tool_use", "id": "toolu_01", "name": "bash", "input": {}}),
            json!({"type": "tool_use", "id": "toolu_02", "name": "read", "input": {}}),
        ]
    );
    let (count, joined) = deltas(&events, 0, "input_json_delta", "partial_json");
    assert!(count > 3, "several fragments, got {count}");
    assert_eq!(serde_json::from_str::<Value>(&joined).unwrap(), args);
    assert_eq!(joined, args.to_string());
    let first = events
        .iter()
        .map(Event::json)
        .find(|j| j["type"] == "content_block_delta")
        .unwrap();
    assert_eq!(
        first["delta"]["partial_json"], "",
        "the API opens with an empty fragment"
    );
    let (_, second) = deltas(&events, 1, "input_json_delta", "partial_json");
    assert_eq!(second, r#"{"path":"ü.txt"}"#);
    let stop = events.iter().find(|e| e.kind() == "message_delta").unwrap();
    assert_eq!(stop.json()["delta"]["stop_reason"], "tool_use");
}

#[tokio::test]
async fn stop_reasons_map_to_the_api_values() {
    for (stop, want) in [
        (Stop::Stop, "end_turn"),
        (Stop::Length, "max_tokens"),
        (Stop::ToolUse, "tool_use"),
    ] {
        let events = stream_of(P, Reply::text("x").with_stop(stop)).await;
        let delta = events.iter().find(|e| e.kind() == "message_delta").unwrap();
        assert_eq!(delta.json()["delta"]["stop_reason"], want);
    }
}

#[tokio::test]
async fn an_empty_reply_still_pings_and_stops() {
    let events = stream_of(P, Reply::empty()).await;
    assert_eq!(
        names(&events),
        ["message_start", "ping", "message_delta", "message_stop"]
    );
    assert_eq!(events[0].json()["message"]["usage"]["output_tokens"], 0);
}

#[test]
fn full_stream_snapshot() {
    let frames = filo_testkit::frames(P, &rich_reply(), &super::ctx_for(P, 1));
    insta::assert_snapshot!(String::from_utf8(filo_testkit::encode(P, &frames)).unwrap());
}
