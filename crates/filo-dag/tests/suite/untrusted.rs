//! The memory graph is untrusted input: a database shared with other programs may hold rows
//! written with raw SQL. A forged cycle (node ids are hashes over the parent's id, so a real
//! one cannot exist) or an over-deep chain must end every walk with an error naming a node, on
//! SQLite and on PostgreSQL, instead of looping, exhausting memory or the stack.

use filo_dag::render::{
    FilterMode, FixedOffset, LifeOptions, RecallOptions, TraceMode, TraceOptions, life, recall,
    trace,
};
use filo_dag::{DagError, NewAction, NewBlob, NodeCommit, Parent, Store};
use filo_testkit::pg::PgServer;

/// The forged rows: `x` and `y` are each other's parent, `z` hangs under `x`; `p` and `q` are
/// each other's parent, with the genuine-looking `f` and its sibling `s` under `p`.
const FORGED: &[(&str, &str, &str)] = &[
    ("cyc-x", "cyc-y", "user"),
    ("cyc-y", "cyc-x", "assistant"),
    ("cyc-z", "cyc-x", "user"),
    ("cyc-p", "cyc-q", "user"),
    ("cyc-q", "cyc-p", "assistant"),
    ("cyc-f", "cyc-p", "user"),
    ("cyc-s", "cyc-p", "user"),
];

fn forged_sql(table: &str) -> String {
    let values: Vec<String> = FORGED
        .iter()
        .enumerate()
        .map(|(i, (id, parent, role))| format!("('{id}', '{parent}', '{role}', '[]', {i})"))
        .collect();
    format!(
        "INSERT INTO {table} (id, parent_id, role, parts_list, timestamp) VALUES {};",
        values.join(", ")
    )
}

/// A genuine node and an action pointing at it (so trace has a target to look for), then the
/// forged rows, with `PI_HEAD` on `cyc-z`.
fn seed(store: &Store, forge: impl FnOnce(&str)) {
    let genuine = store
        .commit_node(&NodeCommit::new("user", 1).part(NewBlob::text("hello")))
        .unwrap()
        .id;
    store
        .log_action(&NewAction {
            timestamp: 5,
            action_type: "BOOT".into(),
            from_node: None,
            to_node: Some(genuine.clone()),
            metadata: None,
        })
        .unwrap();
    forge("nodes");
    store.set_ref("PI_HEAD", "cyc-z").unwrap();
}

fn assert_cycle<T: std::fmt::Debug>(what: &str, got: Result<T, DagError>) {
    match got {
        Err(DagError::Cycle { node }) => {
            assert!(node.starts_with("cyc-"), "{what}: names {node}");
            let text = DagError::Cycle { node: node.clone() }.to_string();
            assert!(text.contains(&node) && text.contains("loops"), "{text}");
        }
        other => panic!("{what}: expected a cycle error, got {other:?}"),
    }
}

/// Every reading path over the forged store.
fn every_read_fails(backend: &str, store: &Store) {
    let at = |what: &str| format!("{backend}: {what}");
    for filter in [FilterMode::Default, FilterMode::All] {
        let head = LifeOptions {
            filter,
            ..LifeOptions::default()
        };
        assert_cycle(&at("life at HEAD"), life(store, &head, 10));
        // The focus on the cycle: its subtree reaches it again.
        let on_cycle = LifeOptions {
            focus: Some("cyc-x".into()),
            ancestors: 0,
            filter,
            ..LifeOptions::default()
        };
        assert_cycle(&at("life on the cycle"), life(store, &on_cycle, 10));
        // The focus's parent on the cycle, one ancestor shown: the siblings' counts meet it.
        let below = LifeOptions {
            focus: Some("cyc-f".into()),
            ancestors: 1,
            filter,
            ..LifeOptions::default()
        };
        assert_cycle(&at("life under the cycle"), life(store, &below, 10));
    }
    for hash in ["HEAD", "cyc-x", "cyc-f"] {
        assert_cycle(&at("recall"), recall(store, &RecallOptions::new(hash)));
    }
    for mode in [TraceMode::Default, TraceMode::All] {
        let opts = TraceOptions {
            mode,
            ..TraceOptions::default()
        };
        assert_cycle(&at("trace"), trace(store, &opts, &FixedOffset(0)));
    }
    assert_cycle(&at("lineage"), store.lineage("cyc-z", None));
    assert_cycle(&at("lineage with blobs"), store.lineage_with_blobs("cyc-z"));
    assert_cycle(&at("load_entries"), store.load_entries(Some("cyc-z")));
    assert_cycle(&at("subtree"), store.subtree("cyc-x", 1_000_000));
    assert_cycle(&at("descendant counts"), store.descendant_counts("cyc-p"));
    let mut lines = 0usize;
    assert_cycle(
        &at("entry lines"),
        store.each_entry_line("cyc-z", &mut |_| {
            lines += 1;
            true
        }),
    );
    // What stays readable: a bounded lineage short of the loop, the forged rows themselves, and
    // fsck, which names every forged node (their ids match no hash of their content).
    let short: Vec<String> = store
        .lineage("cyc-z", Some(2))
        .unwrap()
        .into_iter()
        .map(|n| n.id)
        .collect();
    assert_eq!(short, ["cyc-z", "cyc-x"], "{backend}");
    assert!(store.node("cyc-x").unwrap().is_some());
    let report = store.fsck().unwrap();
    assert!(!report.is_clean(), "{backend}");
    for (id, _, _) in FORGED {
        assert!(
            report.problems.iter().any(|p| p.key == *id),
            "{backend}: fsck names {id}: {:?}",
            report.problems
        );
    }
}

#[test]
fn a_forged_cycle_fails_every_walk_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("playfilo.db");
    let store = Store::open(&path).unwrap();
    seed(&store, |table| {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(&forged_sql(table)).unwrap();
    });
    every_read_fails("sqlite", &store);
}

#[test]
fn a_forged_cycle_fails_every_walk_on_postgres() {
    let Some(pg) = PgServer::start().unwrap() else {
        return;
    };
    let store = Store::connect(&pg.url()).unwrap();
    seed(&store, |table| {
        pg.psql(&forged_sql(&format!("playfilo.{table}"))).unwrap();
    });
    every_read_fails("postgres", &store);
}

/// A cycle far longer than the exactly remembered ids (4,096) is still caught, within about
/// twice its length, by the constant-memory check that follows.
#[test]
fn a_long_forged_cycle_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("playfilo.db");
    let store = Store::open(&path).unwrap();
    {
        let mut conn = rusqlite::Connection::open(&path).unwrap();
        let tx = conn.transaction().unwrap();
        let n = 10_000;
        // A tail of 3,000 nodes into a cycle of 10,000.
        for i in 0..n {
            let parent = format!("loop-{}", (i + 1) % n);
            tx.execute(
                "INSERT INTO nodes (id, parent_id, role, parts_list, timestamp) VALUES (?1, ?2, 'user', '[]', 0)",
                (format!("loop-{i}"), parent),
            )
            .unwrap();
        }
        for i in 0..3_000 {
            let parent = if i == 2_999 {
                "loop-0".to_owned()
            } else {
                format!("tail-{}", i + 1)
            };
            tx.execute(
                "INSERT INTO nodes (id, parent_id, role, parts_list, timestamp) VALUES (?1, ?2, 'user', '[]', 0)",
                (format!("tail-{i}"), parent),
            )
            .unwrap();
        }
        tx.commit().unwrap();
    }
    store.set_ref("PI_HEAD", "tail-0").unwrap();
    let got = store.lineage("tail-0", None);
    assert!(
        matches!(&got, Err(DagError::Cycle { node }) if node.starts_with("loop-")),
        "{:?}",
        got.map(|l| l.len())
    );
    assert!(matches!(
        recall(&store, &RecallOptions::new("HEAD")),
        Err(DagError::Cycle { .. })
    ));
}

/// A genuine chain deeper than the bound: the walk stops with an error naming where it
/// started and where it stopped; within the bound everything reads as before.
#[test]
fn an_over_deep_chain_is_refused() {
    let store = Store::open_in_memory().unwrap();
    let mut head = None;
    for i in 0..40 {
        let mut commit = NodeCommit::new("user", i).part(NewBlob::text(format!("turn {i}")));
        if let Some(parent) = head.take() {
            commit = commit.parent(Parent::Node(parent));
        }
        head = Some(store.commit_node(&commit).unwrap().id);
    }
    let head = head.unwrap();
    store.set_ref("PI_HEAD", &head).unwrap();
    assert_eq!(store.lineage(&head, None).unwrap().len(), 40);
    store.set_max_depth(25);
    match store.lineage(&head, None) {
        Err(e @ DagError::TooDeep { .. }) => {
            let DagError::TooDeep { start, limit, .. } = &e else {
                unreachable!()
            };
            assert_eq!((start.as_str(), *limit), (head.as_str(), 25));
            assert!(e.to_string().contains(&head[..12]), "{e}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        recall(&store, &RecallOptions::new("HEAD")),
        Err(DagError::TooDeep { .. })
    ));
    assert!(matches!(
        store.load_entries(Some(&head)),
        Err(DagError::TooDeep { .. })
    ));
    // life reads only its few ancestors: still fine.
    assert!(life(&store, &LifeOptions::default(), 100).is_ok());
}

/// A deep child tree renders without recursion: 3,000 levels under the focus, all drawn (the
/// gutter grows four columns a level, so the text grows with the square of the depth).
#[test]
fn life_draws_a_deep_tree_without_recursion() {
    let store = Store::open_in_memory().unwrap();
    let root = store
        .commit_node(&NodeCommit::new("user", 0).part(NewBlob::text("root")))
        .unwrap()
        .id;
    let commits: Vec<NodeCommit> = (1..3_000)
        .map(|i| {
            let c = NodeCommit::new(if i % 2 == 0 { "user" } else { "assistant" }, i)
                .part(NewBlob::text(format!("t{i}")));
            if i == 1 {
                c.parent(Parent::Node(root.clone()))
            } else {
                c.parent(Parent::Previous)
            }
        })
        .collect();
    store.commit_batch(&commits).unwrap();
    let opts = LifeOptions {
        focus: Some(root[..12].to_owned()),
        max_depth: 100_000,
        ..LifeOptions::default()
    };
    // A small stack: the old recursive renderer overflowed it.
    let text = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || life(&store, &opts, 10).unwrap())
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(text.lines().count(), 3_000 + 1, "{}", &text[..200]);
}
