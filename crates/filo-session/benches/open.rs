//! Resume cost inside the session layer: open a session file and build the leaf's context.
//!
//! `cargo bench -p filo-session --bench open -- FILE [RUNS]` prints one table row for FILE: the
//! min and median wall time of `SessionManager::open`, of `build_context` and of both, over RUNS
//! runs (default 5, after one warm-up), the context's message count, and the process's peak RSS
//! (`VmHWM`). Run it once per file (a fresh process) so the peak belongs to that file. Session
//! files come from `scripts/bench-vs-pi/gen_session.py N out.jsonl <dir>`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use filo_session::SessionManager;

fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e3)
}

fn min_median(mut v: Vec<Duration>) -> String {
    v.sort();
    format!("{} / {}", ms(v[0]), ms(v[v.len() / 2]))
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let Some(file) = args.first().map(PathBuf::from) else {
        println!("usage: open FILE [RUNS]");
        return;
    };
    let runs: usize = args.get(1).and_then(|r| r.parse().ok()).unwrap_or(5);
    let (mut open, mut build, mut total) = (Vec::new(), Vec::new(), Vec::new());
    let mut messages = 0;
    for run in 0..=runs {
        let t0 = Instant::now();
        let manager = SessionManager::open(&file, "/bench").unwrap();
        let t1 = Instant::now();
        let ctx = manager.build_context();
        let t2 = Instant::now();
        messages = ctx.messages.len();
        drop(ctx);
        drop(manager);
        if run > 0 {
            open.push(t1 - t0);
            build.push(t2 - t1);
            total.push(t2 - t0);
        }
    }
    println!(
        "| file | runs | open (min / median ms) | build_context | both | messages | peak RSS |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    println!(
        "| {} | {runs} | {} | {} | {} | {messages} | {:.1} MiB |",
        file.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default(),
        min_median(open),
        min_median(build),
        min_median(total),
        peak_rss_kib() as f64 / 1024.0
    );
}
