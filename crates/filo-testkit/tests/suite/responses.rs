//! OpenAI Responses framing.

use filo_testkit::{Protocol, Reply, Stop, Usage};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::sse::Event;
use super::{rich_reply, stream_of};

const P: Protocol = Protocol::OpenAiResponses;

/// Every event's JSON, checking that `event:` equals `type` and sequence numbers count up.
fn typed(events: &[Event]) -> Vec<Value> {
    events
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let j = e.json();
            assert_eq!(e.event.as_deref(), j["type"].as_str(), "event name = type");
            assert_eq!(j["sequence_number"], i, "sequence_number");
            j
        })
        .collect()
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events.iter().map(|j| j["type"].as_str().unwrap()).collect()
}

fn joined(events: &[Value], kind: &str) -> String {
    events
        .iter()
        .filter(|j| j["type"] == kind)
        .map(|j| j["delta"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn text_reply_is_a_message_item_then_completed_with_usage() {
    let reply = Reply::text("Hello there, world").with_usage(Usage::new(12, 5).with_cache(3, 2));
    let events = typed(&stream_of(P, reply).await);
    assert_eq!(
        kinds(&events),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    assert_eq!(events[0]["response"]["status"], "in_progress");
    assert_eq!(events[0]["response"]["model"], super::MODEL);
    assert_eq!(
        joined(&events, "response.output_text.delta"),
        "Hello there, world"
    );
    assert_eq!(events[7]["text"], "Hello there, world");
    let done = &events[10]["response"];
    assert_eq!(done["status"], "completed");
    assert_eq!(
        done["usage"],
        json!({"input_tokens": 15, "input_tokens_details": {"cached_tokens": 3}, "output_tokens": 5,
               "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 20})
    );
    assert_eq!(
        done["output"][0]["content"][0]["text"],
        "Hello there, world"
    );
    assert_eq!(done["output"][0]["type"], "message");
}

#[tokio::test]
async fn thinking_is_a_reasoning_item_carrying_the_signature() {
    let events =
        typed(&stream_of(P, Reply::thinking("Look first.", "enc-sig").with_text("Ok")).await);
    assert_eq!(
        events[2]["item"],
        json!({"id": "rs_mock_1_0", "type": "reasoning", "summary": []})
    );
    assert_eq!(events[3]["type"], "response.reasoning_summary_part.added");
    assert_eq!(
        joined(&events, "response.reasoning_summary_text.delta"),
        "Look first."
    );
    let item_done = events
        .iter()
        .find(|j| j["type"] == "response.output_item.done")
        .unwrap();
    assert_eq!(item_done["item"]["encrypted_content"], "enc-sig");
    assert_eq!(
        item_done["item"]["summary"],
        json!([{"type": "summary_text", "text": "Look first."}])
    );
    let message = events
        .iter()
        .filter(|j| j["type"] == "response.output_item.added")
        .nth(1)
        .unwrap();
    assert_eq!(message["output_index"], 1);
    assert_eq!(message["item"]["type"], "message");
}

#[tokio::test]
async fn function_calls_stream_arguments_and_split_compound_ids() {
    let args = json!({"path": "src/lib.rs", "offset": 1, "limit": 200});
    let reply = Reply::tool_call("call_9|fc_9", "read", args.clone()).with_tool_call(
        "call_plain",
        "ls",
        json!({}),
    );
    let events = typed(&stream_of(P, reply).await);
    let added: Vec<&Value> = events
        .iter()
        .filter(|j| j["type"] == "response.output_item.added")
        .map(|j| &j["item"])
        .collect();
    assert_eq!(
        added[0],
        &json!({"id": "fc_9", "type": "function_call", "status": "in_progress", "arguments": "",
                "call_id": "call_9", "name": "read"})
    );
    assert_eq!(added[1]["call_id"], "call_plain");
    assert_eq!(added[1]["id"], "fc_mock_1_1");
    let first: Vec<&str> = events
        .iter()
        .filter(|j| j["type"] == "response.function_call_arguments.delta" && j["item_id"] == "fc_9")
        .map(|j| j["delta"].as_str().unwrap())
        .collect();
    assert!(first.len() > 3);
    assert_eq!(first.concat(), args.to_string());
    let done = events
        .iter()
        .find(|j| j["type"] == "response.function_call_arguments.done")
        .unwrap();
    assert_eq!(done["arguments"], args.to_string());
    let completed = events.last().unwrap();
    assert_eq!(completed["type"], "response.completed");
    assert_eq!(
        completed["response"]["output"][0]["arguments"],
        args.to_string()
    );
}

#[tokio::test]
async fn length_ends_with_response_incomplete() {
    let events = typed(&stream_of(P, Reply::text("cut").with_stop(Stop::Length)).await);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "response.incomplete");
    assert_eq!(last["response"]["status"], "incomplete");
    assert_eq!(
        last["response"]["incomplete_details"]["reason"],
        "max_output_tokens"
    );
}

#[test]
fn full_stream_snapshot() {
    let frames = filo_testkit::frames(P, &rich_reply(), &super::ctx_for(P, 1));
    insta::assert_snapshot!(String::from_utf8(filo_testkit::encode(P, &frames)).unwrap());
}
