//! Session files crossing between pi 0.73.1 and filo (`tests/fixtures/pi073/README.md`): a
//! session pi wrote with a multi-block edit, a compaction and an abandoned branch resumes in
//! filo with pi's context; a session filo wrote with the same resumes in pi, and pi sends the
//! model what filo sends on resuming it.

use std::path::{Path, PathBuf};

use filo_session::SessionManager;
use filo_testkit::{MockProvider, Reply, Turn};
use serde_json::{Value, json};

use super::common::{Home, jsonl};
use super::pi073::fixture;
use super::rpc::Rpc;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/pi073");

/// The messages of a request after the system prompt (which names the harness).
fn messages(body: &Value) -> Vec<Value> {
    let all = body["messages"].as_array().unwrap();
    assert_eq!(all[0]["role"], "system");
    all[1..].to_vec()
}

/// `filo -p --session <copy of fixture> continue`: its exit code, stdout, the one request it
/// sent, and the copy.
async fn resume_in_filo(name: &str) -> (i32, String, String, Value, PathBuf, Home) {
    let mock = MockProvider::start(vec![Turn::text("Resumed.")]).await;
    let home = Home::new(&mock);
    let session = home.path().join("resumed.jsonl");
    std::fs::copy(Path::new(FIXTURES).join(name), &session).unwrap();
    let (code, out, err) = home
        .filo(&[
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "--no-dag",
            "-p",
            "--session",
            &session.to_string_lossy(),
            "continue",
        ])
        .await;
    let requests = mock.requests();
    assert_eq!(requests.len(), 1, "{out}\n{err}");
    (code, out, err, requests[0].body.clone(), session, home)
}

/// The entry types along the file, in order.
fn entry_types(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_string())
        .collect()
}

/// The file holds an abandoned branch: two entries share a parent, the branch summary's.
fn assert_branched(lines: &[Value]) {
    let summary = lines
        .iter()
        .find(|e| e["type"] == "branch_summary")
        .expect("a branch_summary entry");
    let siblings = lines
        .iter()
        .filter(|e| e["parentId"] == summary["parentId"])
        .count();
    assert_eq!(siblings, 2, "{lines:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_pi_073_wrote_with_edits_a_compaction_and_a_branch_resumes_with_pis_context() {
    let original =
        std::fs::read_to_string(Path::new(FIXTURES).join("branch.session.jsonl")).unwrap();
    let lines: Vec<Value> = original
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_branched(&lines);
    assert!(entry_types(&lines).contains(&"compaction".to_string()));
    let (code, out, err, body, session, _home) = resume_in_filo("branch.session.jsonl").await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(out.trim(), "Resumed.");
    let pi = fixture("branch.resume.requests.json");
    assert_eq!(pi.as_array().unwrap().len(), 1);
    let sent = messages(&body);
    assert_eq!(sent, messages(&pi[0]));
    // The context is the kept path only: the compaction summary, the branch summary and the
    // multi-block edit made after the branch; not the abandoned prompt.
    let text = serde_json::to_string(&sent).unwrap();
    for present in [
        "compaction summary",
        "branch summary",
        "x = 10",
        "another way",
    ] {
        assert!(text.contains(present), "{present}: {text}");
    }
    assert!(!text.contains("after compaction"), "{text}");
    // The file kept pi's lines and gained filo's turn after them.
    let after = std::fs::read_to_string(&session).unwrap();
    assert!(after.starts_with(&original));
    assert!(after.len() > original.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_filo_wrote_resumes_in_pi_073_with_filos_context() {
    let lines = jsonl(&Path::new(FIXTURES).join("filo.session.jsonl"));
    assert_branched(&lines);
    assert!(entry_types(&lines).contains(&"compaction".to_string()));
    // pi 0.73.1 resumed it without complaint.
    let pi_run = fixture("filo.resume.json");
    assert_eq!(pi_run["code"], 0, "{pi_run}");
    assert_eq!(pi_run["stdout"], "Resumed.\n");
    assert_eq!(pi_run["stderr"], "");
    // And sent the model what filo sends when resuming the same file.
    let (code, out, err, body, _session, _home) = resume_in_filo("filo.session.jsonl").await;
    assert_eq!(code, 0, "{out}\n{err}");
    let pi = fixture("filo.resume.requests.json");
    assert_eq!(pi.as_array().unwrap().len(), 1);
    assert_eq!(messages(&body), messages(&pi[0]));
    let text = serde_json::to_string(&messages(&body)).unwrap();
    for present in [
        "compaction summary",
        "branch summary",
        "x = 10",
        "another way",
    ] {
        assert!(text.contains(present), "{present}: {text}");
    }
    assert!(!text.contains("after compaction"), "{text}");
}

/// A two-block `edit` call as the mock sends it.
fn edit_call(id: &str, path: &str, edits: [(&str, &str); 2]) -> Turn {
    let edits: Vec<Value> = edits
        .iter()
        .map(|(old, new)| json!({"oldText": old, "newText": new}))
        .collect();
    let arguments = json!({"path": path, "edits": edits}).to_string();
    Turn::Reply(Reply::empty().with_raw_tool_call(id, "edit", &arguments))
}

/// Writes `tests/fixtures/pi073/filo.session.jsonl`, the session `filo_session_case` of
/// `scripts/record-pi/record.py` has pi 0.73.1 resume. Not part of CI:
/// `FILO_WRITE_FIXTURES=1 cargo nextest run -p filo-cli --run-ignored only -E 'test(/write_the_filo_session_fixture/)'`.
/// filo writes it over RPC as pi's `branch_case` does (settings `compaction.keepRecentTokens: 1`;
/// `prompt` answered with a two-block edit of a.txt, `prompt`, `compact`, `prompt`); the branch
/// is made with filo-session's API (filo's RPC has no tree navigation), a branch summary above
/// the last prompt, and `filo -p --session` continues from it with a two-block edit of b.txt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes a fixture; run by hand, then record pi with record.py filo_session_case"]
async fn write_the_filo_session_fixture() {
    assert_eq!(
        std::env::var("FILO_WRITE_FIXTURES").as_deref(),
        Ok("1"),
        "set FILO_WRITE_FIXTURES=1 to overwrite the fixture"
    );
    let summary = "## Goal\ncompaction summary";
    let mock = MockProvider::start(vec![
        edit_call("call_a", "a.txt", [("two", "TWO"), ("four", "FOUR")]),
        Turn::text("Edited a."),
        Turn::text("two"),
        Turn::text(summary),
        Turn::text(summary),
        Turn::text("three"),
        edit_call(
            "call_b",
            "b.txt",
            [("x = 1", "x = 10"), ("y = 2", "y = 20")],
        ),
        Turn::text("Edited b."),
    ])
    .await;
    let home = Home::new(&mock);
    std::fs::write(home.project().join("a.txt"), "one\ntwo\nthree\nfour\n").unwrap();
    std::fs::write(home.project().join("b.txt"), "x = 1\ny = 2\n").unwrap();
    home.write_settings(&json!({"compaction": {"keepRecentTokens": 1}}));
    let mut rpc = Rpc::start(&home, &["--no-dag"]);
    for (id, prompt) in [("p1", "edit a"), ("p2", "second")] {
        rpc.call(id, json!({"type": "prompt", "message": prompt}))
            .await;
        rpc.event("agent_end").await;
    }
    rpc.call("c1", json!({"type": "compact"})).await;
    rpc.call(
        "p3",
        json!({"type": "prompt", "message": "after compaction"}),
    )
    .await;
    rpc.event("agent_end").await;
    assert_eq!(rpc.close().await, 0);
    let sessions = home.sessions();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let file = &sessions[0];
    // Back above the last prompt, with a summary of the abandoned branch.
    let lines = jsonl(file);
    let abandoned = lines
        .iter()
        .find(|e| e["message"]["content"][0]["text"] == "after compaction")
        .unwrap();
    let from = abandoned["parentId"].as_str().unwrap();
    let cwd = home.project().to_string_lossy().into_owned();
    let mut manager = SessionManager::open(file, &cwd).unwrap();
    manager
        .branch_with_summary(Some(from), "## Goal\nbranch summary", None, None)
        .unwrap();
    drop(manager);
    let (code, out, err) = home
        .filo(&[
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "--no-dag",
            "-p",
            "--session",
            &file.to_string_lossy(),
            "another way",
        ])
        .await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(mock.requests().len(), 8);
    std::fs::copy(file, Path::new(FIXTURES).join("filo.session.jsonl")).unwrap();
}
