//! Several hosts on one PostgreSQL against one host on files (issue 13): the same sessions and
//! turns through `POST /v1/sessions/{key}/messages`, each turn of a session on the next host,
//! many sessions at once. Reports turns per second, latency percentiles, and each process's
//! peak RSS. `cargo bench -p filo-gateway --bench gateway -- --shared 1000` (sessions).

use std::time::{Duration, Instant};

use filo_testkit::MockProvider;
use filo_testkit::pg::PgServer;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{Proc, TOKEN, mock_turn, proc_status, spawn_gateway_with};

/// Turns per session (each on the next host).
const TURNS: usize = 3;
/// Requests in flight at once.
const IN_FLIGHT: usize = 200;

struct Measured {
    label: String,
    turns: usize,
    failed: usize,
    wall: Duration,
    latencies: Vec<Duration>,
    peak_rss_kib: Vec<u64>,
}

async fn post(addr: String, key: String, message: String) -> bool {
    let Ok(mut s) = tokio::net::TcpStream::connect(&addr).await else {
        return false;
    };
    let body = serde_json::json!({ "message": message }).to_string();
    let req = format!(
        "POST /v1/sessions/{key}/messages HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    if s.write_all(req.as_bytes()).await.is_err() {
        return false;
    }
    let mut raw = String::new();
    let _ = s.read_to_string(&mut raw).await;
    // A warning is not a failure (e.g. "PI_HEAD was moved by another agent" with many sessions
    // on one memory); a run that did not end `ok` is.
    let ok = raw.starts_with("HTTP/1.1 200") && raw.contains("\"status\":\"ok\"");
    if !ok && FIRST_FAILURE.swap(false, std::sync::atomic::Ordering::Relaxed) {
        eprintln!(
            "first failed turn: {}",
            raw.chars().take(1500).collect::<String>()
        );
    }
    ok
}

/// Only the first failure is printed.
static FIRST_FAILURE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

async fn drive(label: &str, hosts: &[Proc], sessions: usize) -> Measured {
    let addrs: Vec<String> = hosts.iter().map(|h| h.addr.to_string()).collect();
    let started = Instant::now();
    let mut latencies = Vec::with_capacity(sessions * TURNS);
    let mut failed = 0;
    for turn in 0..TURNS {
        let mut set: tokio::task::JoinSet<(bool, Duration)> = tokio::task::JoinSet::new();
        for i in 0..sessions {
            while set.len() >= IN_FLIGHT {
                if let Some(Ok((ok, d))) = set.join_next().await {
                    failed += usize::from(!ok);
                    latencies.push(d);
                }
            }
            let addr = addrs[(i + turn) % addrs.len()].clone();
            set.spawn(async move {
                let t = Instant::now();
                let ok = post(addr, format!("s{i}"), format!("s{i} turn {turn}")).await;
                (ok, t.elapsed())
            });
        }
        while let Some(r) = set.join_next().await {
            if let Ok((ok, d)) = r {
                failed += usize::from(!ok);
                latencies.push(d);
            }
        }
    }
    let wall = started.elapsed();
    latencies.sort();
    Measured {
        label: label.to_owned(),
        turns: sessions * TURNS,
        failed,
        wall,
        latencies,
        peak_rss_kib: hosts.iter().map(|h| proc_status(h.child.id()).1).collect(),
    }
}

fn pct(v: &[Duration], p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i].as_secs_f64() * 1000.0
}

/// Runs both setups and prints the table.
pub async fn compare(sessions: usize, hosts: usize) {
    let pg = PgServer::start_required().expect("a private PostgreSQL server");
    let mut results = Vec::new();
    {
        let mock = MockProvider::start((0..sessions * TURNS).map(|_| mock_turn()).collect()).await;
        let dir = tempfile::tempdir().unwrap();
        let one = spawn_gateway_with(&mock, dir.path(), 64, None);
        results.push(
            drive(
                "1 host, files + SQLite",
                std::slice::from_ref(&one),
                sessions,
            )
            .await,
        );
        one.stop();
    }
    {
        let mock = MockProvider::start((0..sessions * TURNS).map(|_| mock_turn()).collect()).await;
        let dir = tempfile::tempdir().unwrap();
        let url = pg.url();
        let procs: Vec<Proc> = (0..hosts)
            .map(|h| {
                let state = dir.path().join(format!("host{h}"));
                std::fs::create_dir_all(&state).unwrap();
                spawn_gateway_with(&mock, &state, 64, Some(&url))
            })
            .collect();
        let label = format!("{hosts} hosts, one PostgreSQL");
        results.push(drive(&label, &procs, sessions).await);
        for p in procs {
            p.stop();
        }
    }
    println!(
        "\n{sessions} sessions × {TURNS} turns (each turn on the next host), {IN_FLIGHT} in flight, mock answers after 20 ms\n"
    );
    println!("| setup | turns/s | p50 ms | p99 ms | failed | peak RSS per process (MiB) |");
    println!("|---|---|---|---|---|---|");
    for m in &results {
        let rss: Vec<String> = m
            .peak_rss_kib
            .iter()
            .map(|k| format!("{:.1}", *k as f64 / 1024.0))
            .collect();
        println!(
            "| {} | {:.0} | {:.1} | {:.1} | {} | {} |",
            m.label,
            m.turns as f64 / m.wall.as_secs_f64(),
            pct(&m.latencies, 0.5),
            pct(&m.latencies, 0.99),
            m.failed,
            rss.join(" · ")
        );
    }
}
