//! Rules of spec §1.7 (payload building), one test per rule.

use filo_ai::{AssistantMessage, ContentBlock, StopReason, TextContent, ThinkingContent, ToolCall};

use super::*;
use crate::classify::copy::{CONTEXT_OVERFLOW_COPY, RATE_LIMIT_COPY};

fn message(blocks: Vec<ContentBlock>, stop: StopReason, error: Option<&str>) -> AssistantMessage {
    AssistantMessage {
        content: blocks,
        api: "anthropic-messages".into(),
        provider: "anthropic".into(),
        model: "m".into(),
        usage: Default::default(),
        stop_reason: stop,
        timestamp: 0,
        error_message: error.map(str::to_owned),
        error_status: None,
        response_id: None,
    }
}

fn text(t: &str) -> ContentBlock {
    ContentBlock::Text(TextContent {
        text: t.into(),
        text_signature: None,
    })
}

fn inputs<'a>(
    texts: &'a [String],
    last: Option<&'a AssistantMessage>,
    tool_error: Option<&'a ToolFailure>,
) -> PayloadInputs<'a> {
    PayloadInputs {
        assistant_texts: texts,
        last_assistant: last,
        last_tool_error: tool_error,
        reasoning_on: false,
        current_message_id: Some("m-1"),
        error_copy: ErrorCopyContext::default(),
    }
}

fn texts(items: &[ReplyPayload]) -> Vec<&str> {
    items.iter().filter_map(|i| i.text.as_deref()).collect()
}

#[test]
fn answer_texts_go_through_the_reply_directives() {
    let answers = vec![
        "[[reply_to_current]] First".to_owned(),
        "Look\nMEDIA:https://example.com/a.png".to_owned(),
        "NO_REPLY".to_owned(),
        "   ".to_owned(),
    ];
    let items = build_run_payloads(&inputs(&answers, None, None));
    assert_eq!(items.len(), 2);
    assert_eq!(items[0].text.as_deref(), Some("First"));
    assert_eq!(items[0].reply_to_id.as_deref(), Some("m-1"));
    assert_eq!(items[1].text.as_deref(), Some("Look"));
    assert_eq!(items[1].media_url(), Some("https://example.com/a.png"));
    assert!(items.iter().all(|i| !i.is_error));
}

#[test]
fn without_collected_texts_the_last_assistant_text_answers() {
    let last = message(
        vec![text("<think>x</think>The answer")],
        StopReason::Stop,
        None,
    );
    let items = build_run_payloads(&inputs(&[], Some(&last), None));
    assert_eq!(texts(&items), ["The answer"]);
}

#[test]
fn an_errored_run_leads_with_the_error_copy_and_drops_echoes() {
    let last = message(
        vec![text("429 Too Many Requests")],
        StopReason::Error,
        Some("429 Too Many Requests"),
    );
    let answers = vec![
        "429 Too Many Requests".to_owned(),
        GENERIC_ERROR_COPY.to_owned(),
        r#"{"type":"error","error":{"type":"api_error","message":"boom"}}"#.to_owned(),
        "Partial answer".to_owned(),
    ];
    let items = build_run_payloads(&inputs(&answers, Some(&last), None));
    assert_eq!(texts(&items), [RATE_LIMIT_COPY, "Partial answer"]);
    assert!(items[0].is_error);
    assert!(!items[1].is_error);

    let overflow = message(vec![], StopReason::Error, Some("prompt is too long"));
    let items = build_run_payloads(&inputs(&[], Some(&overflow), None));
    assert_eq!(texts(&items), [CONTEXT_OVERFLOW_COPY]);
}

#[test]
fn reasoning_item_when_reasoning_is_on() {
    let last = message(
        vec![
            ContentBlock::Thinking(ThinkingContent {
                thinking: "Because it helps\n\nand more".into(),
                thinking_signature: None,
                redacted: None,
            }),
            text("Final answer"),
        ],
        StopReason::Stop,
        None,
    );
    let mut input = inputs(&[], Some(&last), None);
    input.reasoning_on = true;
    let items = build_run_payloads(&input);
    assert_eq!(
        texts(&items),
        [
            "Reasoning:\n_Because it helps_\n\n_and more_",
            "Final answer"
        ]
    );
    assert_eq!(format_reasoning_message("  "), "");
}

#[test]
fn last_tool_error_only_when_nothing_answers_and_not_recoverable() {
    let failure = ToolFailure {
        summary: "🛠️ Exec".into(),
        error: Some("permission denied".into()),
    };
    let last = message(vec![], StopReason::Stop, None);
    let items = build_run_payloads(&inputs(&[], Some(&last), Some(&failure)));
    assert_eq!(texts(&items), ["⚠️ 🛠️ Exec failed: permission denied"]);
    assert!(items[0].is_error);

    // an answer to the user hides it
    let answers = vec!["Done anyway".to_owned()];
    let items = build_run_payloads(&inputs(&answers, Some(&last), Some(&failure)));
    assert_eq!(texts(&items), ["Done anyway"]);

    // … unless the model was still calling tools
    let calling = message(
        vec![ContentBlock::ToolCall(ToolCall {
            id: "t1".into(),
            name: "bash".into(),
            arguments: serde_json::json!({}),
            thought_signature: None,
        })],
        StopReason::ToolUse,
        None,
    );
    let items = build_run_payloads(&inputs(&answers, Some(&calling), Some(&failure)));
    assert_eq!(
        texts(&items),
        ["Done anyway", "⚠️ 🛠️ Exec failed: permission denied"]
    );

    // recoverable errors stay with the model
    let fixable = ToolFailure {
        summary: "🛠️ Exec".into(),
        error: Some("Missing required parameter: command".into()),
    };
    assert!(build_run_payloads(&inputs(&[], Some(&last), Some(&fixable))).is_empty());
    let bare = ToolFailure {
        summary: "🧩 Fs".into(),
        error: None,
    };
    let items = build_run_payloads(&inputs(&[], Some(&last), Some(&bare)));
    assert_eq!(texts(&items), ["⚠️ 🧩 Fs failed"]);
}

#[test]
fn voice_flag_spreads_to_items_with_media() {
    let answers = vec![
        "Intro [[audio_as_voice]]".to_owned(),
        "MEDIA:https://example.com/v.ogg".to_owned(),
        "Plain".to_owned(),
    ];
    let items = build_run_payloads(&inputs(&answers, None, None));
    assert_eq!(items.len(), 3);
    assert!(items[0].audio_as_voice);
    assert!(items[1].audio_as_voice && items[1].text.is_none());
    assert!(!items[2].audio_as_voice);
}

#[test]
fn recoverable_hints() {
    for e in [
        "x is required",
        "Invalid path",
        "must be absolute",
        "needs a value",
    ] {
        assert!(is_recoverable_tool_error(Some(e)), "{e}");
    }
    for e in [Some("permission denied"), Some(""), None] {
        assert!(!is_recoverable_tool_error(e), "{e:?}");
    }
}
