//! Property: decoding the rendered frames with a minimal reference decoder per protocol gives
//! back the scripted blocks, stop reason and usage (nothing lost, nothing invented).

use std::collections::BTreeMap;

use filo_testkit::{Block, Protocol, Reply, SseFrame, Stop, StreamContext, Usage, frames};
use proptest::prelude::*;
use serde_json::{Value, json};

/// A decoded block: (kind, text or arguments JSON, id, name, signature).
#[derive(Debug, Clone, PartialEq)]
enum Got {
    Text(String),
    Thinking(String, String),
    Tool(String, String, Value),
}

#[derive(Debug, PartialEq)]
struct Decoded {
    blocks: Vec<Got>,
    stop: Stop,
    usage: Usage,
}

fn data(frames: &[SseFrame]) -> Vec<Value> {
    frames
        .iter()
        .filter(|f| f.data != "[DONE]")
        .map(|f| f.json_data().unwrap())
        .collect()
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

fn s(v: &Value) -> String {
    v.as_str().unwrap().to_owned()
}

fn anthropic(frames: &[SseFrame]) -> Decoded {
    let (mut blocks, mut stop, mut usage) = (Vec::new(), Stop::Stop, Usage::default());
    for j in data(frames) {
        match j["type"].as_str().unwrap() {
            "message_start" => {
                let u = &j["message"]["usage"];
                usage = Usage::new(n(&u["input_tokens"]), 0).with_cache(
                    n(&u["cache_read_input_tokens"]),
                    n(&u["cache_creation_input_tokens"]),
                );
            }
            "content_block_start" => {
                let b = &j["content_block"];
                blocks.push(match b["type"].as_str().unwrap() {
                    "text" => Got::Text(String::new()),
                    "thinking" => Got::Thinking(String::new(), String::new()),
                    _ => Got::Tool(s(&b["id"]), s(&b["name"]), Value::String(String::new())),
                });
            }
            "content_block_delta" => {
                let d = &j["delta"];
                match (blocks.last_mut().unwrap(), d["type"].as_str().unwrap()) {
                    (Got::Text(t), "text_delta") => t.push_str(d["text"].as_str().unwrap()),
                    (Got::Thinking(t, _), "thinking_delta") => {
                        t.push_str(d["thinking"].as_str().unwrap())
                    }
                    (Got::Thinking(_, sig), "signature_delta") => {
                        sig.push_str(d["signature"].as_str().unwrap())
                    }
                    (Got::Tool(_, _, Value::String(a)), "input_json_delta") => {
                        a.push_str(d["partial_json"].as_str().unwrap())
                    }
                    other => panic!("unexpected delta {other:?}"),
                }
            }
            "message_delta" => {
                usage.output = n(&j["usage"]["output_tokens"]);
                stop = match j["delta"]["stop_reason"].as_str().unwrap() {
                    "end_turn" => Stop::Stop,
                    "max_tokens" => Stop::Length,
                    _ => Stop::ToolUse,
                };
            }
            _ => {}
        }
    }
    Decoded {
        blocks: parse_args(blocks),
        stop,
        usage,
    }
}

fn completions(frames: &[SseFrame]) -> Decoded {
    let (mut blocks, mut stop, mut usage) = (Vec::new(), Stop::Stop, Usage::default());
    let mut tool_at: BTreeMap<u64, usize> = BTreeMap::new();
    for j in data(frames) {
        if let Some(u) = j.get("usage").filter(|u| !u.is_null()) {
            let cached = n(&u["prompt_tokens_details"]["cached_tokens"]);
            usage = Usage::new(n(&u["prompt_tokens"]) - cached, n(&u["completion_tokens"]))
                .with_cache(cached, 0);
        }
        let Some(choice) = j["choices"].get(0) else {
            continue;
        };
        let d = &choice["delta"];
        if let Some(t) = d["content"].as_str().filter(|t| !t.is_empty()) {
            match blocks.last_mut() {
                Some(Got::Text(acc)) => acc.push_str(t),
                _ => blocks.push(Got::Text(t.to_owned())),
            }
        }
        if let Some(t) = d["reasoning_content"].as_str() {
            match blocks.last_mut() {
                Some(Got::Thinking(acc, _)) => acc.push_str(t),
                _ => blocks.push(Got::Thinking(t.to_owned(), String::new())),
            }
        }
        for call in d["tool_calls"].as_array().into_iter().flatten() {
            let index = n(&call["index"]);
            let at = *tool_at.entry(index).or_insert_with(|| {
                blocks.push(Got::Tool(
                    s(&call["id"]),
                    s(&call["function"]["name"]),
                    Value::String(String::new()),
                ));
                blocks.len() - 1
            });
            if let Got::Tool(_, _, Value::String(a)) = &mut blocks[at] {
                a.push_str(call["function"]["arguments"].as_str().unwrap());
            }
        }
        stop = match choice["finish_reason"].as_str() {
            Some("length") => Stop::Length,
            Some("tool_calls") => Stop::ToolUse,
            _ => stop,
        };
    }
    Decoded {
        blocks: parse_args(blocks),
        stop,
        usage,
    }
}

fn responses(frames: &[SseFrame]) -> Decoded {
    let (mut blocks, mut stop, mut usage) = (Vec::new(), Stop::Stop, Usage::default());
    for j in data(frames) {
        match j["type"].as_str().unwrap() {
            "response.output_item.done" => {
                let item = &j["item"];
                blocks.push(match item["type"].as_str().unwrap() {
                    "message" => Got::Text(s(&item["content"][0]["text"])),
                    "reasoning" => Got::Thinking(
                        item["summary"]
                            .get(0)
                            .map_or_else(String::new, |p| s(&p["text"])),
                        s(&item["encrypted_content"]),
                    ),
                    _ => Got::Tool(
                        s(&item["call_id"]),
                        s(&item["name"]),
                        serde_json::from_str(item["arguments"].as_str().unwrap()).unwrap(),
                    ),
                });
            }
            kind @ ("response.completed" | "response.incomplete") => {
                let u = &j["response"]["usage"];
                let cached = n(&u["input_tokens_details"]["cached_tokens"]);
                usage = Usage::new(n(&u["input_tokens"]) - cached, n(&u["output_tokens"]))
                    .with_cache(cached, 0);
                let tools = blocks.iter().any(|b| matches!(b, Got::Tool(..)));
                stop = if kind == "response.incomplete" {
                    Stop::Length
                } else if tools {
                    Stop::ToolUse
                } else {
                    Stop::Stop
                };
            }
            _ => {}
        }
    }
    Decoded {
        blocks,
        stop,
        usage,
    }
}

fn google(frames: &[SseFrame]) -> Decoded {
    let (mut blocks, mut stop, mut usage) = (Vec::new(), Stop::Stop, Usage::default());
    for j in data(frames) {
        let c = &j["candidates"][0];
        for part in c["content"]["parts"].as_array().unwrap() {
            if let Some(call) = part.get("functionCall") {
                let id = call.get("id").map_or_else(String::new, s);
                blocks.push(Got::Tool(id, s(&call["name"]), call["args"].clone()));
            } else if part["thought"] == true {
                if !matches!(blocks.last(), Some(Got::Thinking(..))) {
                    blocks.push(Got::Thinking(String::new(), String::new()));
                }
                if let Some(Got::Thinking(t, sig)) = blocks.last_mut() {
                    t.push_str(part["text"].as_str().unwrap());
                    if let Some(new) = part["thoughtSignature"].as_str() {
                        *sig = new.to_owned();
                    }
                }
            } else if let Some(t) = part["text"].as_str().filter(|t| !t.is_empty()) {
                match blocks.last_mut() {
                    Some(Got::Text(acc)) => acc.push_str(t),
                    _ => blocks.push(Got::Text(t.to_owned())),
                }
            }
        }
        let u = &j["usageMetadata"];
        let cached = n(&u["cachedContentTokenCount"]);
        usage = Usage::new(
            n(&u["promptTokenCount"]) - cached,
            n(&u["candidatesTokenCount"]),
        )
        .with_cache(cached, 0);
        let tools = blocks.iter().any(|b| matches!(b, Got::Tool(..)));
        stop = match c["finishReason"].as_str() {
            Some("MAX_TOKENS") => Stop::Length,
            Some(_) if tools => Stop::ToolUse,
            _ => Stop::Stop,
        };
    }
    Decoded {
        blocks,
        stop,
        usage,
    }
}

/// Tool arguments accumulated as strings must parse back to JSON.
fn parse_args(blocks: Vec<Got>) -> Vec<Got> {
    blocks
        .into_iter()
        .map(|b| match b {
            Got::Tool(id, name, Value::String(a)) => {
                Got::Tool(id, name, serde_json::from_str(&a).unwrap())
            }
            other => other,
        })
        .collect()
}

/// What each protocol can carry of `reply`.
fn expected(p: Protocol, reply: &Reply) -> Decoded {
    let mut usage = reply.usage;
    if p != Protocol::AnthropicMessages {
        usage.cache_write = 0;
    }
    let blocks = reply
        .blocks
        .iter()
        .map(|b| match b {
            Block::Text(t) => Got::Text(t.clone()),
            Block::Thinking { text, signature } => {
                let sig = if p == Protocol::OpenAiCompletions {
                    String::new()
                } else {
                    signature.clone()
                };
                Got::Thinking(text.clone(), sig)
            }
            Block::ToolCall {
                id,
                name,
                arguments,
            } => Got::Tool(id.clone(), name.clone(), arguments.clone()),
            Block::RawToolCall {
                id,
                name,
                arguments,
            } => Got::Tool(
                id.clone(),
                name.clone(),
                serde_json::from_str(arguments).unwrap_or(Value::Null),
            ),
        })
        .collect();
    Decoded {
        blocks,
        stop: reply.stop,
        usage,
    }
}

fn reply_strategy() -> impl Strategy<Value = Reply> {
    let text = "[a-zé€😀 ,.\n]{0,12}[a-z]{1,6}";
    let args = prop::collection::btree_map(
        "[a-z_]{1,6}",
        prop_oneof![
            any::<i32>().prop_map(Value::from),
            "[ -~é\"\\\\]{0,20}".prop_map(Value::from),
            any::<bool>().prop_map(Value::from),
        ],
        0..4,
    )
    .prop_map(|m| Value::Object(m.into_iter().collect()));
    (
        prop::option::of((text, "[A-Za-z0-9+/]{1,16}")),
        prop::option::of(text),
        prop::collection::vec(("call_[a-z0-9]{1,6}", "[a-z_]{1,8}", args), 0..4),
        any::<bool>(),
        (0u64..10_000, 0u64..5_000, 0u64..3_000, 0u64..1_000),
    )
        .prop_map(|(thinking, text, calls, length, (i, o, cr, cw))| {
            let mut reply = Reply::empty().with_usage(Usage::new(i, o).with_cache(cr, cw));
            if let Some((t, sig)) = thinking {
                reply = reply.with_thinking(t, sig);
            }
            if let Some(t) = text {
                reply = reply.with_text(t);
            }
            for (k, (id, name, a)) in calls.into_iter().enumerate() {
                reply = reply.with_tool_call(&format!("{id}{k}"), &name, a);
            }
            if length {
                reply = reply.with_stop(Stop::Length);
            }
            reply
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn every_protocol_carries_the_reply_losslessly(reply in reply_strategy()) {
        let ctx = StreamContext::new("m").with_include_usage(true);
        for (p, decode) in [
            (Protocol::AnthropicMessages, anthropic as fn(&[SseFrame]) -> Decoded),
            (Protocol::OpenAiCompletions, completions),
            (Protocol::OpenAiResponses, responses),
            (Protocol::GoogleGenerativeAi, google),
        ] {
            let got = decode(&frames(p, &reply, &ctx));
            prop_assert_eq!(got, expected(p, &reply), "{:?}", p);
        }
    }
}

#[test]
fn a_reference_decoder_sees_a_known_reply() {
    let reply = Reply::text("hi").with_tool_call("c1", "ls", json!({"a": 1}));
    let got = anthropic(&frames(
        Protocol::AnthropicMessages,
        &reply,
        &StreamContext::new("m"),
    ));
    assert_eq!(
        got.blocks,
        [
            Got::Text("hi".into()),
            Got::Tool("c1".into(), "ls".into(), json!({"a": 1}))
        ]
    );
    assert_eq!(got.stop, Stop::ToolUse);
}
