//! OpenAI Chat Completions framing.

use std::collections::BTreeMap;

use filo_testkit::{MockProvider, Protocol, Reply, Stop, Usage};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::sse::{Event, parse};
use super::{ask_with, body_for, rich_reply, stream_of};

const P: Protocol = Protocol::OpenAiCompletions;

fn chunks(events: &[Event]) -> Vec<Value> {
    let (last, rest) = events.split_last().unwrap();
    assert_eq!(last.data, "[DONE]", "the stream ends with [DONE]");
    assert!(events.iter().all(|e| e.event.is_none()), "no event names");
    rest.iter().map(Event::json).collect()
}

fn delta(chunk: &Value) -> &Value {
    &chunk["choices"][0]["delta"]
}

#[tokio::test]
async fn text_reply_ends_with_finish_reason_usage_chunk_and_done() {
    let reply = Reply::text("Hello there, world").with_usage(Usage::new(12, 5).with_cache(3, 2));
    let chunks = chunks(&stream_of(P, reply).await);
    assert_eq!(chunks.len(), 6, "role, 3 words, finish, usage");
    for c in &chunks {
        assert_eq!(c["object"], "chat.completion.chunk");
        assert_eq!(c["id"], "chatcmpl-mock-1");
        assert_eq!(c["model"], super::MODEL);
    }
    assert_eq!(
        delta(&chunks[0]),
        &json!({"role": "assistant", "content": ""})
    );
    let text: String = chunks[1..4]
        .iter()
        .map(|c| delta(c)["content"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Hello there, world");
    for c in &chunks[..5] {
        assert!(
            c["usage"].is_null() && c.get("usage").is_some(),
            "usage: null on every chunk"
        );
    }
    assert_eq!(chunks[3]["choices"][0]["finish_reason"], Value::Null);
    assert_eq!(chunks[4]["choices"][0]["finish_reason"], "stop");
    assert_eq!(delta(&chunks[4]), &json!({}));
    assert_eq!(chunks[5]["choices"], json!([]));
    let usage = &chunks[5]["usage"];
    assert_eq!(usage["prompt_tokens"], 15, "input + cache_read");
    assert_eq!(usage["prompt_tokens_details"]["cached_tokens"], 3);
    assert_eq!(usage["completion_tokens"], 5);
    assert_eq!(usage["total_tokens"], 20);
}

#[tokio::test]
async fn without_include_usage_no_usage_is_sent() {
    let mock =
        MockProvider::start(vec![Reply::text("hi").with_usage(Usage::new(1, 1)).into()]).await;
    let mut body = body_for(P);
    body.as_object_mut().unwrap().remove("stream_options");
    let resp = ask_with(&mock, P, &body).await;
    let chunks = chunks(&parse(&resp.body));
    assert_eq!(chunks.len(), 3, "role, word, finish");
    assert!(chunks.iter().all(|c| c.get("usage").is_none()));
    assert_eq!(chunks[2]["choices"][0]["finish_reason"], "stop");
}

#[tokio::test]
async fn parallel_tool_calls_interleave_their_argument_fragments() {
    let a = json!({"path": "/tmp/a", "pattern": "*.rs"});
    let b = json!({"command": "cargo test --quiet"});
    let reply = Reply::text("Two calls.")
        .with_tool_call("call_a", "find", a.clone())
        .with_tool_call("call_b", "bash", b.clone());
    let chunks = chunks(&stream_of(P, reply).await);
    let calls: Vec<&Value> = chunks
        .iter()
        .filter_map(|c| delta(c).get("tool_calls"))
        .map(|t| {
            assert_eq!(
                t.as_array().unwrap().len(),
                1,
                "one tool-call delta per chunk"
            );
            &t[0]
        })
        .collect();
    assert_eq!(
        calls[0],
        &json!({"index": 0, "id": "call_a", "type": "function", "function": {"name": "find", "arguments": ""}})
    );
    assert_eq!(
        calls[1],
        &json!({"index": 1, "id": "call_b", "type": "function", "function": {"name": "bash", "arguments": ""}})
    );
    let order: Vec<u64> = calls[2..]
        .iter()
        .map(|c| c["index"].as_u64().unwrap())
        .collect();
    assert_eq!(&order[..4], [0, 1, 0, 1], "fragments interleaved");
    assert!(
        calls[2..].iter().all(|c| c.get("id").is_none()),
        "fragments name the call by index"
    );
    let mut args: BTreeMap<u64, String> = BTreeMap::new();
    for c in &calls {
        let index = c["index"].as_u64().unwrap();
        args.entry(index)
            .or_default()
            .push_str(c["function"]["arguments"].as_str().unwrap());
    }
    assert_eq!(args[&0], a.to_string());
    assert_eq!(args[&1], b.to_string());
    let finish = chunks
        .iter()
        .find(|c| !c["choices"][0]["finish_reason"].is_null())
        .unwrap();
    assert_eq!(finish["choices"][0]["finish_reason"], "tool_calls");
}

#[tokio::test]
async fn thinking_uses_the_field_its_signature_names() {
    for (signature, field) in [
        ("reasoning_content", "reasoning_content"),
        ("reasoning", "reasoning"),
        ("reasoning_text", "reasoning_text"),
        ("opaque-sig", "reasoning_content"),
    ] {
        let chunks =
            chunks(&stream_of(P, Reply::thinking("Think hard.", signature).with_text("Ok")).await);
        let thought: String = chunks
            .iter()
            .filter_map(|c| delta(c).get(field).and_then(Value::as_str))
            .collect();
        assert_eq!(thought, "Think hard.", "{signature}");
        assert_eq!(
            delta(&chunks[3])["content"],
            "Ok",
            "role, 2 thinking words, then text"
        );
    }
}

#[tokio::test]
async fn finish_reasons_map_to_the_api_values() {
    for (stop, want) in [
        (Stop::Stop, "stop"),
        (Stop::Length, "length"),
        (Stop::ToolUse, "tool_calls"),
    ] {
        let chunks = chunks(&stream_of(P, Reply::text("x").with_stop(stop)).await);
        assert_eq!(chunks[2]["choices"][0]["finish_reason"], want);
    }
}

#[test]
fn full_stream_snapshot() {
    let frames = filo_testkit::frames(P, &rich_reply(), &super::ctx_for(P, 1));
    insta::assert_snapshot!(String::from_utf8(filo_testkit::encode(P, &frames)).unwrap());
}
