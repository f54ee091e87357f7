//! Shared helpers: a temporary HOME wired to the scripted mock provider, and running `filo`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use filo_testkit::MockProvider;
use serde_json::json;

pub struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    /// A temp HOME whose models.json points the `mock` provider at `mock`.
    pub fn new(mock: &MockProvider) -> Home {
        Home::with_dir(mock, tempfile::tempdir().unwrap())
    }

    /// [`Home::new`] outside the system temp folder (which a `workspace-write` sandbox may
    /// write), in the build's own temp folder.
    pub fn outside_tmp(mock: &MockProvider) -> Home {
        Home::with_dir(
            mock,
            tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap(),
        )
    }

    fn with_dir(mock: &MockProvider, dir: tempfile::TempDir) -> Home {
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

    pub fn project(&self) -> PathBuf {
        self.dir.path().join("project")
    }

    pub fn sessions(&self) -> Vec<PathBuf> {
        let root = self.dir.path().join(".filo/agent/sessions");
        let mut out = Vec::new();
        for d in std::fs::read_dir(root).into_iter().flatten().flatten() {
            for f in std::fs::read_dir(d.path()).into_iter().flatten().flatten() {
                out.push(f.path());
            }
        }
        out
    }

    pub async fn filo(&self, args: &[&str]) -> (i32, String, String) {
        self.filo_with_env(args, &[]).await
    }

    /// [`Home::filo`] with extra environment variables.
    pub async fn filo_with_env(
        &self,
        args: &[&str],
        vars: &[(&str, &str)],
    ) -> (i32, String, String) {
        let mut command = self.command(args);
        for (k, v) in vars {
            command.env(k, v);
        }
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
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

    /// The HOME directory itself.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Write `~/.filo/agent/settings.json`.
    pub fn write_settings(&self, settings: &serde_json::Value) {
        let path = self.dir.path().join(".filo/agent/settings.json");
        std::fs::write(path, settings.to_string()).unwrap();
    }

    /// `filo --mode rpc` on the mock model with `extra` flags, stdin and stdout piped.
    pub fn rpc_child(&self, extra: &[&str], stderr: Stdio) -> tokio::process::Child {
        let mut args = vec![
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "--mode",
            "rpc",
        ];
        args.extend_from_slice(extra);
        self.command(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap()
    }

    /// A `filo` command with this HOME, the project as cwd and the mock key; nothing else from
    /// the environment but PATH.
    pub fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_filo"));
        c.args(args)
            .current_dir(self.project())
            .env_clear()
            .env("HOME", self.dir.path())
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("MOCK_API_KEY", "mock-secret")
            .kill_on_drop(true);
        c
    }
}

/// The JSON objects of a JSONL file, one per line.
pub fn jsonl(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// filo's pi 1.6 event stream seen as pi 0.73.1 recorded it, for the 0.73 fixtures' event
/// comparisons: exactly pi 1.6's additions are removed or mapped back, and `message_update` is
/// left out on both sides (0.73's was cumulative, 1.6's is a delta: compared with pi 1.6 in
/// `events_pi16`). The additions: `agent_settled` events, `agent_end.willRetry`,
/// `tool_execution_end.durationMs`, `stopReason: "pending"` at an assistant's start, the
/// `data.disposition` of `prompt`/`steer`/`follow_up` responses (their `data` goes when nothing
/// else is in it: 0.73 sent none) and a compaction result's `estimatedTokensAfter` and `usage`
/// (in `compaction_end.result` and the `compact` response's `data`). A value of an unexpected
/// type is left in place, so that the comparison shows it.
pub fn as_pi073(events: &[serde_json::Value]) -> Vec<serde_json::Value> {
    events
        .iter()
        .filter(|v| v["type"] != "agent_settled" && v["type"] != "message_update")
        .map(|v| {
            let mut v = v.clone();
            if v["message"]["stopReason"] == "pending" {
                v["message"]["stopReason"] = "stop".into();
            }
            let kind = v["type"].as_str().unwrap_or_default().to_owned();
            let command = v["command"].as_str().unwrap_or_default().to_owned();
            match (kind.as_str(), command.as_str()) {
                ("agent_end", _) => remove_if(&mut v, "willRetry", serde_json::Value::is_boolean),
                ("tool_execution_end", _) => {
                    remove_if(&mut v, "durationMs", serde_json::Value::is_number);
                }
                ("compaction_end", _) => {
                    if let Some(result) = v.get_mut("result") {
                        compaction_result_as_pi073(result);
                    }
                }
                ("response", "prompt" | "steer" | "follow_up") => {
                    if let Some(data) = v.get_mut("data") {
                        remove_if(data, "disposition", |d| {
                            matches!(d.as_str(), Some("started" | "queued" | "handled"))
                        });
                    }
                    if v["data"].as_object().is_some_and(serde_json::Map::is_empty) {
                        v.as_object_mut().unwrap().remove("data");
                    }
                }
                ("response", "compact") => {
                    if let Some(data) = v.get_mut("data") {
                        compaction_result_as_pi073(data);
                    }
                }
                _ => {}
            }
            v
        })
        .collect()
}

/// A compaction result without pi 1.6's `estimatedTokensAfter` and `usage`.
fn compaction_result_as_pi073(result: &mut serde_json::Value) {
    remove_if(result, "estimatedTokensAfter", serde_json::Value::is_number);
    remove_if(result, "usage", serde_json::Value::is_object);
}

/// Remove `key` from the object `v` when its value passes `expected`.
fn remove_if(v: &mut serde_json::Value, key: &str, expected: impl Fn(&serde_json::Value) -> bool) {
    if let Some(m) = v.as_object_mut()
        && m.get(key).is_some_and(expected)
    {
        m.remove(key);
    }
}
