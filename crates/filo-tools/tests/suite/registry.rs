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

/// Every built-in tool is declared as pi 1.6.0 declares it: name, description and parameter
/// schema equal the tools of pi's recorded Chat Completions request
/// (`filo-cli/tests/fixtures/pi-1.6.0/requests.json`, `scripts/record-pi/requests.mjs`).
#[test]
fn declarations_equal_pi_16() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../filo-cli/tests/fixtures/pi-1.6.0/requests.json"
    );
    let recorded: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let pi_tools = recorded["openai-completions"][0]["body"]["tools"]
        .as_array()
        .unwrap()
        .clone();
    let dir = tempfile::tempdir().unwrap();
    let ours: Vec<Value> = all_tools(dir.path())
        .iter()
        .map(|t| {
            json!({"type": "function", "function": {
                "name": t.name(), "description": t.description(), "parameters": t.parameters()
            }})
        })
        .collect();
    assert_eq!(ours.len(), pi_tools.len());
    for (ours, pi) in ours.iter().zip(&pi_tools) {
        assert_eq!(ours, pi);
    }
}

/// pi 1.6's bash timeout check: not positive or not finite, and above Node's largest timer.
#[tokio::test]
async fn bash_timeouts_are_validated_as_pi_16() {
    let dir = tempfile::tempdir().unwrap();
    let bash = tool_by_name("bash", dir.path()).unwrap();
    for (timeout, message) in [
        (
            json!(0),
            "Invalid timeout: must be a finite number of seconds",
        ),
        (
            json!(-1.5),
            "Invalid timeout: must be a finite number of seconds",
        ),
        (
            json!(3_000_000),
            "Invalid timeout: maximum is 2147483.647 seconds",
        ),
    ] {
        let out = super::run(
            bash.as_ref(),
            json!({"command": "echo hi", "timeout": timeout}),
        )
        .await;
        assert_eq!(super::failure(out), message, "{timeout}");
    }
}
