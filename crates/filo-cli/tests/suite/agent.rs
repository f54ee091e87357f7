//! End-to-end runs of the `filo` binary against the scripted mock provider.

use filo_testkit::{MockProvider, Reply, Turn, Usage};
use serde_json::{Value, json};

use super::common::{Home, jsonl};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn print_mode_runs_a_bash_tool_and_continue_resumes_the_session() {
    let mock = MockProvider::start(vec![
        Turn::Reply(
            Reply::tool_call("call_1", "bash", json!({"command": "echo filo-was-here"}))
                .with_usage(Usage::new(12, 4)),
        ),
        Turn::Reply(
            Reply::text("The command printed filo-was-here.").with_usage(Usage::new(30, 6)),
        ),
        Turn::Reply(Reply::text("You asked me to run echo.")),
    ])
    .await;
    let home = Home::new(&mock);
    let (code, out, err) = home
        .filo(&[
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "-p",
            "run echo",
        ])
        .await;
    assert_eq!(code, 0, "stderr: {err}");
    assert_eq!(out, "The command printed filo-was-here.\n");
    let reqs = mock.requests();
    assert_eq!(reqs[0].header("authorization"), Some("Bearer mock-secret"));
    let tools: Vec<&str> = reqs[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        [
            "read", "bash", "edit", "write", "life", "recall", "trace", "tobe"
        ]
    );
    let second = reqs[1].body.to_string();
    assert!(
        second.contains("filo-was-here"),
        "the bash output went back to the model"
    );

    let files = home.sessions();
    assert_eq!(files.len(), 1);
    let l = jsonl(&files[0]);
    assert_eq!(l[0]["type"], "session");
    assert_eq!(l[0]["version"], 3);
    let roles: Vec<&str> = l
        .iter()
        .filter_map(|v| v["message"]["role"].as_str())
        .collect();
    assert_eq!(roles, ["user", "assistant", "toolResult", "assistant"]);

    let (code, out, err) = home
        .filo(&[
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "-c",
            "-p",
            "what did I ask?",
        ])
        .await;
    assert_eq!(code, 0, "stderr: {err}");
    assert_eq!(out, "You asked me to run echo.\n");
    let third = mock.requests()[2].body.to_string();
    assert!(
        third.contains("run echo") && third.contains("filo-was-here"),
        "the whole session was sent: {third}"
    );
    assert_eq!(home.sessions().len(), 1, "continued, not a new file");
    let roles: Vec<String> = jsonl(&files[0])
        .iter()
        .filter_map(|v| v["message"]["role"].as_str().map(str::to_string))
        .collect();
    assert_eq!(roles.len(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_mode_streams_the_event_sequence() {
    let mock = MockProvider::start(vec![Turn::Reply(Reply::text("hello there"))]).await;
    let home = Home::new(&mock);
    let (code, out, err) = home
        .filo(&[
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "--mode",
            "json",
            "hi",
        ])
        .await;
    assert_eq!(code, 0, "stderr: {err}");
    let events: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events[0]["type"], "session");
    let types: Vec<&str> = events[1..]
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    let without_updates: Vec<&str> = types
        .iter()
        .copied()
        .filter(|t| *t != "message_update")
        .collect();
    assert_eq!(
        without_updates,
        [
            "agent_start",
            "turn_start",
            "message_start",
            "message_end",
            "message_start",
            "message_end",
            "turn_end",
            "agent_end",
            "agent_settled"
        ]
    );
    assert!(types.contains(&"message_update"));
    let update = events
        .iter()
        .find(|e| e["type"] == "message_update")
        .unwrap();
    assert!(update["assistantMessageEvent"]["type"].is_string());
    // pi 1.6: delta-only, with the usage so far.
    assert!(update.get("message").is_none() && update["usage"].is_object());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_error_exits_1_with_the_message() {
    let mock = MockProvider::start(vec![Turn::Fault(filo_testkit::Fault::http(401))]).await;
    let home = Home::new(&mock);
    let (code, out, err) = home
        .filo(&["--provider", "mock", "--model", "mock-model", "-p", "hi"])
        .await;
    assert_eq!(code, 1);
    assert_eq!(out, "");
    assert!(err.contains("401"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_key_and_no_model_says_how_to_set_one() {
    let mock = MockProvider::start(vec![]).await;
    let home = Home::new(&mock);
    std::fs::remove_file(home.path().join(".filo/agent/models.json")).unwrap();
    let (code, _, err) = home.filo(&["-p", "hi"]).await;
    assert_eq!(code, 1);
    assert!(err.contains("API key"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_writes_html_and_never_rewrites_the_session_file() {
    let mock = MockProvider::start(vec![]).await;
    let home = Home::new(&mock);
    // A v1 file (no ids): opening it for a run would migrate it; exporting must not touch it.
    let v1 = concat!(
        r#"{"type":"session","id":"s1","timestamp":"2025-11-01T10:00:00.000Z","cwd":"/w"}"#,
        "\n",
        r#"{"type":"message","timestamp":"2025-11-01T10:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"<b>bold?</b> & more"}],"timestamp":1}}"#,
        "\n",
    );
    let file = home.project().join("old.jsonl");
    std::fs::write(&file, v1).unwrap();
    let (code, out, err) = home.filo(&["--export", "old.jsonl", "out.html"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("Exported to: "), "{out}");
    let html = std::fs::read_to_string(home.project().join("out.html")).unwrap();
    assert!(html.contains("&lt;b&gt;bold?&lt;/b&gt; &amp; more"));
    assert!(!html.contains("<b>bold?</b>"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), v1);
    let (code, _, err) = home.filo(&["--export", "missing.jsonl"]).await;
    assert_eq!(code, 1);
    assert!(err.contains("missing.jsonl"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_models_shows_catalog_custom_and_local_providers() {
    let mock = MockProvider::start(vec![]).await;
    let home = Home::new(&mock);
    // pi 0.73: only models that have a key are listed.
    let (code, out, err) = home.filo(&["--list-models"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("mock ") && l.contains("mock-model")),
        "{out}"
    );
    assert!(!out.lines().any(|l| l.starts_with("anthropic ")), "{out}");
    let (code, out, err) = home
        .filo_with_env(&["--list-models"], &[("ANTHROPIC_API_KEY", "sk-test")])
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.lines().any(|l| l.starts_with("anthropic ")), "{out}");
    let (_, filtered, _) = home
        .filo_with_env(
            &["--list-models", "mock"],
            &[("ANTHROPIC_API_KEY", "sk-test")],
        )
        .await;
    assert!(
        filtered.lines().skip(1).all(|l| l.contains("mock")),
        "{filtered}"
    );
}
