//! One behavioural suite, two backends: every check runs on an SQLite file and on a private
//! PostgreSQL server (skipped where the machine has none, unless `FILO_REQUIRE_POSTGRES` is set),
//! and the two must agree byte for byte: ids, refs, the action log, life, recall, trace and the
//! recovered session entries.

use filo_dag::golden::{self, NOW, NOW_FIRST_LIFE, ids};
use filo_dag::render::{
    FilterMode, FixedOffset, LifeOptions, RecallOptions, TraceMode, TraceOptions, life, recall,
    trace,
};
use filo_dag::{
    Create, DagError, Expect, NewAction, NewBlob, NodeCommit, PG_LAYOUT_VERSION, Parent, Store,
    role,
};
use filo_testkit::pg::PgServer;
use pretty_assertions::assert_eq;

/// The two backends of one test: a fresh SQLite file and, where possible, a fresh PostgreSQL.
struct Both {
    _dir: tempfile::TempDir,
    pg: Option<PgServer>,
    stores: Vec<(&'static str, Store)>,
}

fn both() -> Both {
    let dir = tempfile::tempdir().unwrap();
    let mut stores = vec![(
        "sqlite",
        Store::open(dir.path().join("playfilo.db")).unwrap(),
    )];
    let pg = PgServer::start().unwrap();
    if let Some(pg) = &pg {
        stores.push(("postgres", Store::connect(&pg.url()).unwrap()));
    }
    Both {
        _dir: dir,
        pg,
        stores,
    }
}

/// Every rendering the golden scenario has, on one store.
fn renderings(store: &Store) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut add = |name: String, text: Result<String, DagError>| {
        out.push((name, text.unwrap_or_else(|e| format!("error: {e}"))));
    };
    let filters = [
        FilterMode::Default,
        FilterMode::NoTools,
        FilterMode::UserOnly,
        FilterMode::All,
    ];
    let focuses = [
        None,
        Some("127c76bc"),
        Some("pi:7c9e6679-7425-40de-944b-e07fc1f90ae7"),
        Some("pi:11223344"),
        Some("b8"),
        Some("nothing-like-this"),
    ];
    for filter in filters {
        for focus in focuses {
            for ancestors in [0, 2, 5] {
                for children in [true, false] {
                    let opts = LifeOptions {
                        focus: focus.map(Into::into),
                        ancestors,
                        filter,
                        children,
                        ..LifeOptions::default()
                    };
                    add(
                        format!("life {focus:?} {ancestors} {filter:?} {children}"),
                        life(store, &opts, NOW),
                    );
                }
            }
        }
        for hash in ["HEAD", "127c76bc", "pi:55667788", "5fc17736", "zzz"] {
            for (budget, context_budget) in [(600, 40), (5000, 200), (50, 10)] {
                let opts = RecallOptions {
                    budget,
                    context_budget,
                    filter,
                    ..RecallOptions::new(hash)
                };
                add(
                    format!("recall {hash} {budget} {context_budget} {filter:?}"),
                    recall(store, &opts),
                );
            }
        }
    }
    for mode in [TraceMode::Default, TraceMode::Switches, TraceMode::All] {
        for limit in [1, 15] {
            let opts = TraceOptions {
                mode,
                limit,
                ..TraceOptions::default()
            };
            add(
                format!("trace {mode:?} {limit}"),
                trace(store, &opts, &FixedOffset(0)),
            );
        }
    }
    out
}

/// Everything a database holds, as the public API reads it (no insertion-order columns).
fn contents(store: &Store) -> String {
    let head = store.get_ref("PI_HEAD").unwrap();
    let mut text = format!("refs {:?}\nactions {:?}\n", store.refs().unwrap(), {
        store.actions().unwrap()
    });
    let mut stats = store.stats().unwrap();
    stats.db_bytes = 0;
    text.push_str(&format!("stats {stats:?}\n"));
    let entries = store.load_entries(head.as_deref()).unwrap();
    text.push_str(&serde_json::to_string(&entries).unwrap());
    text
}

#[test]
fn the_golden_scenario_renders_the_same_on_both_backends() {
    let both = both();
    let mut outputs = Vec::new();
    for (name, store) in &both.stores {
        golden::build(store).unwrap();
        // The node ids are the reference's, whatever the backend.
        for full in [ids::ROW1, ids::ROW4, ids::ROW10, ids::ROW11, ids::ROW12] {
            assert!(
                store.node(full).unwrap().is_some(),
                "{name}: missing {full}"
            );
        }
        assert_eq!(
            store.get_ref("PI_HEAD").unwrap().as_deref(),
            Some(ids::ROW12)
        );
        let report = store.fsck().unwrap();
        assert!(report.is_clean(), "{name}: {:?}", report.problems);
        outputs.push((name, renderings(store), contents(store)));
    }
    let (_, sqlite, sqlite_contents) = &outputs[0];
    assert!(sqlite.len() > 200);
    for (name, rendered, contents) in &outputs[1..] {
        for ((what, a), (_, b)) in sqlite.iter().zip(rendered) {
            assert_eq!(a, b, "{name}: {what}");
        }
        assert_eq!(sqlite_contents, contents, "{name}");
    }
    if both.pg.is_none() {
        eprintln!("PostgreSQL not available: only SQLite ran");
    }
}

#[test]
fn life_before_the_tobe_is_the_same_on_both_backends() {
    let both = both();
    let outs: Vec<String> = both
        .stores
        .iter()
        .map(|(_, store)| {
            golden::build_until(store, 7).unwrap();
            life(store, &LifeOptions::default(), NOW_FIRST_LIFE).unwrap()
        })
        .collect();
    for out in &outs[1..] {
        assert_eq!(&outs[0], out);
    }
}

fn commit(store: &Store, text: &str, ts: i64, expect: Expect) -> Result<String, DagError> {
    let c = NodeCommit::new(role::USER, ts)
        .parent(Parent::Ref("PI_HEAD".into()))
        .part(NewBlob::text(text))
        .external_id(format!("e-{text}"))
        .system_prompt("You are Filo.")
        .move_ref("PI_HEAD", expect);
    store.commit_node(&c).map(|c| c.id)
}

#[test]
fn refs_compare_and_set_and_the_action_log_behave_alike() {
    let both = both();
    let mut seen = Vec::new();
    for (name, store) in &both.stores {
        let a = commit(store, "a", 1, Expect::Value(None)).unwrap();
        let b = commit(store, "b", 2, Expect::Parent).unwrap();
        // A stale expectation writes nothing.
        let err = commit(store, "c", 3, Expect::Value(Some(a.clone()))).unwrap_err();
        assert!(matches!(err, DagError::RefConflict { .. }), "{name}: {err}");
        assert!(
            store.node_id_by_external_id("e-c").unwrap().is_none(),
            "{name}"
        );
        assert_eq!(
            store.get_ref("PI_HEAD").unwrap().as_deref(),
            Some(b.as_str())
        );
        store
            .compare_and_set_ref("PI_HEAD", Some(&b), Some(&a))
            .unwrap();
        assert!(
            store
                .compare_and_set_ref("PI_HEAD", Some(&b), None)
                .is_err()
        );
        store.set_ref("other", &b).unwrap();
        store.clear_ref("other").unwrap();
        assert_eq!(store.get_ref("other").unwrap(), None);
        let first = store
            .log_action(&NewAction {
                timestamp: 10,
                action_type: "BOOT".into(),
                from_node: None,
                to_node: Some(a.clone()),
                metadata: Some("{\"x\":1}".into()),
            })
            .unwrap();
        let second = store
            .log_action(&NewAction {
                timestamp: 11,
                action_type: "INCARNATE".into(),
                from_node: Some(a.clone()),
                to_node: Some(b.clone()),
                metadata: None,
            })
            .unwrap();
        assert_eq!(second, first + 1, "{name}");
        // Prefixes: unique, ambiguous, missing.
        assert_eq!(store.resolve_prefix(&a[..10]).unwrap(), a);
        assert!(matches!(
            store.resolve_prefix("").unwrap_err(),
            DagError::Ambiguous { count: 2, .. }
        ));
        assert!(matches!(
            store.resolve_prefix("zz").unwrap_err(),
            DagError::NotFound(_)
        ));
        assert_eq!(store.resolve("pi:e-b").unwrap(), b);
        // The same blob twice is stored once; the same node twice is not inserted again.
        let again = store
            .commit_node(
                &NodeCommit::new(role::USER, 1)
                    .parent(Parent::Root)
                    .part(NewBlob::text("a"))
                    .external_id("e-a")
                    .system_prompt("You are Filo."),
            )
            .unwrap();
        assert_eq!((again.id.as_str(), again.inserted), (a.as_str(), false));
        seen.push((a, b, contents(store)));
    }
    for other in &seen[1..] {
        assert_eq!(&seen[0], other);
    }
}

#[test]
fn a_batch_is_all_or_nothing_on_both_backends() {
    let both = both();
    for (name, store) in &both.stores {
        let root = commit(store, "root", 1, Expect::Any).unwrap();
        let batch = [
            NodeCommit::new(role::USER, 2)
                .parent(Parent::Node(root.clone()))
                .part(NewBlob::text("one")),
            NodeCommit::new(role::ASSISTANT, 3)
                .parent(Parent::Previous)
                .part(NewBlob::text("two"))
                // Fails: the ref holds `root`, not nothing.
                .move_ref("PI_HEAD", Expect::Value(None)),
        ];
        assert!(store.commit_batch(&batch).is_err(), "{name}");
        let stats = store.stats().unwrap();
        assert_eq!(stats.roles.values().sum::<u64>(), 1, "{name}: {stats:?}");
        assert_eq!(stats.blob_types.get("text"), Some(&1), "{name}");
        let first = NodeCommit::new(role::USER, 2).parent(Parent::Previous);
        assert!(matches!(
            store.commit_batch(&[first]).unwrap_err(),
            DagError::NoPreviousNode { index: 0 }
        ));
    }
}

#[test]
fn a_database_copied_to_postgres_and_back_keeps_every_row() {
    let Some(pg) = PgServer::start().unwrap() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let source = Store::open(dir.path().join("source.db")).unwrap();
    golden::build(&source).unwrap();
    // Nodes whose insertion order differs from their id order: children are listed by it.
    for (i, text) in ["zeta", "alpha", "mid"].iter().enumerate() {
        source
            .commit_node(
                &NodeCommit::new(role::USER, 100 + i as i64)
                    .parent(Parent::Node(ids::ROW1.into()))
                    .part(NewBlob::text(*text)),
            )
            .unwrap();
    }
    let remote = Store::connect(&pg.url()).unwrap();
    let copied = source.copy_into(&remote).unwrap();
    assert_eq!(copied.nodes, 13 + 3);
    assert_eq!(copied.actions, 3);
    let back = Store::open(dir.path().join("back.db")).unwrap();
    let again = remote.copy_into(&back).unwrap();
    assert_eq!(copied, again);
    let expected = renderings(&source);
    for store in [&remote, &back] {
        assert_eq!(contents(&source), contents(store));
        for ((what, a), (_, b)) in expected.iter().zip(renderings(store)) {
            assert_eq!(a, &b, "{what} after copying to {}", store.location());
        }
        assert_eq!(source.actions().unwrap(), store.actions().unwrap());
        assert!(store.fsck().unwrap().is_clean());
        let children: Vec<String> = store
            .children(ids::ROW1)
            .unwrap()
            .into_iter()
            .map(|n| n.id)
            .collect();
        let in_source: Vec<String> = source
            .children(ids::ROW1)
            .unwrap()
            .into_iter()
            .map(|n| n.id)
            .collect();
        assert_eq!(children, in_source);
    }
    // The next action id follows the copied ones.
    let next = remote
        .log_action(&NewAction {
            timestamp: 1,
            action_type: "BOOT".into(),
            from_node: None,
            to_node: None,
            metadata: None,
        })
        .unwrap();
    assert_eq!(next, source.actions().unwrap().last().unwrap().id + 1);
    // A second copy into a database that is no longer empty is refused, and changes nothing.
    let before = contents(&remote);
    let err = source.copy_into(&remote).unwrap_err();
    assert!(err.to_string().contains("is not empty"), "{err}");
    assert_eq!(before, contents(&remote));
}

#[test]
fn a_newer_postgres_layout_is_refused_and_left_untouched() {
    let Some(pg) = PgServer::start().unwrap() else {
        return;
    };
    let store = Store::connect(&pg.url()).unwrap();
    commit(&store, "kept", 1, Expect::Any).unwrap();
    drop(store);
    let newer = PG_LAYOUT_VERSION + 1;
    pg.psql(&format!(
        "UPDATE playfilo.meta SET value = '{newer}' WHERE key = 'layout_version'"
    ))
    .unwrap();
    let err = Store::connect(&pg.url()).unwrap_err();
    assert!(
        matches!(err, DagError::PgTooNew { found, .. } if found == newer),
        "{err}"
    );
    assert!(
        err.to_string().contains("newer than the supported"),
        "{err}"
    );
    let rows = pg.psql("SELECT count(*) FROM playfilo.nodes").unwrap();
    assert_eq!(rows.trim(), "1");
    let version = pg
        .psql("SELECT value FROM playfilo.meta WHERE key = 'layout_version'")
        .unwrap();
    assert_eq!(version.trim(), newer.to_string());
}

#[test]
fn connection_errors_name_the_server_without_its_password() {
    // A port nobody listens on (bound, then released).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://filo:hunter2@127.0.0.1:{port}/x?sslmode=disable");
    let err = Store::open_location(&url, Create::IfMissing).unwrap_err();
    let text = err.to_string();
    assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
    assert!(text.contains("***"), "{text}");
}

#[test]
fn hosts_starting_together_migrate_once() {
    let Some(pg) = PgServer::start().unwrap() else {
        return;
    };
    let url = pg.url();
    let handles: Vec<_> = (0..6)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || Store::connect(&url).map(|s| s.is_empty()))
        })
        .collect();
    for h in handles {
        assert!(h.join().unwrap().unwrap().unwrap());
    }
    let version = pg
        .psql("SELECT value FROM playfilo.meta WHERE key = 'layout_version'")
        .unwrap();
    assert_eq!(version.trim(), PG_LAYOUT_VERSION.to_string());
}
