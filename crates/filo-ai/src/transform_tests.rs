use serde_json::json;

use super::*;
use crate::message::{ThinkingContent, Usage, UserContent, UserMessage};

fn model(provider: &str, api: &str, id: &str) -> Model {
    serde_json::from_value(json!({
        "id": id, "name": id, "api": api, "provider": provider, "baseUrl": "http://x"
    }))
    .unwrap()
}

fn assistant(provider: &str, api: &str, id: &str, content: Vec<ContentBlock>) -> Message {
    Message::Assistant(AssistantMessage {
        content,
        api: api.into(),
        provider: provider.into(),
        model: id.into(),
        usage: Usage::default(),
        stop_reason: StopReason::ToolUse,
        timestamp: 1,
        error_message: None,
        error_status: None,
        response_id: None,
    })
}

fn thinking(text: &str, sig: Option<&str>) -> ContentBlock {
    ContentBlock::Thinking(ThinkingContent {
        thinking: text.into(),
        thinking_signature: sig.map(str::to_string),
        redacted: None,
    })
}

fn call(id: &str) -> ContentBlock {
    ContentBlock::ToolCall(ToolCall {
        id: id.into(),
        name: "bash".into(),
        arguments: json!({"command": "ls"}),
        thought_signature: Some("sig".into()),
    })
}

fn user(text: &str) -> Message {
    Message::User(UserMessage {
        content: UserContent::Text(text.into()),
        timestamp: 2,
    })
}

fn result(id: &str) -> Message {
    Message::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: "bash".into(),
        content: vec![ContentBlock::text("ok")],
        details: None,
        is_error: false,
        timestamp: 3,
    })
}

#[test]
fn thinking_from_other_model_is_dropped_and_ids_are_mapped() {
    let target = model("openai", "openai-completions", "gpt-4o");
    let msgs = vec![
        user("hi"),
        assistant(
            "anthropic",
            "anthropic-messages",
            "claude",
            vec![
                thinking("hmm", Some("sig")),
                thinking("  ", None),
                call("toolu_01|weird.id"),
            ],
        ),
        result("toolu_01|weird.id"),
    ];
    let norm = |id: &str, _: &Model, _: &AssistantMessage| sanitize_tool_call_id(id, 64);
    let out = transform_messages(&msgs, &target, Some(&norm), 99);
    let Message::Assistant(a) = &out[1] else {
        panic!()
    };
    // pi 1.6 drops another model's thinking (0.73 sent it as text).
    assert_eq!(a.content.len(), 1);
    let ContentBlock::ToolCall(tc) = &a.content[0] else {
        panic!()
    };
    assert_eq!(tc.id, "toolu_01_weird_id");
    assert_eq!(tc.thought_signature, None);
    let Message::ToolResult(r) = &out[2] else {
        panic!()
    };
    assert_eq!(r.tool_call_id, "toolu_01_weird_id");
}

#[test]
fn same_model_keeps_signatures_and_redacted() {
    let target = model("anthropic", "anthropic-messages", "claude");
    let redacted = ContentBlock::Thinking(ThinkingContent {
        thinking: "[Reasoning redacted]".into(),
        thinking_signature: Some("opaque".into()),
        redacted: Some(true),
    });
    let msgs = vec![assistant(
        "anthropic",
        "anthropic-messages",
        "claude",
        vec![thinking("", Some("sig")), redacted.clone(), call("a")],
    )];
    let out = transform_messages(&msgs, &target, None, 0);
    let Message::Assistant(a) = &out[0] else {
        panic!()
    };
    assert_eq!(a.content.len(), 3);
    assert_eq!(a.content[1], redacted);
    // The same redacted block is dropped for another model.
    let other = model("google", "google-generative-ai", "gemini");
    let out = transform_messages(&msgs, &other, None, 0);
    let Message::Assistant(a) = &out[0] else {
        panic!()
    };
    assert_eq!(a.content.len(), 1);
}

#[test]
fn orphans_get_results_and_failed_turns_are_dropped() {
    let target = model("anthropic", "anthropic-messages", "claude");
    let mut failed = assistant("anthropic", "anthropic-messages", "claude", vec![call("x")]);
    if let Message::Assistant(a) = &mut failed {
        a.stop_reason = StopReason::Error;
    }
    let msgs = vec![
        user("go"),
        assistant(
            "anthropic",
            "anthropic-messages",
            "claude",
            vec![call("a"), call("b")],
        ),
        result("b"),
        failed,
        user("again"),
        assistant("anthropic", "anthropic-messages", "claude", vec![call("c")]),
    ];
    let out = transform_messages(&msgs, &target, None, 42);
    let roles: Vec<_> = out.iter().map(Message::role).collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "toolResult",
            "toolResult",
            "user",
            "assistant"
        ]
    );
    let Message::ToolResult(r) = &out[3] else {
        panic!()
    };
    assert_eq!(r.tool_call_id, "a");
    assert!(r.is_error);
    assert_eq!(r.timestamp, 42);
    assert_eq!(r.content, vec![ContentBlock::text("No result provided")]);
}

/// The borrowed path leaves a message as it is only where converting it changes nothing: on
/// every combination of thinking block (blank or not, signed or not, redacted or not), text and
/// tool call, from this model and from others, its result equals converting every message.
#[test]
fn borrowing_what_is_unchanged_is_exact() {
    let target = model("anthropic", "anthropic-messages", "claude");
    let mut blocks = Vec::new();
    for text in ["", "  ", "deep thought"] {
        for sig in [None, Some(""), Some("sig")] {
            for redacted in [None, Some(false), Some(true)] {
                blocks.push(ContentBlock::Thinking(ThinkingContent {
                    thinking: text.into(),
                    thinking_signature: sig.map(str::to_string),
                    redacted,
                }));
            }
        }
    }
    let mut msgs = vec![user("start")];
    let senders = [
        ("anthropic", "anthropic-messages", "claude"),
        ("anthropic", "anthropic-messages", "claude-other"),
        ("openai", "openai-completions", "gpt-4o"),
    ];
    for (n, (provider, api, id)) in senders.iter().enumerate() {
        for (i, b) in blocks.iter().enumerate() {
            let call_id = format!("c|{n}.{i}");
            msgs.push(assistant(
                provider,
                api,
                id,
                vec![b.clone(), ContentBlock::text("said"), call(&call_id)],
            ));
            msgs.push(result(&call_id));
        }
        msgs.push(assistant(
            provider,
            api,
            id,
            vec![ContentBlock::text("plain")],
        ));
        msgs.push(user("next"));
    }
    let norm = |id: &str, _: &Model, _: &AssistantMessage| sanitize_tool_call_id(id, 64);
    for normalize in [None, Some(&norm as IdNormalizer<'_>)] {
        // Every assistant message converted, every remapped result rewritten, as before.
        let mut id_map = HashMap::new();
        let converted: Vec<Cow<'_, Message>> = msgs
            .iter()
            .map(|m| match m {
                Message::Assistant(a) => Cow::Owned(Message::Assistant(convert_assistant(
                    a,
                    &target,
                    normalize,
                    &mut id_map,
                ))),
                Message::ToolResult(r) => Cow::Owned(Message::ToolResult(ToolResultMessage {
                    tool_call_id: id_map
                        .get(&r.tool_call_id)
                        .cloned()
                        .unwrap_or_else(|| r.tool_call_id.clone()),
                    ..r.clone()
                })),
                Message::User(_) => Cow::Borrowed(m),
            })
            .collect();
        let want: Vec<Message> = repair_order(converted, 7)
            .into_iter()
            .map(Cow::into_owned)
            .collect();
        let got = transform_messages_borrowed(&msgs, &target, normalize, 7);
        let borrowed = got.iter().filter(|m| matches!(m, Cow::Borrowed(_))).count();
        assert!(borrowed > blocks.len(), "{borrowed}");
        let got: Vec<Message> = got.into_iter().map(Cow::into_owned).collect();
        assert_eq!(got, want);
        assert_eq!(transform_messages(&msgs, &target, normalize, 7), want);
    }
}
