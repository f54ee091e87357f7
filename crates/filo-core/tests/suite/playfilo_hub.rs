//! Many sessions over one [`MemoryHub`]: one database connection, one writer thread, each
//! session's head and lineage its own, nothing lost whatever the interleaving or drop order.
//!
//! The thread counts read `/proc/self/task/*/comm`; nextest runs each test in its own process,
//! so no other test's writer is counted. A thread names itself when it starts, so each count
//! follows a flush of every view: any writer they use has run by then.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use filo_ai::{Message, UserContent, UserMessage};
use filo_core::Extension;
use filo_core::extension::{EntryContext, SessionInfo};
use filo_core::playfilo::{HubConfig, MemoryHub, Playfilo};
use filo_dag::Store;
use filo_session::{SessionManager, SessionMessage};
use filo_testkit::{MockProvider, Reply};

use super::playfilo::{memory_session_on, new_manager};

/// Live threads of this process named `playfilo-writer`.
fn writer_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.unwrap().path().join("comm")).ok())
        .filter(|name| name.trim() == "playfilo-writer")
        .count()
}

/// Wait (a new writer names itself once it runs) until there are `n` writers. Used only for
/// counts that go up.
fn rise_to(n: usize) -> usize {
    let start = Instant::now();
    while writer_threads() < n && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
    writer_threads()
}

/// Wait (a joined thread can linger in `/proc` for a moment) until `n` writers are left.
/// Used only for counts that go down.
fn settle_to(n: usize) -> usize {
    let start = Instant::now();
    while writer_threads() != n && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
    writer_threads()
}

fn hub_in(dir: &Path) -> MemoryHub {
    let mut config = HubConfig::under_home(dir);
    config.db_path = dir.join("playfilo.db");
    config.seed_path = None;
    MemoryHub::open(config).unwrap()
}

fn context(manager: &SessionManager) -> EntryContext {
    EntryContext {
        session: SessionInfo {
            session_id: manager.session_id().to_string(),
            session_file: manager.session_file().map(Path::to_path_buf),
            cwd: manager.cwd().into(),
        },
        model: None,
        thinking_level: filo_ai::ThinkingLevel::default(),
        system_prompt: String::new(),
        tools: Vec::new(),
    }
}

/// A session of `view` with no agent: prepared like a new session, then `n` user entries
/// appended and handed to the memory as the agent session would. Returns the entry ids in order
/// and the session id.
fn drive(view: &Playfilo, dir: &Path, n: usize, tag: &str) -> (Vec<String>, String) {
    let mut manager = new_manager(dir);
    view.prepare_session(&mut manager);
    let ctx = context(&manager);
    let ids = (0..n)
        .map(|i| {
            let msg = SessionMessage::Llm(Message::User(UserMessage {
                content: UserContent::Text(format!("{tag} #{i}")),
                timestamp: i as i64,
            }));
            let id = manager.append_message(msg).unwrap();
            let entry = manager.entry(&id).unwrap().clone();
            view.entry_appended(&entry, &ctx);
            id
        })
        .collect();
    (ids, manager.session_id().to_string())
}

/// The entry ids of the lineage ending at `head`, root first.
fn lineage(store: &Store, head: &str) -> Vec<String> {
    store
        .load_entries(Some(head))
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_string())
        .collect()
}

/// `ids` are all in the database, as a chain ending at the session's head ref.
fn assert_chain(db: &Path, session_id: &str, ids: &[String]) {
    let store = Store::open(db).unwrap();
    let head = store
        .get_ref(&format!("PI_HEAD:{session_id}"))
        .unwrap()
        .unwrap();
    let line = lineage(&store, &head);
    assert!(
        line.ends_with(ids),
        "{session_id}: {line:?} does not end with {ids:?}"
    );
    let found = store
        .node_ids_by_external_ids(ids.iter().map(String::as_str))
        .unwrap();
    assert_eq!(found.len(), ids.len());
}

#[tokio::test]
async fn agent_sessions_share_one_writer_and_keep_their_own_heads() {
    if !filo_testkit::alone(
        "suite::playfilo_hub::agent_sessions_share_one_writer_and_keep_their_own_heads",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mock = MockProvider::start(vec![]).await;
    let before = writer_threads();
    let hub = hub_in(dir.path());
    let db = hub.db_path().to_path_buf();
    let mems: Vec<_> = (0..3)
        .map(|_| {
            let view = Arc::new(hub.session(None));
            memory_session_on(
                &mock,
                dir.path(),
                new_manager(dir.path()),
                Vec::new(),
                view,
                db.clone(),
            )
        })
        .collect();
    for m in &mems {
        m.playfilo.flush();
    }
    assert_eq!(writer_threads(), before + 1);
    for round in 0..2 {
        for _ in &mems {
            mock.push(Reply::text(format!("answer of round {round}")));
        }
        let prompts = mems.iter().map(|m| {
            m.session
                .prompt("hello", filo_core::PromptOptions::default())
        });
        for r in futures::future::join_all(prompts).await {
            r.unwrap();
        }
    }
    assert_eq!(mock.remaining(), 0);
    assert_eq!(writer_threads(), before + 1);

    let store = Store::open(&db).unwrap();
    let mut heads = std::collections::HashSet::new();
    for m in &mems {
        let id = m.session.session_id();
        assert_eq!(m.playfilo.head_ref(), format!("PI_HEAD:{id}"));
        let head = m.playfilo.head().unwrap();
        assert_eq!(
            store.get_ref(&m.playfilo.head_ref()).unwrap(),
            Some(head.clone())
        );
        assert!(heads.insert(head.clone()), "two sessions share a head");
        // The session's own entries are the tail of its head's lineage, in file order.
        let file: Vec<String> = m
            .session
            .session_manager()
            .branch_path(None)
            .iter()
            .filter(|e| e.message().is_some())
            .map(|e| e.id.clone())
            .collect();
        assert_eq!(file.len(), 4);
        assert!(lineage(&store, &head).ends_with(&file));
        assert!(m.playfilo.unmirrored().is_empty());
        assert_eq!(m.playfilo.error_count(), 0);
    }
    drop(mems);
    assert_eq!(writer_threads(), before + 1, "the hub still lives");
    drop(hub);
    assert_eq!(settle_to(before), before);
}

#[test]
fn interleaved_commits_from_concurrent_sessions_lose_nothing() {
    if !filo_testkit::alone(
        "suite::playfilo_hub::interleaved_commits_from_concurrent_sessions_lose_nothing",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let before = writer_threads();
    let hub = hub_in(dir.path());
    let runs: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|k| {
                let (hub, dir) = (hub.clone(), dir.path());
                s.spawn(move || {
                    let view = hub.session(None);
                    let (ids, sid) = drive(&view, dir, 40, &format!("session {k}"));
                    view.flush();
                    assert!(view.unmirrored().is_empty());
                    let head = view.head().unwrap();
                    (view, ids, sid, head)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(writer_threads(), before + 1);
    let store = Store::open(hub.db_path()).unwrap();
    for (view, ids, sid, head) in &runs {
        assert_eq!(view.head_ref(), format!("PI_HEAD:{sid}"));
        // The head is the node of the session's last entry.
        assert_eq!(
            store.node_id_by_external_id(ids.last().unwrap()).unwrap(),
            Some(head.clone())
        );
        assert_chain(hub.db_path(), sid, ids);
        assert_eq!(view.error_count(), 0);
    }
    drop(store);
    drop(runs);
    drop(hub);
    assert_eq!(settle_to(before), before);
}

#[test]
fn views_dropped_before_the_hub_lose_nothing() {
    if !filo_testkit::alone("suite::playfilo_hub::views_dropped_before_the_hub_lose_nothing") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let before = writer_threads();
    let hub = hub_in(dir.path());
    let (a, b) = (hub.session(None), hub.session(None));
    // No flush: dropping a view waits for what it queued.
    let (ids_a, sid_a) = drive(&a, dir.path(), 25, "a");
    let (ids_b, sid_b) = drive(&b, dir.path(), 25, "b");
    drop(a);
    assert_chain(hub.db_path(), &sid_a, &ids_a);
    drop(b);
    assert_chain(hub.db_path(), &sid_b, &ids_b);
    assert_eq!(writer_threads(), before + 1, "the hub keeps its writer");
    // The hub still serves new sessions after its views are gone.
    let c = hub.session(None);
    let (ids_c, sid_c) = drive(&c, dir.path(), 5, "c");
    drop(c);
    let db = hub.db_path().to_path_buf();
    drop(hub);
    assert_chain(&db, &sid_c, &ids_c);
    assert_eq!(settle_to(before), before);
}

#[test]
fn a_hub_dropped_before_its_views_keeps_the_writer_until_the_last_view() {
    if !filo_testkit::alone(
        "suite::playfilo_hub::a_hub_dropped_before_its_views_keeps_the_writer_until_the_last_view",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let before = writer_threads();
    let hub = hub_in(dir.path());
    let db = hub.db_path().to_path_buf();
    let (a, b) = (hub.session(None), hub.session(None));
    drop(hub);
    let (ids_a, sid_a) = drive(&a, dir.path(), 30, "a");
    let (ids_b, sid_b) = drive(&b, dir.path(), 30, "b");
    drop(a);
    assert_eq!(writer_threads(), before + 1, "b still needs the writer");
    // `b` keeps committing after `a` is gone, in a new session of its own.
    let (ids_more, sid_more) = drive(&b, dir.path(), 100, "b after a");
    // Queued, not flushed: the last drop drains the queue and stops the writer.
    drop(b);
    // In the database as soon as the drop returns.
    assert_chain(&db, &sid_a, &ids_a);
    assert_chain(&db, &sid_b, &ids_b);
    assert_chain(&db, &sid_more, &ids_more);
    assert_eq!(settle_to(before), before);
}

#[test]
fn a_view_can_hand_out_its_hub_and_open_is_a_hub_of_one() {
    if !filo_testkit::alone(
        "suite::playfilo_hub::a_view_can_hand_out_its_hub_and_open_is_a_hub_of_one",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let before = writer_threads();
    let mut config = filo_core::playfilo::PlayfiloConfig::under_home(dir.path());
    config.head = Some("MY_HEAD".into());
    let first = Playfilo::open(config).unwrap();
    first.flush();
    // The writer names itself once it runs; a flush with nothing queued does not wait for it.
    assert_eq!(rise_to(before + 1), before + 1);
    let second = first.hub().session(None);
    second.flush();
    assert_eq!(
        writer_threads(),
        before + 1,
        "a second view starts no writer"
    );
    let (ids, _) = drive(&first, dir.path(), 3, "first");
    let (ids2, sid2) = drive(&second, dir.path(), 3, "second");
    assert_eq!(first.head_ref(), "MY_HEAD");
    let db = first.hub().db_path().to_path_buf();
    drop(first);
    drop(second);
    assert_eq!(settle_to(before), before);
    let store = Store::open(&db).unwrap();
    let head = store.get_ref("MY_HEAD").unwrap().unwrap();
    assert!(lineage(&store, &head).ends_with(&ids));
    assert_chain(&db, &sid2, &ids2);
}

/// Pages 2.. of `db` overwritten with garbage (header and schema stay readable), keeping the
/// file's length, inode and modification time: damage only a scan of the file can see.
fn damage_keeping_identity(db: &Path) {
    let meta = std::fs::metadata(db).unwrap();
    let mut bytes = std::fs::read(db).unwrap();
    assert!(bytes.len() > 8192, "{}", bytes.len());
    for b in &mut bytes[4096..] {
        *b = 0xA5;
    }
    let f = std::fs::OpenOptions::new().write(true).open(db).unwrap();
    std::io::Write::write_all(&mut &f, &bytes).unwrap();
    f.set_modified(meta.modified().unwrap()).unwrap();
}

/// Every open checks the file (SQLite's quick_check, one pass over it) unless it is exactly as
/// a hub that had checked it left it: then the pass is skipped. Any write by anyone in between
/// (here: another connection, then bytes written over the file) brings the check back, and a
/// damaged file is refused and left as it is.
#[test]
fn the_integrity_pass_is_skipped_only_for_a_file_as_filo_left_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("playfilo.db");
    let stamp = dir.path().join("playfilo.db-filo-verified");
    let hub = hub_in(dir.path());
    let (ids, sid) = drive(&hub.session(None), dir.path(), 40, "first");
    hub.flush();
    assert!(!stamp.exists(), "recorded when the hub closes");
    drop(hub);
    assert!(
        stamp.exists(),
        "a checked file is stamped when the hub closes"
    );
    assert!(
        !dir.path().join("playfilo.db-wal").exists(),
        "the log is checkpointed before the stamp is taken"
    );
    assert_chain(&db, &sid, &ids);

    // As filo left it: the pass is skipped — damage that keeps the file's identity goes unseen
    // at open (SQLite still refuses the damaged pages when they are read).
    let pristine = std::fs::read(&db).unwrap();
    damage_keeping_identity(&db);
    assert!(MemoryHub::open(hub_config(dir.path())).is_ok());
    std::fs::write(&db, &pristine).unwrap();

    // Written since (bytes put back, a new time): checked again, fine, stamped again.
    drop(hub_in(dir.path()));
    assert!(stamp.exists());

    // Another process's connection wrote a ref: the time moved, so the next open scans, and
    // the damage that keeps the identity of *that* file is found.
    Store::open(&db).unwrap().set_ref("OTHER", "x").unwrap();
    damage_keeping_identity(&db);
    let damaged = std::fs::read(&db).unwrap();
    let err = MemoryHub::open(hub_config(dir.path()))
        .err()
        .expect("refused");
    assert!(matches!(err, filo_dag::DagError::Damaged { .. }), "{err}");
    assert_eq!(std::fs::read(&db).unwrap(), damaged, "left untouched");
    assert!(!stamp.exists(), "a refused file keeps no stamp");
    // And with no stamp, every open scans.
    assert!(MemoryHub::open(hub_config(dir.path())).is_err());
}

fn hub_config(dir: &Path) -> HubConfig {
    let mut config = HubConfig::under_home(dir);
    config.db_path = dir.join("playfilo.db");
    config.seed_path = None;
    config
}
