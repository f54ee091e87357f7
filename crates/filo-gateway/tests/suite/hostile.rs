//! Hostile clients get their documented error or close code, and a session running alongside
//! completes unharmed; nothing is written outside the state directory.

use std::time::Duration;

use filo_testkit::{Fault, Reply};
use futures::SinkExt;
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;

use super::{Ended, Gw, TOKEN, Ws, http};

fn raise_fd_limit() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE)
        && soft < 8192
    {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, hard.min(8192), hard);
    }
}

/// Every file under `root` that is not under `root/state` (the test's own home and temp dirs
/// hold nothing the gateway wrote).
fn files_outside_state(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else {
                out.push(p);
            }
        }
    }
    let mut all = Vec::new();
    walk(root, &mut all);
    all.into_iter()
        .filter(|p| !p.starts_with(root.join("state")))
        .collect()
}

#[tokio::test]
async fn hostile_clients_are_refused_while_a_session_completes() {
    raise_fd_limit();
    let long_stall = Fault::Stall {
        after_events: 2,
        reply: Reply::text("the honest session completes"),
        stall: Duration::from_millis(2_500),
    };
    let gw = Gw::start(
        vec![long_stall.into()],
        json!({"gateway": {"maxPayload": 4096, "handshakeTimeoutMs": 500, "maxPreauthConnections": 300}}),
    )
    .await;
    let url = gw.ws_url();
    let mut honest = gw.ws().await;
    let id = honest
        .send(
            "chat.send",
            json!({"sessionKey": "honest", "message": "work", "idempotencyKey": "h-1"}),
        )
        .await;
    honest.until_res(&id).await;

    // Not JSON before connect.
    let mut ws = Ws::open(&url).await;
    ws.send_text("hello?".into()).await;
    assert_eq!(ws.closed().await, Ended::Close(1008));
    // A request before connect.
    let mut ws = Ws::open(&url).await;
    let id = ws.send("health", json!({})).await;
    let r = ws.until_res(&id).await;
    assert_eq!(r["error"]["code"], "INVALID_REQUEST");
    assert_eq!(ws.closed().await, Ended::Close(1008));
    // A wrong token, and none.
    for (token, code) in [
        (Some("wrong"), "AUTH_TOKEN_MISMATCH"),
        (None, "AUTH_TOKEN_MISSING"),
    ] {
        let (mut ws, r) = Ws::connect(&url, token).await;
        assert_eq!(r["ok"], false);
        assert_eq!(r["error"]["details"]["code"], code, "{r}");
        assert!(
            r["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("unauthorized")
        );
        assert_eq!(ws.closed().await, Ended::Close(1008));
    }
    // A protocol the gateway does not speak.
    let mut ws = Ws::open(&url).await;
    let id = ws.send("connect", json!({"minProtocol": 1, "maxProtocol": 2, "client": {"id": "x", "mode": "cli"}, "auth": {"token": TOKEN}})).await;
    let r = ws.until_res(&id).await;
    assert_eq!(r["error"]["details"]["code"], "PROTOCOL_MISMATCH");
    assert_eq!(ws.closed().await, Ended::Close(1002));
    // Over 64 KiB before connect.
    let mut ws = Ws::open(&url).await;
    let _ = ws
        .stream
        .send(Message::Text("x".repeat(70 * 1024).into()))
        .await;
    assert!(matches!(
        ws.closed().await,
        Ended::Close(1009) | Ended::Gone
    ));
    // Over maxPayload after connect.
    let mut ws = gw.ws().await;
    let big =
        json!({"type": "req", "id": "1", "method": "health", "params": {"pad": "y".repeat(8192)}});
    let _ = ws.stream.send(Message::Text(big.to_string().into())).await;
    assert!(matches!(
        ws.closed().await,
        Ended::Close(1009) | Ended::Gone
    ));
    // Not JSON after connect; binary.
    let mut ws = gw.ws().await;
    ws.send_text("{not json".into()).await;
    assert_eq!(ws.closed().await, Ended::Close(1007));
    let mut ws = gw.ws().await;
    let _ = ws.stream.send(Message::Binary(vec![1, 2, 3].into())).await;
    assert_eq!(ws.closed().await, Ended::Close(1003));
    // Session keys that try to leave the state directory.
    let mut ws = gw.ws().await;
    for key in ["../../etc/passwd", "agent:main:a/b", "..", "a\\b"] {
        let id = ws
            .send(
                "chat.send",
                json!({"sessionKey": key, "message": "x", "idempotencyKey": format!("bad-{key}")}),
            )
            .await;
        let r = ws.until_res(&id).await;
        assert_eq!(r["error"]["code"], "INVALID_REQUEST", "{key}: {r}");
        assert!(
            r["error"]["message"]
                .as_str()
                .unwrap()
                .contains("invalid session key"),
            "{r}"
        );
        let id = ws
            .send(
                "agent",
                json!({"message": "x", "sessionId": key, "idempotencyKey": format!("bad2-{key}")}),
            )
            .await;
        assert_eq!(ws.until_res(&id).await["ok"], false, "{key}");
    }
    let r = gw
        .http(
            "POST",
            "/v1/sessions/..%2F..%2Fetc/messages",
            Some(&json!({"message": "x"})),
            &[],
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    let r = gw
        .http(
            "POST",
            "/v1/chat/completions",
            Some(&json!({"messages": [{"role": "user", "content": "x"}]})),
            &[("x-filo-session-key", "../x")],
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.body);

    // 1,000 connections that never authenticate: past the cap the oldest waiting make room
    // (1013), the others are closed (1008) when their handshake time runs out.
    let mut idle = Vec::new();
    for _ in 0..1000 {
        let url = url.clone();
        idle.push(tokio::spawn(async move {
            match tokio_tungstenite::connect_async(&url).await {
                Err(tokio_tungstenite::tungstenite::Error::Http(r)) => r.status().as_u16(),
                Err(_) => 0,
                Ok((s, _)) => {
                    let mut ws = Ws {
                        stream: s,
                        next: 0,
                        backlog: Vec::new(),
                    };
                    match ws.closed().await {
                        Ended::Close(c) => c,
                        Ended::Gone => 1,
                    }
                }
            }
        }));
    }
    let mut outcomes = std::collections::BTreeMap::new();
    for h in idle {
        *outcomes.entry(h.await.unwrap()).or_insert(0) += 1;
    }
    assert_eq!(
        outcomes
            .keys()
            .copied()
            .filter(|c| *c != 1013 && *c != 1008)
            .count(),
        0,
        "{outcomes:?}"
    );
    assert!(
        outcomes.get(&1013).copied().unwrap_or(0) > 0,
        "{outcomes:?}"
    );
    assert!(
        outcomes.get(&1008).copied().unwrap_or(0) > 0,
        "{outcomes:?}"
    );

    // The honest session was never disturbed.
    let end = honest.chat_until_terminal("h-1").await;
    let p = &end.last().unwrap()["payload"];
    assert_eq!(p["state"], "final", "{p}");
    assert_eq!(
        p["message"]["content"][0]["text"],
        "the honest session completes"
    );
    let h = http(gw.addr, "GET", "/health", None, &[]).await;
    assert_eq!(h.status, 200);
    let stray = files_outside_state(gw.dir.path());
    assert!(stray.is_empty(), "written outside the state dir: {stray:?}");
    gw.stop().await;
}
