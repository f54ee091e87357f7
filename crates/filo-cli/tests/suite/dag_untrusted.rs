//! `filo dag` over a memory another program forged: a cycle written with raw SQL (SQLite and
//! PostgreSQL) makes every reading command end with a clear error naming a node, in bounded
//! memory (the child's peak RSS, read from `/proc`), instead of running out of memory or spinning.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use filo_dag::{NewAction, NewBlob, NodeCommit, Store};
use filo_testkit::pg::PgServer;

/// The bound of the issue: every command stays under 100 MiB.
const RSS_BOUND_KIB: u64 = 100 * 1024;

/// A hang guard only (never reached by a passing run): the child is killed and the test fails.
const HANG_GUARD: Duration = Duration::from_secs(120);

pub struct Ran {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// Peak resident set of the child (`VmHWM`), in KiB.
    pub peak_kib: u64,
}

fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Runs `filo args…`, sampling the child's peak RSS every millisecond until it exits; a child
/// that grows past twice the bound is killed at once (the old code ran out of memory).
pub fn filo_measured(args: &[&str]) -> Ran {
    let mut child = Command::new(env!("CARGO_BIN_EXE_filo"))
        .args(args)
        .env_remove("PLAYFILO_DB")
        .env("TZ", "UTC")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pipe = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = pipe(Box::new(child.stdout.take().unwrap()));
    let err = pipe(Box::new(child.stderr.take().unwrap()));
    let pid = child.id();
    let started = Instant::now();
    let mut peak = 0u64;
    let status = loop {
        if let Some(kib) = vm_hwm_kib(pid) {
            peak = peak.max(kib);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if peak > 2 * RSS_BOUND_KIB || started.elapsed() > HANG_GUARD {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "filo {args:?} killed: peak {peak} KiB after {:?}",
                started.elapsed()
            );
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    Ran {
        code: status.code(),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
        peak_kib: peak,
    }
}

const FORGED: &[(&str, &str, &str)] = &[
    ("cyc-x", "cyc-y", "user"),
    ("cyc-y", "cyc-x", "assistant"),
    ("cyc-z", "cyc-x", "user"),
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

/// A genuine node with an action, the forged rows, `PI_HEAD` on the forged `cyc-z`.
fn seed(store: &Store, forge: impl FnOnce()) {
    let genuine = store
        .commit_node(&NodeCommit::new("user", 1).part(NewBlob::text("hello")))
        .unwrap()
        .id;
    store
        .log_action(&NewAction {
            timestamp: 5,
            action_type: "BOOT".into(),
            from_node: None,
            to_node: Some(genuine),
            metadata: None,
        })
        .unwrap();
    forge();
    store.set_ref("PI_HEAD", "cyc-z").unwrap();
}

fn every_command(backend: &str, db: &str) {
    let loops: &[&[&str]] = &[
        &["life"],
        &["life", "--focus-hash", "cyc-x", "--max-depth", "1000000"],
        &["life", "--filter-mode", "all", "--ancestors", "1000000"],
        &["entries"],
        &["entries", "cyc-x"],
        &["recall", "HEAD"],
        &["recall", "cyc-y", "--budget", "1000000"],
        &["trace"],
        &["trace", "--filter-mode", "all", "--limit", "1000"],
    ];
    for command in loops {
        let mut args = vec!["dag", "--db", db];
        args.extend_from_slice(command);
        let ran = filo_measured(&args);
        assert_eq!(ran.code, Some(1), "{backend} {command:?}: {}", ran.stdout);
        assert!(
            ran.stderr.contains("loops: node cyc-") && ran.stderr.contains("own ancestor"),
            "{backend} {command:?}: {}",
            ran.stderr
        );
        assert!(
            ran.peak_kib < RSS_BOUND_KIB,
            "{backend} {command:?}: peak {} KiB",
            ran.peak_kib
        );
    }
    // show reads one node: it answers.
    let ran = filo_measured(&["dag", "--db", db, "show", "cyc-x"]);
    assert_eq!(ran.code, Some(0), "{backend}: {}", ran.stderr);
    assert!(
        ran.stdout.contains("\"parent_id\": \"cyc-y\""),
        "{}",
        ran.stdout
    );
    assert!(
        ran.peak_kib < RSS_BOUND_KIB,
        "{backend} show: {}",
        ran.peak_kib
    );
    // fsck names every forged node and fails.
    let ran = filo_measured(&["dag", "--db", db, "fsck"]);
    assert_eq!(ran.code, Some(1), "{backend}: {}", ran.stderr);
    for (id, _, _) in FORGED {
        assert!(
            ran.stdout
                .contains(&format!("node {id}: id matches no known hash shape")),
            "{backend}: {}",
            ran.stdout
        );
    }
    assert!(
        ran.peak_kib < RSS_BOUND_KIB,
        "{backend} fsck: {}",
        ran.peak_kib
    );
}

#[test]
fn every_dag_command_refuses_a_forged_cycle_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("playfilo.db");
    let store = Store::open(&path).unwrap();
    seed(&store, || {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(&forged_sql("nodes")).unwrap();
    });
    drop(store);
    every_command("sqlite", path.to_str().unwrap());
}

#[test]
fn every_dag_command_refuses_a_forged_cycle_on_postgres() {
    let Some(pg) = PgServer::start().unwrap() else {
        return;
    };
    let url = pg.url();
    let store = Store::connect(&url).unwrap();
    seed(&store, || {
        pg.psql(&forged_sql("playfilo.nodes")).unwrap();
    });
    drop(store);
    every_command("postgres", &url);
}
