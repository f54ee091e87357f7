//! The Playfilo memory across processes: a process killed right after a jump resumes in the new
//! timeline, and two processes share one database without mixing their lineages.

use std::process::Stdio;
use std::time::Duration;

use filo_dag::Store;
use filo_testkit::{Fault, MockProvider, Reply, Turn};
use serde_json::json;

use super::common::{Home, jsonl};

const MODEL: [&str; 4] = ["--provider", "mock", "--model", "mock-model"];

fn args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    MODEL.iter().copied().chain(extra.iter().copied()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_killed_right_after_a_jump_resumes_in_the_new_timeline() {
    let mock = MockProvider::start(vec![
        Turn::Reply(Reply::text("Answer one.")),
        Turn::Reply(Reply::text("Answer two.")),
    ])
    .await;
    let home = Home::new(&mock);
    let (code, _, err) = home.filo(&args(&["-p", "q1"])).await;
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = home.filo(&args(&["-c", "-p", "q2"])).await;
    assert_eq!(code, 0, "{err}");
    let file = home.sessions().pop().unwrap();
    let answer_one = jsonl(&file)
        .into_iter()
        .find(|e| e["message"]["content"][0]["text"] == "Answer one.")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();

    // The jump happens, then the continuation stalls and the process is killed.
    mock.push(Reply::tool_call(
        "t1",
        "tobe",
        json!({"target_node_hash": format!("pi:{answer_one}"), "carryover_message": "back"}),
    ));
    mock.push(Fault::Stall {
        after_events: 0,
        reply: Reply::text("never"),
        stall: Duration::from_secs(30),
    });
    let mut child = home
        .command(&args(&["-c", "-p", "go back"]))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while mock.requests().len() < 4 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the continuation never started"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    child.kill().await.unwrap();

    mock.push(Reply::text("Still here."));
    let (code, out, err) = home.filo(&args(&["-c", "-p", "status?"])).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "Still here.\n");
    let body = mock.requests().last().unwrap().body.to_string();
    assert!(
        body.contains("Answer one.") && body.contains("[SYSTEM / INCARNATION NOTE]: back"),
        "{body}"
    );
    assert!(
        !body.contains("Answer two."),
        "the abandoned timeline is not resumed: {body}"
    );
    assert!(!body.contains("go back"), "the aborted turn is not resumed");
    assert!(
        err.contains("the DAG wins"),
        "the user is told the file and the DAG disagree: {err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_share_one_database_with_separate_heads() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("shared.db");
    two_processes_share(db.to_str().unwrap()).await;
}

/// The same on PostgreSQL: `--dag postgres://…` mirrors every turn into the shared server, and
/// `filo dag fsck --db postgres://… --session FILE` finds each session's path in it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_share_one_postgres_memory() {
    let Some(pg) = filo_testkit::pg::PgServer::start().unwrap() else {
        return;
    };
    let homes = two_processes_share(&pg.url()).await;
    for home in &homes {
        let file = home.sessions().pop().unwrap();
        let (code, out, err) = home
            .filo(&[
                "dag",
                "fsck",
                "--db",
                &pg.url(),
                "--session",
                file.to_str().unwrap(),
            ])
            .await;
        assert_eq!(code, 0, "{out}{err}");
        assert!(out.contains("0 problem(s)"), "{out}");
    }
}

/// Two processes with their own sessions write one memory at `db_arg` at once; each session's
/// head ref holds exactly its own entries, in order. Returns the two homes.
async fn two_processes_share(db_arg: &str) -> Vec<Home> {
    let replies: Vec<Turn> = (0..6)
        .map(|i| Turn::Reply(Reply::text(format!("reply {i}"))))
        .collect();
    let mock = MockProvider::start(replies).await;
    let a = Home::new(&mock);
    let b = Home::new(&mock);
    let db_arg = db_arg.to_string();
    let run = |home: &Home, tag: &str| {
        let prompts: Vec<String> = (1..=3).map(|i| format!("{tag} prompt {i}")).collect();
        let mut argv: Vec<String> = MODEL.iter().map(|s| s.to_string()).collect();
        argv.extend(["--dag".to_string(), db_arg.clone(), "-p".to_string()]);
        argv.extend(prompts);
        let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
        home.command(&refs)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (ca, cb) = (run(&a, "alpha"), run(&b, "beta"));
    let (oa, ob) = tokio::join!(ca.wait_with_output(), cb.wait_with_output());
    let (oa, ob) = (oa.unwrap(), ob.unwrap());
    assert!(
        oa.status.success(),
        "{}",
        String::from_utf8_lossy(&oa.stderr)
    );
    assert!(
        ob.status.success(),
        "{}",
        String::from_utf8_lossy(&ob.stderr)
    );
    // Opening a new database in two processes at once waits for the other, never gives up.
    for out in [&oa, &ob] {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("memory disabled"), "{stderr}");
    }

    // The store's client blocks: off the async workers (PostgreSQL's client refuses to block
    // inside a runtime), and dropped there too.
    tokio::task::block_in_place(|| check_heads(&db_arg, [&a, &b]));
    drop(mock);
    vec![a, b]
}

/// Each home's last session has its own head ref, and its lineage from the session's first
/// entry on is exactly the session's entries.
fn check_heads(db_arg: &str, homes: [&Home; 2]) {
    let store = Store::open_location(db_arg, filo_dag::Create::Never).unwrap();
    for home in homes {
        let file = home.sessions().pop().unwrap();
        let lines = jsonl(&file);
        let sid = lines[0]["id"].as_str().unwrap().to_string();
        let own: Vec<String> = lines[1..]
            .iter()
            .map(|e| e["id"].as_str().unwrap().to_string())
            .collect();
        let head = store
            .get_ref(&format!("PI_HEAD:{sid}"))
            .unwrap()
            .expect("each session has its own head");
        let mut lineage: Vec<String> = store
            .lineage(&head, None)
            .unwrap()
            .into_iter()
            .map(|n| n.external_id.unwrap_or_default())
            .collect();
        lineage.reverse();
        // Above this session's first entry may hang another session's past (boot inheritance);
        // from there on, the lineage is exactly this session's entries, in order.
        let first = lineage
            .iter()
            .position(|id| id == &own[0])
            .expect("the session's first entry is on its lineage");
        assert_eq!(
            lineage[first..],
            own[..],
            "session {sid} kept its own lineage"
        );
    }
}

/// Runs `filo dag fsck --session FILE` against `db`.
async fn fsck_session(home: &Home, db: &std::path::Path, file: &std::path::Path) -> (i32, String) {
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
    (code, format!("{out}{err}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entries_the_file_holds_but_the_dag_missed_are_resumed_and_mirrored() {
    let mock = MockProvider::start(vec![
        Turn::Reply(Reply::text("Answer one.")),
        Turn::Reply(Reply::tool_call(
            "call-1",
            "bash",
            json!({"command": "echo tool-output-42"}),
        )),
        Turn::Reply(Reply::text("Answer two.")),
        Turn::Reply(Reply::text("Answer three.")),
    ])
    .await;
    let home = Home::new(&mock);
    let db = home.path().join(".playfilo/playfilo.db");
    let (code, _, err) = home.filo(&args(&["-p", "q1"])).await;
    assert_eq!(code, 0, "{err}");
    // The second turn reaches the file but not the DAG: what queued mirror writes lost to an
    // abrupt exit leave behind.
    let (code, _, err) = home.filo(&args(&["-c", "--no-dag", "-p", "q2"])).await;
    assert_eq!(code, 0, "{err}");
    let file = home.sessions().pop().unwrap();
    let (code, report) = fsck_session(&home, &db, &file).await;
    assert_eq!(
        code, 1,
        "fsck names the entries missing from the memory: {report}"
    );
    assert!(report.contains("not in the memory"), "{report}");

    let (code, out, err) = home.filo(&args(&["-c", "-p", "q3"])).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "Answer three.\n");
    let body = mock.requests().last().unwrap().body.to_string();
    for kept in [
        "q1",
        "Answer one.",
        "q2",
        "call-1",
        "tool-output-42",
        "Answer two.",
        "q3",
    ] {
        assert!(
            body.contains(kept),
            "{kept} is in the resumed context: {body}"
        );
    }
    assert!(!err.contains("the DAG wins"), "{err}");
    // Every entry of the file is in the DAG, under its session parent.
    let (code, report) = fsck_session(&home, &db, &file).await;
    assert_eq!(code, 0, "{report}");
    let store = Store::open(&db).unwrap();
    for e in jsonl(&file).iter().skip(1) {
        let id = e["id"].as_str().unwrap();
        let node = store
            .node_id_by_external_id(id)
            .unwrap()
            .unwrap_or_else(|| panic!("entry {id} ({}) is in the DAG", e["type"]));
        if let Some(parent) = e["parentId"].as_str() {
            let expected = store.node_id_by_external_id(parent).unwrap();
            assert_eq!(store.node(&node).unwrap().unwrap().parent_id, expected);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fsck_session_reports_a_mis_parented_node() {
    let mock = MockProvider::start(vec![
        Turn::Reply(Reply::text("Answer one.")),
        Turn::Reply(Reply::text("Answer two.")),
    ])
    .await;
    let home = Home::new(&mock);
    let (code, _, err) = home.filo(&args(&["--no-dag", "-p", "q1", "q2"])).await;
    assert_eq!(code, 0, "{err}");
    let file = home.sessions().pop().unwrap();
    let ids: Vec<String> = jsonl(&file)[1..]
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_string())
        .collect();
    // A memory holding every entry, each under its parent's node but the last, which hangs
    // under the first node (what a dropped commit followed by a fallback parent produces).
    let db = home.path().join("crafted.db");
    let store = Store::open(&db).unwrap();
    let mut nodes: Vec<String> = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        let parent = match (i, nodes.last()) {
            (_, None) => filo_dag::Parent::Root,
            (i, Some(_)) if i + 1 == ids.len() => filo_dag::Parent::Node(nodes[0].clone()),
            (_, Some(p)) => filo_dag::Parent::Node(p.clone()),
        };
        let commit = filo_dag::NodeCommit::new(filo_dag::role::USER, i as i64)
            .parent(parent)
            .external_id(id.clone());
        nodes.push(store.commit_node(&commit).unwrap().id);
    }
    drop(store);
    let (code, report) = fsck_session(&home, &db, &file).await;
    assert_eq!(code, 1, "{report}");
    let last = ids.last().unwrap();
    assert!(
        report.contains(&format!("entry {last}: mis-parented")),
        "{report}"
    );
    assert_eq!(report.matches("mis-parented").count(), 1, "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_memory_is_announced_at_start_and_left_untouched() {
    let mock = MockProvider::start(vec![
        Turn::Reply(Reply::text("Answer one.")),
        Turn::Reply(Reply::text("Answer two.")),
    ])
    .await;
    let home = Home::new(&mock);
    let db = home.path().join(".playfilo/playfilo.db");
    let (code, _, err) = home.filo(&args(&["-p", "q1"])).await;
    assert_eq!(code, 0, "{err}");
    // Garbage over every page but the first (the header and schema stay readable).
    let mut bytes = std::fs::read(&db).unwrap();
    assert!(bytes.len() > 8192, "{}", bytes.len());
    for b in &mut bytes[4096..] {
        *b = 0xA5;
    }
    std::fs::write(&db, &bytes).unwrap();

    let (code, out, err) = home.filo(&args(&["-c", "-p", "q2"])).await;
    assert_eq!(code, 0, "the session itself is fine: {err}");
    assert_eq!(out, "Answer two.\n");
    assert!(
        err.starts_with("Warning: memory disabled for this run: "),
        "{err}"
    );
    assert_eq!(
        std::fs::read(&db).unwrap(),
        bytes,
        "the damaged file is not changed"
    );

    let (code, out, err) = home
        .filo(&["dag", "--db", db.to_str().unwrap(), "fsck"])
        .await;
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("integrity check:"), "{out}");
    assert!(out.contains("readable rows:"), "{out}");
    assert!(out.contains("nodes: "), "{out}");
    assert!(out.contains(".recover | sqlite3 recovered.db"), "{out}");
    assert_eq!(
        std::fs::read(&db).unwrap(),
        bytes,
        "fsck does not change it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_a_locked_memory_kept_out_is_named_and_mirrored_on_resume() {
    let mock = MockProvider::start(vec![
        Turn::Reply(Reply::text("Answer one.")),
        Turn::Reply(Reply::text("Answer two.")),
        Turn::Reply(Reply::text("Answer three.")),
    ])
    .await;
    let home = Home::new(&mock);
    let db = home.path().join(".playfilo/playfilo.db");
    let (code, _, err) = home.filo(&args(&["-p", "q1"])).await;
    assert_eq!(code, 0, "{err}");

    // Another process holds a write transaction for the whole second run.
    let other = rusqlite::Connection::open(&db).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let out = home
        .command(&args(&["-c", "-p", "q2"]))
        .env("PLAYFILO_BUSY_TIMEOUT_MS", "20")
        .env("PLAYFILO_LOCK_PATIENCE_MS", "100")
        .stdin(Stdio::null())
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), out)
        .await
        .unwrap()
        .unwrap();
    other.execute_batch("COMMIT").unwrap();
    drop(other);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Answer two.\n");
    assert_eq!(
        out.status.code(),
        Some(1),
        "the turn is not in the memory: {err}"
    );
    let file = home.sessions().pop().unwrap();
    let lines = jsonl(&file);
    let tail: Vec<&str> = lines[lines.len() - 2..]
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert!(err.contains("did not reach the Playfilo memory"), "{err}");
    for id in &tail {
        assert!(err.contains(&format!("  {id}: ")), "{id} is named: {err}");
    }
    let (code, report) = fsck_session(&home, &db, &file).await;
    assert_eq!(code, 1, "{report}");

    // The next resume keeps and mirrors the turn.
    let (code, out, err) = home.filo(&args(&["-c", "-p", "q3"])).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "Answer three.\n");
    let body = mock.requests().last().unwrap().body.to_string();
    assert!(
        body.contains("q2") && body.contains("Answer two."),
        "{body}"
    );
    let (code, report) = fsck_session(&home, &db, &file).await;
    assert_eq!(code, 0, "{report}");
}
