//! `filo dag migrate`: the source is only read (an old V3-layout file in rollback-journal mode
//! stays byte for byte as it was), and of two migrates racing into one empty database exactly
//! one succeeds; the other fails with a clear error and writes nothing.

use std::path::Path;
use std::process::{Command, Output};

use filo_dag::{NewAction, NewBlob, NodeCommit, Parent, Store};
use filo_testkit::pg::PgServer;
use rusqlite::Connection;

/// An older layout: no `external_id` column, no `idx_nodes_external_id`, user_version 3, and the
/// default rollback journal.
const V3_DDL: &str = "\
CREATE TABLE blobs (hash TEXT PRIMARY KEY, type TEXT NOT NULL, content TEXT NOT NULL, thought_signature TEXT);
CREATE TABLE nodes (id TEXT PRIMARY KEY, parent_id TEXT, role TEXT NOT NULL, parts_list TEXT NOT NULL, timestamp INTEGER NOT NULL, config_json TEXT, thought_signatures TEXT, system_prompt_hash TEXT);
CREATE TABLE refs (name TEXT PRIMARY KEY, node_id TEXT NOT NULL);
CREATE TABLE action_log (id INTEGER PRIMARY KEY AUTOINCREMENT, timestamp INTEGER NOT NULL, action_type TEXT NOT NULL, from_node TEXT, to_node TEXT, metadata TEXT);
CREATE INDEX idx_nodes_parent ON nodes(parent_id);
PRAGMA user_version = 3;
INSERT INTO blobs VALUES ('d3167d7e7b608d25db586005b1bdc1cfd12f1ffe39da11919fa112440d875a70', 'text', '\"hello\"', NULL);
INSERT INTO nodes VALUES ('n1', NULL, 'user', '[\"d3167d7e7b608d25db586005b1bdc1cfd12f1ffe39da11919fa112440d875a70\"]', 1700000000000, NULL, NULL, NULL);
INSERT INTO nodes VALUES ('n2', 'n1', 'assistant', '[]', 1700000000001, '{\"model\":\"m\"}', NULL, NULL);
INSERT INTO refs VALUES ('PI_HEAD', 'n2');
INSERT INTO action_log (timestamp, action_type, from_node, to_node) VALUES (1700000000002, 'BOOT', NULL, 'n2');";

fn filo(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_filo"))
        .args(args)
        .env_remove("PLAYFILO_DB")
        .output()
        .unwrap()
}

/// Every file of a directory with its bytes.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn migrate_leaves_an_old_source_file_as_it_was() {
    let src_dir = tempfile::tempdir().unwrap();
    let src = src_dir.path().join("v3.db");
    Connection::open(&src)
        .unwrap()
        .execute_batch(V3_DDL)
        .unwrap();
    let before = snapshot(src_dir.path());
    assert_eq!(before.len(), 1, "one file, no journal");
    let dest_dir = tempfile::tempdir().unwrap();
    let dest = dest_dir.path().join("new.db");
    let out = filo(&[
        "dag",
        "migrate",
        "--from",
        src.to_str().unwrap(),
        "--to",
        dest.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .unwrap_or(""),
        format!(
            "copied 1 blobs, 2 nodes, 1 refs, 1 actions from {} to {}",
            src.display(),
            dest.display()
        )
    );
    // The source directory holds the same single file, byte for byte.
    assert!(snapshot(src_dir.path()) == before, "the source changed");
    let conn = Connection::open(&src).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "delete");
    // The copy holds every row, the columns the old layout lacked as NULL.
    let copy = Store::open(&dest).unwrap();
    assert_eq!(copy.get_ref("PI_HEAD").unwrap().as_deref(), Some("n2"));
    let n2 = copy.node("n2").unwrap().unwrap();
    assert_eq!(n2.parent_id.as_deref(), Some("n1"));
    assert_eq!(n2.config_json.as_deref(), Some(r#"{"model":"m"}"#));
    assert_eq!(n2.external_id, None);
    assert_eq!(copy.actions().unwrap().len(), 1);
}

/// A source of `n` nodes in a chain, with a ref and an action, under `tag`.
fn source(path: &Path, tag: &str, n: usize) {
    let store = Store::open(path).unwrap();
    let commits: Vec<NodeCommit> = (0..n)
        .map(|i| {
            let c = NodeCommit::new("user", i64::try_from(i).unwrap())
                .part(NewBlob::text(format!("{tag} turn {i} {}", "x".repeat(200))));
            if i == 0 {
                c
            } else {
                c.parent(Parent::Previous)
            }
        })
        .collect();
    let last = store.commit_batch(&commits).unwrap().pop().unwrap().id;
    store.set_ref("PI_HEAD", &last).unwrap();
    store
        .log_action(&NewAction {
            timestamp: 1,
            action_type: "BOOT".into(),
            from_node: None,
            to_node: Some(last),
            metadata: Some(tag.into()),
        })
        .unwrap();
}

/// Two migrates from two different memories into one empty database at once: one wins, the
/// other fails naming the target as not empty, and the target holds exactly the winner's rows.
fn race(target: &str, check: impl Fn(&str) -> (String, usize)) {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.db"), dir.path().join("b.db"));
    source(&a, "alpha", 3_000);
    source(&b, "beta", 3_000);
    let spawn = |from: &Path| {
        Command::new(env!("CARGO_BIN_EXE_filo"))
            .args([
                "dag",
                "migrate",
                "--from",
                from.to_str().unwrap(),
                "--to",
                target,
            ])
            .env_remove("PLAYFILO_DB")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (ca, cb) = (spawn(&a), spawn(&b));
    let (oa, ob) = (
        ca.wait_with_output().unwrap(),
        cb.wait_with_output().unwrap(),
    );
    let won: Vec<&Output> = [&oa, &ob]
        .into_iter()
        .filter(|o| o.status.success())
        .collect();
    let lost: Vec<&Output> = [&oa, &ob]
        .into_iter()
        .filter(|o| !o.status.success())
        .collect();
    assert_eq!(
        (won.len(), lost.len()),
        (1, 1),
        "a: {} / b: {}",
        String::from_utf8_lossy(&oa.stderr),
        String::from_utf8_lossy(&ob.stderr)
    );
    let err = String::from_utf8_lossy(&lost[0].stderr);
    assert!(err.contains("is not empty"), "{err}");
    let winner = if oa.status.success() { "alpha" } else { "beta" };
    let (tag, nodes) = check(target);
    assert_eq!((tag.as_str(), nodes), (winner, 3_000));
}

/// The target's one action's tag and its number of nodes.
fn contents(store: &Store) -> (String, usize) {
    let actions = store.actions().unwrap();
    assert_eq!(actions.len(), 1, "{actions:?}");
    let head = store.get_ref("PI_HEAD").unwrap().unwrap();
    (
        actions[0].metadata.clone().unwrap(),
        store.lineage(&head, None).unwrap().len(),
    )
}

#[test]
fn two_migrates_into_one_empty_sqlite_file_one_wins() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("target.db");
    // The target exists and is empty, as an operator would prepare it.
    drop(Store::open(&target).unwrap());
    race(target.to_str().unwrap(), |t| {
        contents(&Store::open(t).unwrap())
    });
}

#[test]
fn two_migrates_into_one_empty_postgres_one_wins() {
    let Some(pg) = PgServer::start().unwrap() else {
        return;
    };
    let url = pg.url();
    race(&url, |t| contents(&Store::connect(t).unwrap()));
}
