use filo_agent::Concurrency;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::settings;
use filo_tools::{all_tools, all_tools_with, coding_tools, tool_by_name};

#[test]
fn sets_and_lookup() {
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<String> = all_tools(dir.path())
        .iter()
        .map(|t| t.name().to_string())
        .collect();
    assert_eq!(
        names,
        ["read", "bash", "edit", "write", "grep", "find", "ls"]
    );
    let names: Vec<String> = coding_tools(dir.path())
        .iter()
        .map(|t| t.name().to_string())
        .collect();
    assert_eq!(names, ["read", "bash", "edit", "write"]);
    assert!(tool_by_name("rm", dir.path()).is_none());
    assert_eq!(tool_by_name("grep", dir.path()).unwrap().label(), "grep");
}

#[test]
fn read_only_tools_share_and_mutating_tools_are_exclusive() {
    let dir = tempfile::tempdir().unwrap();
    for tool in all_tools(dir.path()) {
        let expected = match tool.name() {
            "read" | "grep" | "find" | "ls" => Concurrency::Shared,
            _ => Concurrency::Exclusive,
        };
        assert_eq!(tool.concurrency(), expected, "{}", tool.name());
    }
}

#[test]
fn definitions_sent_to_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let defs: Vec<Value> = all_tools_with(&settings(dir.path()))
        .iter()
        .map(|t| {
            let d = t.definition();
            json!({"name": d.name, "description": d.description, "parameters": d.parameters})
        })
        .collect();
    insta::assert_snapshot!(serde_json::to_string_pretty(&defs).unwrap());
}

#[tokio::test]
async fn every_tool_refuses_an_aborted_call() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "hello").unwrap();
    let args = |name: &str| match name {
        "read" => json!({"path": "a.txt"}),
        "bash" => json!({"command": "touch ran"}),
        "edit" => json!({"path": "a.txt", "oldText": "hello", "newText": "bye"}),
        "write" => json!({"path": "b.txt", "content": "x"}),
        "grep" => json!({"pattern": "hello"}),
        "find" => json!({"pattern": "*.txt"}),
        _ => json!({}),
    };
    for tool in all_tools_with(&settings(dir.path())) {
        let ctx = filo_agent::ToolCallContext::new("c", args(tool.name()));
        ctx.cancel.cancel();
        let expected = if tool.name() == "bash" {
            "Command aborted"
        } else {
            "Operation aborted"
        };
        assert_eq!(
            super::failure(tool.execute(ctx).await),
            expected,
            "{}",
            tool.name()
        );
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "hello"
    );
    assert!(!dir.path().join("b.txt").exists());
    assert!(!dir.path().join("ran").exists());
}
