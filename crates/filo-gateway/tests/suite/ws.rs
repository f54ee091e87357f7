//! D11 and the WebSocket protocol: hello-ok, chat.send deltas then final, seq, idempotency,
//! abort during a stall, collect mode, the `agent` method, history, reset, unknown methods,
//! 100 sessions without leaks, one key strictly in order, draining.

use std::time::Duration;

use filo_testkit::{Fault, Reply, Turn};
use serde_json::json;

use super::{Gw, TOKEN, Ws, request_texts, transcript};

fn stall(text: &str, ms: u64) -> Turn {
    Fault::Stall {
        after_events: 2,
        reply: Reply::text(text),
        stall: Duration::from_millis(ms),
    }
    .into()
}

#[tokio::test]
async fn hello_ok_has_the_policy_and_unknown_methods_are_invalid_requests() {
    let gw = Gw::start(vec![], json!({"gateway": {"tickIntervalMs": 200}})).await;
    let (mut ws, hello) = Ws::connect(&gw.ws_url(), Some(TOKEN)).await;
    let p = &hello["payload"];
    assert_eq!(
        (p["type"].as_str(), p["protocol"].as_u64()),
        (Some("hello-ok"), Some(4))
    );
    assert_eq!(p["policy"]["tickIntervalMs"], 200);
    assert!(
        p["features"]["methods"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m == "chat.send")
    );
    assert!(p["auth"].get("deviceToken").is_none());
    let id = ws.send("no.such.method", json!({})).await;
    let r = ws.until_res(&id).await;
    assert_eq!(r["ok"], false);
    assert_eq!(r["error"]["code"], "INVALID_REQUEST");
    assert_eq!(r["error"]["message"], "unknown method: no.such.method");
    // Ticks keep a long-lived client alive, with seq counting from 1.
    let t1 = ws.until_event(|v| v["event"] == "tick").await;
    let t2 = ws.until_event(|v| v["event"] == "tick").await;
    assert_eq!(t2["seq"].as_u64().unwrap(), t1["seq"].as_u64().unwrap() + 1);
    for (method, params) in [
        ("health", json!({})),
        ("status", json!({})),
        ("system-presence", json!({})),
        ("agents.list", json!({})),
        ("sessions.subscribe", json!({})),
        ("sessions.list", json!({})),
        ("commands.list", json!({})),
        ("question.list", json!({})),
        ("plugin.approval.list", json!({})),
    ] {
        let id = ws.send(method, params).await;
        let r = ws.until_res(&id).await;
        assert_eq!(r["ok"], true, "{method}: {r}");
    }
    gw.stop().await;
}

#[tokio::test]
async fn d11_chat_send_streams_cumulative_deltas_then_final_and_idempotency_starts_nothing() {
    // Deltas of a run are at least 150 ms apart (OpenClaw's throttle): the model pauses mid-reply.
    let gw = Gw::start(
        vec![
            Fault::Stall {
                after_events: 3,
                reply: Reply::text("Hello from the mock, in several words."),
                stall: Duration::from_millis(400),
            }
            .into(),
        ],
        json!({}),
    )
    .await;
    let mut ws = gw.ws().await;
    let id = ws
        .send("chat.send", json!({"sessionKey": "agent:main:tui1", "message": "hi", "deliver": false, "idempotencyKey": "run-1"}))
        .await;
    let ack = ws.until_res(&id).await;
    assert_eq!(
        ack["payload"],
        json!({"runId": "run-1", "status": "started"}),
        "{ack}"
    );
    let events = ws.chat_until_terminal("run-1").await;
    let (last, deltas) = events.split_last().unwrap();
    assert!(deltas.len() >= 2, "{events:?}");
    let mut previous = String::new();
    for d in deltas {
        let p = &d["payload"];
        assert_eq!(
            (p["state"].as_str(), p["sessionKey"].as_str()),
            (Some("delta"), Some("agent:main:tui1"))
        );
        let text = p["message"]["content"][0]["text"].as_str().unwrap();
        assert!(
            text.starts_with(&previous),
            "cumulative: {previous:?} then {text:?}"
        );
        assert_eq!(
            format!("{previous}{}", p["deltaText"].as_str().unwrap()),
            text
        );
        previous = text.to_owned();
    }
    assert_eq!(last["payload"]["state"], "final");
    assert_eq!(
        last["payload"]["message"]["content"][0]["text"],
        "Hello from the mock, in several words."
    );
    // The run's own seq: the terminal event's is the run's last, never behind a delta's.
    let last_delta = deltas.last().unwrap()["payload"]["seq"].as_u64().unwrap();
    assert!(
        last["payload"]["seq"].as_u64().unwrap() >= last_delta,
        "{last}"
    );
    // Every event of this connection: seq 1, 2, 3 …
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(
        seqs.windows(2).all(|w| w[1] == w[0] + 1)
            || ws.backlog.iter().any(|v| v["event"] == "agent"),
        "{seqs:?}"
    );
    let mut all: Vec<u64> = events
        .iter()
        .chain(ws.backlog.iter())
        .filter_map(|e| e["seq"].as_u64())
        .collect();
    all.sort_unstable();
    assert_eq!(all, (1..=all.len() as u64).collect::<Vec<_>>());
    // The same idempotency key: the same run, nothing new sent to the model.
    let id = ws
        .send(
            "chat.send",
            json!({"sessionKey": "agent:main:tui1", "message": "hi", "idempotencyKey": "run-1"}),
        )
        .await;
    let dup = ws.until_res(&id).await;
    assert_eq!(dup["payload"]["runId"], "run-1");
    assert_eq!(dup["payload"]["status"], "ok");
    assert_eq!(gw.mock.requests().len(), 1);
    // History shows the turn (the TUI reloads it on start).
    let id = ws
        .send(
            "chat.history",
            json!({"sessionKey": "agent:main:tui1", "limit": 200}),
        )
        .await;
    let h = ws.until_res(&id).await;
    let msgs = h["payload"]["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 2, "{h}");
    assert_eq!(msgs[0]["role"], "user");
    assert_eq!(h["payload"]["defaults"]["model"], "mock-model");
    gw.stop().await;
}

#[tokio::test]
async fn the_ack_and_a_fast_runs_terminal_event_arrive_apart() {
    let gw = Gw::start(
        vec![Turn::text("quick")],
        json!({"gateway": {"terminalGapMs": 40}}),
    )
    .await;
    let mut ws = gw.ws().await;
    let id = ws
        .send(
            "chat.send",
            json!({"sessionKey": "fast", "message": "hi", "idempotencyKey": "f-1"}),
        )
        .await;
    let _ack = ws.until_res(&id).await;
    let acked = std::time::Instant::now();
    let events = ws.chat_until_terminal("f-1").await;
    assert_eq!(events.last().unwrap()["payload"]["state"], "final");
    assert!(
        acked.elapsed() >= Duration::from_millis(25),
        "terminal {:?} after the ack",
        acked.elapsed()
    );
    gw.stop().await;
}

#[tokio::test]
async fn d11_abort_during_a_stall_ends_the_run_aborted() {
    let gw = Gw::start(
        vec![stall("never finished", 30_000), Turn::text("next turn")],
        json!({}),
    )
    .await;
    let mut ws = gw.ws().await;
    ws.chat_send(json!({"sessionKey": "stalled", "message": "go", "idempotencyKey": "s-1"}))
        .await;
    ws.until_event(|v| v["event"] == "chat" && v["payload"]["state"] == "delta")
        .await;
    let id = ws
        .send(
            "chat.abort",
            json!({"sessionKey": "stalled", "preserveSideRuns": true}),
        )
        .await;
    let r = ws.until_res(&id).await;
    assert_eq!(
        r["payload"],
        json!({"ok": true, "aborted": true, "runIds": ["s-1"]}),
        "{r}"
    );
    let end = ws.chat_until_terminal("s-1").await;
    assert_eq!(end.last().unwrap()["payload"]["state"], "aborted");
    // The session is free again.
    ws.chat_send(json!({"sessionKey": "stalled", "message": "again", "idempotencyKey": "s-2"}))
        .await;
    let end = ws.chat_until_terminal("s-2").await;
    assert_eq!(
        end.last().unwrap()["payload"]["message"]["content"][0]["text"],
        "next turn"
    );
    // Nothing to abort now.
    let id = ws
        .send("chat.abort", json!({"sessionKey": "stalled"}))
        .await;
    assert_eq!(ws.until_res(&id).await["payload"]["aborted"], false);
    gw.stop().await;
}

#[tokio::test]
async fn d11_collect_mode_merges_messages_sent_during_a_run_into_one_follow_up() {
    let gw = Gw::start(
        vec![stall("first answer", 400), Turn::text("merged answer")],
        json!({"messages": {"queue": {"mode": "collect", "debounceMs": 0}}}),
    )
    .await;
    let mut ws = gw.ws().await;
    ws.chat_send(json!({"sessionKey": "busy", "message": "first", "idempotencyKey": "c-1"}))
        .await;
    ws.until_event(|v| v["event"] == "chat" && v["payload"]["runId"] == "c-1")
        .await;
    for (n, text) in [(2, "also this"), (3, "and that")] {
        let id = ws
            .send(
                "chat.send",
                json!({"sessionKey": "busy", "message": text, "idempotencyKey": format!("c-{n}")}),
            )
            .await;
        assert_eq!(ws.until_res(&id).await["payload"]["status"], "started");
    }
    let first = ws.chat_until_terminal("c-1").await;
    assert_eq!(first.last().unwrap()["payload"]["state"], "final");
    for run in ["c-2", "c-3"] {
        let end = ws.chat_until_terminal(run).await;
        let p = &end.last().unwrap()["payload"];
        assert_eq!(p["state"], "final", "{p}");
        assert_eq!(p["message"]["content"][0]["text"], "merged answer");
    }
    let requests = gw.mock.requests();
    assert_eq!(requests.len(), 2);
    let last_user = request_texts(&requests[1].body)
        .into_iter()
        .rev()
        .find(|(r, _)| r == "user")
        .unwrap()
        .1;
    assert!(
        last_user.starts_with("[Queued messages while agent was busy]"),
        "{last_user}"
    );
    assert!(
        last_user.contains("Queued #1\nalso this") && last_user.contains("Queued #2\nand that"),
        "{last_user}"
    );
    gw.stop().await;
}

#[tokio::test]
async fn followup_mode_runs_each_queued_message_and_steer_joins_the_running_turn() {
    let gw = Gw::start(
        vec![
            stall("one", 300),
            Turn::text("two"),
            stall("three", 400),
            Turn::text("three, steered"),
        ],
        json!({"messages": {"queue": {"mode": "followup", "debounceMs": 0}}}),
    )
    .await;
    let mut ws = gw.ws().await;
    ws.chat_send(json!({"sessionKey": "fq", "message": "a", "idempotencyKey": "f-1"}))
        .await;
    ws.until_event(|v| v["event"] == "chat" && v["payload"]["runId"] == "f-1")
        .await;
    ws.chat_send(json!({"sessionKey": "fq", "message": "b", "idempotencyKey": "f-2"}))
        .await;
    ws.chat_until_terminal("f-1").await;
    let end = ws.chat_until_terminal("f-2").await;
    assert_eq!(
        end.last().unwrap()["payload"]["message"]["content"][0]["text"],
        "two"
    );
    // Steer: the message goes into the running turn (the next model call sees it).
    let id = ws
        .send("sessions.patch", json!({"key": "fq", "queueMode": "steer"}))
        .await;
    assert_eq!(ws.until_res(&id).await["ok"], true);
    ws.chat_send(json!({"sessionKey": "fq", "message": "c", "idempotencyKey": "f-3"}))
        .await;
    ws.until_event(|v| v["event"] == "chat" && v["payload"]["runId"] == "f-3")
        .await;
    let id = ws
        .send(
            "chat.send",
            json!({"sessionKey": "fq", "message": "steer this", "idempotencyKey": "f-4"}),
        )
        .await;
    let ack = ws.until_res(&id).await;
    assert_eq!(ack["payload"]["status"], "ok", "{ack}");
    ws.chat_until_terminal("f-3").await;
    let requests = gw.mock.requests();
    let texts = request_texts(&requests.last().unwrap().body);
    assert!(
        texts.iter().any(|(r, t)| r == "user" && t == "steer this"),
        "{texts:?}"
    );
    gw.stop().await;
}

#[tokio::test]
async fn openclaw_agent_gets_accepted_then_the_result_on_the_same_id() {
    let gw = Gw::start(vec![Turn::text("Hello from mock")], json!({})).await;
    let mut ws = gw.ws().await;
    let id = ws
        .send(
            "agent",
            json!({"message": "hi", "sessionId": "test1", "sessionKey": "agent:main:explicit:test1",
            "deliver": false, "timeout": 600, "idempotencyKey": "0fb74548"}),
        )
        .await;
    let accepted = ws.until_res(&id).await;
    assert_eq!(accepted["payload"]["status"], "accepted", "{accepted}");
    assert_eq!(accepted["payload"]["runId"], "0fb74548");
    let fin = ws.until_res(&id).await;
    assert_eq!(fin["payload"]["status"], "ok", "{fin}");
    assert_eq!(
        fin["payload"]["result"]["payloads"][0]["text"],
        "Hello from mock"
    );
    // The session id the client chose names the transcript.
    assert!(
        gw.dir
            .path()
            .join("state/agents/main/sessions/test1.jsonl")
            .exists()
    );
    // agent.wait on a finished run answers at once.
    let id = ws
        .send(
            "agent.wait",
            json!({"runId": "0fb74548", "timeoutMs": 1000}),
        )
        .await;
    assert_eq!(ws.until_res(&id).await["payload"]["status"], "ok");
    // Remote mode sends no key: sessionId → agent:main:explicit:<id>, the same session.
    gw.mock.push(Turn::text("again"));
    let id = ws
        .send(
            "agent",
            json!({"message": "more", "sessionId": "test1", "idempotencyKey": "second"}),
        )
        .await;
    ws.until_res(&id).await;
    let fin = ws.until_res(&id).await;
    assert_eq!(fin["payload"]["result"]["payloads"][0]["text"], "again");
    assert_eq!(
        transcript(&gw.dir.path().join("state/agents/main/sessions/test1.jsonl")).len(),
        4
    );
    gw.stop().await;
}

#[tokio::test]
async fn sessions_reset_gives_a_new_session_and_tells_subscribers() {
    let gw = Gw::start(vec![Turn::text("before")], json!({})).await;
    let mut ws = gw.ws().await;
    let id = ws.send("sessions.subscribe", json!({})).await;
    assert_eq!(ws.until_res(&id).await["payload"]["subscribed"], true);
    ws.chat_send(json!({"sessionKey": "r", "message": "x", "idempotencyKey": "r-1"}))
        .await;
    ws.chat_until_terminal("r-1").await;
    let before = gw.session_file("agent:main:r");
    let id = ws
        .send("sessions.reset", json!({"key": "r", "reason": "reset"}))
        .await;
    let r = ws.until_res(&id).await;
    assert_eq!(r["payload"]["ok"], true, "{r}");
    let changed = ws.until_event(|v| v["event"] == "sessions.changed").await;
    assert_eq!(changed["payload"]["reason"], "reset");
    assert_ne!(gw.session_file("agent:main:r"), before);
    assert!(before.exists(), "the old transcript is kept");
    gw.stop().await;
}

#[tokio::test]
async fn a_hundred_sessions_each_hold_their_turn_and_leave_nothing_behind() {
    let n = 100;
    let turns: Vec<Turn> = (0..n).map(|i| Turn::text(format!("answer {i}"))).collect();
    let gw = Gw::start(turns, json!({"agents": {"defaults": {"maxConcurrent": 8}}})).await;
    let mut clients = Vec::new();
    for i in 0..n {
        let url = gw.ws_url();
        clients.push(tokio::spawn(async move {
            let (mut ws, _) = Ws::connect(&url, Some(TOKEN)).await;
            ws.chat_send(json!({"sessionKey": format!("s{i}"), "message": format!("question {i}"), "idempotencyKey": format!("q-{i}")})).await;
            let end = ws.chat_until_terminal(&format!("q-{i}")).await;
            end.last().unwrap()["payload"]["state"].as_str().unwrap().to_owned()
        }));
    }
    for c in clients {
        assert_eq!(c.await.unwrap(), "final");
    }
    for i in 0..n {
        let t = transcript(&gw.session_file(&format!("agent:main:s{i}")));
        assert_eq!(t.len(), 2, "session {i}: {t:?}");
        assert_eq!(t[0], ("user".to_owned(), format!("question {i}")));
        assert_eq!(t[1].0, "assistant");
    }
    let core = gw.running().core().clone();
    for _ in 0..100 {
        if core.live_keys() == 0 && core.hub.watched_keys() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(core.live_keys(), 0, "no key state left");
    assert_eq!(core.hub.watched_keys(), 0, "no watcher left");
    assert_eq!(core.embedder.runs().active_count(), 0);
    assert_eq!(core.embedder.lanes().total_queue_size(), 0);
    gw.stop().await;
}

#[tokio::test]
async fn ten_clients_on_one_key_are_served_strictly_in_order() {
    let turns: Vec<Turn> = (0..10).map(|i| Turn::text(format!("reply {i}"))).collect();
    let gw = Gw::start(
        turns,
        json!({"messages": {"queue": {"mode": "followup", "debounceMs": 0}}}),
    )
    .await;
    let mut ws = gw.ws().await;
    let mut ids = Vec::new();
    for i in 0..10 {
        let id = ws.send("chat.send", json!({"sessionKey": "shared", "message": format!("m{i}"), "idempotencyKey": format!("o-{i}")})).await;
        ids.push(id);
    }
    for id in &ids {
        ws.until_res(id).await;
    }
    for i in 0..10 {
        ws.chat_until_terminal(&format!("o-{i}")).await;
    }
    let users: Vec<String> = transcript(&gw.session_file("agent:main:shared"))
        .into_iter()
        .filter(|(r, _)| r == "user")
        .map(|(_, t)| t)
        .collect();
    assert_eq!(users, (0..10).map(|i| format!("m{i}")).collect::<Vec<_>>());
    gw.stop().await;
}

#[tokio::test]
async fn draining_refuses_new_runs_lets_the_running_one_finish_and_says_shutdown() {
    let mut gw = Gw::start(vec![stall("finished while draining", 300)], json!({})).await;
    let mut ws = gw.ws().await;
    ws.chat_send(json!({"sessionKey": "d", "message": "x", "idempotencyKey": "d-1"}))
        .await;
    ws.until_event(|v| v["event"] == "chat").await;
    let running = gw.running.take().unwrap();
    let core = running.core().clone();
    let drain = tokio::spawn(running.drain(Duration::from_secs(5)));
    ws.until_event(|v| v["event"] == "shutdown").await;
    let id = ws
        .send(
            "chat.send",
            json!({"sessionKey": "other", "message": "y", "idempotencyKey": "d-2"}),
        )
        .await;
    let refused = ws.until_res(&id).await;
    assert_eq!(refused["error"]["code"], "UNAVAILABLE", "{refused}");
    assert_eq!(
        refused["error"]["message"],
        "Gateway is draining for restart; new tasks are not accepted"
    );
    let end = ws.chat_until_terminal("d-1").await;
    assert_eq!(end.last().unwrap()["payload"]["state"], "final");
    let report = drain.await.unwrap();
    assert_eq!(report.aborted_runs, 0);
    assert_eq!(ws.closed().await, super::Ended::Close(1012));
    assert!(core.is_draining());
    gw.mock.shutdown().await;
}

#[tokio::test]
async fn a_queued_message_can_be_aborted_alone_and_never_runs() {
    let gw = Gw::start(
        vec![stall("long first", 600), Turn::text("kept")],
        json!({"messages": {"queue": {"mode": "followup", "debounceMs": 0}}}),
    )
    .await;
    let mut ws = gw.ws().await;
    ws.chat_send(json!({"sessionKey": "q", "message": "one", "idempotencyKey": "q-1"}))
        .await;
    ws.until_event(|v| v["event"] == "chat" && v["payload"]["runId"] == "q-1")
        .await;
    for n in [2, 3] {
        ws.chat_send(json!({"sessionKey": "q", "message": format!("m{n}"), "idempotencyKey": format!("q-{n}")})).await;
    }
    // Abort the queued q-2 only: the running turn goes on.
    let id = ws
        .send("chat.abort", json!({"sessionKey": "q", "runId": "q-2"}))
        .await;
    assert_eq!(ws.until_res(&id).await["payload"]["runIds"], json!(["q-2"]));
    let end = ws.chat_until_terminal("q-2").await;
    assert_eq!(end.last().unwrap()["payload"]["state"], "aborted");
    let first = ws.chat_until_terminal("q-1").await;
    assert_eq!(first.last().unwrap()["payload"]["state"], "final");
    let third = ws.chat_until_terminal("q-3").await;
    assert_eq!(
        third.last().unwrap()["payload"]["message"]["content"][0]["text"],
        "kept"
    );
    let users: Vec<String> = transcript(&gw.session_file("agent:main:q"))
        .into_iter()
        .filter(|(r, _)| r == "user")
        .map(|(_, t)| t)
        .collect();
    assert_eq!(users, ["one", "m3"], "the aborted message never ran");
    gw.stop().await;
}
