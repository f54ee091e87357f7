//! The fast path against serde: every frame the mock sends for every kind of reply, and
//! hand-written edge cases, decoded both ways must give the same events, usage, stop reason,
//! response id and errors.

use serde_json::json;

use super::super::CompletionsDecoder;
use crate::driver::{DecodeOut, Decoder};
use crate::sse::SseFrame;
use filo_testkit::{Block, Protocol, Reply, Stop, StreamContext, Usage};

/// Everything decoding `frames` (then finishing) reports, as text.
fn decode(frames: &[String], fast: bool) -> String {
    let mut decoder = CompletionsDecoder {
        fast,
        ..CompletionsDecoder::default()
    };
    let mut out = DecodeOut::default();
    let mut log = String::new();
    for data in frames {
        let frame = SseFrame {
            event: String::new(),
            data: data.clone(),
        };
        if let Err(e) = decoder.frame(&frame, &mut out) {
            log.push_str(&format!("error {e:?}\n"));
        }
    }
    if let Err(e) = decoder.finish(&mut out) {
        log.push_str(&format!("finish error {e:?}\n"));
    }
    log.push_str(&format!("{out:?}"));
    log
}

fn same_both_ways(frames: &[String]) {
    assert_eq!(
        decode(frames, true),
        decode(frames, false),
        "frames: {frames:#?}"
    );
}

fn replies() -> Vec<Reply> {
    vec![
        Reply::empty(),
        Reply::text("plain words, a few of them"),
        Reply::text("quotes \" and \\ backslashes, tabs\tand\nnew lines, \u{1} control"),
        Reply::text("unicode: é ü 漢字 🦀 and \u{2028} separators"),
        Reply::text("with usage").with_usage(Usage::new(120, 7).with_cache(30, 0)),
        Reply::thinking("think about it", "reasoning_content").with_text("then answer"),
        Reply::thinking("other field", "reasoning").with_text("x"),
        Reply::thinking("third field", "reasoning_text"),
        Reply::tool_call("call_1", "read", json!({"path": "a \"b\".txt"})).with_tool_call(
            "call_2",
            "bash",
            json!({"command": "ls -la"}),
        ),
        Reply::text("before the call").with_raw_tool_call("c9", "edit", "{\"broken"),
        Reply::text("cut short").with_stop(Stop::Length),
        Reply::empty().with_block(Block::Text(String::new())),
    ]
}

#[test]
fn every_mock_reply_decodes_the_same_both_ways() {
    for reply in replies() {
        for include_usage in [false, true] {
            let ctx = StreamContext::new("mock-model").with_include_usage(include_usage);
            let frames: Vec<String> =
                filo_testkit::frames(Protocol::OpenAiCompletions, &reply, &ctx)
                    .into_iter()
                    .map(|f| f.data)
                    .collect();
            assert!(frames.len() > 1);
            same_both_ways(&frames);
        }
    }
}

#[test]
fn the_mock_text_deltas_take_the_fast_path() {
    let ctx = StreamContext::new("mock-model");
    let frames = filo_testkit::frames(Protocol::OpenAiCompletions, &Reply::text("a b c"), &ctx);
    let fast = frames
        .iter()
        .filter(|f| super::parse(f.data.trim()).is_some())
        .count();
    // The role chunk and the three words; not the finish chunk nor `[DONE]`.
    assert_eq!(fast, 4, "{frames:#?}");
}

/// A frame around `delta`, with the mock's other fields.
fn chunk(delta: &str) -> String {
    format!(
        r#"{{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{{"index":0,"delta":{delta},"logprobs":null,"finish_reason":null}}]}}"#
    )
}

#[test]
fn edge_cases_decode_the_same_both_ways() {
    let fast_ones = [
        chunk(r#"{"content":"plain"}"#),
        chunk(r#"{"role":"assistant","content":""}"#),
        chunk(r#"{"content":null}"#),
        chunk(r#"{}"#),
        chunk(r#"{"content":"esc \" \\ \/ \b \f \n \r \t \u00e9 \ud83e\udd80"}"#),
        chunk(r#"{"content":"raw é 漢 🦀"}"#),
        chunk(r#"{"refusal":null,"content":"x","reasoning_content":null,"tool_calls":null}"#),
        chunk(r#"{"content":"x","extra":true,"more":false,"n":-12}"#),
        r#"{"choices":[{"delta":{"content":"reordered"},"index":0}],"id":"r2"}"#.into(),
        r#" { "id" : "ws" , "choices" : [ { "delta" : { "content" : "spaced" } } ] } "#.into(),
        r#"{"id":"x","choices":[]}"#.into(),
        r#"{"id":"","choices":[{"delta":{"content":"empty id"}}]}"#.into(),
        r#"{"id":"x","choices":[{"delta":{"content":"a"}}],"usage":null,"error":null}"#.into(),
        r#"{"choices":[{"delta":{"content":"no id"}}]}"#.into(),
        r#"{"id":"esc\u0041ped","choices":[{"delta":{"content":"a"}}]}"#.into(),
    ];
    for frame in &fast_ones {
        assert!(super::parse(frame.trim()).is_some(), "not fast: {frame}");
        same_both_ways(std::slice::from_ref(frame));
        // Also after a reasoning block and inside a longer stream.
        let reasoning = chunk(r#"{"reasoning_content":"hmm"}"#);
        same_both_ways(&[reasoning, frame.clone(), frame.clone(), "[DONE]".into()]);
    }
    let serde_ones = [
        chunk(r#"{"content":"a","content":"b"}"#),
        chunk(r#"{"con\u0074ent":"escaped key"}"#),
        chunk(r#"{"content":5}"#),
        chunk(r#"{"content":"bad \x escape"}"#),
        chunk(r#"{"content":"lone \ud800 surrogate"}"#),
        chunk("{\"content\":\"raw \u{1} control\"}"),
        chunk(r#"{"content":"x","n":1.5}"#),
        chunk(r#"{"content":"x","n":01}"#),
        chunk(r#"{"content":"x","n":-}"#),
        chunk(r#"{"content":"x","nested":{"a":1}}"#),
        chunk(r#"{"content":"x","list":[1]}"#),
        chunk(r#"{"content":"x",}"#),
        chunk(r#"{"reasoning":"r"}"#),
        chunk(r#"{"reasoning_text":"r","content":"c"}"#),
        chunk(r#"{"reasoning_details":null,"content":"c"}"#),
        chunk(r#"{"reasoning_details":[{"type":"reasoning.encrypted","id":"t1","data":"x"}]}"#),
        chunk(r#"{"tool_calls":[{"index":0,"id":"t1","function":{"name":"f","arguments":"{}"}}]}"#),
        chunk(r#"null"#),
        r#"{"id":"x","choices":[{"delta":{"content":"a"},"finish_reason":"stop"}]}"#.into(),
        r#"{"id":"x","choices":[{"delta":{"content":"a"},"finish_reason":"bogus"}]}"#.into(),
        r#"{"id":"x","choices":[{"delta":{"content":"a"}},{"delta":{"content":"b"}}]}"#.into(),
        r#"{"id":"x","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}"#.into(),
        r#"{"id":"x","choices":[{"delta":{},"usage":{"prompt_tokens":3}}]}"#.into(),
        r#"{"error":{"message":"boom","metadata":{"raw":"detail"}}}"#.into(),
        r#"{"id":5,"choices":[{"delta":{"content":"numeric id"}}]}"#.into(),
        r#"{"id":null,"choices":[{"delta":{"content":"null id"}}]}"#.into(),
        r#"{"id":"a","id":"b","choices":[]}"#.into(),
        r#"{"id":"x","choices":[{"delta":{"content":"a"}}]} trailing"#.into(),
        r#"{"id":"x","choices":[{"delta":{"content":"a"}}"#.into(),
        r#"{"id":"x","choices":{"delta":{"content":"a"}}}"#.into(),
        r#"["x",[]]"#.into(),
        r#"{"id":"x","choices":[{"delta":null}]}"#.into(),
        r#"{"id":"x","choices":[null]}"#.into(),
        "not json".into(),
    ];
    for frame in &serde_ones {
        assert!(super::parse(frame.trim()).is_none(), "fast: {frame}");
        same_both_ways(&[
            chunk(r#"{"content":"before"}"#),
            frame.clone(),
            "[DONE]".into(),
        ]);
    }
}

#[test]
fn the_template_reads_the_next_chunks_and_only_them() {
    let first = chunk(r#"{"content":"first"}"#);
    let (_, template) = super::parse_with_template(&first).unwrap();
    let template = template.expect("a plain chunk has a template");
    for same_shape in [
        chunk(r#"{"content":"second"}"#),
        chunk(r#"{"content":""}"#),
        chunk(r#"{"content":"esc \" \\ \n \u00e9"}"#),
    ] {
        assert!(template.read(&same_shape).is_some(), "{same_shape}");
    }
    let others = [
        chunk(r#"{"content":"a","content":"b"}"#),
        chunk(r#"{"content":"a","x":"b"}"#),
        chunk(r#"{"content":null}"#),
        chunk(r#"{"content":5}"#),
        chunk(r#"{"content":"a" }"#),
        chunk(r#"{"content":"bad \x escape"}"#),
        chunk(r#"{"content":"lone \ud800"}"#),
        chunk("{\"content\":\"raw \u{1} control\"}"),
        chunk(r#"{"content":"unterminated}"#),
        chunk(r#"{"content":"a"},"finish_reason":"stop"#),
        r#"{"id":"chatcmpl-2","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"content":"other id"},"logprobs":null,"finish_reason":null}]}"#.into(),
    ];
    for other in &others {
        assert!(template.read(other).is_none(), "{other}");
    }
    // Through the decoder: the template learnt from the first frame, then every other shape.
    let mut frames = vec![first.clone(), chunk(r#"{"content":"second"}"#)];
    for other in others {
        frames.push(other);
        frames.push(chunk(r#"{"content":"again"}"#));
    }
    frames.push("[DONE]".into());
    same_both_ways(&frames);
    // An escaped id or one after the content gives no template; the chunk still reads fast.
    for no_template in [
        r#"{"id":"e\u0041","choices":[{"delta":{"content":"a"}}]}"#,
        r#"{"choices":[{"delta":{"content":"a"}}],"id":"late"}"#,
        r#"{"id":"x","choices":[{"delta":{"content":null}}]}"#,
    ] {
        let (_, template) = super::parse_with_template(no_template).unwrap();
        assert!(template.is_none(), "{no_template}");
        same_both_ways(&[no_template.into(), no_template.into()]);
    }
}
