//! A PostgreSQL memory outlives its server's restarts: a call while the server is away fails
//! with `PgUnavailable` (never a panic, never a password), the next call after it is back
//! reconnects by itself.

use std::time::{Duration, Instant};

use filo_dag::{DagError, Expect, NewBlob, NodeCommit, Parent, Store, role};
use filo_testkit::pg::PgServer;

fn commit(store: &Store, text: &str, ts: i64) -> Result<String, DagError> {
    let c = NodeCommit::new(role::USER, ts)
        .parent(Parent::Ref("PI_HEAD".into()))
        .part(NewBlob::text(text))
        .external_id(format!("e-{text}"))
        .move_ref("PI_HEAD", Expect::Any);
    store.commit_node(&c).map(|c| c.id)
}

/// Retries `f` until it succeeds (the reconnect backoff is at most 5 s); panics after 30 s.
fn eventually<T>(mut f: impl FnMut() -> Result<T, DagError>) -> T {
    let started = Instant::now();
    loop {
        match f() {
            Ok(v) => return v,
            Err(e) => {
                assert!(
                    matches!(e, DagError::PgUnavailable { .. }),
                    "not an availability error: {e}"
                );
                assert!(started.elapsed() < Duration::from_secs(30), "{e}");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

#[test]
fn a_store_reconnects_after_its_server_restarts() {
    let Some(mut pg) = PgServer::start().unwrap() else {
        return;
    };
    pg.psql("ALTER USER postgres PASSWORD 'hunter2'").unwrap();
    let url = pg.url().replace("postgres@", "postgres:hunter2@");
    let store = Store::connect(&url).unwrap();
    let first = commit(&store, "before", 1).unwrap();

    // Restarted between two calls: the first call after it finds the old connection broken
    // and is made on a new one.
    pg.stop_now();
    pg.start_again().unwrap();
    let second = commit(&store, "after a restart", 2).unwrap();
    assert_eq!(store.get_ref("PI_HEAD").unwrap(), Some(second.clone()));

    // Away: each call fails, named and without the password; none panics.
    pg.stop_now();
    for i in 0..5 {
        let e = commit(&store, &format!("while away {i}"), 3).unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, DagError::PgUnavailable { .. }), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
        assert!(text.contains(&format!("127.0.0.1:{}", pg.port())), "{text}");
        let e = store.get_ref("PI_HEAD").unwrap_err();
        assert!(matches!(e, DagError::PgUnavailable { .. }), "{e}");
    }
    pg.start_again().unwrap();
    let third = eventually(|| commit(&store, "back again", 4));
    assert_eq!(store.get_ref("PI_HEAD").unwrap(), Some(third.clone()));
    let chain: Vec<String> = store
        .lineage(&third, None)
        .unwrap()
        .into_iter()
        .map(|n| n.id)
        .collect();
    assert_eq!(
        chain,
        [third.clone(), second, first],
        "{}",
        pg.psql("SELECT id, parent_id, seq FROM playfilo.nodes")
            .unwrap()
    );
    assert!(store.fsck().unwrap().problems.is_empty());
}
