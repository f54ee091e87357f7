//! Playfilo memory costs: mirroring per turn (a 1,000-turn scripted session with and without the
//! DAG, zero-latency model) and resume from a 100,000-node head.
//!
//! `cargo bench -p filo-core --bench memory` prints a table.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use filo_ai::{
    AssistantEvent, AssistantMessage, AssistantStream, ContentBlock, Context, Model, ModelClient,
    StopReason, StreamOptions, Usage,
};
use filo_core::playfilo::{Playfilo, PlayfiloConfig};
use filo_core::{AgentSession, AgentSessionOptions, Extension, PromptOptions, Resources, Settings};
use filo_dag::{NewBlob, NodeCommit, Parent, Store, role};
use filo_session::SessionManager;
use tokio_util::sync::CancellationToken;

/// Answers every call at once with one short text.
struct Instant0;

impl ModelClient for Instant0 {
    fn stream(
        &self,
        m: &Model,
        _: &Context,
        _: &StreamOptions,
        _: CancellationToken,
    ) -> AssistantStream {
        let message = AssistantMessage {
            content: vec![ContentBlock::text("ok, done.")],
            api: m.api.clone(),
            provider: m.provider.clone(),
            model: m.id.clone(),
            usage: Usage {
                input: 10,
                output: 3,
                total_tokens: 13,
                ..Usage::default()
            },
            stop_reason: StopReason::Stop,
            timestamp: 0,
            error_message: None,
            error_status: None,
            response_id: None,
        };
        let start = AssistantMessage {
            content: vec![],
            ..message.clone()
        };
        Box::pin(futures::stream::iter(vec![
            AssistantEvent::Start { message: start },
            AssistantEvent::TextStart { index: 0 },
            AssistantEvent::TextDelta {
                index: 0,
                delta: "ok, done.".into(),
            },
            AssistantEvent::TextEnd {
                index: 0,
                signature: None,
            },
            AssistantEvent::Done { message },
        ]))
    }
}

fn model() -> Model {
    serde_json::from_value(serde_json::json!({
        "id": "bench", "name": "bench", "api": "openai-completions", "provider": "bench",
        "baseUrl": "http://127.0.0.1:9", "contextWindow": 10_000_000, "maxTokens": 1000
    }))
    .unwrap()
}

fn session(dir: &std::path::Path, extensions: Vec<Arc<dyn Extension>>) -> AgentSession {
    AgentSession::create(AgentSessionOptions {
        cwd: dir.to_path_buf(),
        client: Arc::new(Instant0),
        models: vec![model()].into(),
        model: Some(model()),
        thinking_level: None,
        tools: Vec::new(),
        session: SessionManager::create(dir.to_str().unwrap(), &dir.join("sessions")),
        settings: Settings::in_memory(serde_json::json!({"compaction": {"enabled": false}})),
        api_key: Arc::new(|_| Some(String::new())),
        resources: Resources {
            custom_system_prompt: Some("You are Filo.".into()),
            ..Resources::default()
        },
        extensions,
        date: "2026-11-30".into(),
    })
    .unwrap()
}

async fn turns(s: &AgentSession, n: usize) -> Duration {
    let t = Instant::now();
    for i in 0..n {
        s.prompt(&format!("turn {i}"), PromptOptions::default())
            .await
            .unwrap();
    }
    t.elapsed()
}

fn playfilo(db: &std::path::Path) -> Arc<Playfilo> {
    let mut c = PlayfiloConfig::under_home(db.parent().unwrap());
    c.db_path = db.to_path_buf();
    Arc::new(Playfilo::open(c).unwrap())
}

/// A 100,000-node user/assistant lineage under one head, plus a session file ending at it.
fn big_lineage(
    dir: &std::path::Path,
    n: usize,
) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    let db = dir.join("big.db");
    let store = Store::open(&db).unwrap();
    let session_id = "bench-session";
    let mut last: Option<String> = None;
    for start in (0..n).step_by(10_000) {
        let commits: Vec<NodeCommit> = (start..(start + 10_000).min(n))
            .map(|i| {
                let r = if i % 2 == 0 {
                    role::USER
                } else {
                    role::ASSISTANT
                };
                let parent = match (i == start, &last) {
                    (true, None) => Parent::Root,
                    (true, Some(p)) => Parent::Node(p.clone()),
                    (false, _) => Parent::Previous,
                };
                NodeCommit::new(r, 1_767_258_000_000 + i as i64)
                    .parent(parent)
                    .part(NewBlob::text(format!(
                        "message number {i} with a little text in it"
                    )))
                    .external_id(format!("{i:08x}"))
            })
            .collect();
        last = store
            .commit_batch(&commits)
            .unwrap()
            .last()
            .map(|c| c.id.clone());
    }
    let head = store
        .node_id_by_external_id(&format!("{:08x}", n - 1))
        .unwrap()
        .unwrap();
    store
        .set_ref(&format!("PI_HEAD:{session_id}"), &head)
        .unwrap();
    // The same lineage as a session file (what filo wrote while mirroring), and a copy whose
    // last line is missing (the DAG is ahead of the file: it must be read back).
    let header = format!(
        r#"{{"type":"session","version":3,"id":"{session_id}","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/b"}}"#
    );
    let mut lines = vec![header];
    for i in 0..n {
        let parent = if i == 0 {
            "null".to_string()
        } else {
            format!("\"{:08x}\"", i - 1)
        };
        let text = format!("message number {i} with a little text in it");
        let message = if i % 2 == 0 {
            format!(
                r#"{{"role":"user","content":[{{"type":"text","text":"{text}"}}],"timestamp":1}}"#
            )
        } else {
            format!(
                r#"{{"role":"assistant","content":[{{"type":"text","text":"{text}"}}],"api":"openai-completions","provider":"bench","model":"bench","usage":{{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}}},"stopReason":"stop","timestamp":1}}"#
            )
        };
        lines.push(format!(
            r#"{{"type":"message","id":"{i:08x}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z","message":{message}}}"#
        ));
    }
    let file = dir.join("big.jsonl");
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let stale = dir.join("stale.jsonl");
    std::fs::write(&stale, lines[..lines.len() - 1].join("\n") + "\n").unwrap();
    (db, file, stale)
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let turns_n = if std::env::args().any(|a| a == "--resume-only") {
        0
    } else {
        1000
    };
    rt.block_on(async {
        if turns_n == 0 {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        // Both sessions grow side by side, in alternating blocks, so machine noise hits both.
        let plain = session(&dir.path().join("plain"), Vec::new());
        let db = dir.path().join("m").join("playfilo.db");
        std::fs::create_dir_all(db.parent().unwrap()).unwrap();
        let dag = playfilo(&db);
        let with_dag = session(&dir.path().join("dag"), vec![dag.clone()]);
        let _ = turns(&plain, 20).await;
        let _ = turns(&with_dag, 20).await;
        let block = 50;
        let (mut without, mut with) = (Vec::new(), Vec::new());
        for _ in 0..turns_n / block {
            without.push(turns(&plain, block).await);
            let t = Instant::now();
            let _ = turns(&with_dag, block).await;
            dag.flush(); // every mirrored entry is in the database before the clock stops
            with.push(t.elapsed());
        }
        let per = |mut v: Vec<Duration>| {
            v.sort();
            v[v.len() / 2].as_secs_f64() * 1e6 / block as f64
        };
        let (a, b) = (per(without), per(with));
        println!("| measurement | without DAG | with DAG | overhead |");
        println!("|---|---:|---:|---:|");
        println!(
            "| {turns_n}-turn session (2 entries/turn), median µs per turn over blocks of {block} | {a:.0} | {b:.0} | {:+.1}% |",
            (b / a - 1.0) * 100.0
        );
        println!("| mirroring cost per entry (wall), µs | — | {:.0} | — |", (b - a) / 2.0);
    });
    if std::env::args().any(|a| a == "--turns-only") {
        return;
    }
    for n in [10_000usize, 100_000] {
        let dir = tempfile::tempdir().unwrap();
        let (db, file, stale) = big_lineage(dir.path(), n);
        let median = |mut v: Vec<Duration>| {
            v.sort();
            v[v.len() / 2].as_secs_f64() * 1e3
        };
        let (mut open, mut fast, mut slow) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..5 {
            let p = playfilo(&db);
            let t = Instant::now();
            let mut manager = SessionManager::open(&file, "/b").unwrap();
            open.push(t.elapsed());
            let t = Instant::now();
            p.prepare_session(&mut manager);
            fast.push(t.elapsed());
            assert_eq!(manager.branch_path(None).len(), n);
            let mut behind = SessionManager::open(&stale, "/b").unwrap();
            let t = Instant::now();
            p.prepare_session(&mut behind);
            slow.push(t.elapsed());
            assert_eq!(
                behind.branch_path(None).len(),
                n,
                "the DAG's extra entry is resumed"
            );
        }
        println!(
            "| {n}-entry session: open the file / DAG check (file = DAG head) / DAG read back (file behind), ms | — | {:.1} / {:.2} / {:.1} | — |",
            median(open),
            median(fast),
            median(slow)
        );
    }
}
