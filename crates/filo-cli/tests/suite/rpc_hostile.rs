//! Hostile input to `filo --mode rpc`: random bytes, mutated commands, odd ids and an over-long
//! line. filo never panics, holds no more than one line's bound in memory, answers every line,
//! and every answer to a well-formed command carries that command's id.

use std::process::Stdio;

use filo_testkit::MockProvider;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use super::common::Home;

/// Commands that answer at once (so answers come in input order) and touch nothing outside the
/// temporary home.
fn seeds() -> Vec<Value> {
    vec![
        json!({"type": "get_state"}),
        json!({"type": "get_messages"}),
        json!({"type": "get_available_models"}),
        json!({"type": "get_session_stats"}),
        json!({"type": "get_commands"}),
        json!({"type": "get_last_assistant_text"}),
        json!({"type": "get_fork_messages"}),
        json!({"type": "set_thinking_level", "level": "high"}),
        json!({"type": "cycle_thinking_level"}),
        json!({"type": "set_auto_retry", "enabled": true}),
        json!({"type": "set_auto_compaction", "enabled": false}),
        json!({"type": "set_steering_mode", "mode": "all"}),
        json!({"type": "set_follow_up_mode", "mode": "one-at-a-time"}),
        json!({"type": "abort_retry"}),
        json!({"type": "abort_bash"}),
        json!({"type": "set_session_name", "name": "fuzz"}),
        json!({"type": "no_such_command"}),
        json!({"id": "no-type"}),
    ]
}

fn ids() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        Just(None),
        "[a-z0-9-]{0,12}".prop_map(|s| Some(Value::from(s))),
        any::<i64>().prop_map(|n| Some(Value::from(n))),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| Some(json!(f))),
        Just(Some(Value::Null)),
        Just(Some(json!({"nested": [1, 2]}))),
        "\\PC{0,8}".prop_map(|s| Some(Value::from(s))),
    ]
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Delete(usize, usize),
    Insert(usize, Vec<u8>),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        (any::<usize>(), 1..8usize).prop_map(|(i, n)| Mutation::Delete(i, n)),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 1..8))
            .prop_map(|(i, b)| Mutation::Insert(i, b)),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn apply(mut bytes: Vec<u8>, m: &Mutation) -> Vec<u8> {
    let len = bytes.len().max(1);
    match m {
        Mutation::Flip(i, b) => {
            if let Some(x) = bytes.get_mut(i % len) {
                *x ^= b | 1;
            }
        }
        Mutation::Delete(i, n) => {
            let start = (i % len).min(bytes.len());
            let end = (start + n).min(bytes.len());
            bytes.drain(start..end);
        }
        Mutation::Insert(i, b) => {
            let at = (i % len).min(bytes.len());
            bytes.splice(at..at, b.iter().copied());
        }
        Mutation::Truncate(i) => bytes.truncate(i % len),
    }
    bytes
}

/// One input line (no `\n`): a seed with an id, maybe mutated, or random bytes.
fn seed() -> impl Strategy<Value = Vec<u8>> {
    (0..seeds().len(), ids()).prop_map(|(i, id)| {
        let mut v = seeds()[i].clone();
        if let (Some(id), Some(obj)) = (id, v.as_object_mut()) {
            obj.insert("id".into(), id);
        }
        v.to_string().into_bytes()
    })
}

fn line() -> impl Strategy<Value = Vec<u8>> {
    let line = prop_oneof![
        3 => seed(),
        3 => (seed(), prop::collection::vec(mutation(), 1..4))
            .prop_map(|(bytes, ms)| ms.iter().fold(bytes, apply)),
        1 => prop::collection::vec(any::<u8>(), 0..64),
    ];
    line.prop_map(|mut bytes| {
        bytes.retain(|&b| b != b'\n');
        bytes
    })
}

/// Feed `input` to `filo --mode rpc`, close stdin; the exit code and the response lines.
async fn run_rpc(home: &Home, input: &[u8]) -> (Option<i32>, Vec<Value>, String) {
    let mut child = home.rpc_child(&[], Stdio::piped());
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = tokio::spawn(async move {
        // filo may stop reading early if it fails; that shows up in the checks below.
        drop(stdin.write_all(&input).await);
        drop(stdin.shutdown().await);
    });
    let out = tokio::time::timeout(
        std::time::Duration::from_secs(120),
        child.wait_with_output(),
    )
    .await
    .expect("filo --mode rpc finished (hang guard)")
    .unwrap();
    writer.await.unwrap();
    let responses = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("stdout lines are JSON"))
        .filter(|v| v["type"] == "response")
        .collect();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), responses, stderr)
}

/// The checks for one batch of lines.
fn check(
    lines: &[Vec<u8>],
    code: Option<i32>,
    responses: &[Value],
    stderr: &str,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(code, Some(0), "stderr: {}", stderr);
    prop_assert!(!stderr.contains("panicked"), "{}", stderr);
    // Every line is answered, a blank one too (pi 0.73 answers it with a parse error).
    let answered: Vec<&Vec<u8>> = lines.iter().collect();
    prop_assert_eq!(
        answered.len(),
        responses.len(),
        "one answer per line: {:?}",
        responses
    );
    for (line, response) in answered.iter().zip(responses) {
        let parsed: Option<Value> = serde_json::from_slice(line).ok();
        let Some(command) = parsed.as_ref().filter(|v| v.is_object()) else {
            prop_assert_eq!(&response["success"], false);
            match &parsed {
                // Not JSON: pi's parse error.
                None => prop_assert_eq!(&response["command"], "parse"),
                // JSON but not an object (`2`): it has no type, as in pi.
                Some(_) => prop_assert_eq!(&response["error"], "Unknown command: undefined"),
            }
            continue;
        };
        let known = response["command"] == command["type"] && response["command"] != "parse";
        let unknown = response["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("Unknown command"));
        if known && !unknown {
            prop_assert_eq!(response.get("id"), command.get("id"), "{}", response);
        }
    }
    Ok(())
}

#[test]
fn random_and_mutated_rpc_lines_are_each_answered_with_their_id() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mock = rt.block_on(MockProvider::start(vec![]));
    let home = Home::new(&mock);
    let config = Config {
        cases: 24,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let batches = prop::collection::vec(line(), 1..24);
    let result = runner.run(&batches, |lines| {
        let mut input = Vec::new();
        for l in &lines {
            input.extend_from_slice(l);
            input.push(b'\n');
        }
        let (code, responses, stderr) = rt.block_on(run_rpc(&home, &input));
        check(&lines, code, &responses, &stderr)
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_over_long_line_is_refused_and_the_next_line_answered() {
    let mock = MockProvider::start(vec![]).await;
    let home = Home::new(&mock);
    let mut input = vec![b'x'; 64 * 1024 * 1024 + 1];
    input.push(b'\n');
    input.extend_from_slice(b"{\"id\":\"after\",\"type\":\"get_state\"}\n");
    let (code, responses, stderr) = run_rpc(&home, &input).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(responses.len(), 2, "{responses:?}");
    assert_eq!(responses[0]["command"], "parse");
    assert_eq!(
        responses[0]["error"],
        "Failed to parse command: line of 67108865 bytes is longer than the 67108864-byte limit"
    );
    assert_eq!(responses[1]["id"], "after");
    assert_eq!(responses[1]["success"], true);
}
