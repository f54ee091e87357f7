//! What the real OpenClaw 2026.9.6 clients showed they need, each reproduced without them
//! (the clients themselves run in filo-cli's opt-in `FILO_E2E_OPENCLAW` test): the closing
//! handshake every CLI ends with, and the session store that `openclaw health` prints.

use filo_testkit::Turn;
use futures::SinkExt;
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use super::{Ended, Gw};

/// `openclaw agent`, `health` and `status` close the socket when done; the gateway must echo
/// the close frame (the `ws` library reports 1006 "abnormal closure" otherwise).
#[tokio::test]
async fn a_close_from_the_client_is_echoed() {
    let gw = Gw::start(vec![], json!({})).await;
    for code in [CloseCode::Normal, CloseCode::Away] {
        let mut ws = gw.ws().await;
        let id = ws.send("health", json!({})).await;
        assert_eq!(ws.until_res(&id).await["ok"], true);
        let frame = CloseFrame {
            code,
            reason: "done".into(),
        };
        ws.stream.send(Message::Close(Some(frame))).await.unwrap();
        assert_eq!(ws.closed().await, Ended::Close(u16::from(code)));
    }
    gw.stop().await;
}

/// `openclaw health` prints "Session store (main): PATH (N entries)" and one line per recent
/// key from `sessions.count` / `sessions.recent`: the store's entries, not the runs in flight.
#[tokio::test]
async fn health_counts_the_stored_sessions_and_lists_the_recent_ones() {
    let gw = Gw::start(vec![Turn::text("one"), Turn::text("two")], json!({})).await;
    let mut ws = gw.ws().await;
    for (session, idem) in [("first", "h-1"), ("second", "h-2")] {
        let id = ws
            .send(
                "agent",
                json!({"message": "hi", "sessionId": session, "idempotencyKey": idem}),
            )
            .await;
        assert_eq!(ws.until_res(&id).await["payload"]["status"], "accepted");
        assert_eq!(ws.until_res(&id).await["payload"]["status"], "ok");
    }
    let id = ws.send("health", json!({})).await;
    let h = ws.until_res(&id).await;
    let sessions = &h["payload"]["sessions"];
    assert_eq!(sessions["count"], 2, "{h}");
    assert!(
        sessions["path"]
            .as_str()
            .unwrap()
            .ends_with("agents/main/sessions/sessions.json"),
        "{h}"
    );
    let recent = sessions["recent"].as_array().unwrap();
    let keys: Vec<&str> = recent.iter().filter_map(|r| r["key"].as_str()).collect();
    assert_eq!(
        keys,
        ["agent:main:explicit:second", "agent:main:explicit:first"]
    );
    for r in recent {
        assert!(r["updatedAt"].as_i64().unwrap() > 0, "{r}");
        assert!(r["age"].as_i64().unwrap() >= 0, "{r}");
    }
    assert_eq!(h["payload"]["agents"][0]["sessions"], *sessions);
    gw.stop().await;
}

/// The events of `run_id` this connection got, in order, up to its terminal `chat` event.
async fn run_events(ws: &mut super::Ws, run_id: &str) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    loop {
        let e = ws.until_event(|v| v["payload"]["runId"] == run_id).await;
        let terminal = e["event"] == "chat" && e["payload"]["state"] != "delta";
        out.push(e);
        if terminal {
            return out;
        }
    }
}

/// `openclaw tui` marks the run of an `agent` lifecycle start as its active run; a `chat` event
/// of the active run no longer clears the message it is sending. When the `chat.send` ack, the
/// start and the final reach the TUI in one socket read (a fast turn on a busy machine), the
/// TUI waits for the ack's run forever ("agent is busy"). The run's first `chat` frame must
/// therefore come before its lifecycle start (checked with the real TUI: one read of ack,
/// delta, start, end, final leaves it idle; ack, start, delta, end, final leaves it stuck).
#[tokio::test]
async fn a_runs_first_chat_frame_comes_before_its_agent_lifecycle_start() {
    let gw = Gw::start(
        vec![
            Turn::text("A plain answer."),
            Turn::tool_call("call_1", "bash", json!({"command": "echo tool-ran"})),
            Turn::text("The tool ran."),
            filo_testkit::Fault::http(500).into(),
        ],
        json!({}),
    )
    .await;
    let mut ws = gw.ws().await;
    for (n, key) in ["plain", "tool-first", "fails"].iter().enumerate() {
        let run_id = format!("order-{n}");
        let id = ws
            .send(
                "chat.send",
                json!({"sessionKey": key, "message": "go", "idempotencyKey": run_id}),
            )
            .await;
        assert_eq!(ws.until_res(&id).await["ok"], true);
        let events = run_events(&mut ws, &run_id).await;
        let is_start = |e: &serde_json::Value| {
            e["event"] == "agent"
                && e["payload"]["stream"] == "lifecycle"
                && e["payload"]["data"]["phase"] == "start"
        };
        let first_chat = events.iter().position(|e| e["event"] == "chat").unwrap();
        if let Some(start) = events.iter().position(is_start) {
            assert!(start > first_chat, "{key}: {events:#?}");
        }
        let names: Vec<String> = events
            .iter()
            .map(|e| format!("{}:{}", e["event"], e["payload"]["state"]))
            .collect();
        assert!(
            !events[..first_chat].iter().any(is_start),
            "{key}: {names:?}"
        );
    }
    gw.stop().await;
}
