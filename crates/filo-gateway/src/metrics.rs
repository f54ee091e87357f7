//! Counters for `GET /metrics`, rendered in Prometheus' text format (version 0.0.4).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::core::lock;
use std::time::Duration;

/// Upper bounds of the turn latency histogram, in seconds.
const BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// What the gateway counts.
#[derive(Default)]
pub struct Metrics {
    pub runs_started: AtomicU64,
    /// By status (`ok`, `error`, `aborted`, `timeout`).
    finished: Mutex<BTreeMap<&'static str, u64>>,
    /// Failed runs by reason (`rate_limit`, `timeout`, `context_length`, `unknown`, …).
    failed: Mutex<BTreeMap<&'static str, u64>>,
    pub tokens_in: AtomicU64,
    pub tokens_out: AtomicU64,
    pub ws_connections: AtomicU64,
    pub http_requests: AtomicU64,
    pub auth_failures: AtomicU64,
    /// Connections still waiting to authenticate let go to make room for a newer one.
    pub preauth_evicted: AtomicU64,
    /// Connections closed for sending nothing (or too slowly) within the handshake timeout.
    pub idle_closed: AtomicU64,
    /// Runs that could not keep something (a session write, the memory, the store).
    pub runs_with_warnings: AtomicU64,
    latency: Mutex<Histogram>,
}

#[derive(Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

/// What `/metrics` reads from the rest of the gateway at render time.
pub struct Gauges {
    pub active_runs: usize,
    /// Lane → commands waiting or running (the embedder's lanes), plus `followup` (messages
    /// waiting in sessions' follow-up queues).
    pub queue_depth: Vec<(String, usize)>,
    pub sessions_known: usize,
}

impl Metrics {
    /// A run ended with `status`; a failure also counts under `reason`.
    pub fn run_finished(
        &self,
        status: &'static str,
        reason: Option<&'static str>,
        took: Duration,
        tokens: (u64, u64),
    ) {
        *lock(&self.finished).entry(status).or_default() += 1;
        if let Some(r) = reason {
            *lock(&self.failed).entry(r).or_default() += 1;
        }
        self.tokens_in.fetch_add(tokens.0, Ordering::Relaxed);
        self.tokens_out.fetch_add(tokens.1, Ordering::Relaxed);
        let secs = took.as_secs_f64();
        let mut h = lock(&self.latency);
        for (i, b) in BUCKETS.iter().enumerate() {
            if secs <= *b {
                h.counts[i] += 1;
            }
        }
        h.count += 1;
        h.sum += secs;
    }

    /// Runs finished with `status` so far.
    pub fn finished(&self, status: &str) -> u64 {
        lock(&self.finished).get(status).copied().unwrap_or(0)
    }

    /// The text format.
    pub fn render(&self, g: &Gauges) -> String {
        let mut out = String::new();
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        counter(
            &mut out,
            "filo_gateway_runs_started_total",
            "Runs started.",
            load(&self.runs_started),
        );
        let _ = writeln!(
            out,
            "# HELP filo_gateway_runs_finished_total Runs finished, by status.\n# TYPE filo_gateway_runs_finished_total counter"
        );
        for (status, n) in lock(&self.finished).iter() {
            let _ = writeln!(
                out,
                "filo_gateway_runs_finished_total{{status=\"{status}\"}} {n}"
            );
        }
        let _ = writeln!(
            out,
            "# HELP filo_gateway_runs_failed_total Runs that ended in an error or a timeout, by reason.\n# TYPE filo_gateway_runs_failed_total counter"
        );
        for (reason, n) in lock(&self.failed).iter() {
            let _ = writeln!(
                out,
                "filo_gateway_runs_failed_total{{reason=\"{reason}\"}} {n}"
            );
        }
        gauge(
            &mut out,
            "filo_gateway_active_runs",
            "Runs in progress.",
            g.active_runs,
        );
        let _ = writeln!(
            out,
            "# HELP filo_gateway_queue_depth Commands waiting or running per lane; followup: messages queued behind a running turn.\n# TYPE filo_gateway_queue_depth gauge"
        );
        for (lane, n) in &g.queue_depth {
            let lane = lane.replace('\\', "\\\\").replace('"', "\\\"");
            let _ = writeln!(out, "filo_gateway_queue_depth{{lane=\"{lane}\"}} {n}");
        }
        gauge(
            &mut out,
            "filo_gateway_sessions",
            "Session keys with state in this process (running or queued).",
            g.sessions_known,
        );
        let h = lock(&self.latency);
        let _ = writeln!(
            out,
            "# HELP filo_gateway_turn_seconds Time from accepting a message to the end of its run.\n# TYPE filo_gateway_turn_seconds histogram"
        );
        for (i, b) in BUCKETS.iter().enumerate() {
            let _ = writeln!(
                out,
                "filo_gateway_turn_seconds_bucket{{le=\"{b}\"}} {}",
                h.counts[i]
            );
        }
        let _ = writeln!(
            out,
            "filo_gateway_turn_seconds_bucket{{le=\"+Inf\"}} {}\nfilo_gateway_turn_seconds_sum {}\nfilo_gateway_turn_seconds_count {}",
            h.count, h.sum, h.count
        );
        drop(h);
        counter(
            &mut out,
            "filo_gateway_tokens_in_total",
            "Prompt tokens (input + cache reads).",
            load(&self.tokens_in),
        );
        counter(
            &mut out,
            "filo_gateway_tokens_out_total",
            "Completion tokens.",
            load(&self.tokens_out),
        );
        gauge(
            &mut out,
            "filo_gateway_open_connections",
            "Open WebSocket connections.",
            load(&self.ws_connections) as usize,
        );
        counter(
            &mut out,
            "filo_gateway_http_requests_total",
            "HTTP requests served.",
            load(&self.http_requests),
        );
        counter(
            &mut out,
            "filo_gateway_runs_with_warnings_total",
            "Runs that could not keep something (a session write, the memory, the session store).",
            load(&self.runs_with_warnings),
        );
        counter(
            &mut out,
            "filo_gateway_auth_failures_total",
            "Requests and connections refused for a missing or wrong token.",
            load(&self.auth_failures),
        );
        counter(
            &mut out,
            "filo_gateway_preauth_evicted_total",
            "Connections waiting to authenticate closed (1013) to make room for newer ones.",
            load(&self.preauth_evicted),
        );
        counter(
            &mut out,
            "filo_gateway_idle_closed_total",
            "Connections closed for not sending a request within the handshake timeout.",
            load(&self.idle_closed),
        );
        out
    }
}

fn counter(out: &mut String, name: &str, help: &str, v: u64) {
    let _ = writeln!(
        out,
        "# HELP {name} {help}\n# TYPE {name} counter\n{name} {v}"
    );
}

fn gauge(out: &mut String, name: &str, help: &str, v: usize) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_format() {
        let m = Metrics::default();
        m.runs_started.fetch_add(2, Ordering::Relaxed);
        m.run_finished("ok", None, Duration::from_millis(20), (10, 5));
        m.run_finished("error", Some("rate_limit"), Duration::from_secs(3), (0, 0));
        let text = m.render(&Gauges {
            active_runs: 1,
            queue_depth: vec![("main".into(), 3)],
            sessions_known: 4,
        });
        for line in [
            "filo_gateway_runs_started_total 2",
            "filo_gateway_runs_finished_total{status=\"ok\"} 1",
            "filo_gateway_runs_failed_total{reason=\"rate_limit\"} 1",
            "filo_gateway_turn_seconds_bucket{le=\"0.025\"} 1",
            "filo_gateway_turn_seconds_bucket{le=\"5\"} 2",
            "filo_gateway_turn_seconds_count 2",
            "filo_gateway_queue_depth{lane=\"main\"} 3",
            "filo_gateway_tokens_in_total 10",
            "filo_gateway_active_runs 1",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in\n{text}"
            );
        }
    }
}
