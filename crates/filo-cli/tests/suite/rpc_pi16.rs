//! `filo --mode rpc` against pi 1.6.0's own `RpcClient` session
//! (`tests/fixtures/pi-1.6.0/rpc-client.json`, recorded by `scripts/record-pi/rpc-client.mjs`
//! from pi itself): the commands pi's client wrote are replayed to filo step by step, and the
//! protocol records filo answers (responses, `agent_settled`, queue and bash updates,
//! compaction events) must equal pi's in order and field for field; responses whose data holds
//! run-specific values (the state, the stats, the tree) are compared by shape. The live run of
//! the real client against filo is `pi16_rpc_client_passes_against_filo` (opt-in).

use std::time::Duration;

use filo_testkit::{Fault, MockProvider, Reply, Turn, Usage};
use serde_json::{Value, json};

use super::common::Home;
use super::events_pi16::fixture16;
use super::rpc::Rpc;

/// The session's stream of agent events: compared in `events_pi16`, left out here.
const AGENT_STREAM: &[&str] = &[
    "agent_start",
    "agent_end",
    "turn_start",
    "turn_end",
    "message_start",
    "message_update",
    "message_end",
    "tool_execution_start",
    "tool_execution_update",
    "tool_execution_end",
];

/// Commands whose response data is compared by shape (keys and value types), not value.
const BY_SHAPE: &[&str] = &["get_state", "get_session_stats"];

/// Keys and value types, values dropped.
fn shape(v: &Value) -> Value {
    match v {
        Value::Null => json!("null"),
        Value::Bool(_) => json!("boolean"),
        Value::Number(_) => json!("number"),
        Value::String(_) => json!("string"),
        Value::Array(a) => Value::Array(a.iter().take(1).map(shape).collect()),
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), shape(v))).collect()),
    }
}

/// A protocol record as compared: shapes for [`BY_SHAPE`] responses (filo's own stats counters
/// removed), `get_tree` down to its first node's keys and entry type.
fn comparable(v: &Value) -> Value {
    let command = v["command"].as_str().unwrap_or_default();
    let mut v = v.clone();
    if v["type"] == "response"
        && BY_SHAPE.contains(&command)
        && let Some(data) = v.get_mut("data")
    {
        if command == "get_session_stats"
            && let Some(m) = data.as_object_mut()
        {
            m.remove("persistErrors");
            m.remove("extensionErrors");
        }
        *data = shape(data);
    }
    if v["type"] == "response" && command == "get_tree" {
        let data = &v["data"];
        let first = &data["tree"][0];
        let keys = |x: &Value| -> Vec<String> {
            x.as_object()
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default()
        };
        v["data"] = json!({
            "keys": keys(data),
            "nodeKeys": keys(first),
            "firstEntryType": first["entry"]["type"],
            "leafId": shape(&data["leafId"]),
        });
    }
    v
}

struct Recording {
    frames: Vec<Value>,
}

impl Recording {
    fn load() -> Recording {
        let v = fixture16("rpc-client.json");
        // pi 1.6.0 passed every step of the script against itself.
        for s in v["steps"].as_array().unwrap() {
            assert_eq!(s["pass"], true, "pi failed its own step {s}");
        }
        Recording {
            frames: v["frames"].as_array().unwrap().clone(),
        }
    }

    fn of(&self, step: &str, dir: &str) -> Vec<Value> {
        self.frames
            .iter()
            .filter(|f| f["step"] == step && f["dir"] == dir)
            .map(|f| f["frame"].clone())
            .collect()
    }

    /// The records pi wrote in a step that this test compares.
    fn protocol(&self, step: &str) -> Vec<Value> {
        protocol(&self.of(step, "out"))
    }
}

fn protocol(frames: &[Value]) -> Vec<Value> {
    frames
        .iter()
        .filter(|v| !AGENT_STREAM.iter().any(|t| v["type"] == *t))
        .map(comparable)
        .collect()
}

/// Send pi's commands of `step` to filo as pi's client sent them: each once the previous one
/// was answered and as many `agent_settled` had come as before it in pi's recording; then wait
/// for the step's remaining `agent_settled` and compare the protocol records.
async fn replay(rpc: &mut Rpc, pi: &Recording, step: &str) {
    let from = rpc.seen.len();
    let settled = |frames: &[Value]| {
        frames
            .iter()
            .filter(|v| v["type"] == "agent_settled")
            .count()
    };
    let mut pi_settled = 0;
    for f in pi.frames.iter().filter(|f| f["step"] == step) {
        if f["dir"] == "out" {
            pi_settled += usize::from(f["frame"]["type"] == "agent_settled");
            continue;
        }
        while settled(&rpc.seen[from..]) < pi_settled {
            rpc.event("agent_settled").await;
        }
        let command = f["frame"].clone();
        let id = command["id"].as_str().unwrap().to_string();
        rpc.send(command).await;
        rpc.response(&id).await;
    }
    while settled(&rpc.seen[from..]) < pi_settled {
        rpc.event("agent_settled").await;
    }
    let ours = protocol(&rpc.seen[from..]);
    assert_eq!(ours, pi.protocol(step), "step {step:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pi_16_rpc_client_session_answers_as_pi_16() {
    let usage = Usage::new(100, 10);
    let mock = MockProvider::start(vec![
        Turn::Reply(Reply::text("Hello there.").with_usage(usage)),
        Turn::Reply(
            Reply::tool_call("call_1", "bash", json!({"command": "echo hi"})).with_usage(usage),
        ),
        Turn::Reply(Reply::text("Done.").with_usage(usage)),
        Turn::Fault(Fault::Stall {
            after_events: 2,
            reply: Reply::text("Slow answer.").with_usage(usage),
            stall: Duration::from_millis(1500),
        }),
        Turn::Fault(Fault::Stall {
            after_events: 2,
            reply: Reply::text("Slow answer.").with_usage(usage),
            stall: Duration::from_secs(30),
        }),
    ])
    .await;
    let home = Home::new(&mock);
    let pi = Recording::load();
    let mut rpc = Rpc::start(&home, &["--no-dag"]);
    for step in [
        "getAvailableThinkingLevels",
        "promptAndWait",
        "getLastAssistantText",
        "prompt disposition and tool round",
        "bash streams its output",
        "abortBash",
        "getSessionStats",
        "setThinkingLevel max",
        "cycleThinkingLevel",
        "queue modes",
        "auto compaction and retry",
        "steer, followUp and clearQueue while streaming",
        "abort while streaming",
        "getEntries with an unknown cursor fails",
        "getTree",
        "setSessionName",
        "unknown command is answered",
        "compact a small session",
    ] {
        replay(&mut rpc, &pi, step).await;
    }
    // `get_entries` lists every entry in append order with the leaf; a cursor skips up to it.
    let all = rpc.call("e1", json!({"type": "get_entries"})).await;
    let entries = all["entries"].as_array().unwrap();
    assert_eq!(all["leafId"], entries.last().unwrap()["id"]);
    let since = rpc
        .call(
            "e2",
            json!({"type": "get_entries", "since": entries[1]["id"]}),
        )
        .await;
    assert_eq!(since["entries"].as_array().unwrap()[..], entries[2..]);
    assert_eq!(rpc.close().await, 0);
    // The cleared queue's messages never reached the model.
    let requests = mock.requests();
    assert!(requests.len() >= 4);
    for r in &requests {
        let body = r.body.to_string();
        assert!(
            !body.contains("turn left") && !body.contains("then stop"),
            "{body}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manual_compaction_reports_pi_16s_result() {
    let usage = Usage::new(100, 10);
    let mock = MockProvider::start(vec![
        Turn::Reply(Reply::text("Hello there.").with_usage(usage)),
        Turn::Reply(Reply::text("Hello there.").with_usage(usage)),
        Turn::Reply(Reply::text("## Goal\nsummary").with_usage(usage)),
        Turn::Reply(Reply::text("## Goal\nsummary").with_usage(usage)),
    ])
    .await;
    let home = Home::new(&mock);
    home.write_settings(&json!({"compaction": {"keepRecentTokens": 1}}));
    let pi = Recording::load();
    let mut rpc = Rpc::start(&home, &["--no-dag"]);
    for (id, text) in [("p1", "hello"), ("p2", "hello again")] {
        rpc.call(id, json!({"type": "prompt", "message": text}))
            .await;
        rpc.event("agent_settled").await;
    }
    let ours = rpc.response_to("c1", json!({"type": "compact"})).await;
    let theirs = pi
        .of("compact", "out")
        .into_iter()
        .find(|v| v["command"] == "compact")
        .unwrap();
    assert_eq!(ours["success"], true, "{ours}");
    // pi's result, key for key and in pi's order; values of this run.
    let keys = |v: &Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    // pi's usage has the A6 fields (`reasoning`, `cost.totalFromProvider`) filo's usage type
    // does not carry yet; everything else is compared.
    let mut theirs_usage = theirs["data"]["usage"].clone();
    theirs_usage.as_object_mut().unwrap().remove("reasoning");
    theirs_usage["cost"]
        .as_object_mut()
        .unwrap()
        .remove("totalFromProvider");
    let mut theirs_data = theirs["data"].clone();
    theirs_data["usage"] = theirs_usage.clone();
    assert_eq!(keys(&ours["data"]), keys(&theirs_data));
    assert_eq!(shape(&ours["data"]), shape(&theirs_data));
    assert_eq!(ours["data"]["summary"], theirs["data"]["summary"]);
    // Both summary requests (the history and the split turn's prefix) are counted.
    assert_eq!(ours["data"]["usage"]["totalTokens"], 220);
    assert_eq!(ours["data"]["usage"], theirs_usage);
    // pi's estimate counts its system message too (A1, not written by filo yet): only ours is
    // checked to be the character estimate of a context that is not empty.
    assert!(ours["data"]["estimatedTokensAfter"].as_u64().unwrap() > 0);
    let end = rpc
        .seen
        .iter()
        .find(|v| v["type"] == "compaction_end")
        .unwrap();
    assert_eq!(end["result"], ours["data"]);
    assert_eq!(rpc.close().await, 0);
}

/// Opt-in (`FILO_E2E_PI16=<npm prefix holding @earendil-works/pi-coding-agent 1.6.0>`, its
/// `node_modules/.bin/node` being Node 24): pi 1.6.0's real `RpcClient` runs the step script of
/// `scripts/record-pi/rpc-client.mjs` against `filo --mode rpc` (the script's mock on
/// 127.0.0.1), and every step pi passed against itself must pass against filo.
#[test]
fn pi16_rpc_client_passes_against_filo() {
    let Some(prefix) = std::env::var_os("FILO_E2E_PI16").map(std::path::PathBuf::from) else {
        println!("skipped: set FILO_E2E_PI16 to an npm prefix holding pi 1.6.0 and Node 24");
        return;
    };
    let node = prefix.join("node_modules/.bin/node");
    assert!(node.exists(), "FILO_E2E_PI16: no {}", node.display());
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scripts/record-pi/rpc-client.mjs");
    let out = tempfile::tempdir().unwrap();
    let result = out.path().join("filo.json");
    let run = std::process::Command::new(&node)
        .arg(&script)
        .arg("--pi")
        .arg(&prefix)
        .arg("--filo")
        .arg(env!("CARGO_BIN_EXE_filo"))
        .arg("--out")
        .arg(&result)
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{log}");
    let filo: Value = serde_json::from_str(&std::fs::read_to_string(&result).unwrap()).unwrap();
    let pi = fixture16("rpc-client.json");
    let passed = |v: &Value| -> Vec<String> {
        v["steps"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["pass"] == true)
            .map(|s| s["name"].as_str().unwrap().to_string())
            .collect()
    };
    let (ours, theirs) = (passed(&filo), passed(&pi));
    let missing: Vec<&String> = theirs.iter().filter(|s| !ours.contains(s)).collect();
    assert!(
        missing.is_empty(),
        "pi passes, filo fails: {missing:?}\n{log}"
    );
    println!(
        "{} of {} steps pass against filo ({} against pi)",
        ours.len(),
        filo["steps"].as_array().unwrap().len(),
        theirs.len()
    );
}
