//! The fault matrix: every provider fault the mock can produce × the print, JSON and RPC modes of
//! the `filo` binary. Each row states the documented outcome: what the user sees, the exit code,
//! how many requests reached the provider, and what the session file keeps.
//!
//! Requests per failure (see `filo_ai::RetryPolicy`): a failure before anything streamed is
//! retried by the client only (`retry.provider.maxRetries`, here 1 → 2 requests) and then is
//! final; a failure after the answer began streaming is retried by the session only if its text
//! is transient (`retry.maxRetries`, here 1 → one more run).

use std::process::Stdio;
use std::time::Duration;

use filo_testkit::{Fault, MockProvider, Reply, Stop, Turn};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::common::{Home, jsonl};

/// The mode a row runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Print,
    Json,
    Rpc,
}

const MODES: [Mode; 3] = [Mode::Print, Mode::Json, Mode::Rpc];

/// How the run must end.
#[derive(Debug, Clone, Copy)]
enum Outcome {
    /// The final answer has this text; print and JSON exit 0.
    Answer(&'static str),
    /// The final answer is an error whose message contains this; print and JSON exit 1 and
    /// print mode shows it on stderr.
    Error(&'static str),
}

struct Row {
    name: &'static str,
    script: Vec<Turn>,
    /// Settings merged over [`base_settings`].
    settings: Value,
    outcome: Outcome,
    /// Requests the provider received.
    requests: usize,
    /// Agent runs: 1 + session-level retries (RPC waits for this many `agent_end`s).
    runs: usize,
    /// Text the session file must hold in an assistant message (a partial reply), if any.
    kept: Option<&'static str>,
    /// A tool result the session file must hold, flagged as an error, containing this text.
    tool_error: Option<&'static str>,
}

/// Short delays everywhere: the client retries once, the session once.
fn base_settings() -> Value {
    json!({"retry": {"maxRetries": 1, "baseDelayMs": 10,
        "provider": {"maxRetries": 1, "maxRetryDelayMs": 2000}}})
}

fn merge(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                merge(b.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (b, o) => *b = o.clone(),
    }
}

fn words(text: &str) -> Reply {
    Reply::text(text)
}

/// The file a cut or invalid `bash` call would create if it ran.
const SENTINEL: &str = "tool-ran.txt";

fn rows() -> Vec<Row> {
    let partial = "one two three four five six seven eight";
    let none = json!({});
    vec![
        Row {
            name: "429 persistent, no retry-after",
            script: vec![
                Fault::http(429).into(),
                Fault::http(429).into(),
                Turn::text("late"),
            ],
            settings: none.clone(),
            outcome: Outcome::Error("(gave up after 2 requests)"),
            requests: 2,
            runs: 1,
            kept: None,
            tool_error: None,
        },
        Row {
            name: "429 with retry-after, then an answer",
            script: vec![Fault::rate_limited(1).into(), Turn::text("after the wait")],
            settings: none.clone(),
            outcome: Outcome::Answer("after the wait"),
            requests: 2,
            runs: 1,
            kept: None,
            tool_error: None,
        },
        Row {
            name: "429 asking for longer than retry.provider.maxRetryDelayMs",
            script: vec![Fault::rate_limited(30).into(), Turn::text("never")],
            settings: none.clone(),
            outcome: Outcome::Error("Server requested 30s retry delay (max: 2s)"),
            requests: 1,
            runs: 1,
            kept: None,
            tool_error: None,
        },
        Row {
            name: "500 persistent",
            script: vec![
                Fault::http(500).into(),
                Fault::http(500).into(),
                Turn::text("late"),
            ],
            settings: none.clone(),
            outcome: Outcome::Error("500 "),
            requests: 2,
            runs: 1,
            kept: None,
            tool_error: None,
        },
        Row {
            name: "529 overloaded once",
            script: vec![Fault::overloaded().into(), Turn::text("recovered")],
            settings: none.clone(),
            outcome: Outcome::Answer("recovered"),
            requests: 2,
            runs: 1,
            kept: None,
            tool_error: None,
        },
        Row {
            name: "stream cut mid-answer, the session runs the turn again",
            script: vec![
                Fault::Cut {
                    after_events: 4,
                    reply: words(partial),
                }
                .into(),
                Turn::text("second try"),
            ],
            settings: none.clone(),
            outcome: Outcome::Answer("second try"),
            requests: 2,
            runs: 2,
            kept: Some("one two"),
            tool_error: None,
        },
        Row {
            name: "stall mid-answer with retry.provider.timeoutMs 1000",
            script: vec![
                Fault::Stall {
                    after_events: 4,
                    reply: words(partial),
                    stall: Duration::from_secs(30),
                }
                .into(),
                Turn::text("never"),
            ],
            settings: json!({"retry": {"provider": {"timeoutMs": 1000}}}),
            outcome: Outcome::Error("Stream idle timeout: no data received for 1000 ms"),
            requests: 1,
            runs: 1,
            kept: Some("one two"),
            tool_error: None,
        },
        Row {
            name: "malformed frame mid-answer",
            script: vec![
                Fault::Malformed {
                    after_events: 4,
                    reply: words(partial),
                }
                .into(),
                Turn::text("never"),
            ],
            settings: none.clone(),
            outcome: Outcome::Error("Malformed stream data"),
            requests: 1,
            runs: 1,
            kept: Some("one two"),
            tool_error: None,
        },
        Row {
            name: "invalid tool JSON: a validation error goes back to the model",
            script: vec![
                Reply::empty()
                    .with_raw_tool_call("call_1", "bash", "touch tool-ran.txt")
                    .into(),
                Turn::text("fixed"),
            ],
            settings: none.clone(),
            outcome: Outcome::Answer("fixed"),
            requests: 2,
            runs: 1,
            kept: None,
            tool_error: Some("Validation failed for tool \"bash\""),
        },
        Row {
            name: "tool call cut by the output limit is not run",
            script: vec![
                Reply::empty()
                    .with_raw_tool_call(
                        "call_1",
                        "bash",
                        r#"{"command": "touch tool-ran.txt; echo and then some more"#,
                    )
                    .with_stop(Stop::Length)
                    .into(),
                Turn::text("smaller now"),
            ],
            settings: none.clone(),
            outcome: Outcome::Answer("smaller now"),
            requests: 2,
            runs: 1,
            kept: None,
            tool_error: Some("reached the output token limit"),
        },
        Row {
            name: "HTML page with status 200",
            script: vec![Fault::html_page().into(), Turn::text("never")],
            settings: none,
            outcome: Outcome::Error(
                "Provider answered HTTP 200 with content-type `text/html; charset=utf-8`",
            ),
            requests: 1,
            runs: 1,
            kept: None,
            tool_error: None,
        },
    ]
}

/// What one run of filo produced.
struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
    /// The final assistant message as the mode reports it.
    last: Value,
}

const MODEL_ARGS: [&str; 4] = ["--provider", "mock", "--model", "mock-model"];

async fn run_print(home: &Home, json_mode: bool) -> Ran {
    let mut args = MODEL_ARGS.to_vec();
    if json_mode {
        args.extend(["--mode", "json", "go"]);
    } else {
        args.extend(["-p", "go"]);
    }
    let (code, stdout, stderr) = home.filo(&args).await;
    let last = if json_mode {
        stdout
            .lines()
            .rev()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|v| v["type"] == "message_end" && v["message"]["role"] == "assistant")
            .map(|v| v["message"].clone())
            .unwrap_or(Value::Null)
    } else {
        Value::Null
    };
    Ran {
        code,
        stdout,
        stderr,
        last,
    }
}

/// RPC: one prompt, wait for `runs` `agent_end` events, read the messages, close stdin.
async fn run_rpc(home: &Home, runs: usize) -> Ran {
    let mut child = home.rpc_child(&[], Stdio::piped());
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    let mut next = async |seen: &mut Vec<Value>, want: &dyn Fn(&Value) -> bool| loop {
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("rpc: timed out; seen {seen:#?}"))
            .unwrap()
            .unwrap_or_else(|| panic!("rpc: stdout closed; seen {seen:#?}"));
        let v: Value = serde_json::from_str(&line).unwrap();
        seen.push(v.clone());
        if want(&v) {
            return v;
        }
    };
    stdin
        .write_all(b"{\"id\":\"p\",\"type\":\"prompt\",\"message\":\"go\"}\n")
        .await
        .unwrap();
    for _ in 0..runs {
        next(&mut seen, &|v| v["type"] == "agent_end").await;
    }
    stdin
        .write_all(b"{\"id\":\"m\",\"type\":\"get_messages\"}\n")
        .await
        .unwrap();
    let messages = next(&mut seen, &|v| v["type"] == "response" && v["id"] == "m").await;
    let last = messages["data"]["messages"]
        .as_array()
        .and_then(|ms| ms.iter().rev().find(|m| m["role"] == "assistant"))
        .cloned()
        .unwrap_or(Value::Null);
    drop(stdin);
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("rpc: filo did not exit after stdin closed")
        .unwrap();
    let rest = String::from_utf8_lossy(&out.stdout);
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: seen
            .iter()
            .map(Value::to_string)
            .chain(rest.lines().map(str::to_owned))
            .collect::<Vec<_>>()
            .join("\n"),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        last,
    }
}

fn text_of(m: &Value) -> String {
    m["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["text"].as_str())
        .collect()
}

async fn check(row: &Row, mode: Mode) {
    let mock = MockProvider::start(row.script.clone()).await;
    let home = Home::new(&mock);
    let mut settings = base_settings();
    merge(&mut settings, &row.settings);
    home.write_settings(&settings);
    let ran = match mode {
        Mode::Print => run_print(&home, false).await,
        Mode::Json => run_print(&home, true).await,
        Mode::Rpc => run_rpc(&home, row.runs).await,
    };
    let what = format!(
        "{} [{mode:?}]\nstdout: {}\nstderr: {}",
        row.name, ran.stdout, ran.stderr
    );
    assert_eq!(mock.requests().len(), row.requests, "requests: {what}");
    match (row.outcome, mode) {
        (Outcome::Answer(text), Mode::Print) => {
            assert_eq!(ran.code, 0, "{what}");
            assert_eq!(ran.stdout, format!("{text}\n"), "{what}");
        }
        (Outcome::Error(text), Mode::Print) => {
            assert_eq!(ran.code, 1, "{what}");
            assert!(ran.stderr.contains(text), "{what}");
            assert!(ran.stdout.is_empty(), "{what}");
        }
        (Outcome::Answer(text), Mode::Json | Mode::Rpc) => {
            assert_eq!(ran.code, 0, "{what}");
            assert_eq!(ran.last["stopReason"], "stop", "{what}");
            assert_eq!(text_of(&ran.last), text, "{what}");
        }
        (Outcome::Error(text), Mode::Json | Mode::Rpc) => {
            // RPC reports the failure in its events and keeps serving: exit 0 on close.
            let code = if mode == Mode::Json { 1 } else { 0 };
            assert_eq!(ran.code, code, "{what}");
            assert_eq!(ran.last["stopReason"], "error", "{what}");
            let message = ran.last["errorMessage"].as_str().unwrap_or_default();
            assert!(message.contains(text), "{message}: {what}");
        }
    }
    let files = home.sessions();
    assert_eq!(files.len(), 1, "{what}");
    let lines = jsonl(&files[0]);
    let messages: Vec<&Value> = lines.iter().map(|l| &l["message"]).collect();
    if let Some(kept) = row.kept {
        assert!(
            messages
                .iter()
                .any(|m| m["role"] == "assistant" && text_of(m).contains(kept)),
            "the partial reply is kept: {what}\nfile: {lines:#?}"
        );
    }
    if let Some(error) = row.tool_error {
        assert!(
            messages.iter().any(|m| m["role"] == "toolResult"
                && m["isError"] == true
                && text_of(m).contains(error)),
            "tool error result: {what}\nfile: {lines:#?}"
        );
    }
    assert!(
        !home.project().join(SENTINEL).exists(),
        "a broken tool call ran: {what}"
    );
    mock.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_provider_fault_in_print_json_and_rpc_modes() {
    for row in rows() {
        // The three modes of a row run side by side, each against its own mock and home.
        let [a, b, c] = MODES;
        tokio::join!(check(&row, a), check(&row, b), check(&row, c));
    }
}

/// With several prompts, a failure before the last one is not hidden by a later success.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_earlier_prompt_makes_print_and_json_modes_exit_non_zero() {
    for json_mode in [false, true] {
        let mock =
            MockProvider::start(vec![Fault::http(400).into(), Turn::text("second ok")]).await;
        let home = Home::new(&mock);
        home.write_settings(&base_settings());
        let mut args = MODEL_ARGS.to_vec();
        if json_mode {
            args.extend(["--mode", "json"]);
        } else {
            args.push("-p");
        }
        args.extend(["first", "second"]);
        let (code, stdout, stderr) = home.filo(&args).await;
        assert_eq!(
            code, 1,
            "json={json_mode}\nstdout: {stdout}\nstderr: {stderr}"
        );
        if json_mode {
            // The failure is in the events; the exit code says one happened.
            assert!(stdout.contains(r#""stopReason":"error""#), "{stdout}");
        } else {
            assert!(
                stderr.contains("filo: prompt 1 of 2 failed: 400 "),
                "{stderr}"
            );
            assert_eq!(stdout, "second ok\n");
        }
        assert_eq!(mock.requests().len(), 2);
    }
}
