//! End-to-end runs of the `filo` binary against the scripted mock provider.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use filo_testkit::{MockProvider, Reply, Turn, Usage};
use serde_json::{Value, json};

struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    /// A temp HOME whose models.json points the `mock` provider at `mock`.
    fn new(mock: &MockProvider) -> Home {
        let dir = tempfile::tempdir().unwrap();
        let agent = dir.path().join(".filo").join("agent");
        std::fs::create_dir_all(&agent).unwrap();
        std::fs::create_dir_all(dir.path().join("project")).unwrap();
        let models = json!({"providers": {"mock": {
            "baseUrl": format!("{}/v1", mock.url()),
            "api": "openai-completions",
            "apiKey": "MOCK_API_KEY",
            "models": [{"id": "mock-model", "contextWindow": 100000, "maxTokens": 1000}]
        }}});
        std::fs::write(agent.join("models.json"), models.to_string()).unwrap();
        Home { dir }
    }

    fn project(&self) -> PathBuf {
        self.dir.path().join("project")
    }

    fn sessions(&self) -> Vec<PathBuf> {
        let root = self.dir.path().join(".filo/agent/sessions");
        let mut out = Vec::new();
        for d in std::fs::read_dir(root).into_iter().flatten().flatten() {
            for f in std::fs::read_dir(d.path()).into_iter().flatten().flatten() {
                out.push(f.path());
            }
        }
        out
    }

    async fn filo(&self, args: &[&str]) -> (i32, String, String) {
        let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_filo"))
            .args(args)
            .current_dir(self.project())
            .env_clear()
            .env("HOME", self.dir.path())
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("MOCK_API_KEY", "mock-secret")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
            .await
            .expect("filo did not finish within 60 s")
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

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
    assert_eq!(tools, ["read", "bash", "edit", "write"]);
    let second = reqs[1].body.to_string();
    assert!(
        second.contains("filo-was-here"),
        "the bash output went back to the model"
    );

    let files = home.sessions();
    assert_eq!(files.len(), 1);
    let l = lines(&files[0]);
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
    let roles: Vec<String> = lines(&files[0])
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
            "agent_end"
        ]
    );
    assert!(types.contains(&"message_update"));
    let update = events
        .iter()
        .find(|e| e["type"] == "message_update")
        .unwrap();
    assert!(update["assistantMessageEvent"]["type"].is_string());
    assert_eq!(update["message"]["role"], "assistant");
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
    std::fs::remove_file(home.dir.path().join(".filo/agent/models.json")).unwrap();
    let (code, _, err) = home.filo(&["-p", "hi"]).await;
    assert_eq!(code, 1);
    assert!(err.contains("API key"), "{err}");
}
