//! Long replies cost a small multiple of their size: on every streaming route a 20,000-word
//! reply keeps the gateway's peak memory bounded and the bytes on the wire linear in the text,
//! and a client that stops reading for 20 s does not make the gateway hold a copy per event.
//!
//! The gateway runs in a process of its own (this test binary, re-run on [`gateway_child`]) so
//! its resident memory can be read from `/proc`; the test stops it when done.

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use filo_testkit::Turn;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;

use super::{Gw, TOKEN};

const CHILD_ENV: &str = "FILO_GATEWAY_TEST_CHILD";
const MIB: u64 = 1024 * 1024;

/// `words` words, numbered so no two chunks are alike.
fn long_text(words: usize) -> String {
    (0..words).map(|i| format!("w{i} ")).collect::<String>()
}

/// The gateway process of the heavy tests: a gateway over a mock that answers every request
/// with the long text; prints its address, serves until its stdin closes.
#[test]
#[ignore = "the gateway process the heavy tests start"]
fn gateway_child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let spec: Value = serde_json::from_str(&spec).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let text = long_text(spec["words"].as_u64().unwrap() as usize);
        let turns = (0..spec["turns"].as_u64().unwrap())
            .map(|_| Turn::text(text.clone()))
            .collect();
        let gw = Gw::start(turns, spec["config"].clone()).await;
        println!("FILO_GATEWAY_ADDR {}", gw.addr);
        std::io::stdout().flush().unwrap();
        let _eof = tokio::task::spawn_blocking(|| {
            let mut line = String::new();
            std::io::stdin().read_line(&mut line)
        })
        .await;
        gw.stop().await;
    });
}

/// A gateway in a child process, stopped (and reaped) when dropped.
struct GatewayProcess {
    child: Child,
    addr: SocketAddr,
}

impl GatewayProcess {
    fn start(words: usize, turns: usize, config: Value) -> Self {
        let spec = json!({"words": words, "turns": turns, "config": config});
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                "suite::heavy::gateway_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, spec.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let addr = lines
            .by_ref()
            .map_while(Result::ok)
            // libtest may have written `test … ... ` on the same line.
            .find_map(|l| {
                l.split("FILO_GATEWAY_ADDR ")
                    .nth(1)
                    .map(|a| a.trim().parse().unwrap())
            })
            .expect("the gateway process printed its address");
        // What it prints later (its test result) must not meet a closed pipe.
        std::thread::spawn(move || lines.for_each(drop));
        GatewayProcess { child, addr }
    }

    fn status_kib(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("no {field} in {status}"))
    }

    /// The process's peak resident memory so far.
    fn peak_rss(&self) -> u64 {
        self.status_kib("VmHWM:") * 1024
    }
}

impl Drop for GatewayProcess {
    fn drop(&mut self) {
        // Closing stdin asks it to drain and stop; a kill makes sure.
        drop(self.child.stdin.take());
        for _ in 0..100 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// POSTs `body` to `path` and reads the whole response, pausing `pause` after its first bytes;
/// returns the response and how many bytes came.
async fn post_counting(
    addr: SocketAddr,
    path: &str,
    body: &Value,
    headers: &[(&str, &str)],
    pause: Duration,
) -> (String, usize) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let body = body.to_string();
    let mut req = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(&body);
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let n = s.read(&mut buf).await.unwrap();
    raw.extend_from_slice(&buf[..n]);
    tokio::time::sleep(pause).await;
    s.read_to_end(&mut raw).await.unwrap();
    let n = raw.len();
    (String::from_utf8_lossy(&raw).into_owned(), n)
}

/// Sends `chat.send` on a new connection, pauses `pause`, then reads to the final event; returns
/// the final text and the bytes of every frame received.
async fn ws_counting(addr: SocketAddr, key: &str, pause: Duration) -> (String, usize) {
    let (mut ws, _) = super::Ws::connect(&format!("ws://{addr}"), Some(TOKEN)).await;
    let ack = ws
        .chat_send(json!({"sessionKey": key, "message": "write a lot", "idempotencyKey": key}))
        .await;
    assert_eq!(ack["ok"], true, "{ack}");
    tokio::time::sleep(pause).await;
    let mut bytes = 0;
    loop {
        let m = tokio::time::timeout(Duration::from_secs(120), ws.stream.next())
            .await
            .expect("a frame within 120 s")
            .expect("the socket stays open")
            .unwrap();
        let Message::Text(t) = m else { continue };
        bytes += t.len();
        let v: Value = serde_json::from_str(t.as_str()).unwrap();
        if v["event"] == "chat" && v["payload"]["runId"] == key && v["payload"]["state"] == "final"
        {
            let text = v["payload"]["message"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_owned();
            let _ = ws.stream.close(None).await;
            return (text, bytes);
        }
    }
}

/// The text the `delta` events of the session route's SSE body add up to.
fn session_deltas(body: &str) -> String {
    let mut out = String::new();
    let mut event = "";
    for l in body.lines() {
        if let Some(e) = l.strip_prefix("event:") {
            event = if e.trim() == "delta" { "delta" } else { "" };
        } else if let Some(d) = l.strip_prefix("data:")
            && event == "delta"
        {
            let v: Value = serde_json::from_str(d.trim()).unwrap();
            out.push_str(v["delta"].as_str().unwrap());
        }
    }
    out
}

/// The content the chunks of a chat-completions SSE body add up to.
fn completion_deltas(body: &str) -> String {
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter_map(|v| {
            v["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_20000_word_reply_costs_linear_memory_and_bytes_on_every_route() {
    let words = 20_000;
    let text = long_text(words);
    let size = text.trim().len();
    let gw = GatewayProcess::start(words, 3, json!({}));
    let none = Duration::ZERO;

    let (body, bytes) = post_counting(
        gw.addr,
        "/v1/sessions/long-session/messages",
        &json!({"message": "write a lot", "stream": true}),
        &[],
        none,
    )
    .await;
    assert_eq!(session_deltas(&body).trim(), text.trim());
    assert!(bytes < 40 * size, "session route: {bytes} bytes for {size}");
    let mut wire = vec![("session", bytes)];

    let (body, bytes) = post_counting(
        gw.addr,
        "/v1/chat/completions",
        &json!({"model": "filo", "stream": true, "messages": [{"role": "user", "content": "write a lot"}]}),
        &[("x-filo-session-key", "long-openai")],
        none,
    )
    .await;
    assert_eq!(completion_deltas(&body).trim(), text.trim());
    assert!(
        bytes < 40 * size,
        "chat completions: {bytes} bytes for {size}"
    );
    wire.push(("completions", bytes));

    let (final_text, bytes) = ws_counting(gw.addr, "long-ws", none).await;
    assert_eq!(final_text.trim(), text.trim());
    assert!(bytes < 40 * size, "WebSocket: {bytes} bytes for {size}");
    wire.push(("websocket", bytes));

    let peak = gw.peak_rss();
    eprintln!(
        "20,000-word reply ({size} bytes) on three routes: peak RSS {} MiB; wire bytes {:?}",
        peak / MIB,
        wire
    );
    assert!(peak < 150 * MIB, "peak RSS {} MiB", peak / MIB);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_pausing_20_s_during_a_long_reply_keep_the_gateway_small() {
    let words = 20_000;
    let text = long_text(words);
    let gw = GatewayProcess::start(words, 2, json!({}));
    let pause = Duration::from_secs(20);
    let addr = gw.addr;
    let http = tokio::spawn(async move {
        post_counting(
            addr,
            "/v1/sessions/paused-http/messages",
            &json!({"message": "write a lot", "stream": true}),
            &[],
            pause,
        )
        .await
    });
    let ws = tokio::spawn(async move { ws_counting(addr, "paused-ws", pause).await });
    let (body, _) = http.await.unwrap();
    assert_eq!(session_deltas(&body).trim(), text.trim());
    let (final_text, _) = ws.await.unwrap();
    assert_eq!(final_text.trim(), text.trim());
    let peak = gw.peak_rss();
    eprintln!("two readers pausing 20 s: peak RSS {} MiB", peak / MIB);
    assert!(peak < 200 * MIB, "peak RSS {} MiB", peak / MIB);
}
