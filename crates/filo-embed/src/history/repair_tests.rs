use serde_json::json;

use super::*;
use crate::history::fixtures::*;

#[test]
fn invalid_tool_calls_are_dropped_and_names_trimmed() {
    let allowed = vec!["read".to_owned(), " Exec ".to_owned()];
    let (long, too_long) = ("x".repeat(64), "x".repeat(65));
    // (call name, arguments, id, allow list?) → kept
    let cases: Vec<(&str, serde_json::Value, &str, bool, bool)> = vec![
        ("read", json!({"path": "a"}), "c1", false, true),
        ("read", serde_json::Value::Null, "c1", false, false),
        ("read", json!({}), "  ", false, false),
        ("   ", json!({}), "c1", false, false),
        (
            "toolu_01mvznfebfuu <|tool_call_argument_begin|> {\"command\"",
            json!({}),
            "c1",
            false,
            false,
        ),
        (too_long.as_str(), json!({}), "c1", false, false),
        (long.as_str(), json!({}), "c1", false, true),
        ("write", json!({}), "c1", true, false),
        ("READ", json!({}), "c1", true, true),
        ("exec", json!({}), "c1", true, true),
    ];
    for (name, args, id, use_allow, kept) in cases {
        let msg = AgentMessage::Llm(Message::Assistant(assistant_blocks(
            vec![call_block(id, name, args)],
            StopReason::ToolUse,
        )));
        let report = sanitize_tool_call_inputs(vec![msg], use_allow.then_some(allowed.as_slice()));
        assert_eq!(report.messages.len(), usize::from(kept), "{name:?}");
        assert_eq!(report.dropped_tool_calls, usize::from(!kept), "{name:?}");
        assert_eq!(report.dropped_assistant_messages, usize::from(!kept));
    }
    let mixed = AgentMessage::Llm(Message::Assistant(assistant_blocks(
        vec![
            ContentBlock::text("hi"),
            call_block("c1", " read ", json!({})),
            call_block("c2", "bad name", json!({})),
        ],
        StopReason::ToolUse,
    )));
    let report = sanitize_tool_call_inputs(vec![user("u"), mixed], None);
    assert_eq!(report.dropped_tool_calls, 1);
    assert_eq!(report.dropped_assistant_messages, 0);
    let AgentMessage::Llm(Message::Assistant(a)) = &report.messages[1] else {
        panic!("assistant kept");
    };
    let names: Vec<&str> = a.tool_calls().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["read"]);
    assert_eq!(a.content.len(), 2);
}

#[test]
fn details_are_stripped() {
    let mut r = result("c1", "read", "x");
    if let AgentMessage::Llm(Message::ToolResult(t)) = &mut r {
        t.details = Some(json!({"diff": "…"}));
    }
    let out = strip_tool_result_details(vec![user("u"), r]);
    assert_eq!(as_result(&out[1]).details, None);
}

#[test]
fn pairing_moves_results_and_synthesises_missing_ones() {
    let input = vec![
        user("go"),
        calls(&[("a", "read"), ("b", "exec")]),
        user("interrupt"),
        result("b", "exec", "B"),
        result("zz", "read", "orphan"),
        result("b", "exec", "B again"),
        text("done"),
    ];
    let out = repair_tool_use_result_pairing(input, 9);
    assert_eq!(
        roles(&out.messages),
        [
            "user",
            "assistant",
            "toolResult",
            "toolResult",
            "user",
            "assistant"
        ]
    );
    assert_eq!(as_result(&out.messages[2]).tool_call_id, "a");
    assert!(as_result(&out.messages[2]).is_error);
    assert_eq!(result_text(&out.messages[2]), MISSING_TOOL_RESULT_TEXT);
    assert_eq!(as_result(&out.messages[2]).tool_name, "read");
    assert_eq!(result_text(&out.messages[3]), "B");
    assert_eq!(out.added.len(), 1);
    assert_eq!(out.added[0].timestamp, 9);
    assert_eq!(out.dropped_duplicate_count, 1);
    assert_eq!(out.dropped_orphan_count, 1);
    assert!(out.moved);
}

#[test]
fn pairing_leaves_a_good_transcript_alone() {
    let input = vec![
        user("go"),
        calls(&[("a", "read")]),
        result("a", "read", "A"),
        text("done"),
    ];
    let out = repair_tool_use_result_pairing(input.clone(), 0);
    assert_eq!(out.messages, input);
    assert!(!out.moved);
    assert!(out.added.is_empty());
}

#[test]
fn pairing_skips_errored_and_aborted_assistants_and_drops_leading_results() {
    for stop in [StopReason::Error, StopReason::Aborted] {
        let input = vec![
            result("x", "read", "before any call"),
            user("go"),
            calls_with(&[("a", "read")], stop),
            user("again"),
        ];
        let out = repair_tool_use_result_pairing(input, 0);
        assert_eq!(roles(&out.messages), ["user", "assistant", "user"]);
        assert!(out.added.is_empty());
        assert_eq!(out.dropped_orphan_count, 1);
    }
}

#[test]
fn pairing_renames_blank_result_names_from_the_call() {
    let input = vec![calls(&[("a", "read")]), result("a", "   ", "A")];
    let out = repair_tool_use_result_pairing(input, 0);
    assert_eq!(as_result(&out.messages[1]).tool_name, "read");
    assert!(out.moved);
    let input = vec![calls(&[("a", "read")]), result("a", " read ", "A")];
    let out = repair_tool_use_result_pairing(input, 0);
    assert_eq!(as_result(&out.messages[1]).tool_name, "read");
}

#[test]
fn synthetic_results_name_unknown_tools() {
    let r = synthetic_tool_result("c9", Some("  "), 5);
    assert_eq!(r.tool_name, "unknown");
    assert!(r.is_error);
    assert_eq!(r.tool_call_id, "c9");
}
