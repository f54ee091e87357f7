//! The embedded runner's added cost per turn (issue 11's benchmark list): `Embedder::run` against
//! the bare `AgentSession::prompt` on the same zero-latency in-process model, the same session
//! file and the same (no) tools. The runner adds the lanes, the registry, profile resolution, the
//! session file opened per run, history hygiene, the subscriber and block chunker, and payload
//! building; the memory row adds the Playfilo mirror (open, commit, flush per run).
//!
//! Prints a table; run with `cargo bench -p filo-embed --bench runner`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use filo_ai::{
    Accumulator, AssistantEvent, AssistantMessage, AssistantStream, Context, Env, Model,
    ModelClient, ProviderRegistry, StopReason, StreamOptions, Usage,
};
use filo_core::{AgentSession, AgentSessionOptions, PromptOptions, Resources, Settings};
use filo_embed::clock::SystemClock;
use filo_embed::run::params::BlockReplyConfig;
use filo_embed::stream::chunker::Chunking;
use filo_embed::subscriber::machine::BlockBreak;
use filo_embed::{EmbedConfig, EmbedDeps, EmbedPaths, Embedder, NullSink, RunParams};
use filo_session::SessionManager;
use serde_json::json;
use tokio_util::sync::CancellationToken;

const TURNS: usize = 400;

fn initial() -> AssistantMessage {
    AssistantMessage {
        content: vec![],
        api: "openai-completions".into(),
        provider: "bench".into(),
        model: "zero".into(),
        usage: Usage::default(),
        stop_reason: StopReason::Stop,
        timestamp: 0,
        error_message: None,
        error_status: None,
        response_id: None,
    }
}

/// One short answer in ten word deltas.
fn answer() -> Vec<AssistantEvent> {
    let mut events = vec![
        AssistantEvent::Start { message: initial() },
        AssistantEvent::TextStart { index: 0 },
    ];
    for i in 0..10 {
        events.push(AssistantEvent::TextDelta {
            index: 0,
            delta: format!("word{i} "),
        });
    }
    events.push(AssistantEvent::TextEnd {
        index: 0,
        signature: None,
    });
    let mut acc = Accumulator::new(initial());
    for e in &events {
        acc.apply(e);
    }
    events.push(AssistantEvent::Done {
        message: acc.finish(StopReason::Stop, None),
    });
    events
}

struct ZeroLatency(Vec<AssistantEvent>);

impl ModelClient for ZeroLatency {
    fn stream(
        &self,
        _model: &Model,
        _context: &Context,
        _options: &StreamOptions,
        _cancel: CancellationToken,
    ) -> AssistantStream {
        Box::pin(futures::stream::iter(self.0.clone()))
    }
}

fn registry() -> ProviderRegistry {
    let mut registry = ProviderRegistry::empty();
    let models = json!({"providers": {"bench": {"baseUrl": "http://127.0.0.1:9/v1",
        "api": "openai-completions", "apiKey": "BENCH_KEY",
        "models": [{"id": "zero", "contextWindow": 1000000, "maxTokens": 1000}]}}});
    registry.apply_models_json(&models.to_string()).unwrap();
    registry
}

async fn bare(dir: &std::path::Path, client: Arc<dyn ModelClient>) -> Duration {
    let model = registry().model("bench", "zero").unwrap();
    let path = dir.join("bare.jsonl");
    let session = AgentSession::create(AgentSessionOptions {
        cwd: dir.to_path_buf(),
        client,
        models: vec![model.clone()].into(),
        model: Some(model),
        thinking_level: None,
        tools: Vec::new(),
        session: SessionManager::open_or_create(&path, "bare", &dir.to_string_lossy()).unwrap(),
        settings: Settings::in_memory(json!({"retry": {"enabled": false}})),
        api_key: Arc::new(|_| Some("k".into())),
        resources: Resources::default(),
        extensions: Vec::new(),
        date: "2026-12-01".into(),
    })
    .unwrap();
    let start = Instant::now();
    for i in 0..TURNS {
        session
            .prompt(&format!("question {i}"), PromptOptions::default())
            .await
            .unwrap();
    }
    start.elapsed()
}

/// An embedder under `dir` on the zero-latency model, with or without the memory.
fn embedder(dir: &std::path::Path, client: Arc<dyn ModelClient>, memory: bool) -> Embedder {
    let config = json!({"agents": {"defaults": {"model": {"primary": "bench/zero"}}},
        "memory": {"enabled": memory}});
    Embedder::new(EmbedDeps {
        config: EmbedConfig::from_value(config),
        paths: EmbedPaths::new(Some(dir.join("state")), dir.join("home"), dir.join("tmp")),
        registry: registry(),
        env: Env::from_vars([("BENCH_KEY", "k")]),
        client: Some(client),
        clock: Arc::new(SystemClock),
        api_key: None,
    })
    .unwrap()
}

async fn embedded(dir: &std::path::Path, client: Arc<dyn ModelClient>, memory: bool) -> Duration {
    let embedder = embedder(dir, client, memory);
    let sink = Arc::new(NullSink);
    let start = Instant::now();
    for i in 0..TURNS {
        let mut p = RunParams::new("bench", dir.join("work"), format!("question {i}"));
        p.disable_tools = true;
        p.block_reply = Some(BlockReplyConfig {
            break_mode: BlockBreak::TextEnd,
            chunking: Some(Chunking::new(200, 800)),
        });
        embedder.run(p, sink.clone()).await.unwrap();
    }
    start.elapsed()
}

/// Resident memory of this process in KiB (`/proc/self/statm`).
fn rss_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4
}

/// Memory per cached idle session: `SESSIONS` sessions of one short exchange each, all kept
/// by the session cache; the growth of the resident set divided by their number.
async fn idle_sessions(
    dir: &std::path::Path,
    client: Arc<dyn ModelClient>,
    memory: bool,
) -> (usize, f64) {
    const SESSIONS: usize = 300;
    let embedder = embedder(dir, client, memory);
    // Warm up allocator pools and lazily built statics with one session first.
    let warm = RunParams::new("warm", dir.join("work"), "hello");
    embedder.run(warm, Arc::new(NullSink)).await.unwrap();
    let before = rss_kib();
    for i in 0..SESSIONS {
        let mut p = RunParams::new(format!("idle-{i}"), dir.join("work"), "hello");
        p.disable_tools = true;
        embedder.run(p, Arc::new(NullSink)).await.unwrap();
    }
    let after = rss_kib();
    let kept = embedder.cached_sessions();
    (kept, after.saturating_sub(before) as f64 / SESSIONS as f64)
}

fn per_turn(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3 / TURNS as f64
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let client: Arc<dyn ModelClient> = Arc::new(ZeroLatency(answer()));
    println!("{TURNS} turns each, one session growing to {TURNS} exchanges, zero-latency model");
    println!("| path | total | per turn | added per turn |");
    println!("|---|---:|---:|---:|");
    let mut rows = Vec::new();
    for round in 0..3 {
        let dir = tempfile::tempdir().unwrap();
        let b = rt.block_on(bare(dir.path(), client.clone()));
        let e = rt.block_on(embedded(dir.path(), client.clone(), false));
        let m = rt.block_on(embedded(&dir.path().join("mem"), client.clone(), true));
        rows.push((round, b, e, m));
    }
    let dir = tempfile::tempdir().unwrap();
    let (kept, per) = rt.block_on(idle_sessions(dir.path(), client.clone(), false));
    let (kept_m, per_m) = rt.block_on(idle_sessions(&dir.path().join("mem"), client.clone(), true));
    for (round, b, e, m) in rows {
        let base = per_turn(b);
        println!("| round {round}: bare `AgentSession::prompt` | {b:.2?} | {base:.3} ms | — |");
        println!(
            "| round {round}: `Embedder::run`, memory off | {e:.2?} | {:.3} ms | {:.3} ms |",
            per_turn(e),
            per_turn(e) - base
        );
        println!(
            "| round {round}: `Embedder::run`, memory on | {m:.2?} | {:.3} ms | {:.3} ms |",
            per_turn(m),
            per_turn(m) - base
        );
    }
    println!();
    println!("| idle sessions kept by the cache | resident memory per session |");
    println!("|---|---:|");
    println!("| {kept} (memory off) | {per:.1} KiB |");
    println!("| {kept_m} (memory on) | {per_m:.1} KiB |");
}
