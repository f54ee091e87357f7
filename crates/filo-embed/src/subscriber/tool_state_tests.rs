use serde_json::json;

use super::*;

#[test]
fn mutation_detection_table() {
    let cases = [
        ("write", json!({"path": "/a"}), true),
        ("Bash", json!({"command": "ls"}), true),
        ("read", json!({"path": "/a"}), false),
        (
            "session_status",
            json!({"sessionKey": "agent:main:main"}),
            false,
        ),
        (
            "session_status",
            json!({"sessionKey": "agent:main:main", "model": "openai/gpt-4o"}),
            true,
        ),
        ("process", json!({"action": "poll"}), false),
        ("process", json!({"action": "send-keys"}), true),
        ("message", json!({"action": "read"}), false),
        ("message", json!({"action": "send"}), true),
        ("message", json!({"content": "hi"}), true),
        ("cron", json!({"action": "list"}), false),
        ("cron", json!({"action": "add"}), true),
        ("cron", json!({}), true),
        ("nodes", json!({"action": "list"}), false),
        ("nodes", json!({"action": "notify"}), true),
        ("discord_actions", json!({"action": "search"}), false),
        ("discord_actions", json!({"action": "ban"}), true),
        ("message_slack", json!({}), true),
        ("resend_email", json!({}), true),
        ("recall", json!({"query": "x"}), false),
    ];
    for (tool, args, want) in cases {
        assert_eq!(is_mutating_tool_call(tool, &args), want, "{tool} {args}");
    }
}

#[test]
fn fingerprints_are_stable_and_omit_read_only_calls() {
    assert_eq!(
        tool_action_fingerprint("read", &json!({"path": "/a"}), None),
        None
    );
    assert_eq!(
        tool_action_fingerprint("write", &json!({"path": " /A/B "}), Some("12 chars")).as_deref(),
        Some("tool=write|path=/a/b")
    );
    assert_eq!(
        tool_action_fingerprint(
            "message",
            &json!({"action": "Thread Reply", "to": "chan", "messageId": 7}),
            None
        )
        .as_deref(),
        Some("tool=message|action=thread_reply|to=chan|messageid=7")
    );
    assert_eq!(
        tool_action_fingerprint("exec", &json!({"command": "ls"}), Some("  ls   -la ")).as_deref(),
        Some("tool=exec|meta=ls -la")
    );
}

fn call<'a>(
    tool: &'a str,
    args: &'a Value,
    meta: Option<&'a str>,
    is_error: bool,
) -> FinishedCall<'a> {
    FinishedCall {
        tool_name: tool,
        args,
        meta,
        is_error,
        output_text: "boom\nstack",
    }
}

#[test]
fn a_failed_write_survives_an_unrelated_success() {
    let write_a = json!({"path": "/a"});
    let write_b = json!({"path": "/b"});
    let read = json!({"path": "/a"});
    let mut t = ToolTracker::default();
    t.finish(call("write", &write_a, Some("/a"), true));
    let err = t.last_tool_error.clone().unwrap();
    assert!(err.mutating_action);
    assert_eq!(err.error.as_deref(), Some("boom"));
    t.finish(call("read", &read, Some("/a"), false));
    assert!(
        t.last_tool_error.is_some(),
        "a read does not clear a failed write"
    );
    t.finish(call("write", &write_b, Some("/b"), false));
    assert!(t.last_tool_error.is_some(), "another write does not either");
    t.finish(call("write", &write_a, Some("/a"), false));
    assert_eq!(t.last_tool_error, None, "the same write succeeding does");
    assert_eq!(t.tool_metas.len(), 4);
}

#[test]
fn a_failed_read_is_cleared_by_any_success() {
    let read = json!({"path": "/a"});
    let other = json!({"path": "/b"});
    let mut t = ToolTracker::default();
    t.finish(call("read", &read, Some("/a"), true));
    assert!(!t.last_tool_error.as_ref().unwrap().mutating_action);
    t.finish(call("read", &other, Some("/b"), false));
    assert_eq!(t.last_tool_error, None);
    t.finish(call("bash", &json!({"command": "x"}), Some("x"), true));
    assert_eq!(t.last_tool_error.as_ref().unwrap().tool_name, "exec");
    t.reset();
    assert_eq!(t, ToolTracker::default());
}

#[test]
fn successful_cron_adds_are_counted() {
    let add = json!({"action": "add", "job": {"name": "x"}});
    let list = json!({"action": "list"});
    let mut t = ToolTracker::default();
    t.finish(call("cron", &add, None, false));
    t.finish(call("cron", &add, None, true));
    t.finish(call("cron", &list, None, false));
    t.finish(call("Cron", &add, None, false));
    assert_eq!(t.successful_cron_adds, 2);
    t.reset();
    assert_eq!(t.successful_cron_adds, 0);
}
