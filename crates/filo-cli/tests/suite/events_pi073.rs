//! Session events of `filo --mode rpc` and `filo --mode json` against pi 0.73.1's for the same
//! input (`tests/fixtures/pi073`): automatic compaction (threshold and overflow), manual
//! compaction, and the queues while an answer streams. filo follows pi 1.6's RPC and JSON
//! events; its additions are taken out ([`as_pi073`]) before comparing with pi 0.73.1, and a
//! manual compaction of a session too small to compact is refused as pi 1.6 refuses it.

use std::time::Duration;

use filo_testkit::{Fault, MockProvider, Reply, Turn, Usage};
use serde_json::{Value, json};

use super::common::{Home, as_pi073};
use super::pi073::fixture;
use super::rpc::Rpc;

/// Every summary request is answered with this (a split turn asks twice, in either order).
const SUMMARY: &str = "## Goal\nsummary";

/// pi's overflow error body (OpenAI's shape for a prompt above the context window).
const OVERFLOW: &str = r#"{"error": {"message": "This model's maximum context length is 1000 tokens. However, your messages resulted in 5000 tokens.", "type": "invalid_request_error", "code": "context_length_exceeded"}}"#;

/// One line per event, enough to compare the order of two streams: the type, a message's role
/// and (at its end) stop reason, a response's id and outcome. Deltas are left out.
fn outline(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|v| v["type"] != "message_update" && v["type"] != "agent_settled")
        .map(|v| {
            let kind = v["type"].as_str().unwrap_or("?");
            match kind {
                "message_start" => format!("{kind} {}", v["message"]["role"]),
                "message_end" => format!(
                    "{kind} {} {}",
                    v["message"]["role"], v["message"]["stopReason"]
                ),
                "response" => format!("{kind} {} {}", v["id"], v["success"]),
                "compaction_start" | "compaction_end" => format!("{kind} {}", v["reason"]),
                _ => kind.to_string(),
            }
        })
        .collect()
}

/// The compaction events, the new entry's (random) id replaced.
fn compaction_events(events: &[Value]) -> Vec<Value> {
    events
        .iter()
        .filter(|v| v["type"] == "compaction_start" || v["type"] == "compaction_end")
        .map(|v| {
            let mut v = v.clone();
            if let Some(id) = v.pointer_mut("/result/firstKeptEntryId") {
                assert!(id.is_string(), "{id}");
                *id = "<ID>".into();
            }
            v
        })
        .collect()
}

fn recorded(name: &str) -> Vec<Value> {
    fixture(name).as_array().unwrap().clone()
}

/// A home whose compaction keeps only the newest entry, so there is history to summarise.
fn compacting_home(mock: &MockProvider) -> Home {
    let home = Home::new(mock);
    home.write_settings(&json!({"compaction": {"keepRecentTokens": 1}}));
    home
}

/// A question of 14 estimated tokens (53 characters / 4): with [`keeping_the_last_turn`], a
/// compaction keeps it and its answer and summarises everything before in one request (no split
/// turn), as pi 0.73.1 summarised the small session of its recordings.
pub(super) const KEPT: &str = "hi, and a question long enough to stay in the context";

/// Settings under which a compaction keeps the last turn when its question is [`KEPT`] and its
/// answer a word: 8 recent tokens, more than the answer, less than the turn.
pub(super) fn keeping_the_last_turn(home: &Home) {
    home.write_settings(&json!({"compaction": {"keepRecentTokens": 8}}));
}

/// The second answer reports 90 000 input tokens of a 100 000 window: above the threshold.
fn threshold_turns() -> Vec<Turn> {
    vec![
        Turn::Reply(Reply::text("one").with_usage(Usage::new(100, 10))),
        Turn::Reply(Reply::text("two").with_usage(Usage::new(90_000, 10))),
        Turn::text(SUMMARY),
        Turn::text(SUMMARY),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn threshold_compaction_is_announced_as_pi_073_does() {
    let mock = MockProvider::start(threshold_turns()).await;
    let home = compacting_home(&mock);
    let pi = recorded("rpc-threshold.json");
    let mut rpc = Rpc::start(&home, &["--no-session", "--no-dag"]);
    rpc.call("p1", json!({"type": "prompt", "message": "first"}))
        .await;
    rpc.event("agent_end").await;
    rpc.call("p2", json!({"type": "prompt", "message": "second"}))
        .await;
    rpc.event("compaction_end").await;
    let stats = rpc.call("s1", json!({"type": "get_session_stats"})).await;
    assert_eq!(outline(&rpc.seen), outline(&pi));
    assert_eq!(
        compaction_events(&as_pi073(&rpc.seen)),
        compaction_events(&pi)
    );
    let pi_stats = &pi.last().unwrap()["data"];
    assert_eq!(stats["contextUsage"], pi_stats["contextUsage"]);
    assert_eq!(rpc.close().await, 0);
    // Two summaries were asked for (history and the split turn's prefix); nothing else.
    assert_eq!(mock.remaining(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overflow_compacts_and_retries_as_pi_073_does() {
    let mock = MockProvider::start(vec![
        Turn::Reply(Reply::text("one").with_usage(Usage::new(100, 10))),
        Turn::Fault(Fault::Http {
            status: 400,
            retry_after: None,
            body: Some(OVERFLOW.into()),
        }),
        Turn::text(SUMMARY),
        Turn::text("recovered"),
    ])
    .await;
    let home = compacting_home(&mock);
    let pi = recorded("rpc-overflow.json");
    let mut rpc = Rpc::start(&home, &["--no-session", "--no-dag"]);
    rpc.call("p1", json!({"type": "prompt", "message": "first"}))
        .await;
    rpc.event("agent_end").await;
    rpc.call("p2", json!({"type": "prompt", "message": "second"}))
        .await;
    rpc.event("compaction_end").await;
    // The retry: a run of its own that continues from the user's message.
    rpc.event("agent_end").await;
    assert_eq!(outline(&rpc.seen), outline(&pi));
    assert_eq!(
        compaction_events(&as_pi073(&rpc.seen)),
        compaction_events(&pi)
    );
    let last = rpc
        .seen
        .iter()
        .rev()
        .find(|v| v["type"] == "message_end")
        .unwrap();
    assert_eq!(last["message"]["content"][0]["text"], "recovered");
    assert_eq!(rpc.close().await, 0);
    // The retried request holds the summary and the user's message, not the failed answer.
    let retried = &mock.requests()[3].body;
    let roles: Vec<&str> = retried["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles.last(), Some(&"user"), "{retried}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_mode_carries_the_compaction_events() {
    let mock = MockProvider::start(threshold_turns()).await;
    let home = compacting_home(&mock);
    let (code, stdout, stderr) = home
        .filo(&[
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "--no-dag",
            "--no-session",
            "--mode",
            "json",
            "first",
            "second",
        ])
        .await;
    assert_eq!(code, 0, "{stderr}");
    let filo: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let pi = recorded("json-threshold.json");
    // The header: the same keys.
    let keys = |v: &Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(keys(&filo[0]), keys(&pi[0]));
    assert_eq!(filo[0]["type"], "session");
    // pi 1.6's additions (`agent_settled` after each prompt's work) out, and the deltas out on
    // both sides, so that the streams line up.
    let (filo, pi) = (as_pi073(&filo), as_pi073(&pi));
    // The same events up to `compaction_start`, which is pi's last line: pi 0.73.1 exits
    // without waiting for a compaction its last prompt started (it never reports its end).
    // filo finishes it and reports its end as pi's RPC mode does for the same input.
    let (started, rest) = filo.split_at(pi.len());
    assert_eq!(outline(&started[1..]), outline(&pi[1..]));
    assert_eq!(compaction_events(started), compaction_events(&pi));
    let pi_end = compaction_events(&recorded("rpc-threshold.json")).pop();
    assert!(pi_end.is_some());
    assert_eq!(compaction_events(rest).pop(), pi_end);
    assert_eq!(outline(rest), ["compaction_end \"threshold\""]);
}

/// pi 1.6 (unlike 0.73.1, which asked the model to summarise nothing: `rpc-compact-small.json`)
/// refuses to compact a history that all fits in `keepRecentTokens`: the compaction ends with
/// the error, the command fails with it, and the model is not asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manual_compaction_of_a_small_session_is_refused_as_pi_16_does() {
    let mock = MockProvider::start(vec![
        Turn::Reply(Reply::text("hello").with_usage(Usage::new(100, 10))),
        Turn::text(SUMMARY),
    ])
    .await;
    // Default settings: 20 000 recent tokens kept.
    let home = Home::new(&mock);
    let mut rpc = Rpc::start(&home, &["--no-session", "--no-dag"]);
    rpc.call("p1", json!({"type": "prompt", "message": "hi"}))
        .await;
    rpc.event("agent_end").await;
    let from = rpc.seen.len();
    let refused = rpc
        .response_to(
            "c1",
            json!({"type": "compact", "customInstructions": "focus"}),
        )
        .await;
    // pi 1.6.0's texts (`pi-1.6.0/rpc-client.json`, step "compact a small session").
    assert_eq!(
        refused,
        json!({"id": "c1", "type": "response", "command": "compact", "success": false,
               "error": "Nothing to compact (session too small)"})
    );
    assert_eq!(
        compaction_events(&rpc.seen[from..]),
        [
            json!({"type": "compaction_start", "reason": "manual"}),
            json!({"type": "compaction_end", "reason": "manual", "aborted": false,
                   "willRetry": false,
                   "errorMessage": "Compaction failed: Nothing to compact (session too small)"}),
        ]
    );
    assert_eq!(rpc.close().await, 0);
    assert_eq!(
        mock.requests().len(),
        1,
        "only the prompt reached the model"
    );
    assert_eq!(mock.remaining(), 1);
}

/// A manual compaction with custom instructions of a session that has history to summarise:
/// the events, the result and the summary request are pi 0.73.1's (`rpc-compact-small.json`,
/// whose prompt and compaction are those of the last turn here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manual_compaction_asks_the_model_as_pi_073_does() {
    let mock = MockProvider::start(vec![
        Turn::text("one"),
        Turn::Reply(Reply::text("hello").with_usage(Usage::new(100, 10))),
        Turn::text(SUMMARY),
    ])
    .await;
    let home = Home::new(&mock);
    keeping_the_last_turn(&home);
    let pi = recorded("rpc-compact-small.json");
    let mut rpc = Rpc::start(&home, &["--no-session", "--no-dag"]);
    rpc.call("p0", json!({"type": "prompt", "message": "first"}))
        .await;
    rpc.event("agent_settled").await;
    let from = rpc.seen.len();
    rpc.call("p1", json!({"type": "prompt", "message": KEPT}))
        .await;
    rpc.event("agent_end").await;
    let compacted = rpc
        .response_to(
            "c1",
            json!({"type": "compact", "customInstructions": "focus"}),
        )
        .await;
    assert_eq!(outline(&rpc.seen[from..]), outline(&pi));
    let events = compaction_events(&as_pi073(&rpc.seen));
    assert_eq!(events, compaction_events(&pi));
    assert_eq!(compacted["data"]["summary"], SUMMARY);
    // The response's data is the compaction's result, as in pi.
    let end = events.last().unwrap();
    let mut data = as_pi073(std::slice::from_ref(&compacted))[0]["data"].clone();
    data["firstKeptEntryId"] = "<ID>".into();
    assert_eq!(data, end["result"]);
    assert_eq!(rpc.close().await, 0);
    // One summary request (the first turn; the last one is kept): it has pi's fields and
    // limits, the custom focus last.
    assert_eq!(mock.requests().len(), 3);
    let pi_request = &fixture("rpc-compact-small.requests.json")[0];
    let request = &mock.requests()[2].body;
    let fields = |v: &Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(fields(request), fields(pi_request));
    assert_eq!(
        request["max_completion_tokens"],
        pi_request["max_completion_tokens"]
    );
    assert_eq!(request["messages"][0], pi_request["messages"][0]);
    assert_eq!(request["messages"].as_array().unwrap().len(), 2);
    let text = request["messages"][1]["content"][0]["text"]
        .as_str()
        .unwrap();
    // The first turn is summarised (pi 0.73.1's had none), the kept one is not.
    assert!(
        text.starts_with("<conversation>\n[User]: first\n\n[Assistant]: one\n</conversation>\n\n"),
        "{text}"
    );
    assert!(text.ends_with("\n\nAdditional focus: focus"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steer_and_follow_up_update_the_queues_as_pi_073_does() {
    let mock = MockProvider::start(vec![
        Turn::Fault(Fault::Stall {
            after_events: 0,
            reply: Reply::text("slow answer"),
            stall: Duration::from_millis(1500),
        }),
        Turn::text("steered"),
        Turn::text("followed"),
    ])
    .await;
    let home = Home::new(&mock);
    let pi = recorded("rpc-queue.json");
    let mut rpc = Rpc::start(&home, &["--no-session", "--no-dag"]);
    rpc.call("p1", json!({"type": "prompt", "message": "slow"}))
        .await;
    // The steer must meet a run that is already waiting on the model (as in pi's recording);
    // sent before the request leaves, it would join the first turn instead.
    let started = std::time::Instant::now();
    while mock.requests().is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the prompt never reached the model"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // A client's answer to an extension UI request: pi answers nothing.
    rpc.send(json!({"type": "extension_ui_response", "id": "nobody", "value": "x"}))
        .await;
    rpc.call("s1", json!({"type": "steer", "message": "turn left"}))
        .await;
    rpc.call("f1", json!({"type": "follow_up", "message": "then stop"}))
        .await;
    rpc.call("g1", json!({"type": "get_state"})).await;
    rpc.event("agent_end").await;
    let events = |all: &[Value]| -> Vec<Value> {
        all.iter()
            .filter(|v| v["type"] != "response")
            .cloned()
            .collect()
    };
    assert_eq!(outline(&events(&rpc.seen)), outline(&events(&pi)));
    let queues = |all: &[Value]| -> Vec<Value> {
        all.iter()
            .filter(|v| v["type"] == "queue_update")
            .cloned()
            .collect()
    };
    assert_eq!(queues(&rpc.seen), queues(&pi));
    // Each queue command's event comes just before its response, as in pi.
    for id in ["s1", "f1"] {
        let at = |all: &[Value]| {
            let i = all.iter().position(|v| v["id"] == id).unwrap();
            all[i - 1].clone()
        };
        assert_eq!(at(&rpc.seen), at(&pi), "{id}");
    }
    let responses = |all: &[Value]| all.iter().filter(|v| v["type"] == "response").count();
    assert_eq!(responses(&rpc.seen), responses(&pi));
    assert_eq!(rpc.close().await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_summary_request_reasons_at_the_session_level_as_pi_073_does() {
    let pi = fixture("compact-thinking.requests.json");
    let fields = |v: &Value| -> Vec<String> {
        let mut keys: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        keys.retain(|k| k != "messages" && k != "tools");
        keys.sort();
        keys
    };
    for level in ["off", "minimal", "high"] {
        let mock = MockProvider::start(vec![
            Turn::text("one"),
            Turn::Reply(Reply::text("hello").with_usage(Usage::new(100, 10))),
            Turn::text(SUMMARY),
        ])
        .await;
        let home = Home::new(&mock);
        // Something to summarise (pi 1.6 refuses a session that all fits in what it keeps): the
        // first turn, in one request.
        keeping_the_last_turn(&home);
        // pi's `mock-thinker`, under the id the RPC helper selects.
        let models = json!({"providers": {"mock": {
            "baseUrl": format!("{}/v1", mock.url()),
            "api": "openai-completions",
            "apiKey": "MOCK_API_KEY",
            "models": [{"id": "mock-model", "reasoning": true,
                "contextWindow": 100000, "maxTokens": 1000}]
        }}});
        std::fs::write(
            home.path().join(".filo/agent/models.json"),
            models.to_string(),
        )
        .unwrap();
        let mut rpc = Rpc::start(&home, &["--no-session", "--no-dag"]);
        rpc.call("t1", json!({"type": "set_thinking_level", "level": level}))
            .await;
        rpc.call("p0", json!({"type": "prompt", "message": "first"}))
            .await;
        rpc.event("agent_settled").await;
        rpc.call("p1", json!({"type": "prompt", "message": KEPT}))
            .await;
        rpc.event("agent_end").await;
        let compacted = rpc.response_to("c1", json!({"type": "compact"})).await;
        assert_eq!(compacted["success"], true, "{compacted}");
        assert_eq!(compacted["data"]["summary"], SUMMARY, "{level}");
        assert_eq!(rpc.close().await, 0);
        let requests = mock.requests();
        assert_eq!(requests.len(), 3, "{level}");
        let recorded = &pi[level];
        for (i, which) in [(0, "prompt"), (1, "prompt"), (2, "summary")] {
            let (ours, theirs) = (&requests[i].body, &recorded[which]);
            assert_eq!(fields(ours), fields(theirs), "{level} {which}");
            assert_eq!(
                ours["reasoning_effort"], theirs["reasoning_effort"],
                "{level} {which}"
            );
            assert_eq!(
                ours["max_completion_tokens"], theirs["max_completion_tokens"],
                "{level} {which}"
            );
        }
    }
}
