//! `filo dag …` against the golden database of the Playfilo spec (Appendix B).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use filo_dag::golden::{self, NOW, NOW_FIRST_LIFE};
use filo_dag::render::{
    FilterMode, FixedOffset, LifeOptions, RecallOptions, TraceMode, TraceOptions,
};
use filo_dag::{Store, render};
use pretty_assertions::assert_eq;

fn golden_db(dir: &Path, rows: usize) -> PathBuf {
    let path = dir.join("playfilo.db");
    let store = Store::open(&path).unwrap();
    golden::build_until(&store, rows).unwrap();
    path
}

fn filo(args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_filo"));
    cmd.args(args).env_remove("PLAYFILO_DB").env("TZ", "UTC");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn stdout_ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn stderr_fail(out: &Output) -> String {
    assert_eq!(
        out.status.code(),
        Some(1),
        "stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(out.stdout.is_empty());
    let err = String::from_utf8(out.stderr.clone()).unwrap();
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    err
}

#[test]
fn life_recall_trace_print_the_spec_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let db = golden_db(dir.path(), golden::ROWS);
    let db_s = db.to_str().unwrap();
    let store = Store::open(&db).unwrap();
    let now = NOW.to_string();

    let out = stdout_ok(&filo(
        &[
            "dag",
            "life",
            "--db",
            db_s,
            "--now",
            &now,
            "--focus-hash",
            "127c76bc",
            "--ancestors",
            "0",
            "--filter-mode",
            "all",
        ],
        &[],
    ));
    let opts = LifeOptions {
        focus: Some("127c76bc".into()),
        ancestors: 0,
        filter: FilterMode::All,
        ..LifeOptions::default()
    };
    assert_eq!(out, render::life(&store, &opts, NOW).unwrap() + "\n");
    insta::assert_snapshot!("cli_life_root_all", out);

    let out = stdout_ok(&filo(
        &[
            "dag",
            "life",
            "--now",
            &now,
            "--focus-hash",
            "pi:7c9e6679-7425-40de-944b-e07fc1f90ae7",
            "--ancestors",
            "2",
            "--filter-mode",
            "all",
        ],
        &[("PLAYFILO_DB", db_s)],
    ));
    assert!(out.contains("(5 descendants)"));
    insta::assert_snapshot!("cli_life_siblings", out);

    let out = stdout_ok(&filo(
        &[
            "dag",
            "recall",
            "HEAD",
            "--db",
            db_s,
            "--budget",
            "600",
            "--context-budget",
            "40",
        ],
        &[],
    ));
    let opts = RecallOptions {
        budget: 600,
        context_budget: 40,
        ..RecallOptions::new("HEAD")
    };
    assert_eq!(out, render::recall(&store, &opts).unwrap() + "\n");
    insta::assert_snapshot!("cli_recall_head", out);

    let out = stdout_ok(&filo(
        &["dag", "trace", "--db", db_s, "--filter-mode", "switches"],
        &[],
    ));
    let opts = TraceOptions {
        mode: TraceMode::Switches,
        ..TraceOptions::default()
    };
    assert_eq!(
        out,
        render::trace(&store, &opts, &FixedOffset(0)).unwrap() + "\n"
    );
    insta::assert_snapshot!("cli_trace_switches", out);

    // trace prints local time: TZ applies (a POSIX TZ string, so no tzdata is needed).
    let tokyo = stdout_ok(&filo(&["dag", "trace", "--db", db_s], &[("TZ", "JST-9")]));
    assert!(
        tokyo.contains("[2026-01-01 20:01] BOOT: null → dcb81d41c76d"),
        "{tokyo}"
    );
}

#[test]
fn life_at_head_before_the_tobe_and_the_terminal_ref() {
    let dir = tempfile::tempdir().unwrap();
    let db = golden_db(dir.path(), 7);
    let out = stdout_ok(&filo(
        &[
            "dag",
            "life",
            "--db",
            db.to_str().unwrap(),
            "--now",
            &NOW_FIRST_LIFE.to_string(),
        ],
        &[],
    ));
    insta::assert_snapshot!("cli_life_at_head", out);
    assert!(out.ends_with(
        "(now) assistant: [life: {\"ancestors\":3}]  <-- FOCUS, HEAD\n--- end of archive ---\n"
    ));

    let dir = tempfile::tempdir().unwrap();
    let db = golden_db(dir.path(), golden::ROWS);
    let db_s = db.to_str().unwrap();
    let out = stdout_ok(&filo(
        &[
            "dag",
            "life",
            "--db",
            db_s,
            "--ref",
            "terminal_head",
            "--now",
            &NOW.to_string(),
        ],
        &[],
    ));
    assert!(out.contains("(10 descendants)\n└── [c00007ea2fc0] (2h ago) model: \"Terminal here: checked API quota.\"  <-- FOCUS, HEAD"));
    let flat = stdout_ok(&filo(
        &[
            "dag",
            "life",
            "--db",
            db_s,
            "--children",
            "false",
            "--now",
            &NOW.to_string(),
        ],
        &[],
    ));
    assert_eq!(flat.lines().count(), 6, "{flat}");
}

#[test]
fn show_stats_and_fsck() {
    let dir = tempfile::tempdir().unwrap();
    let db = golden_db(dir.path(), golden::ROWS);
    let db_s = db.to_str().unwrap();
    let shown: serde_json::Value = serde_json::from_str(&stdout_ok(&filo(
        &["dag", "show", "pi:e5f6a7b8", "--db", db_s],
        &[],
    )))
    .unwrap();
    assert_eq!(shown["role"], "assistant");
    assert_eq!(shown["parts"].as_array().unwrap().len(), 3);
    assert_eq!(shown["parts"][2]["content"]["arguments"]["command"], "ls");
    assert_eq!(shown["config"]["model"]["id"], "claude-sonnet-4-5");
    assert_eq!(shown["children"].as_array().unwrap().len(), 1);

    let stats = stdout_ok(&filo(&["dag", "stats", "--db", db_s], &[]));
    assert!(stats.starts_with("nodes: 13\n"), "{stats}");
    assert!(
        stats.contains(
            "  PI_HEAD -> dcb81d41c76d06f173e2c9c094c74f487fb5ef6a02454e7b5d8572453aa4aa7d"
        )
    );
    assert!(stats.contains("leaves: 3"));

    let fsck = stdout_ok(&filo(&["dag", "fsck", "--db", db_s], &[]));
    assert_eq!(
        fsck,
        "checked 17 blobs (0 playtiss skipped), 13 nodes (shapes: pi 11, plain 2): 0 problem(s)\n"
    );

    let conn = rusqlite_free_tamper(&db);
    assert!(conn);
    let out = filo(&["dag", "fsck", "--db", db_s], &[]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("ref dangling: points at missing node abc\n"),
        "{text}"
    );
    assert!(text.ends_with("1 problem(s)\n"));
}

#[test]
fn entries_print_the_lineage_as_the_resume_loads_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = golden_db(dir.path(), golden::ROWS);
    let db_s = db.to_str().unwrap();
    let store = Store::open(&db).unwrap();
    let lines = |out: String| -> Vec<serde_json::Value> {
        out.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };

    // HEAD (#12): the six entries of the spec's post-tobe context, parents chained through the
    // external ids, each line the store's entry as it serializes.
    let out = stdout_ok(&filo(&["dag", "entries", "--db", db_s], &[]));
    let head = store.get_ref("PI_HEAD").unwrap().unwrap();
    let want = store.load_entries(Some(&head)).unwrap();
    let expected: String = want
        .iter()
        .map(|e| serde_json::to_string(e).unwrap() + "\n")
        .collect();
    assert_eq!(out, expected);
    let got = lines(out);
    let ids: Vec<&str> = got.iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert_eq!(ids, golden::ROW12_ENTRY_IDS);
    for pair in got.windows(2) {
        assert_eq!(pair[1]["parentId"], pair[0]["id"]);
    }
    assert_eq!(got[2]["message"]["toolName"], "bash");

    // A node by external id, and another ref as HEAD: the terminal's lineage (#1 then #13).
    let out = lines(stdout_ok(&filo(
        &["dag", "entries", "pi:e5f6a7b8", "--db", db_s],
        &[],
    )));
    assert_eq!(out.len(), 2);
    assert_eq!(out[1]["message"]["role"], "assistant");
    let out = lines(stdout_ok(&filo(
        &["dag", "entries", "--ref", "terminal_head", "--db", db_s],
        &[],
    )));
    assert_eq!(out.len(), 2);
    assert_eq!(out[1]["message"]["role"], "model");

    // An unknown node is the one-line error every dag command gives.
    let err = stderr_fail(&filo(&["dag", "entries", "nope00", "--db", db_s], &[]));
    assert!(err.contains("nope00"), "{err}");
}

/// Adds a dangling ref through the store itself (no raw SQL needed).
fn rusqlite_free_tamper(db: &Path) -> bool {
    Store::open(db).unwrap().set_ref("dangling", "abc").is_ok()
}

#[test]
fn errors_are_one_line_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.db");
    let err = stderr_fail(&filo(
        &["dag", "life", "--db", missing.to_str().unwrap()],
        &[],
    ));
    assert!(err.starts_with("error: no Playfilo database at "), "{err}");
    assert!(!missing.exists(), "a missing DB is not created");

    let db = golden_db(dir.path(), golden::ROWS);
    let db_s = db.to_str().unwrap();
    let err = stderr_fail(&filo(&["dag", "recall", "ffff", "--db", db_s], &[]));
    assert_eq!(err, "error: Node not found for \"ffff\".\n");
    let err = stderr_fail(&filo(&["dag", "show", "c", "--db", db_s], &[]));
    assert_eq!(err, "error: Ambiguous hash prefix \"c\" matches 2 nodes.\n");
    let err = stderr_fail(&filo(
        &["dag", "life", "--db", db_s, "--ref", "nobody"],
        &[],
    ));
    assert_eq!(err, "error: No HEAD set and no focus_hash provided.\n");

    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "hello").unwrap();
    let err = stderr_fail(&filo(
        &["dag", "stats", "--db", text.to_str().unwrap()],
        &[],
    ));
    assert!(err.contains("is not a Playfilo database"), "{err}");
    assert_eq!(std::fs::read_to_string(&text).unwrap(), "hello");
}

#[test]
fn the_default_database_is_under_home() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join(".playfilo")).unwrap();
    golden_db(&home.path().join(".playfilo"), golden::ROWS);
    let out = stdout_ok(&filo(
        &["dag", "trace"],
        &[("HOME", home.path().to_str().unwrap())],
    ));
    assert!(out.contains("INCARNATE: 5fc17736fa65 → b5c08ffdc5d3"));
}

/// Every `filo dag` command answers the same from a PostgreSQL copy of the golden database as
/// from the file, and `filo dag migrate` copies it there and back with every row.
#[test]
fn every_command_answers_the_same_on_postgres_and_migrate_round_trips() {
    let Some(pg) = filo_testkit::pg::PgServer::start().unwrap() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = golden_db(dir.path(), golden::ROWS);
    let file = db.to_str().unwrap();
    let url = pg.url();
    let copied = stdout_ok(&filo(
        &["dag", "migrate", "--from", file, "--to", &url],
        &[],
    ));
    assert!(
        copied.starts_with("copied ") && copied.contains(" 13 nodes, "),
        "{copied}"
    );
    let now = NOW.to_string();
    let commands: Vec<Vec<&str>> = vec![
        vec!["life", "--now", &now],
        vec![
            "life",
            "--focus-hash",
            "127c76bc",
            "--ancestors",
            "0",
            "--filter-mode",
            "all",
            "--now",
            &now,
        ],
        vec![
            "life",
            "--focus-hash",
            "pi:11223344",
            "--children",
            "false",
            "--now",
            &now,
        ],
        vec![
            "recall",
            "HEAD",
            "--budget",
            "600",
            "--context-budget",
            "40",
        ],
        vec!["recall", "pi:55667788", "--filter-mode", "user-only"],
        vec!["trace", "--filter-mode", "switches"],
        vec!["trace", "--filter-mode", "all", "--limit", "2"],
        vec!["show", "pi:e5f6a7b8"],
        vec!["fsck"],
    ];
    for command in &commands {
        let on = |db: &str| {
            let mut args = vec!["dag"];
            args.extend(command.iter().copied());
            args.extend(["--db", db]);
            stdout_ok(&filo(&args, &[]))
        };
        assert_eq!(on(file), on(&url), "filo dag {command:?}");
    }
    // stats: the same counts; only the size line differs between the engines.
    let stats = |db: &str| -> Vec<String> {
        stdout_ok(&filo(&["dag", "stats", "--db", db], &[]))
            .lines()
            .filter(|l| !l.starts_with("size:"))
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(stats(file), stats(&url));
    // And back into a new file: the same answers again.
    let back = dir.path().join("back.db");
    let back_s = back.to_str().unwrap();
    let again = stdout_ok(&filo(
        &["dag", "migrate", "--from", &url, "--to", back_s],
        &[],
    ));
    assert_eq!(copied.split(" from ").next(), again.split(" from ").next());
    for command in &commands {
        let mut args = vec!["dag"];
        args.extend(command.iter().copied());
        let run = |db: &str| {
            let mut a = args.clone();
            a.extend(["--db", db]);
            stdout_ok(&filo(&a, &[]))
        };
        assert_eq!(
            run(file),
            run(back_s),
            "filo dag {command:?} after the round trip"
        );
    }
    // A destination that already holds a memory is refused and left as it was.
    let err = stderr_fail(&filo(
        &["dag", "migrate", "--from", file, "--to", &url],
        &[],
    ));
    assert!(err.contains("is not empty"), "{err}");
    assert_eq!(stats(file), stats(&url));
}
