use serde_json::json;

use super::*;
use crate::history::fixtures::*;
use crate::history::repair::MISSING_TOOL_RESULT_TEXT;

fn run(guard: &mut ToolResultGuard, msgs: Vec<AgentMessage>) -> Vec<AgentMessage> {
    msgs.into_iter().flat_map(|m| guard.accept(m, 7)).collect()
}

fn no_synthetic() -> GuardOptions {
    GuardOptions {
        allow_synthetic_tool_results: false,
        ..GuardOptions::default()
    }
}

fn error_assistant() -> AgentMessage {
    AgentMessage::Llm(Message::Assistant(assistant_blocks(
        vec![ContentBlock::text("failed")],
        StopReason::Error,
    )))
}

#[test]
fn pending_call_gets_a_synthetic_result_before_the_next_assistant() {
    let mut g = ToolResultGuard::new(GuardOptions::default());
    let out = run(
        &mut g,
        vec![calls(&[("call_1", "read")]), error_assistant()],
    );
    assert_eq!(roles(&out), ["assistant", "toolResult", "assistant"]);
    let r = as_result(&out[1]);
    assert_eq!(r.tool_call_id, "call_1");
    assert!(r.is_error);
    assert!(result_text(&out[1]).contains("missing tool result"));
    assert_eq!(result_text(&out[1]), MISSING_TOOL_RESULT_TEXT);
}

#[test]
fn explicit_flush_and_clear() {
    let mut g = ToolResultGuard::new(GuardOptions::default());
    let mut out = run(&mut g, vec![calls(&[("call_1", "read")])]);
    out.extend(g.flush_pending(7));
    assert_eq!(roles(&out), ["assistant", "toolResult"]);

    let mut g = ToolResultGuard::new(GuardOptions::default());
    let out = run(&mut g, vec![calls(&[("call_1", "read")])]);
    g.clear_pending();
    assert_eq!(roles(&out), ["assistant"]);
    assert!(g.pending_ids().is_empty());
    assert!(g.flush_pending(7).is_empty());
}

#[test]
fn table_of_guard_sequences() {
    // (synthetic allowed, input, expected roles, expected pending)
    type Case = (
        bool,
        Vec<AgentMessage>,
        Vec<&'static str>,
        Vec<&'static str>,
    );
    let cases: Vec<Case> = vec![
        (
            false,
            vec![calls(&[("call_1", "read")]), user("stop")],
            vec!["assistant", "user"],
            vec![],
        ),
        (
            true,
            vec![
                calls(&[("call_1", "read")]),
                result("call_1", "read", "ok"),
                text("done"),
            ],
            vec!["assistant", "toolResult", "assistant"],
            vec![],
        ),
        (
            true,
            vec![
                calls(&[("call_a", "read"), ("call_b", "exec")]),
                result("call_a", "read", "ok"),
                text("done"),
            ],
            vec!["assistant", "toolResult", "toolResult", "assistant"],
            vec![],
        ),
        (
            false,
            vec![calls(&[("call_1", "read")]), calls(&[("call_2", "read")])],
            vec!["assistant", "assistant"],
            vec!["call_2"],
        ),
        (
            true,
            vec![
                calls_with(&[("call_1", "read")], StopReason::Aborted),
                user("next"),
            ],
            vec!["assistant", "user"],
            vec![],
        ),
    ];
    for (i, (synthetic, input, want_roles, want_pending)) in cases.into_iter().enumerate() {
        let mut g = ToolResultGuard::new(GuardOptions {
            allow_synthetic_tool_results: synthetic,
            ..GuardOptions::default()
        });
        let out = run(&mut g, input);
        assert_eq!(roles(&out), want_roles, "case {i}");
        assert_eq!(g.pending_ids(), want_pending, "case {i}");
    }
}

#[test]
fn the_synthetic_result_for_the_unanswered_call_is_call_b() {
    let mut g = ToolResultGuard::new(GuardOptions::default());
    let out = run(
        &mut g,
        vec![
            calls(&[("call_a", "read"), ("call_b", "exec")]),
            result("call_a", "read", "ok"),
            text("done"),
        ],
    );
    assert_eq!(as_result(&out[2]).tool_call_id, "call_b");
    assert_eq!(as_result(&out[2]).tool_name, "exec");
    assert!(as_result(&out[2]).is_error);
    assert!(!as_result(&out[1]).is_error);
}

#[test]
fn blank_tool_name_is_backfilled_from_the_call() {
    let mut g = ToolResultGuard::new(no_synthetic());
    let out = run(
        &mut g,
        vec![calls(&[("call_1", "read")]), result("call_1", "   ", "ok")],
    );
    assert_eq!(as_result(&out[1]).tool_name, "read");
}

#[test]
fn invalid_calls_are_not_persisted() {
    let bad_calls = [
        call_block("call_1", "read", serde_json::Value::Null),
        call_block(
            "call_1",
            "toolu_01mvznfebfuu <|tool_call_argument_begin|> {\"command\"",
            json!({}),
        ),
    ];
    for block in bad_calls {
        let mut g = ToolResultGuard::new(GuardOptions::default());
        let msg = AgentMessage::Llm(Message::Assistant(assistant_blocks(
            vec![block],
            StopReason::ToolUse,
        )));
        assert!(g.accept(msg, 0).is_empty());
        assert!(g.pending_ids().is_empty());
    }
    let mut g = ToolResultGuard::new(GuardOptions {
        allowed_tool_names: Some(vec!["read".into()]),
        ..GuardOptions::default()
    });
    assert!(g.accept(calls(&[("call_1", "write")]), 0).is_empty());
    assert_eq!(g.accept(calls(&[("call_2", "read")]), 0).len(), 1);
}

#[test]
fn a_dropped_assistant_still_flushes_older_pending_calls() {
    let mut g = ToolResultGuard::new(GuardOptions::default());
    let mut out = g.accept(calls(&[("call_1", "read")]), 0);
    out.extend(g.accept(calls(&[("call_2", "bad name")]), 0));
    assert_eq!(roles(&out), ["assistant", "toolResult"]);
    assert!(g.pending_ids().is_empty());
}

#[test]
fn hooks_block_and_rewrite() {
    let mut g = ToolResultGuard::new(GuardOptions {
        before_message_write: Some(Box::new(|m| match m.role() {
            "user" => WriteDecision::Block,
            "toolResult" => {
                WriteDecision::Replace(Box::new(result("call_1", "read", "rewritten by hook")))
            }
            _ => WriteDecision::Keep,
        })),
        ..GuardOptions::default()
    });
    assert!(g.accept(user("secret"), 0).is_empty());
    let out = run(
        &mut g,
        vec![
            calls(&[("call_1", "read")]),
            result("call_1", "read", "raw"),
        ],
    );
    assert_eq!(result_text(&out[1]), "rewritten by hook");

    let mut g = ToolResultGuard::new(GuardOptions {
        tool_result_persist: Some(Box::new(|mut r, synthetic| {
            r.tool_name = format!("{}:{synthetic}", r.tool_name);
            r
        })),
        ..GuardOptions::default()
    });
    let out = run(
        &mut g,
        vec![
            calls(&[("a", "read"), ("b", "exec")]),
            result("a", "read", "x"),
            user("u"),
        ],
    );
    assert_eq!(as_result(&out[1]).tool_name, "read:false");
    assert_eq!(as_result(&out[2]).tool_name, "exec:true");
}

#[test]
fn oversized_results_are_capped_with_the_count() {
    for (len, cap) in [(80_000usize, 16_000usize), (500_000, 16_000), (100, 4)] {
        let mut g = ToolResultGuard::new(GuardOptions {
            max_tool_result_chars: cap,
            ..GuardOptions::default()
        });
        let big = "é".repeat(len);
        let out = run(
            &mut g,
            vec![calls(&[("c", "read")]), result("c", "read", &big)],
        );
        let t = result_text(&out[1]);
        let suffix = format!("[... {} more characters truncated]", len - cap);
        assert!(t.ends_with(&suffix), "{len}");
        assert!(t.chars().count() < len);
        assert!(t.starts_with(&"é".repeat(cap)));
    }
    let mut g = ToolResultGuard::new(GuardOptions::default());
    let out = run(
        &mut g,
        vec![calls(&[("c", "read")]), result("c", "read", "small")],
    );
    assert_eq!(result_text(&out[1]), "small");
}
