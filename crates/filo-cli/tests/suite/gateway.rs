//! `filo gateway` as a process: it refuses a public bind without a token, serves a turn with
//! the agent directory's providers and the state dir's `filo-embed.json`, keeps its
//! `sessions.json` and transcript in the state dir, and drains on SIGTERM with exit 0.

use std::process::Stdio;
use std::time::Duration;

use filo_testkit::{MockProvider, Turn};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use super::common::Home;

#[tokio::test]
async fn a_public_bind_without_a_token_refuses_to_start() {
    let mock = MockProvider::start(vec![]).await;
    let home = Home::new(&mock);
    let (code, _, err) = home.filo(&["gateway", "--bind", "0.0.0.0:0"]).await;
    assert_ne!(code, 0);
    assert!(err.contains("without a token"), "{err}");
    let (code, _, err) = home.filo(&["gateway", "--bind", "nonsense"]).await;
    assert_ne!(code, 0);
    assert!(err.contains("invalid --bind"), "{err}");
}

async fn post(addr: &str, path: &str, token: &str, body: &Value) -> (u16, String) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let body = body.to_string();
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).await.unwrap();
    let status = raw.split(' ').nth(1).unwrap().parse().unwrap();
    let body = raw
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

#[tokio::test]
async fn serves_a_turn_from_the_agent_dirs_providers_and_drains_on_sigterm() {
    let mock = MockProvider::start(vec![Turn::text("served by filo gateway")]).await;
    let home = Home::new(&mock);
    let state = home.path().join("state");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::write(
        state.join("filo-embed.json"),
        json!({"agents": {"defaults": {"model": {"primary": "mock/mock-model"}}},
               "memory": {"db": state.join("playfilo.db")}})
        .to_string(),
    )
    .unwrap();
    let mut child = home
        .command(&["gateway", "--bind", "127.0.0.1:0"])
        .env("FILO_STATE_DIR", &state)
        .env("FILO_GATEWAY_TOKEN", "cli-token")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let line = lines
                .next_line()
                .await
                .unwrap()
                .expect("gateway exited early");
            if let Some(rest) = line.strip_prefix("filo gateway listening on ") {
                return rest.split_whitespace().next().unwrap().to_owned();
            }
        }
    })
    .await
    .expect("the gateway never said where it listens");
    let body = json!({"model": "filo", "messages": [{"role": "user", "content": "hello"}]});
    let (status, _) = post(&addr, "/v1/chat/completions", "wrong", &body).await;
    assert_eq!(status, 401);
    let (status, text) = post(&addr, "/v1/chat/completions", "cli-token", &body).await;
    assert_eq!(status, 200, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        v["choices"][0]["message"]["content"],
        "served by filo gateway"
    );
    let auth = mock.requests()[0]
        .header("authorization")
        .map(str::to_owned);
    assert_eq!(auth.as_deref(), Some("Bearer mock-secret"));
    let store = std::fs::read_to_string(state.join("agents/main/sessions/sessions.json")).unwrap();
    assert!(store.contains("agent:main:openai:"), "{store}");
    let pid = child.id().unwrap();
    std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("no exit within 20 s of SIGTERM")
        .unwrap();
    assert_eq!(status.code(), Some(0));
    let mut rest = String::new();
    while let Ok(Some(l)) = lines.next_line().await {
        rest.push_str(&l);
        rest.push('\n');
    }
    assert!(rest.contains("SIGTERM, draining"), "{rest}");
}
