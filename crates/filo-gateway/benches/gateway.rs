//! The gateway benchmark (design D12, issue 12): a gateway in its own process against the
//! scripted mock (answers after 20 ms), driven over WebSocket like OpenClaw's own clients.
//!
//! ```sh
//! cargo bench -p filo-gateway --bench gateway            # filo's gateway, all phases
//! cargo bench -p filo-gateway --bench gateway -- --external ws://127.0.0.1:18789 \
//!     --pid <gateway pid> --token <token>   # any gateway (OpenClaw's), on its own model server
//! ```
//!
//! Phases: start → ready (`/health` 200), idle RSS, 100 sequential `agent` turns on distinct
//! sessions with a new connection each (latency, the gateway's CPU per turn, RSS after),
//! 100 direct requests to the mock (what the model costs by itself), then 1,000 concurrent
//! connections each sending one `chat.send` on its own session (failures, p50/p99, peak RSS,
//! threads, open files). Prints a table; asserts nothing about time.

// A bench binary reports on stdout.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::unwrap_used,
    clippy::expect_used
)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use filo_testkit::{Fault, MockProvider, Protocol, Reply, Turn};
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::Message;

#[path = "gateway/shared.rs"]
mod shared;

const TOKEN: &str = "bench-token";
const MOCK_DELAY: Duration = Duration::from_millis(20);

fn mock_turn() -> Turn {
    Fault::Stall {
        after_events: 0,
        reply: Reply::text("Hello from mock"),
        stall: MOCK_DELAY,
    }
    .into()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--serve") {
        serve(
            &args[i + 1],
            &args[i + 2],
            args[i + 3].parse().unwrap(),
            args.get(i + 4).map(String::as_str),
        );
        return;
    }
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .map(|i| args[i + 1].clone())
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        if let Some(sessions) = flag("--shared") {
            let hosts = flag("--hosts").map_or(3, |h| h.parse().unwrap());
            shared::compare(sessions.parse().unwrap(), hosts).await;
            return;
        }
        match flag("--external") {
            Some(url) => {
                let pid: u32 = flag("--pid")
                    .expect("--pid of the gateway")
                    .parse()
                    .unwrap();
                let token = flag("--token").unwrap_or_else(|| TOKEN.into());
                external(&url, pid, &token).await;
            }
            None => own().await,
        }
    });
}

/// The child: one gateway over the mock at `mock_url`, state in `state` (shared through the
/// PostgreSQL at `store` when given); prints its address.
fn serve(state: &str, mock_url: &str, max_concurrent: usize, store: Option<&str>) {
    use filo_embed::{EmbedConfig, EmbedDeps, EmbedPaths, Embedder};
    use filo_gateway::{Gateway, GatewayConfig, Overrides};
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut registry = filo_ai::ProviderRegistry::empty();
        let models = json!({"providers": {"mock": {"baseUrl": mock_url, "api": "openai-completions",
            "apiKey": "MOCK_KEY", "models": [{"id": "mock-model", "contextWindow": 128000, "maxTokens": 1000}]}}});
        registry.apply_models_json(&models.to_string()).unwrap();
        let state = std::path::PathBuf::from(state);
        let memory = store.map_or_else(|| state.join("playfilo.db").display().to_string(), str::to_owned);
        let config = EmbedConfig::from_value(json!({
            "agents": {"defaults": {"model": {"primary": "mock/mock-model"}, "maxConcurrent": max_concurrent}},
            "memory": {"db": memory},
        }));
        let (gw, _) = GatewayConfig::resolve(
            &config,
            &Overrides { bind: Some("127.0.0.1:0".into()), token: Some(TOKEN.into()), env_token: None },
        )
        .unwrap();
        let paths = EmbedPaths::new(Some(state.clone()), state.join("home"), std::env::temp_dir());
        let embedder = Embedder::new(EmbedDeps {
            config,
            paths,
            registry,
            env: filo_ai::Env::from_vars([("MOCK_KEY", "k")]),
            client: None,
            clock: Arc::new(filo_embed::clock::SystemClock),
            api_key: None,
        })
        .unwrap();
        let gateway = match store {
            Some(url) => {
                let shared = filo_gateway::shared::SharedStore::connect(url, true).await.unwrap();
                Gateway::with_shared_store(embedder, gw, shared)
            }
            None => Gateway::new(embedder, gw),
        };
        let running = gateway.start().await.unwrap();
        println!("READY {}", running.addr);
        // Until the parent closes our stdin.
        let _ = tokio::task::spawn_blocking(|| {
            let mut s = String::new();
            let _ = std::io::stdin().read_line(&mut s);
        })
        .await;
        running.drain(Duration::from_secs(5)).await;
    });
}

struct Proc {
    child: Child,
    addr: SocketAddr,
    started: Instant,
    ready_line: Duration,
}

fn spawn_gateway(mock: &MockProvider, state: &std::path::Path, max_concurrent: usize) -> Proc {
    spawn_gateway_with(mock, state, max_concurrent, None)
}

fn spawn_gateway_with(
    mock: &MockProvider,
    state: &std::path::Path,
    max_concurrent: usize,
    store: Option<&str>,
) -> Proc {
    let exe = std::env::current_exe().unwrap();
    let started = Instant::now();
    let mut child = Command::new(exe)
        .args([
            "--serve",
            &state.display().to_string(),
            &mock.base_url(Protocol::OpenAiCompletions),
            &max_concurrent.to_string(),
        ])
        .args(store)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let ready_line = started.elapsed();
    let addr = line
        .trim()
        .strip_prefix("READY ")
        .expect("READY line")
        .parse()
        .unwrap();
    Proc {
        child,
        addr,
        started,
        ready_line,
    }
}

impl Proc {
    fn stop(mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// `VmRSS`, `VmHWM` (KiB) and `Threads` of a process.
fn proc_status(pid: u32) -> (u64, u64, u64) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"), field("Threads:"))
}

/// User + system CPU time of a process.
fn cpu_time(pid: u32) -> Duration {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = text.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = after
        .split_whitespace()
        .filter_map(|v| v.parse().ok())
        .collect();
    // Fields 14 and 15 of stat; `after` starts at field 3 (state is not a number).
    let ticks = f.get(10).copied().unwrap_or(0) + f.get(11).copied().unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

fn open_files(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

async fn health_ok(addr: SocketAddr) -> bool {
    let Ok(mut s) = tokio::net::TcpStream::connect(addr).await else {
        return false;
    };
    let req = format!("GET /health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    if s.write_all(req.as_bytes()).await.is_err() {
        return false;
    }
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf).await;
    buf.starts_with(b"HTTP/1.1 200")
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn recv(ws: &mut Ws) -> Option<Value> {
    loop {
        match ws.next().await? {
            Ok(Message::Text(t)) => return serde_json::from_str(t.as_str()).ok(),
            Ok(Message::Close(_)) | Err(_) => return None,
            Ok(_) => continue,
        }
    }
}

/// Connects like `openclaw agent` (challenge, connect with the token, hello-ok).
async fn connect(url: &str, token: &str) -> Result<Ws, String> {
    let (mut ws, _) = tokio_tungstenite::connect_async(url)
        .await
        .map_err(|e| e.to_string())?;
    let challenge = recv(&mut ws).await.ok_or("no challenge")?;
    if challenge["event"] != "connect.challenge" {
        return Err(format!("expected connect.challenge, got {challenge}"));
    }
    let connect = json!({"type": "req", "id": "1:bench", "method": "connect", "params": {
        "minProtocol": 4, "maxProtocol": 4,
        "client": {"id": "cli", "version": "2026.9.6", "platform": "linux", "mode": "cli"},
        "caps": [], "auth": {"token": token}, "role": "operator", "scopes": ["operator.admin"]}});
    ws.send(Message::Text(connect.to_string().into()))
        .await
        .map_err(|e| e.to_string())?;
    loop {
        let v = recv(&mut ws).await.ok_or("closed during connect")?;
        if v["type"] == "res" && v["id"] == "1:bench" {
            return if v["ok"] == true {
                Ok(ws)
            } else {
                Err(format!("connect refused: {v}"))
            };
        }
    }
}

/// One `agent` turn on a new connection; its latency (connect → final result) and the run's
/// own duration as the gateway reports it (`result.meta.durationMs`).
async fn agent_turn(url: &str, token: &str, session: &str) -> Result<(Duration, Duration), String> {
    let t = Instant::now();
    let mut ws = connect(url, token).await?;
    let req = json!({"type": "req", "id": "2:turn", "method": "agent", "params": {"message": "hi",
        "sessionKey": format!("agent:main:{session}"), "sessionId": session, "deliver": false,
        "timeout": 600, "idempotencyKey": uuid::Uuid::new_v4().to_string()}});
    ws.send(Message::Text(req.to_string().into()))
        .await
        .map_err(|e| e.to_string())?;
    loop {
        let v = recv(&mut ws).await.ok_or("closed before the result")?;
        if v["type"] == "res" && v["id"] == "2:turn" {
            if v["ok"] != true {
                return Err(format!("agent failed: {v}"));
            }
            if v["payload"]["status"] == "accepted" {
                continue;
            }
            let took = t.elapsed();
            let run = v["payload"]["result"]["meta"]["durationMs"]
                .as_u64()
                .unwrap_or(0);
            let _ = ws.close(None).await;
            return if v["payload"]["status"] == "ok" {
                Ok((took, Duration::from_millis(run)))
            } else {
                Err(format!("{v}"))
            };
        }
    }
}

/// One `chat.send` on an open connection; its latency (send → terminal `chat` event).
async fn chat_turn(ws: &mut Ws, session: &str) -> Result<Duration, String> {
    let run = uuid::Uuid::new_v4().to_string();
    let req = json!({"type": "req", "id": "2:send", "method": "chat.send", "params": {
        "sessionKey": format!("agent:main:{session}"), "message": "hi", "deliver": false, "idempotencyKey": run}});
    let t = Instant::now();
    ws.send(Message::Text(req.to_string().into()))
        .await
        .map_err(|e| e.to_string())?;
    loop {
        let v = recv(ws).await.ok_or("closed before final")?;
        if v["type"] == "res" && v["id"] == "2:send" && v["ok"] != true {
            return Err(format!("chat.send refused: {v}"));
        }
        if v["event"] == "chat" && v["payload"]["runId"] == run.as_str() {
            match v["payload"]["state"].as_str() {
                Some("final") => return Ok(t.elapsed()),
                // OpenClaw's gateway also sends `status` (preparing_workspace, …) before deltas.
                Some("delta" | "status") => continue,
                _ => return Err(format!("{v}")),
            }
        }
    }
}

/// A direct streamed request to the mock (what one model call costs without a gateway).
async fn direct_mock(addr: SocketAddr) -> Duration {
    let body = json!({"model": "mock-model", "stream": true, "messages": [{"role": "user", "content": "hi"}]}).to_string();
    let t = Instant::now();
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await.unwrap();
    t.elapsed()
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

struct Sequential {
    /// The gateway's own run (`durationMs`), p50.
    run_p50: Duration,
    p50: Duration,
    p90: Duration,
    cpu_per_turn: Duration,
    rss_after: u64,
    failures: usize,
}

async fn sequential(url: &str, token: &str, pid: u32, n: usize, prefix: &str) -> Sequential {
    let cpu0 = cpu_time(pid);
    let mut lat = Vec::new();
    let mut runs = Vec::new();
    let mut failures = 0;
    for i in 0..n {
        match agent_turn(url, token, &format!("{prefix}{i}")).await {
            Ok((d, run)) => {
                lat.push(d);
                runs.push(run);
            }
            Err(e) => {
                failures += 1;
                eprintln!("turn {i}: {e}");
            }
        }
    }
    let cpu = cpu_time(pid).saturating_sub(cpu0);
    lat.sort();
    runs.sort();
    Sequential {
        run_p50: pct(&runs, 0.5),
        p50: pct(&lat, 0.5),
        p90: pct(&lat, 0.9),
        cpu_per_turn: cpu / n.max(1) as u32,
        rss_after: proc_status(pid).0,
        failures,
    }
}

struct Concurrent {
    wall: Duration,
    p50: Duration,
    p99: Duration,
    failures: usize,
    peak_rss: u64,
    threads: u64,
    files: usize,
}

async fn concurrent(url: &str, token: &str, pid: u32, n: usize) -> Concurrent {
    let start = Instant::now();
    let sampler = {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s = stop.clone();
        let h = tokio::spawn(async move {
            let (mut peak, mut threads, mut files) = (0, 0, 0);
            while !s.load(std::sync::atomic::Ordering::Relaxed) {
                let (rss, _, th) = proc_status(pid);
                peak = peak.max(rss);
                threads = threads.max(th);
                files = files.max(open_files(pid));
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            (peak, threads, files)
        });
        (stop, h)
    };
    let mut tasks = Vec::new();
    for i in 0..n {
        let (url, token) = (url.to_owned(), token.to_owned());
        tasks.push(tokio::spawn(async move {
            let mut ws = connect(&url, &token).await?;
            let r = chat_turn(&mut ws, &format!("c{i}")).await;
            let _ = ws.close(None).await;
            r
        }));
    }
    let mut lat = Vec::new();
    let mut failures = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(d) => lat.push(d),
            Err(e) => {
                if failures < 5 {
                    eprintln!("concurrent: {e}");
                }
                failures += 1;
            }
        }
    }
    let wall = start.elapsed();
    sampler.0.store(true, std::sync::atomic::Ordering::Relaxed);
    let (peak_sampled, threads, files) = sampler.1.await.unwrap();
    lat.sort();
    Concurrent {
        wall,
        p50: pct(&lat, 0.5),
        p99: pct(&lat, 0.99),
        failures,
        peak_rss: peak_sampled.max(proc_status(pid).1),
        threads,
        files,
    }
}

fn raise_fd_limit() {
    // 1,000 client sockets in this process.
    if let Ok(text) = std::fs::read_to_string("/proc/self/limits")
        && let Some(l) = text.lines().find(|l| l.starts_with("Max open files"))
    {
        let soft: u64 = l
            .split_whitespace()
            .nth(3)
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        if soft < 4096 {
            eprintln!(
                "warning: open-file limit {soft} is below 4096; the 1,000-client phase may fail (ulimit -n)"
            );
        }
    }
}

async fn own() {
    raise_fd_limit();
    let turns = 1 + 100 + 1000 + 100;
    let mock = MockProvider::start((0..turns).map(|_| mock_turn()).collect()).await;
    let dir = tempfile::tempdir().unwrap();
    let gw = spawn_gateway(&mock, dir.path(), 64);
    let pid = gw.child.id();
    let url = format!("ws://{}", gw.addr);
    while !health_ok(gw.addr).await {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let ready = gw.started.elapsed();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let idle = proc_status(pid).0;
    agent_turn(&url, TOKEN, "warmup").await.unwrap();
    let seq = sequential(&url, TOKEN, pid, 100, "s").await;
    let mut direct = Vec::new();
    for _ in 0..100 {
        mock.push(mock_turn());
        direct.push(direct_mock(mock.addr()).await);
    }
    direct.sort();
    // FILO_BENCH_CONCURRENT=0 skips the 1,000-client phase (profiling the sequential one).
    let clients = std::env::var("FILO_BENCH_CONCURRENT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let conc = concurrent(&url, TOKEN, pid, clients).await;
    let after = proc_status(pid);
    let ready_line = gw.ready_line;
    gw.stop();

    println!(
        "\n## filo gateway (this machine, mock answers after {} ms)\n",
        MOCK_DELAY.as_millis()
    );
    println!("| metric | filo gateway |");
    println!("|---|---|");
    println!(
        "| start → `READY` line (process up, port bound) | {} |",
        ms(ready_line)
    );
    println!("| start → `/health` 200 | {} |", ms(ready));
    println!("| idle RSS (1 s after ready) | {} |", mib(idle));
    println!(
        "| 100 sequential `agent` turns, new connection and session each: p50 / p90 | {} / {} ({} failed) |",
        ms(seq.p50),
        ms(seq.p90),
        seq.failures
    );
    println!(
        "| the mock alone, same request, p50 | {} |",
        ms(pct(&direct, 0.5))
    );
    println!(
        "| gateway time per turn over the mock's (p50 turn − p50 mock) | {} |",
        ms(seq.p50.saturating_sub(pct(&direct, 0.5)))
    );
    println!(
        "| the gateway's own run (`durationMs`, whole ms), p50 | {} |",
        ms(seq.run_p50)
    );
    println!(
        "| gateway CPU per turn (user + system, /proc) | {} |",
        ms(seq.cpu_per_turn)
    );
    println!(
        "| RSS after 100 turns on distinct sessions | {} |",
        mib(seq.rss_after)
    );
    println!(
        "| {clients} concurrent connections × 1 `chat.send` (maxConcurrent 64): wall | {} |",
        ms(conc.wall)
    );
    println!("| … failures | {} |", conc.failures);
    println!(
        "| … latency p50 / p99 (send → final) | {} / {} |",
        ms(conc.p50),
        ms(conc.p99)
    );
    println!(
        "| … peak RSS / threads / open files | {} / {} / {} |",
        mib(conc.peak_rss),
        conc.threads,
        conc.files
    );
    println!(
        "| RSS after everything ({} sessions) | {} |",
        102 + clients,
        mib(after.0)
    );
}

async fn external(url: &str, pid: u32, token: &str) {
    raise_fd_limit();
    // The external gateway answers from its own model server (e.g. `filo-mock-server text`).
    tokio::time::sleep(Duration::from_secs(1)).await;
    let idle = proc_status(pid).0;
    agent_turn(url, token, "warmup").await.unwrap();
    let seq = sequential(url, token, pid, 100, "x").await;
    let conc = concurrent(url, token, pid, 50).await;
    println!("| metric | external gateway (pid {pid}) |");
    println!("|---|---|");
    println!("| RSS before the first turn | {} |", mib(idle));
    println!(
        "| 100 sequential `agent` turns p50 / p90 | {} / {} ({} failed) |",
        ms(seq.p50),
        ms(seq.p90),
        seq.failures
    );
    println!(
        "| the gateway's own run (`durationMs`), p50 | {} |",
        ms(seq.run_p50)
    );
    println!("| gateway CPU per turn | {} |", ms(seq.cpu_per_turn));
    println!("| RSS after 100 turns | {} |", mib(seq.rss_after));
    println!(
        "| 50 concurrent `chat.send`: wall, failures, p50 / p99, peak RSS | {}, {}, {} / {}, {} |",
        ms(conc.wall),
        conc.failures,
        ms(conc.p50),
        ms(conc.p99),
        mib(conc.peak_rss)
    );
}
