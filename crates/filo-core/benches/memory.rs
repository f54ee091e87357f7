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
        models: vec![model()],
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
fn big_lineage(dir: &std::path::Path, n: usize) -> (std::path::PathBuf, std::path::PathBuf) {
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
    let file = dir.join("big.jsonl");
    let header = format!(
        r#"{{"type":"session","version":3,"id":"{session_id}","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/b"}}"#
    );
    let entry = |i: usize, parent: String| {
        format!(
            r#"{{"type":"message","id":"{i:08x}","parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z","message":{{"role":"user","content":"x","timestamp":1}}}}"#
        )
    };
    let first = entry(0, "null".into());
    let last = entry(n - 1, "\"00000000\"".into());
    std::fs::write(&file, format!("{header}\n{first}\n{last}\n")).unwrap();
    (db, file)
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let turns_n = 1000;
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let plain = session(&dir.path().join("plain"), Vec::new());
        let warm = turns(&plain, 50).await;
        let without = turns(&plain, turns_n).await;
        let db = dir.path().join("m").join("playfilo.db");
        std::fs::create_dir_all(db.parent().unwrap()).unwrap();
        let with_dag = session(&dir.path().join("dag"), vec![playfilo(&db)]);
        let _ = turns(&with_dag, 50).await;
        let with = turns(&with_dag, turns_n).await;
        let _ = warm;
        let per = |d: Duration| d.as_secs_f64() * 1e6 / turns_n as f64;
        println!("| measurement | without DAG | with DAG | overhead |");
        println!("|---|---:|---:|---:|");
        println!(
            "| {turns_n}-turn session (2 entries/turn), µs per turn | {:.0} | {:.0} | {:+.1}% |",
            per(without),
            per(with),
            (per(with) / per(without) - 1.0) * 100.0
        );
        println!(
            "| mirroring cost per entry, µs | — | {:.0} | — |",
            (per(with) - per(without)) / 2.0
        );
    });
    for n in [10_000usize, 100_000] {
        let dir = tempfile::tempdir().unwrap();
        let (db, file) = big_lineage(dir.path(), n);
        let mut times = Vec::new();
        for _ in 0..5 {
            let p = playfilo(&db);
            let mut manager = SessionManager::open(&file, "/b").unwrap();
            let t = Instant::now();
            p.prepare_session(&mut manager);
            times.push(t.elapsed());
            assert_eq!(manager.branch_path(None).len(), n);
        }
        times.sort();
        let store = Store::open(&db).unwrap();
        let head = store.get_ref("PI_HEAD:bench-session").unwrap();
        let t = Instant::now();
        let values = store.load_entries(head.as_deref()).unwrap();
        let load = t.elapsed();
        let t = Instant::now();
        let parsed: Vec<_> = values
            .iter()
            .filter_map(|v| filo_session::SessionEntry::from_value(v).ok())
            .collect();
        let parse = t.elapsed();
        assert_eq!(parsed.len(), n);
        println!(
            "| of which load_entries / parse, ms | — | {:.1} / {:.1} | — |",
            load.as_secs_f64() * 1e3,
            parse.as_secs_f64() * 1e3
        );
        println!(
            "| resume from a {n}-node head (median of 5), ms | — | {:.1} | — |",
            times[2].as_secs_f64() * 1e3
        );
    }
}
