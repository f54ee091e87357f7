use filo_ai::{AssistantMessage, StopReason, TextContent, ToolCall, Usage};
use serde_json::json;

use super::*;

fn user(text: &str) -> SessionMessage {
    SessionMessage::Llm(Message::User(UserMessage {
        content: UserContent::Text(text.into()),
        timestamp: 0,
    }))
}

fn assistant_calling(ids: &[&str]) -> SessionMessage {
    SessionMessage::Llm(Message::Assistant(AssistantMessage {
        content: ids
            .iter()
            .map(|id| {
                ContentBlock::ToolCall(ToolCall {
                    id: (*id).into(),
                    name: "exec".into(),
                    arguments: json!({}),
                    thought_signature: None,
                })
            })
            .collect(),
        api: "openai-completions".into(),
        provider: "p".into(),
        model: "m".into(),
        usage: Usage::default(),
        stop_reason: StopReason::ToolUse,
        timestamp: 0,
        error_message: None,
        error_status: None,
        response_id: None,
    }))
}

fn failed(id: &str, text: &str, details: serde_json::Value) -> SessionMessage {
    SessionMessage::Llm(Message::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: "exec".into(),
        content: if text.is_empty() {
            Vec::new()
        } else {
            vec![ContentBlock::Text(TextContent {
                text: text.into(),
                text_signature: None,
            })]
        },
        details: Some(details),
        is_error: true,
        timestamp: 0,
    }))
}

#[test]
fn adaptive_chunk_ratio() {
    let small = vec![user(&"a".repeat(1000)), user(&"b".repeat(1000))];
    assert_eq!(
        compute_adaptive_chunk_ratio(&small, 200_000),
        BASE_CHUNK_RATIO
    );
    let big = vec![user(&"a".repeat(200_000)), user(&"b".repeat(200_000))];
    let r = compute_adaptive_chunk_ratio(&big, 200_000);
    assert!((MIN_CHUNK_RATIO..BASE_CHUNK_RATIO).contains(&r), "{r}");
    assert_eq!(compute_adaptive_chunk_ratio(&[], 200_000), BASE_CHUNK_RATIO);
}

#[test]
fn tool_failures_are_named_once_with_their_status() {
    let f = collect_tool_failures(&[failed(
        "c1",
        "ENOENT: missing file",
        json!({"status": "failed", "exitCode": 1}),
    )]);
    assert_eq!(
        format_tool_failures(&f),
        "\n\n## Tool Failures\n- exec (status=failed exitCode=1): ENOENT: missing file"
    );
    let f = collect_tool_failures(&[
        failed("c2", "", json!({"exitCode": 2})),
        failed("c2", "the same call again", json!({})),
    ]);
    assert_eq!(
        format_tool_failures(&f),
        "\n\n## Tool Failures\n- exec (exitCode=2): failed"
    );
    let nine: Vec<SessionMessage> = (0..9)
        .map(|i| failed(&format!("x{i}"), "boom", json!({})))
        .collect();
    let s = format_tool_failures(&collect_tool_failures(&nine));
    assert!(s.ends_with("- ...and 1 more"), "{s}");
    assert_eq!(s.lines().filter(|l| l.starts_with("- exec")).count(), 8);
    assert_eq!(format_tool_failures(&[]), "");
    let long = collect_tool_failures(&[failed("l", &"word ".repeat(100), json!(null))]);
    assert_eq!(long[0].summary.chars().count(), 240);
    assert!(long[0].summary.ends_with("..."));
}

#[test]
fn file_lists_are_bounded() {
    let read: BTreeSet<String> = (0..200)
        .map(|i| format!("src/read/file_{i:03}.rs"))
        .collect();
    let modified: BTreeSet<String> = (0..200)
        .map(|i| format!("src/edit/file_{i:03}.rs"))
        .collect();
    let s = format_file_operations(&read, &modified);
    assert!(
        s.contains("<read-files>") && s.contains("<modified-files>"),
        "{s}"
    );
    assert!(s.contains("...and "));
    assert!(s.chars().count() <= MAX_FILE_OPS_SECTION_CHARS);
    // A file both read and modified is listed as modified only (each line ends in a newline
    // and the closing tag starts with one: OpenClaw lists end in a blank line, kept as is).
    let both: BTreeSet<String> = ["a.rs".to_owned()].into();
    assert_eq!(
        format_file_operations(&both, &both),
        "\n\n<modified-files>\na.rs\n\n</modified-files>"
    );
}

#[test]
fn caps_keep_the_suffix_and_mark_the_cut() {
    let body = "## Decisions\n".to_owned() + &"detail ".repeat(5000);
    let capped = cap_summary(&body, MAX_SUMMARY_CHARS);
    assert!(capped.chars().count() <= MAX_SUMMARY_CHARS);
    assert!(capped.ends_with(TRUNCATED_MARKER));
    let tiny = cap_summary(&body, 10);
    assert!(
        tiny.starts_with("## Decis") && !tiny.contains("truncated"),
        "{tiny}"
    );
    let joined = cap_summary_keeping_suffix(
        "## Decisions\nNone.",
        "\n\n## Tool Failures\n- exec: x",
        MAX_SUMMARY_CHARS,
    );
    assert!(joined.contains("None.\n\n## Tool Failures"), "{joined}");
    let kept = cap_summary_keeping_suffix(&body, "\n\n## Tool Failures\n- exec: x", 200);
    assert!(
        kept.chars().count() <= 200 && kept.ends_with("- exec: x"),
        "{kept}"
    );
}

#[test]
fn the_fallback_summary_is_structured_or_the_previous_one() {
    let s = structured_fallback_summary(None);
    assert!(
        s.starts_with("## Decisions\nNo prior history.\n\n## Open TODOs\nNone."),
        "{s}"
    );
    assert!(s.ends_with("## Exact identifiers\nNone captured."));
    let prev = "## Decisions\nx\n## Open TODOs\ny\n## Constraints/Rules\n-\n## Pending user asks\n-\n## Exact identifiers\n-";
    assert_eq!(structured_fallback_summary(Some(prev)), prev);
    assert!(
        structured_fallback_summary(Some("free text")).starts_with("## Decisions\nfree text\n")
    );
}

#[test]
fn pruning_for_the_history_share_drops_the_oldest_chunks_and_their_orphans() {
    let mut messages = vec![
        assistant_calling(&["old"]),
        failed("old", &"x".repeat(4000), json!({})),
    ];
    for i in 0..6 {
        messages.push(user(&format!("{i}{}", "y".repeat(4000))));
    }
    let pruned = prune_history_for_context_share(&messages, 4000, 0.5, 2);
    assert!(pruned.dropped_chunks > 0);
    assert!(tokens(&pruned.messages) <= 2000);
    assert!(
        !pruned
            .messages
            .iter()
            .any(|m| matches!(m, SessionMessage::Llm(Message::ToolResult(_)))),
        "no tool result without its call"
    );
    assert_eq!(pruned.messages.len() + pruned.dropped.len(), messages.len());
    // Parts split by tokens, in order.
    let parts = split_by_token_share(&messages, 2);
    assert_eq!(parts.len(), 2);
    assert_eq!(parts.concat().len(), messages.len());
}
