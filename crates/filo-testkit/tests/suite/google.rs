//! Google Generative AI framing.

use filo_testkit::{MockProvider, Protocol, Reply, Stop, Usage};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::sse::parse;
use super::{ask, rich_reply, stream_of};

const P: Protocol = Protocol::GoogleGenerativeAi;

fn parts(chunks: &[Value]) -> Vec<&Value> {
    chunks
        .iter()
        .flat_map(|c| c["candidates"][0]["content"]["parts"].as_array().unwrap())
        .collect()
}

async fn chunks_of(reply: Reply) -> Vec<Value> {
    let events = stream_of(P, reply).await;
    assert!(events.iter().all(|e| e.event.is_none()), "no event names");
    assert!(events.iter().all(|e| e.data != "[DONE]"), "no [DONE]");
    events.iter().map(|e| e.json()).collect()
}

#[tokio::test]
async fn text_chunks_use_crlf_and_the_last_carries_finish_and_usage() {
    let mock = MockProvider::start(vec![
        Reply::text("Hello there, world")
            .with_usage(Usage::new(12, 5).with_cache(3, 0))
            .into(),
    ])
    .await;
    let resp = ask(&mock, P).await;
    assert_eq!(resp.status, 200);
    assert!(resp.body.starts_with("data: {"));
    assert!(resp.body.contains("}\r\n\r\ndata: "), "CRLF line ends");
    assert!(resp.body.ends_with("}\r\n\r\n"));
    let chunks: Vec<Value> = parse(&resp.body).iter().map(|e| e.json()).collect();
    assert_eq!(chunks.len(), 3);
    let text: String = parts(&chunks)
        .iter()
        .map(|p| p["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Hello there, world");
    for c in &chunks[..2] {
        assert!(c["candidates"][0].get("finishReason").is_none());
        assert_eq!(
            c["usageMetadata"],
            json!({"promptTokenCount": 15, "totalTokenCount": 15, "cachedContentTokenCount": 3})
        );
        assert_eq!(c["candidates"][0]["content"]["role"], "model");
    }
    let last = &chunks[2];
    assert_eq!(last["candidates"][0]["finishReason"], "STOP");
    assert_eq!(
        last["usageMetadata"],
        json!({"promptTokenCount": 15, "candidatesTokenCount": 5, "totalTokenCount": 20,
               "cachedContentTokenCount": 3})
    );
    assert_eq!(
        last["modelVersion"],
        super::MODEL,
        "model taken from the path"
    );
}

#[tokio::test]
async fn thought_parts_carry_the_signature_on_their_last_part() {
    let chunks =
        chunks_of(Reply::thinking("Plan the answer.", "c2lnbmF0dXJl").with_text("Done")).await;
    let parts = parts(&chunks);
    assert_eq!(parts.len(), 4);
    assert!(parts[..3].iter().all(|p| p["thought"] == true));
    let thought: String = parts[..3]
        .iter()
        .map(|p| p["text"].as_str().unwrap())
        .collect();
    assert_eq!(thought, "Plan the answer.");
    assert!(
        parts[..2]
            .iter()
            .all(|p| p.get("thoughtSignature").is_none())
    );
    assert_eq!(parts[2]["thoughtSignature"], "c2lnbmF0dXJl");
    assert_eq!(parts[3], &json!({"text": "Done"}));
}

#[tokio::test]
async fn function_calls_come_whole_with_id_only_when_scripted() {
    let args = json!({"path": "/tmp", "depth": 2});
    let chunks = chunks_of(Reply::tool_call("", "ls", args.clone()).with_tool_call(
        "call_7",
        "read",
        json!({"path": "x"}),
    ))
    .await;
    let parts = parts(&chunks);
    assert_eq!(
        parts[0],
        &json!({"functionCall": {"name": "ls", "args": args}})
    );
    assert_eq!(
        parts[1],
        &json!({"functionCall": {"name": "read", "args": {"path": "x"}, "id": "call_7"}})
    );
    assert_eq!(
        chunks[1]["candidates"][0]["finishReason"], "STOP",
        "tool calls stop with STOP"
    );
}

#[tokio::test]
async fn length_is_max_tokens_and_an_empty_reply_is_one_empty_part() {
    let chunks = chunks_of(Reply::text("x").with_stop(Stop::Length)).await;
    assert_eq!(chunks[0]["candidates"][0]["finishReason"], "MAX_TOKENS");
    let chunks = chunks_of(Reply::empty()).await;
    assert_eq!(chunks.len(), 1);
    assert_eq!(parts(&chunks), [&json!({"text": ""})]);
    assert_eq!(chunks[0]["candidates"][0]["finishReason"], "STOP");
}

#[test]
fn full_stream_snapshot() {
    let frames = filo_testkit::frames(P, &rich_reply(), &super::ctx_for(P, 1));
    insta::assert_snapshot!(
        String::from_utf8(filo_testkit::encode(P, &frames))
            .unwrap()
            .replace("\r\n", "⏎\n")
    );
}
