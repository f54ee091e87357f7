//! Sockets that never authenticate cannot hold the gateway: idle connections are closed within
//! the handshake timeout while `/health` answers, and a client with the right token is served
//! while 1,024 upgraded sockets sit silent.

use std::time::Duration;

use filo_testkit::Turn;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::{Ended, Gw, Ws, http};

fn raise_fd_limit() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE)
        && soft < 8192
    {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, hard.min(8192), hard);
    }
}

/// Reads until the server closes the socket (EOF or reset); `false` if it is still open after
/// `wait`.
async fn closed_by_server(s: &mut TcpStream, wait: Duration) -> bool {
    let mut buf = [0u8; 1024];
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        match tokio::time::timeout_at(deadline, s.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            // A 408 or similar before closing is fine.
            Ok(Ok(_)) => continue,
        }
    }
}

#[tokio::test]
async fn idle_and_half_sent_requests_are_closed_while_health_answers() {
    raise_fd_limit();
    let gw = Gw::start(vec![], json!({"gateway": {"handshakeTimeoutMs": 400}})).await;
    let mut idle = Vec::new();
    for i in 0..300 {
        let mut s = TcpStream::connect(gw.addr).await.unwrap();
        if i % 3 == 0 {
            // A request head that never ends.
            s.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n")
                .await
                .unwrap();
        }
        idle.push(s);
    }
    // Served meanwhile.
    let h = http(gw.addr, "GET", "/health", None, &[]).await;
    assert_eq!(h.status, 200, "{}", h.body);
    // Each is closed by the server well within 20 handshake timeouts.
    let mut open = 0;
    for s in &mut idle {
        if !closed_by_server(s, Duration::from_secs(8)).await {
            open += 1;
        }
    }
    assert_eq!(open, 0, "{open} of 300 idle sockets still open");
    let h = http(gw.addr, "GET", "/health", None, &[]).await;
    assert_eq!(h.status, 200);
    gw.stop().await;
}

#[tokio::test]
async fn a_client_with_the_token_is_served_during_1024_idle_upgrades() {
    raise_fd_limit();
    let gw = Gw::start(
        vec![Turn::text("served despite the crowd")],
        json!({"gateway": {"handshakeTimeoutMs": 60000}}),
    )
    .await;
    let url = gw.ws_url();
    // 1,024 sockets upgrade and then say nothing (the handshake timeout is long).
    let mut silent = Vec::new();
    for _ in 0..1024 {
        silent.push(Ws::open(&url).await);
    }
    let mut honest = gw.ws().await;
    let ack = honest
        .chat_send(json!({"sessionKey": "honest", "message": "hi", "idempotencyKey": "h-1"}))
        .await;
    assert_eq!(ack["ok"], true, "{ack}");
    let end = honest.chat_until_terminal("h-1").await;
    let p = &end.last().unwrap()["payload"];
    assert_eq!(p["state"], "final", "{p}");
    assert_eq!(
        p["message"]["content"][0]["text"],
        "served despite the crowd"
    );
    // The oldest silent one made room: told to try again (1013).
    assert_eq!(silent[0].closed().await, Ended::Close(1013));
    gw.stop().await;
}
