//! The crash matrix: scripted tool loops killed with SIGKILL at random points, each followed by a
//! resume. After every kill: no complete line of the session file is lost, every message the file
//! held is in the resumed context (what the mock provider received), every entry is in the DAG
//! under its session parent, and `filo dag fsck --session` is clean.
//!
//! `FILO_CRASH_SEED` replays a run (the seed is printed); `FILO_CRASH_RUNS` sets the number of
//! runs (55 by default: every tenth ends normally and times a turn, the
//! others are killed at a random point within that time).

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use filo_dag::Store;
use filo_testkit::{MockProvider, Reply, Turn};
use serde_json::{Value, json};

use super::common::Home;

const MODEL: [&str; 4] = ["--provider", "mock", "--model", "mock-model"];

/// SplitMix64: small, deterministic, good enough to pick kill points.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Point the `mock` provider of `home` at a new mock server.
fn point_at(home: &Home, mock: &MockProvider) {
    let models = json!({"providers": {"mock": {
        "baseUrl": format!("{}/v1", mock.url()),
        "api": "openai-completions",
        "apiKey": "MOCK_API_KEY",
        "models": [{"id": "mock-model", "contextWindow": 100000, "maxTokens": 1000}]
    }}});
    std::fs::write(
        home.path().join(".filo/agent/models.json"),
        models.to_string(),
    )
    .unwrap();
}

/// The complete lines of the file (a line torn by the kill is not one).
fn complete_lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_string).collect();
    if lines.last().is_some_and(|l| !l.ends_with('\n')) {
        lines.pop();
    }
    lines
        .into_iter()
        .map(|l| l.trim_end().to_string())
        .filter(|l| serde_json::from_str::<Value>(l).is_ok())
        .collect()
}

/// Strings that must reach the model for each message entry: user text, assistant text and
/// tool-call ids, tool-result call ids.
fn markers(entry: &Value) -> Vec<String> {
    let m = &entry["message"];
    let mut out = Vec::new();
    match m["role"].as_str() {
        Some("toolResult") => out.extend(m["toolCallId"].as_str().map(str::to_string)),
        Some("user" | "assistant") => {
            if let Some(s) = m["content"].as_str() {
                out.push(s.to_string());
            }
            for b in m["content"].as_array().into_iter().flatten() {
                match b["type"].as_str() {
                    Some("text") => out.extend(b["text"].as_str().map(str::to_string)),
                    Some("toolCall") => out.extend(b["id"].as_str().map(str::to_string)),
                    _ => {}
                }
            }
        }
        _ => {}
    }
    out
}

/// A tool loop: two bash calls, then an answer.
fn tool_loop(mock: &MockProvider, run: u64) {
    for step in ["a", "b"] {
        mock.push(Reply::tool_call(
            &format!("call-{run}-{step}"),
            "bash",
            json!({"command": format!("echo out-{run}-{step}")}),
        ));
    }
    mock.push(Reply::text(format!("done {run}")));
}

async fn run_to_end(home: &Home, argv: &[&str]) {
    let args: Vec<&str> = MODEL.iter().copied().chain(argv.iter().copied()).collect();
    let (code, _, err) = home.filo(&args).await;
    assert_eq!(code, 0, "{argv:?}: {err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_at_random_points_loses_nothing_the_file_holds() {
    let seed = std::env::var("FILO_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    let runs: u64 = std::env::var("FILO_CRASH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(55);
    eprintln!("crash matrix: FILO_CRASH_SEED={seed} FILO_CRASH_RUNS={runs}");
    let mut rng = Rng(seed);

    let mock = MockProvider::start(vec![]).await;
    let home = Home::new(&mock);
    tool_loop(&mock, 0);
    let started = std::time::Instant::now();
    run_to_end(&home, &["-p", "run 0"]).await;
    // Kill points spread over the length of a whole turn (start-up included).
    let mut span = u64::try_from(started.elapsed().as_millis())
        .unwrap_or(400)
        .max(20);
    let file = home.sessions().pop().unwrap();
    let db = home.path().join(".playfilo/playfilo.db");
    let mut killed_mid_turn = 0;

    for run in 1..=runs {
        let ctx = format!("seed {seed}, run {run}");
        // A fresh server per run: what a killed run left unconsumed does not leak into the next.
        let mock = MockProvider::start(vec![]).await;
        point_at(&home, &mock);
        tool_loop(&mock, run);
        let prompt = format!("run {run}");
        let args: Vec<&str> = MODEL
            .iter()
            .copied()
            .chain(["-c", "-p", prompt.as_str()])
            .collect();
        let mut child = home
            .command(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Every tenth run ends normally and measures a whole turn (it grows with the session):
        // the kill points of the next runs spread over that length.
        let delay = if run % 10 == 0 {
            Duration::from_secs(30)
        } else {
            Duration::from_millis(rng.below(span))
        };
        let spawned = std::time::Instant::now();
        let finished = tokio::time::timeout(delay, child.wait()).await.is_ok();
        if finished {
            if run % 10 == 0 {
                span = u64::try_from(spawned.elapsed().as_millis())
                    .unwrap_or(span)
                    .max(20);
            }
        } else {
            child.start_kill().unwrap();
            killed_mid_turn += 1;
        }
        tokio::time::timeout(Duration::from_secs(30), child.wait())
            .await
            .expect("filo exits after SIGKILL")
            .unwrap();
        let before = complete_lines(&file);

        // The resume sees everything the file held.
        let check = MockProvider::start(vec![Turn::Reply(Reply::text(format!("ok {run}")))]).await;
        point_at(&home, &check);
        let check_prompt = format!("check {run}");
        run_to_end(&home, &["-c", "-p", check_prompt.as_str()]).await;
        let after = complete_lines(&file);
        let mut rest = after.iter();
        for line in &before {
            assert!(
                rest.any(|l| l == line),
                "{ctx}: a line of the file was lost: {line}"
            );
        }
        let body = check
            .requests()
            .last()
            .expect("the resume asked the model")
            .body
            .to_string();
        for line in &before {
            let entry: Value = serde_json::from_str(line).unwrap();
            for marker in markers(&entry) {
                assert!(
                    body.contains(&marker),
                    "{ctx}: {marker:?} (entry {}) is missing from the resumed context",
                    entry["id"]
                );
            }
        }
        // Every entry is in the DAG, under its session parent; fsck is clean.
        let store = Store::open(&db).unwrap();
        for line in after.iter().skip(1) {
            let entry: Value = serde_json::from_str(line).unwrap();
            let id = entry["id"].as_str().unwrap();
            assert!(
                store.node_id_by_external_id(id).unwrap().is_some(),
                "{ctx}: entry {id} ({}) is not in the DAG",
                entry["type"]
            );
        }
        drop(store);
        let (code, out, err) = home
            .filo(&[
                "dag",
                "--db",
                db.to_str().unwrap(),
                "fsck",
                "--session",
                file.to_str().unwrap(),
            ])
            .await;
        assert_eq!(code, 0, "{ctx}: fsck: {out}{err}");
        mock.shutdown().await;
        check.shutdown().await;
    }
    eprintln!(
        "crash matrix: {runs} runs, {killed_mid_turn} killed before the turn ended (last span {span} ms)"
    );
}
