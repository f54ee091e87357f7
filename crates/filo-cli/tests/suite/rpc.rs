//! `filo --mode rpc` as a child process: JSONL commands on its stdin, responses and events read
//! from its stdout, the model played by the scripted mock provider.

use std::process::Stdio;
use std::time::Duration;

use filo_testkit::{Fault, MockProvider, Reply, Turn, Usage};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin};
use tokio::sync::mpsc;

use super::common::Home;

/// How long any single expected line may take.
const WAIT: Duration = Duration::from_secs(10);

pub(super) struct Rpc {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::UnboundedReceiver<String>,
    /// Every line read so far, in order.
    pub(super) seen: Vec<Value>,
}

impl Rpc {
    pub(super) fn start(home: &Home, extra: &[&str]) -> Rpc {
        let mut child = home.rpc_child(extra, Stdio::null());
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(l)) = lines.next_line().await {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        Rpc {
            stdin: child.stdin.take(),
            child,
            lines: rx,
            seen: Vec::new(),
        }
    }

    pub(super) async fn send_raw(&mut self, bytes: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(bytes.as_bytes()).await.unwrap();
        stdin.flush().await.unwrap();
    }

    pub(super) async fn send(&mut self, command: Value) {
        self.send_raw(&format!("{command}\n")).await;
    }

    /// The next line whose JSON satisfies `pred`; every line read is kept in `seen`.
    pub(super) async fn until(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        loop {
            let line = tokio::time::timeout(WAIT, self.lines.recv())
                .await
                .unwrap_or_else(|_| panic!("timed out waiting for {what}; seen {:#?}", self.seen))
                .unwrap_or_else(|| panic!("stdout closed waiting for {what}"));
            let v: Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
            self.seen.push(v.clone());
            if pred(&v) {
                return v;
            }
        }
    }

    pub(super) async fn response(&mut self, id: &str) -> Value {
        self.until(&format!("response {id}"), |v| {
            v["type"] == "response" && v["id"] == id
        })
        .await
    }

    pub(super) async fn event(&mut self, kind: &str) -> Value {
        self.until(kind, |v| v["type"] == kind).await
    }

    /// Send a command with `id` and return its whole response.
    pub(super) async fn response_to(&mut self, id: &str, mut command: Value) -> Value {
        command["id"] = id.into();
        self.send(command).await;
        self.response(id).await
    }

    /// Send a command with `id` and return its response's `data`, asserting success.
    pub(super) async fn call(&mut self, id: &str, mut command: Value) -> Value {
        command["id"] = id.into();
        self.send(command).await;
        let r = self.response(id).await;
        assert_eq!(r["success"], true, "{r}");
        r.get("data").cloned().unwrap_or(Value::Null)
    }

    /// Close stdin and wait for a clean exit.
    pub(super) async fn close(mut self) -> i32 {
        drop(self.stdin.take());
        let status = tokio::time::timeout(WAIT, self.child.wait())
            .await
            .expect("filo did not exit after stdin closed")
            .unwrap();
        status.code().unwrap_or(-1)
    }
}

fn stalled(text: &str, secs: u64) -> Turn {
    Turn::Fault(Fault::Stall {
        after_events: 2,
        reply: Reply::text(text),
        stall: Duration::from_secs(secs),
    })
}

fn is_assistant_start(v: &Value) -> bool {
    v["type"] == "message_start" && v["message"]["role"] == "assistant"
}

fn roles(messages: &Value) -> Vec<String> {
    messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_answers_at_once_then_streams_events_and_the_state_reflects_it() {
    let mock = MockProvider::start(vec![Turn::Reply(
        Reply::text("hello <there>").with_usage(Usage::new(40, 7)),
    )])
    .await;
    let home = Home::new(&mock);
    let mut rpc = Rpc::start(&home, &[]);
    rpc.send(json!({"id": "p1", "type": "prompt", "message": "say <b>hi</b>"}))
        .await;
    let first = rpc.until("first line", |_| true).await;
    assert_eq!(
        first,
        json!({"id": "p1", "type": "response", "command": "prompt", "success": true,
               "data": {"disposition": "started"}})
    );
    rpc.event("agent_end").await;
    let events: Vec<&Value> = rpc.seen[1..].iter().collect();
    assert!(
        events.iter().all(|e| e.get("id").is_none()),
        "events carry no id"
    );
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .filter(|t| *t != "message_update")
        .collect();
    assert_eq!(
        kinds,
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

    let state = rpc.call("s", json!({"type": "get_state"})).await;
    assert_eq!(state["model"]["id"], "mock-model");
    assert_eq!(state["isStreaming"], false);
    assert_eq!(state["messageCount"], 2);
    assert_eq!(state["pendingMessageCount"], 0);
    assert_eq!(state["steeringMode"], "one-at-a-time");
    assert!(state.get("sessionName").is_none());
    let file = state["sessionFile"].as_str().unwrap().to_string();
    assert!(std::path::Path::new(&file).is_file());

    let stats = rpc.call("st", json!({"type": "get_session_stats"})).await;
    assert_eq!(stats["userMessages"], 1);
    assert_eq!(stats["assistantMessages"], 1);
    assert_eq!(stats["totalMessages"], 2);
    assert_eq!(stats["tokens"]["input"], 40);
    assert_eq!(stats["tokens"]["output"], 7);
    assert_eq!(stats["sessionId"], state["sessionId"]);

    let messages = rpc.call("m", json!({"type": "get_messages"})).await;
    assert_eq!(roles(&messages["messages"]), ["user", "assistant"]);
    assert_eq!(messages["messages"][1]["stopReason"], "stop");

    let text = rpc
        .call("t", json!({"type": "get_last_assistant_text"}))
        .await;
    assert_eq!(text, json!({"text": "hello <there>"}));

    rpc.send(json!({"id": "n0", "type": "set_session_name", "name": "  "}))
        .await;
    let r = rpc.response("n0").await;
    assert_eq!(
        r,
        json!({"id": "n0", "type": "response", "command": "set_session_name",
               "success": false, "error": "Session name cannot be empty"})
    );
    rpc.call(
        "n1",
        json!({"type": "set_session_name", "name": " my run "}),
    )
    .await;
    let state = rpc.call("s2", json!({"type": "get_state"})).await;
    assert_eq!(state["sessionName"], "my run");

    let export = rpc
        .call(
            "e",
            json!({"type": "export_html", "outputPath": "out/s.html"}),
        )
        .await;
    let html = std::fs::read_to_string(export["path"].as_str().unwrap()).unwrap();
    assert!(html.contains("say &lt;b&gt;hi&lt;/b&gt;"), "{html}");
    assert!(html.contains("hello &lt;there&gt;"));
    assert!(!html.contains("<b>hi</b>"));
    assert_eq!(rpc.close().await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steering_while_a_turn_stalls_is_delivered_after_it() {
    let mock = MockProvider::start(vec![
        stalled("first answer goes on", 2),
        Turn::Reply(Reply::text("steered answer")),
        Turn::text("third"),
    ])
    .await;
    let home = Home::new(&mock);
    let mut rpc = Rpc::start(&home, &[]);
    rpc.call("p", json!({"type": "prompt", "message": "start"}))
        .await;
    rpc.until("assistant start", is_assistant_start).await;
    rpc.call("st", json!({"type": "steer", "message": "change course"}))
        .await;
    rpc.send(json!({"id": "p2", "type": "prompt", "message": "again"}))
        .await;
    // Refused in its preflight: one answer, the refusal (pi 0.73).
    let refused = rpc.response("p2").await;
    assert_eq!(refused["success"], false);
    assert_eq!(refused["command"], "prompt");
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("Agent is already processing"),
        "{refused}"
    );
    let state = rpc.call("s", json!({"type": "get_state"})).await;
    assert_eq!(state["isStreaming"], true);
    assert_eq!(state["pendingMessageCount"], 1);
    let b = rpc
        .call(
            "b",
            json!({"type": "bash", "command": "echo while-streaming"}),
        )
        .await;
    assert_eq!(b["output"], "while-streaming\n");

    let steered = rpc
        .until("steer delivered", |v| {
            v["type"] == "message_start"
                && v["message"]["role"] == "user"
                && v.to_string().contains("change course")
        })
        .await;
    assert_eq!(steered["message"]["content"][0]["text"], "change course");
    rpc.event("agent_end").await;
    let messages = rpc.call("m", json!({"type": "get_messages"})).await;
    assert_eq!(
        roles(&messages["messages"]),
        ["user", "assistant", "user", "assistant"]
    );
    let state = rpc.call("s2", json!({"type": "get_state"})).await;
    assert_eq!(state["pendingMessageCount"], 0);
    let second = mock.requests()[1].body.to_string();
    assert!(second.contains("change course"), "{second}");
    assert!(
        !second.contains("while-streaming"),
        "bash run while streaming waits for the next prompt"
    );
    rpc.call("p3", json!({"type": "prompt", "message": "next"}))
        .await;
    rpc.event("agent_end").await;
    let third = mock.requests()[2].body.to_string();
    assert!(third.contains("while-streaming"), "{third}");
    let messages = rpc.call("m2", json!({"type": "get_messages"})).await;
    assert_eq!(
        roles(&messages["messages"])[4..],
        ["bashExecution", "user", "assistant"]
    );
    assert_eq!(rpc.close().await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_ends_a_stalled_stream_as_aborted() {
    let mock = MockProvider::start(vec![stalled("never finished here", 30)]).await;
    let home = Home::new(&mock);
    let mut rpc = Rpc::start(&home, &[]);
    rpc.call("p", json!({"type": "prompt", "message": "go"}))
        .await;
    rpc.until("assistant start", is_assistant_start).await;
    rpc.send(json!({"id": "a", "type": "abort"})).await;
    let end = rpc
        .until("assistant end", |v| {
            v["type"] == "message_end" && v["message"]["role"] == "assistant"
        })
        .await;
    assert_eq!(end["message"]["stopReason"], "aborted");
    let r = rpc.response("a").await;
    assert_eq!(r["success"], true);
    assert!(
        rpc.seen.iter().any(|v| v["type"] == "agent_end"),
        "abort answers once the agent is idle"
    );
    let state = rpc.call("s", json!({"type": "get_state"})).await;
    assert_eq!(state["isStreaming"], false);
    let text = rpc
        .call("t", json!({"type": "get_last_assistant_text"}))
        .await;
    assert!(text.get("text").is_none_or(|t| t.is_string()));
    assert_eq!(rpc.close().await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bash_output_reaches_the_next_prompt_and_abort_bash_cancels() {
    let mock = MockProvider::start(vec![Turn::text("seen it")]).await;
    let home = Home::new(&mock);
    let mut rpc = Rpc::start(&home, &[]);
    let r = rpc
        .call(
            "b",
            json!({"type": "bash", "command": "printf 'one\\033[31m red\\033[0m\\ttwo\\r\\n'; exit 3"}),
        )
        .await;
    assert_eq!(
        r,
        json!({"output": "one red\ttwo\n", "exitCode": 3, "cancelled": false, "truncated": false})
    );
    // pi 1.6 streams the output as `bash_execution_update` events carrying the command's id.
    let updates: Vec<&Value> = rpc
        .seen
        .iter()
        .filter(|v| v["type"] != "response")
        .collect();
    assert!(
        updates
            .iter()
            .all(|v| v["type"] == "bash_execution_update" && v["id"] == "b"),
        "{updates:?}"
    );
    let streamed: String = updates
        .iter()
        .map(|v| v["delta"].as_str().unwrap())
        .collect();
    assert_eq!(streamed, "one red\ttwo\n");

    rpc.send(json!({"id": "slow", "type": "bash", "command": "echo started; sleep 20"}))
        .await;
    rpc.call("ab", json!({"type": "abort_bash"})).await;
    let slow = rpc.response("slow").await;
    assert_eq!(slow["success"], true);
    assert_eq!(slow["data"]["cancelled"], true);
    assert!(slow["data"].get("exitCode").is_none(), "{slow}");

    rpc.call("p", json!({"type": "prompt", "message": "what ran?"}))
        .await;
    rpc.event("agent_end").await;
    let body = mock.requests()[0].body.to_string();
    assert!(body.contains("Ran `printf"), "{body}");
    assert!(body.contains("one red\\ttwo"), "{body}");
    assert!(body.contains("Command exited with code 3"), "{body}");
    let messages = rpc.call("m", json!({"type": "get_messages"})).await;
    assert_eq!(
        roles(&messages["messages"]),
        ["bashExecution", "bashExecution", "user", "assistant"]
    );
    assert_eq!(rpc.close().await, 0);
    let file = std::fs::read_to_string(&home.sessions()[0]).unwrap();
    assert_eq!(file.matches("\"role\":\"bashExecution\"").count(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_summarizes_and_replaces_the_context() {
    let mock = MockProvider::start(vec![
        Turn::Reply(Reply::text("first answer").with_usage(Usage::new(100, 10))),
        Turn::Reply(Reply::text("second answer").with_usage(Usage::new(200, 10))),
        // One summary call, plus one for the split turn's prefix when the cut lands mid-turn.
        Turn::text("## Goal\nthe summary"),
        Turn::text("## Goal\nthe summary"),
    ])
    .await;
    let home = Home::new(&mock);
    home.write_settings(&json!({"compaction": {"keepRecentTokens": 1}}));
    let mut rpc = Rpc::start(&home, &[]);
    for (id, q) in [("p1", "first question"), ("p2", "second question")] {
        rpc.call(id, json!({"type": "prompt", "message": q})).await;
        rpc.event("agent_end").await;
    }
    let c = rpc
        .call(
            "c",
            json!({"type": "compact", "customInstructions": "keep it short"}),
        )
        .await;
    assert!(
        c["summary"].as_str().unwrap().contains("the summary"),
        "{c}"
    );
    assert!(c["firstKeptEntryId"].is_string());
    assert!(c["tokensBefore"].as_u64().unwrap() > 0);
    let summaries: Vec<String> = mock.requests()[2..]
        .iter()
        .map(|r| r.body.to_string())
        .collect();
    assert!(
        summaries.iter().any(|b| b.contains("keep it short")),
        "the custom instructions reach the summary request"
    );
    let messages = rpc.call("m", json!({"type": "get_messages"})).await;
    let r = roles(&messages["messages"]);
    assert_eq!(r[0], "compactionSummary", "{r:?}");
    assert!(r.len() < 4);
    assert_eq!(rpc.close().await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fork_messages_list_user_turns_and_fork_starts_a_branch_before_one() {
    let mock = MockProvider::start(vec![Turn::text("one"), Turn::text("two")]).await;
    let home = Home::new(&mock);
    let mut rpc = Rpc::start(&home, &[]);
    for (id, q) in [("p1", "first question"), ("p2", "second question")] {
        rpc.call(id, json!({"type": "prompt", "message": q})).await;
        rpc.event("agent_end").await;
    }
    let before = rpc.call("s", json!({"type": "get_state"})).await;
    let forks = rpc.call("f", json!({"type": "get_fork_messages"})).await;
    let list = forks["messages"].as_array().unwrap();
    let texts: Vec<&str> = list.iter().map(|m| m["text"].as_str().unwrap()).collect();
    assert_eq!(texts, ["first question", "second question"]);
    let entry = list[1]["entryId"].as_str().unwrap();
    let forked = rpc
        .call("fk", json!({"type": "fork", "entryId": entry}))
        .await;
    assert_eq!(
        forked,
        json!({"text": "second question", "cancelled": false})
    );
    let messages = rpc.call("m", json!({"type": "get_messages"})).await;
    assert_eq!(roles(&messages["messages"]), ["user", "assistant"]);
    let after = rpc.call("s2", json!({"type": "get_state"})).await;
    assert_ne!(after["sessionId"], before["sessionId"]);

    rpc.send(json!({"id": "bad", "type": "fork", "entryId": "nope"}))
        .await;
    let err = rpc.response("bad").await;
    assert_eq!(
        err,
        json!({"id": "bad", "type": "response", "command": "fork", "success": false,
               "error": "Invalid entry ID for forking"})
    );

    let old = before["sessionFile"].as_str().unwrap();
    let switched = rpc
        .call("sw", json!({"type": "switch_session", "sessionPath": old}))
        .await;
    assert_eq!(switched, json!({"cancelled": false}));
    let messages = rpc.call("m2", json!({"type": "get_messages"})).await;
    assert_eq!(messages["messages"].as_array().unwrap().len(), 4);
    let fresh = rpc
        .call("new", json!({"type": "new_session", "parentSession": old}))
        .await;
    assert_eq!(fresh, json!({"cancelled": false}));
    let state = rpc.call("s3", json!({"type": "get_state"})).await;
    assert_eq!(state["messageCount"], 0);
    assert_ne!(state["sessionId"], before["sessionId"]);
    assert_eq!(rpc.close().await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protocol_errors_and_framing() {
    let mock = MockProvider::start(vec![]).await;
    let home = Home::new(&mock);
    let prompts = home.path().join(".filo/agent/prompts");
    std::fs::create_dir_all(&prompts).unwrap();
    std::fs::write(
        prompts.join("review.md"),
        "---\ndescription: Review the diff\n---\nReview $1",
    )
    .unwrap();
    let mut rpc = Rpc::start(&home, &[]);
    rpc.send(json!({"id": "u", "type": "frobnicate"})).await;
    let unknown = rpc.until("unknown", |v| v["type"] == "response").await;
    assert_eq!(
        unknown,
        json!({"id": "u", "type": "response", "command": "frobnicate", "success": false,
               "error": "Unknown command: frobnicate"})
    );
    rpc.send_raw("{\"id\": \"x\", \"type\": \"get_state\"\n")
        .await;
    let parse = rpc.until("parse error", |v| v["type"] == "response").await;
    assert_eq!(parse["command"], "parse");
    assert_eq!(parse["success"], false);
    assert!(parse.get("id").is_none());
    assert!(
        parse["error"]
            .as_str()
            .unwrap()
            .starts_with("Failed to parse command: "),
        "{parse}"
    );
    rpc.send(json!({"id": "m", "type": "set_model", "provider": "mock", "modelId": "nope"}))
        .await;
    let r = rpc.response("m").await;
    assert_eq!(r["error"], "Model not found: mock/nope");
    rpc.send_raw("{\"id\":\"crlf\",\"type\":\"set_session_name\",\"name\":\"a\u{2028}b\"}\r\n")
        .await;
    let r = rpc.response("crlf").await;
    assert_eq!(r["success"], true);
    let state = rpc.call("s", json!({"type": "get_state"})).await;
    assert_eq!(state["sessionName"], "a\u{2028}b");
    let models = rpc
        .call("am", json!({"type": "get_available_models"}))
        .await;
    assert_eq!(models["models"][0]["id"], "mock-model");
    let cycled = rpc.call("cm", json!({"type": "cycle_model"})).await;
    assert_eq!(cycled, Value::Null, "one model: nothing to cycle to");
    rpc.call("sm", json!({"type": "set_steering_mode", "mode": "all"}))
        .await;
    rpc.call(
        "ac",
        json!({"type": "set_auto_compaction", "enabled": false}),
    )
    .await;
    rpc.call("tl", json!({"type": "set_thinking_level", "level": "high"}))
        .await;
    let cycled = rpc
        .call("ct", json!({"type": "cycle_thinking_level"}))
        .await;
    assert_eq!(cycled, Value::Null, "the mock model cannot think");
    rpc.send(json!({"id": "bad", "type": "set_thinking_level", "level": "turbo"}))
        .await;
    let bad = rpc.response("bad").await;
    assert_eq!(bad["command"], "set_thinking_level");
    assert_eq!(bad["error"], "Invalid thinking level \"turbo\"");
    let state = rpc.call("s2", json!({"type": "get_state"})).await;
    assert_eq!(state["steeringMode"], "all");
    assert_eq!(state["autoCompactionEnabled"], false);
    assert_eq!(
        state["thinkingLevel"], "off",
        "clamped to what the model supports"
    );
    // The last command has no newline: it is still read at end of input.
    rpc.send_raw("{\"id\":\"last\",\"type\":\"get_commands\"}")
        .await;
    drop(rpc.stdin.take());
    let last = rpc.response("last").await;
    let agent = home.path().join(".filo/agent");
    assert_eq!(
        last["data"],
        json!({"commands": [{"name": "review", "description": "Review the diff",
                             "source": "prompt", "sourceInfo": {
                                 "path": agent.join("prompts/review.md").to_string_lossy(),
                                 "source": "auto", "scope": "user", "origin": "top-level",
                                 "baseDir": agent.to_string_lossy()}}]})
    );
    assert_eq!(rpc.close().await, 0);
    let settings = std::fs::read_to_string(home.path().join(".filo/agent/settings.json")).unwrap();
    assert!(settings.contains("\"steeringMode\": \"all\""), "{settings}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_and_thinking_levels_cycle_and_clamp() {
    let mock = MockProvider::start(vec![]).await;
    let home = Home::new(&mock);
    let models = json!({"providers": {"mock": {
        "baseUrl": format!("{}/v1", mock.url()),
        "api": "openai-completions",
        "apiKey": "MOCK_API_KEY",
        "models": [
            {"id": "mock-model", "contextWindow": 100000, "maxTokens": 1000},
            {"id": "mock-think", "reasoning": true, "contextWindow": 100000, "maxTokens": 1000}
        ]
    }}});
    std::fs::write(
        home.path().join(".filo/agent/models.json"),
        models.to_string(),
    )
    .unwrap();
    let mut rpc = Rpc::start(&home, &[]);
    let available = rpc
        .call("am", json!({"type": "get_available_models"}))
        .await;
    assert_eq!(available["models"].as_array().unwrap().len(), 2);
    let cycled = rpc.call("cm", json!({"type": "cycle_model"})).await;
    assert_eq!(cycled["model"]["id"], "mock-think");
    assert_eq!(cycled["isScoped"], false);
    assert_eq!(cycled["thinkingLevel"], "off");
    let level = rpc
        .call("ct", json!({"type": "cycle_thinking_level"}))
        .await;
    assert_eq!(level, json!({"level": "minimal"}));
    rpc.call(
        "tl",
        json!({"type": "set_thinking_level", "level": "xhigh"}),
    )
    .await;
    let state = rpc.call("s", json!({"type": "get_state"})).await;
    assert_eq!(state["model"]["id"], "mock-think");
    assert_eq!(
        state["thinkingLevel"], "high",
        "xhigh is not supported here"
    );
    let model = rpc
        .call(
            "sm",
            json!({"type": "set_model", "provider": "mock", "modelId": "mock-model"}),
        )
        .await;
    assert_eq!(model["id"], "mock-model");
    assert_eq!(model["provider"], "mock");
    let state = rpc.call("s2", json!({"type": "get_state"})).await;
    assert_eq!(state["thinkingLevel"], "off");
    assert_eq!(rpc.close().await, 0);
    let settings = std::fs::read_to_string(home.path().join(".filo/agent/settings.json")).unwrap();
    assert!(
        settings.contains("\"defaultModel\": \"mock-model\""),
        "{settings}"
    );
}

/// Processes whose command line is exactly `sleep <secs>`.
fn sleepers(secs: &str) -> usize {
    let wanted = format!("sleep\0{secs}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|c| c == wanted.as_bytes())
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_of_input_aborts_the_run_and_kills_a_running_bash() {
    let mock = MockProvider::start(vec![stalled("never finished here", 30)]).await;
    let home = Home::new(&mock);
    let mut rpc = Rpc::start(&home, &[]);
    rpc.call("p", json!({"type": "prompt", "message": "go"}))
        .await;
    rpc.until("assistant start", is_assistant_start).await;
    rpc.send(json!({"id": "b", "type": "bash", "command": "sleep 29.137"}))
        .await;
    let deadline = tokio::time::Instant::now() + WAIT;
    while sleepers("29.137") == 0 {
        assert!(tokio::time::Instant::now() < deadline, "bash never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(rpc.stdin.take());
    // Everything up to the end of output, in whatever order the two endings come.
    while let Ok(Some(line)) = tokio::time::timeout(WAIT, rpc.lines.recv()).await {
        rpc.seen.push(serde_json::from_str(&line).unwrap());
    }
    let end = rpc
        .seen
        .iter()
        .find(|v| v["type"] == "message_end" && v["message"]["role"] == "assistant")
        .expect("the assistant message ended");
    assert_eq!(end["message"]["stopReason"], "aborted");
    let bash = rpc
        .seen
        .iter()
        .find(|v| v["id"] == "b")
        .expect("the bash command answered");
    assert_eq!(bash["data"]["cancelled"], true);
    assert_eq!(rpc.close().await, 0);
    assert_eq!(sleepers("29.137"), 0, "no process left behind");
}
