//! The memory database held by another process: commits wait and land under their session
//! parents; past the patience, the entries are reported (never placed under a wrong parent) and
//! mirrored when the session resumes.

use std::path::Path;
use std::time::Duration;

use filo_dag::{PathEntry, Store};
use filo_session::SessionManager;
use filo_testkit::{MockProvider, Reply};

use super::playfilo::{Memory, memory_session_config, new_manager};

/// Another process's write transaction on `db`, held until the returned sender is dropped or
/// sent to (or `hold` passes).
fn hold_write_lock(db: &Path, hold: Duration) -> std::sync::mpsc::Sender<()> {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.execute_batch("BEGIN IMMEDIATE").unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let _ = rx.recv_timeout(hold);
        conn.execute_batch("COMMIT").unwrap();
    });
    tx
}

/// The session file's path compared with its nodes.
fn session_problems(db: &Path, file: &Path) -> Vec<String> {
    let manager = SessionManager::open_read_only(file).unwrap();
    let path: Vec<PathEntry> = manager
        .branch_path(None)
        .into_iter()
        .map(|e| PathEntry {
            id: e.id.clone(),
            parent_id: e.parent_id.clone(),
        })
        .collect();
    let store = Store::open(db).unwrap();
    store
        .check_session_path(&path)
        .unwrap()
        .into_iter()
        .map(|p| format!("{} {}: {}", p.kind, p.key, p.message))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commits_wait_out_a_lock_longer_than_the_busy_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockProvider::start(vec![]).await;
    let mem = memory_session_config(&mock, dir.path(), new_manager(dir.path()), vec![], |c| {
        c.busy_timeout = Duration::from_millis(30);
        c.lock_patience = Duration::from_secs(60);
    });
    mem.say(&mock, "one", Reply::text("First.")).await;
    mem.playfilo.flush();
    // Held ten busy timeouts long.
    let _lock = hold_write_lock(&mem.db, Duration::from_millis(400));
    mem.say(&mock, "two", Reply::text("Second.")).await;
    mem.playfilo.flush();
    assert_eq!(mem.playfilo.unmirrored(), vec![]);
    assert_eq!(mem.playfilo.error_count(), 0);
    let file = mem.session.session_file().unwrap();
    assert_eq!(session_problems(&mem.db, &file), Vec::<String>::new());
    let store = Store::open(&mem.db).unwrap();
    let last = mem.session.session_manager().leaf_id().unwrap().to_string();
    assert_eq!(
        store.get_ref(&mem.playfilo.head_ref()).unwrap(),
        store.node_id_by_external_id(&last).unwrap(),
        "the head is the last answer's node"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entries_a_lock_kept_out_are_reported_and_mirrored_on_resume() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockProvider::start(vec![]).await;
    let file;
    let before: u64;
    let lock;
    {
        let mem = memory_session_config(&mock, dir.path(), new_manager(dir.path()), vec![], |c| {
            c.busy_timeout = Duration::from_millis(20);
            c.lock_patience = Duration::from_millis(150);
        });
        mem.say(&mock, "one", Reply::text("First.")).await;
        mem.playfilo.flush();
        before = Store::open(&mem.db)
            .unwrap()
            .stats()
            .unwrap()
            .roles
            .values()
            .sum();
        lock = hold_write_lock(&mem.db, Duration::from_secs(60));
        mem.say(&mock, "two", Reply::text("Second.")).await;
        let lost = mem.playfilo.unmirrored();
        file = mem.session.session_file().unwrap();
        let ids: Vec<String> = lost.iter().map(|u| u.entry_id.clone()).collect();
        let manager = SessionManager::open_read_only(&file).unwrap();
        let tail: Vec<String> = manager
            .entry_ids()
            .skip(manager.entry_count() - 2)
            .map(str::to_string)
            .collect();
        assert_eq!(ids, tail, "the user message and the answer are named");
        assert!(lost[0].cause.contains("locked"), "{:?}", lost[0]);
        assert!(lost[1].cause.contains("parent"), "{:?}", lost[1]);
        assert_eq!(mem.playfilo.error_count(), 2);
    }
    // The process ended with the lock still held.
    lock.send(()).unwrap();
    // Nothing was committed under a wrong parent.
    let after: u64 = Store::open(dir.path().join("playfilo.db"))
        .unwrap()
        .stats()
        .unwrap()
        .roles
        .values()
        .sum();
    assert_eq!(after, before);
    let problems = session_problems(&dir.path().join("playfilo.db"), &file);
    assert_eq!(problems.len(), 2, "{problems:?}");

    // The next resume mirrors them under their parents, and the context keeps them.
    let mem = memory_session_config(
        &mock,
        dir.path(),
        SessionManager::open(&file, "/").unwrap(),
        vec![],
        |_| {},
    );
    mem.say(&mock, "three", Reply::text("Third.")).await;
    let body = mock.requests().last().unwrap().body.to_string();
    assert!(body.contains("Second.") && body.contains("two"), "{body}");
    mem.playfilo.flush();
    assert_eq!(session_problems(&mem.db, &file), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flush_within_gives_up_on_a_locked_database_and_reports_it() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockProvider::start(vec![]).await;
    let mem = memory_session_config(&mock, dir.path(), new_manager(dir.path()), vec![], |c| {
        c.busy_timeout = Duration::from_millis(20);
        c.lock_patience = Duration::from_secs(60);
    });
    mem.say(&mock, "one", Reply::text("First.")).await;
    assert!(mem.playfilo.flush_within(Duration::from_secs(30)));
    let release = hold_write_lock(&mem.db, Duration::from_secs(60));
    mem.say(&mock, "two", Reply::text("Second.")).await;
    assert!(
        !mem.playfilo.flush_within(Duration::from_millis(100)),
        "commits are still waiting for the lock"
    );
    release.send(()).unwrap();
    assert!(mem.playfilo.flush_within(Duration::from_secs(30)));
    assert_eq!(mem.playfilo.unmirrored(), vec![]);
    let file = mem.session.session_file().unwrap();
    assert_eq!(session_problems(&mem.db, &file), Vec::<String>::new());
}

/// A memory session with short lock timings whose second turn (two entries) a held write lock
/// kept out of the memory; the lock is released when this returns.
async fn second_turn_kept_out(mock: &MockProvider, dir: &Path) -> Memory {
    let mem = memory_session_config(mock, dir, new_manager(dir), vec![], |c| {
        c.busy_timeout = Duration::from_millis(20);
        c.lock_patience = Duration::from_millis(100);
    });
    mem.say(mock, "one", Reply::text("First.")).await;
    mem.playfilo.flush();
    let release = hold_write_lock(&mem.db, Duration::from_secs(60));
    mem.say(mock, "two", Reply::text("Second.")).await;
    assert_eq!(mem.playfilo.unmirrored().len(), 2);
    release.send(()).unwrap();
    mem
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_session_catches_up_once_the_lock_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockProvider::start(vec![]).await;
    let mem = second_turn_kept_out(&mock, dir.path()).await;
    // The next turn's first commit takes the waiting entries along, in order.
    mem.say(&mock, "three", Reply::text("Third.")).await;
    assert_eq!(mem.playfilo.unmirrored(), vec![]);
    let file = mem.session.session_file().unwrap();
    assert_eq!(session_problems(&mem.db, &file), Vec::<String>::new());
    let store = Store::open(&mem.db).unwrap();
    let last = mem.session.session_manager().leaf_id().unwrap().to_string();
    assert_eq!(
        store.get_ref(&mem.playfilo.head_ref()).unwrap(),
        store.node_id_by_external_id(&last).unwrap()
    );
}

/// A flush alone retries the entries a lock kept out, once the lock is gone: no new commit is
/// needed to take them along (a flush skips the writer only when nothing waits).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flush_retries_the_waiting_entries_once_the_lock_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockProvider::start(vec![]).await;
    let mem = second_turn_kept_out(&mock, dir.path()).await;
    // Wait until the other connection committed: the lock is free.
    let conn = rusqlite::Connection::open(&mem.db).unwrap();
    conn.busy_timeout(Duration::from_secs(30)).unwrap();
    conn.execute_batch("BEGIN IMMEDIATE; COMMIT").unwrap();
    drop(conn);
    assert_eq!(mem.playfilo.unmirrored(), vec![]);
    let file = mem.session.session_file().unwrap();
    assert_eq!(session_problems(&mem.db, &file), Vec::<String>::new());
}
