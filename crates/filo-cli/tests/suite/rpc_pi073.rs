//! `filo --mode rpc` against responses recorded from pi 0.73.1 (`tests/fixtures/pi073`):
//! the same texts where pi's are fixed, the same shapes (keys and value types) elsewhere, and
//! one answer per command id.

use std::time::Duration;

use filo_testkit::{Fault, MockProvider, Reply, Turn, Usage};
use serde_json::{Value, json};

use super::common::{Home, as_pi073};
use super::events_pi073::{KEPT, keeping_the_last_turn};
use super::pi073::fixture;
use super::rpc::Rpc;

/// Keys and value types, values dropped: what a client written for pi relies on.
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

/// The response in a pi fixture with this id.
fn pi_response<'a>(recorded: &'a Value, id: &str) -> &'a Value {
    recorded
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["type"] == "response" && v["id"] == id)
        .unwrap_or_else(|| panic!("no response {id} in the fixture"))
}

/// `get_session_stats` data: pi's keys with pi's types; filo adds only its two error counters.
fn assert_stats_shape(filo: &Value, pi: &Value) {
    let mut filo = shape(filo);
    let extra = filo.as_object_mut().unwrap();
    for key in ["persistErrors", "extensionErrors"] {
        assert_eq!(extra.remove(key), Some(json!("number")), "{key}");
    }
    assert_eq!(filo, shape(pi));
}

fn templates(home: &Home) {
    let project = home.project().join(".pi/prompts");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join("greet.md"),
        "---\ndescription: Say hello\n---\nSay hello to $1\n",
    )
    .unwrap();
    let user = home.path().join(".filo/agent/prompts");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(user.join("plain.md"), "Summarise the file\n").unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_commands_and_stats_answer_as_pi_073() {
    let mock = MockProvider::start(vec![]).await;
    let home = Home::new(&mock);
    templates(&home);
    let pi = fixture("rpc-errors.json");
    let mut rpc = Rpc::start(&home, &["--no-session", "--no-dag", "--approve"]);

    // A blank line: pi's parse error, byte for byte.
    rpc.send_raw("\n").await;
    let blank = rpc.until("blank", |v| v["type"] == "response").await;
    assert_eq!(blank, pi[0]);
    // An error inside a command answers with the command's id and type.
    rpc.send(json!({"id": "f1", "type": "fork", "entryId": "no-such-entry"}))
        .await;
    assert_eq!(rpc.response("f1").await, *pi_response(&pi, "f1"));
    rpc.send(json!({"id": "u1", "type": "nope"})).await;
    let unknown = rpc.until("unknown", |v| v["command"] == "nope").await;
    // pi 1.6 (0.79.7) answers an unknown command with the request's id.
    let mut with_id = pi[3].clone();
    with_id["id"] = "u1".into();
    assert_eq!(unknown, with_id);
    rpc.send_raw("not json\n").await;
    let parse = rpc.until("parse", |v| v["command"] == "parse").await;
    assert_eq!(shape(&parse), shape(&pi[2]));

    let stats = rpc
        .response_to("s0", json!({"type": "get_session_stats"}))
        .await;
    let pi_stats = pi_response(&pi, "s0");
    assert_eq!(stats["success"], true, "{stats}");
    assert_stats_shape(&stats["data"], &pi_stats["data"]);
    assert_eq!(
        stats["data"]["contextUsage"],
        pi_stats["data"]["contextUsage"]
    );

    // get_commands: pi's entries with pi's sourceInfo, paths those of this run.
    let commands = rpc.response_to("c1", json!({"type": "get_commands"})).await;
    let pi_commands = fixture("rpc-commands.json")[0]
        .to_string()
        .replace(
            "<TMP>/project",
            &std::fs::canonicalize(home.project())
                .unwrap()
                .to_string_lossy(),
        )
        .replace(
            "<TMP>/home/agent",
            &home.path().join(".filo/agent").to_string_lossy(),
        );
    let pi_commands: Value = serde_json::from_str(&pi_commands).unwrap();
    assert_eq!(commands, pi_commands);
    assert_eq!(rpc.close().await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompt_stats_and_clone_answer_as_pi_073() {
    let mock = MockProvider::start(vec![Turn::Reply(
        Reply::text("hello").with_usage(Usage::new(100, 10)),
    )])
    .await;
    let home = Home::new(&mock);
    let pi = fixture("rpc-session.json");
    let mut rpc = Rpc::start(&home, &["--no-dag"]);
    rpc.send(json!({"id": "p1", "type": "prompt", "message": "hi"}))
        .await;
    let accepted = rpc.response("p1").await;
    assert_eq!(accepted, pi16_accepted(pi_response(&pi, "p1"), "started"));
    rpc.event("agent_end").await;

    let stats = rpc
        .response_to("s1", json!({"type": "get_session_stats"}))
        .await;
    let pi_stats = pi_response(&pi, "s1");
    assert_stats_shape(&stats["data"], &pi_stats["data"]);
    assert_eq!(
        stats["data"]["contextUsage"],
        pi_stats["data"]["contextUsage"]
    );
    assert_eq!(stats["data"]["tokens"], pi_stats["data"]["tokens"]);

    let before = rpc.call("w0", json!({"type": "get_state"})).await;
    let cloned = rpc.response_to("k1", json!({"type": "clone"})).await;
    assert_eq!(cloned, *pi_response(&pi, "k1"));
    let after = rpc.call("w1", json!({"type": "get_state"})).await;
    assert_ne!(after["sessionId"], before["sessionId"]);
    assert_ne!(after["sessionFile"], before["sessionFile"]);
    let messages = rpc.response_to("m1", json!({"type": "get_messages"})).await;
    assert_eq!(shape(&messages), shape(pi_response(&pi, "m1")));
    // The assistant message too, `responseId` included (pi's is the mock's chunk id).
    let assistant = &messages["data"]["messages"][1];
    let pi_assistant = &pi_response(&pi, "m1")["data"]["messages"][1];
    assert_eq!(shape(assistant), shape(pi_assistant));
    assert_eq!(assistant["responseId"], "chatcmpl-mock-1");
    // The prompt was answered exactly once.
    assert_eq!(answers(&rpc, "p1"), 1);
    assert_eq!(rpc.close().await, 0);
    // The clone is a session file of its own holding the same conversation.
    let clone = after["sessionFile"].as_str().unwrap();
    let text = std::fs::read_to_string(clone).unwrap();
    assert!(text.contains("\"hello\""), "{text}");
}

/// pi 0.73's accepted `prompt` response as pi 1.6 sends it: with `data.disposition`.
fn pi16_accepted(pi073: &Value, disposition: &str) -> Value {
    let mut v = pi073.clone();
    v["data"] = json!({ "disposition": disposition });
    v
}

/// How many responses carry this id.
fn answers(rpc: &Rpc, id: &str) -> usize {
    rpc.seen
        .iter()
        .filter(|v| v["type"] == "response" && v["id"] == id)
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompt_while_busy_is_refused_once_as_pi_073() {
    let mock = MockProvider::start(vec![
        Turn::Fault(Fault::Stall {
            after_events: 2,
            reply: Reply::text("slow answer"),
            stall: Duration::from_millis(1500),
        }),
        Turn::text("follow-up answer"),
    ])
    .await;
    let home = Home::new(&mock);
    let pi = fixture("rpc-busy.json");
    let mut rpc = Rpc::start(&home, &["--no-session", "--no-dag"]);
    rpc.send(json!({"id": "p1", "type": "prompt", "message": "slow"}))
        .await;
    assert_eq!(
        rpc.response("p1").await,
        pi16_accepted(pi_response(&pi, "p1"), "started")
    );
    rpc.until("the answer started", |v| {
        v["type"] == "message_start" && v["message"]["role"] == "assistant"
    })
    .await;
    rpc.send(json!({"id": "p2", "type": "prompt", "message": "again"}))
        .await;
    assert_eq!(rpc.response("p2").await, *pi_response(&pi, "p2"));
    rpc.send(json!({"id": "p3", "type": "prompt", "message": "queued",
                    "streamingBehavior": "followUp"}))
        .await;
    assert_eq!(
        rpc.response("p3").await,
        pi16_accepted(pi_response(&pi, "p3"), "queued")
    );
    rpc.until("the follow-up's answer", |v| {
        v["type"] == "message_end"
            && v["message"]["content"]
                .to_string()
                .contains("follow-up answer")
    })
    .await;
    rpc.event("agent_end").await;
    let queue: Vec<Value> = rpc
        .seen
        .iter()
        .filter(|v| v["type"] == "queue_update")
        .cloned()
        .collect();
    let pi_queue: Vec<Value> = pi
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["type"] == "queue_update")
        .cloned()
        .collect();
    assert_eq!(queue, pi_queue);
    for id in ["p1", "p2", "p3"] {
        assert_eq!(answers(&rpc, id), 1, "{id}: {:#?}", rpc.seen);
    }
    assert_eq!(rpc.close().await, 0);
}

/// The events (not responses) seen after position `from`, of the given types.
fn events_since(rpc: &Rpc, from: usize, types: &[&str]) -> Vec<Value> {
    rpc.seen[from..]
        .iter()
        .filter(|v| types.iter().any(|t| v["type"] == *t))
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_events_are_named_and_shaped_as_pi_073() {
    let mock = MockProvider::start(vec![
        Turn::text("one"),
        Turn::Reply(Reply::text("hello").with_usage(Usage::new(100, 10))),
        Turn::text("## Goal\nsummary"),
    ])
    .await;
    let home = Home::new(&mock);
    // A first turn for the compaction to summarise: pi 1.6 refuses to compact a session that
    // all fits in what it keeps (pi 0.73.1, recording a single turn, summarised it anyway).
    keeping_the_last_turn(&home);
    let models = json!({"providers": {"mock": {
        "baseUrl": format!("{}/v1", mock.url()),
        "api": "openai-completions",
        "apiKey": "MOCK_API_KEY",
        "models": [
            {"id": "mock-model", "contextWindow": 100000, "maxTokens": 1000},
            {"id": "mock-thinker", "reasoning": true, "contextWindow": 100000, "maxTokens": 1000}
        ]
    }}});
    std::fs::write(
        home.path().join(".filo/agent/models.json"),
        models.to_string(),
    )
    .unwrap();
    let pi = fixture("rpc-events.json");
    let pi_events = |types: &[&str]| -> Vec<Value> {
        pi.as_array()
            .unwrap()
            .iter()
            .filter(|v| types.iter().any(|t| v["type"] == *t))
            .cloned()
            .collect()
    };
    let mut rpc = Rpc::start(&home, &["--no-dag"]);
    rpc.call(
        "m",
        json!({"type": "set_model", "provider": "mock", "modelId": "mock-thinker"}),
    )
    .await;
    rpc.call("t0", json!({"type": "set_thinking_level", "level": "off"}))
        .await;
    let from = rpc.seen.len();
    rpc.call("n1", json!({"type": "set_session_name", "name": "demo"}))
        .await;
    rpc.call("t1", json!({"type": "set_thinking_level", "level": "high"}))
        .await;
    // Unchanged: no event.
    rpc.call("t2", json!({"type": "set_thinking_level", "level": "high"}))
        .await;
    let named = ["session_info_changed", "thinking_level_changed"];
    assert_eq!(events_since(&rpc, from, &named), pi_events(&named));
    // The event comes before the command's response, as in pi.
    let order: Vec<&str> = rpc.seen[from..]
        .iter()
        .map(|v| v["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        order,
        [
            "session_info_changed",
            "response",
            "thinking_level_changed",
            "response",
            "response"
        ]
    );

    rpc.call("p0", json!({"type": "prompt", "message": "first"}))
        .await;
    rpc.event("agent_settled").await;
    rpc.call("p1", json!({"type": "prompt", "message": KEPT}))
        .await;
    rpc.event("agent_end").await;
    let from = rpc.seen.len();
    rpc.call("c1", json!({"type": "compact"})).await;
    let compaction = ["compaction_start", "compaction_end"];
    // pi 1.6's additions to the result (`estimatedTokensAfter`, `usage`) taken out.
    let got = as_pi073(&events_since(&rpc, from, &compaction));
    assert_eq!(got.len(), 2, "{got:#?}");
    let want = pi_events(&compaction);
    assert_eq!(got[0], want[0], "compaction_start");
    assert_eq!(shape(&got[1]), shape(&want[1]), "compaction_end");
    for key in ["type", "reason", "aborted", "willRetry"] {
        assert_eq!(got[1][key], want[1][key], "{key}");
    }
    // After a compaction the context size is unknown until the model answers again.
    let stats = rpc.call("s9", json!({"type": "get_session_stats"})).await;
    let pi_stats = &pi
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["id"] == "s9")
        .unwrap()["data"];
    assert_eq!(stats["contextUsage"], pi_stats["contextUsage"]);
    assert_eq!(rpc.close().await, 0);
}
