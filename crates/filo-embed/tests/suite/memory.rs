//! The memory stays on: an embedded run mirrors its entries into the Playfilo DAG under its own
//! head, offers the memory tools under the tool policy, and a memory that cannot be opened is
//! reported without losing the turn or touching the file.

use std::sync::Arc;

use filo_embed::NullSink;
use filo_testkit::Turn;
use serde_json::{Value, json};

use super::Harness;

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|ts| {
            ts.iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_run_is_mirrored_into_the_dag_under_its_own_head() {
    let h = Harness::new(vec![Turn::text("remembered")], json!({})).await;
    let r = h
        .embedder
        .run(h.params("mem1", "keep this"), Arc::new(NullSink))
        .await
        .unwrap();
    assert!(r.meta.warnings.is_empty(), "{:?}", r.meta.warnings);
    let names = tool_names(&h.mock.last_request().unwrap().body);
    for t in ["life", "recall", "trace", "tobe", "read", "bash"] {
        assert!(names.contains(&t.to_owned()), "{t} offered: {names:?}");
    }
    let db = h.dir.path().join("home/.playfilo/playfilo.db");
    let store = filo_dag::Store::open(&db).unwrap();
    let head = store
        .get_ref("PI_HEAD:mem1")
        .unwrap()
        .expect("the session's own head");
    assert_eq!(
        store.get_ref("PI_HEAD").unwrap().as_deref(),
        Some(head.as_str())
    );
    let entries = store.load_entries(Some(&head)).unwrap();
    let texts: Vec<String> = entries.iter().map(Value::to_string).collect();
    assert!(texts.iter().any(|t| t.contains("keep this")), "{texts:#?}");
    assert!(texts.iter().any(|t| t.contains("remembered")), "{texts:#?}");
    // Every message line of the session file is a node of the lineage.
    let file = std::fs::read_to_string(h.session_file("mem1")).unwrap();
    let messages = file
        .lines()
        .filter(|l| l.contains(r#""type":"message""#))
        .count();
    let mirrored = entries.iter().filter(|e| e["type"] == "message").count();
    assert_eq!(mirrored, messages);
}

#[tokio::test]
async fn the_memory_tools_are_under_the_tool_policy_and_the_memory_can_be_moved_or_off() {
    let h = Harness::new(
        vec![Turn::text("one"), Turn::text("two")],
        json!({"tools": {"deny": ["tobe"]}, "memory": {"db": "memory/dag.db"}}),
    )
    .await;
    h.embedder
        .run(h.params("mem2", "hi"), Arc::new(NullSink))
        .await
        .unwrap();
    let names = tool_names(&h.mock.last_request().unwrap().body);
    assert!(
        names.contains(&"life".to_owned()) && !names.contains(&"tobe".to_owned()),
        "{names:?}"
    );
    let moved = h.dir.path().join("state/memory/dag.db");
    let store = filo_dag::Store::open(&moved).unwrap();
    assert!(store.get_ref("PI_HEAD:mem2").unwrap().is_some());
    assert!(!h.dir.path().join("home/.playfilo/playfilo.db").exists());

    let mut config = h.embedder.config().as_ref().clone();
    config.memory.enabled = false;
    h.embedder.set_config(config);
    h.embedder
        .run(h.params("mem3", "hi"), Arc::new(NullSink))
        .await
        .unwrap();
    let names = tool_names(&h.mock.last_request().unwrap().body);
    assert!(!names.contains(&"life".to_owned()), "{names:?}");
    assert!(store.get_ref("PI_HEAD:mem3").unwrap().is_none());
}

#[tokio::test]
async fn a_memory_that_cannot_be_opened_is_reported_and_left_untouched() {
    let h = Harness::new(vec![Turn::text("still answered")], json!({})).await;
    let db = h.dir.path().join("home/.playfilo/playfilo.db");
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    let junk = b"this is not a sqlite database, and it is somebody's file".repeat(40);
    std::fs::write(&db, &junk).unwrap();
    let r = h
        .embedder
        .run(h.params("mem4", "hello"), Arc::new(NullSink))
        .await
        .unwrap();
    assert_eq!(r.payloads[0].text.as_deref(), Some("still answered"));
    assert_eq!(r.meta.warnings.len(), 1, "{:?}", r.meta.warnings);
    assert!(
        r.meta.warnings[0].starts_with("memory disabled for this run"),
        "{:?}",
        r.meta.warnings
    );
    assert_eq!(
        std::fs::read(&db).unwrap(),
        junk,
        "the file is not rewritten"
    );
    let file = std::fs::read_to_string(h.session_file("mem4")).unwrap();
    assert!(
        file.contains("still answered"),
        "the turn is saved in the session file"
    );
}

fn writer_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim() == "playfilo-writer")
        .count()
}

/// Counts the writer threads of the whole process, so it runs alone in a process of its own.
#[tokio::test]
async fn every_session_shares_one_memory_writer() {
    if !filo_testkit::alone("suite::memory::every_session_shares_one_memory_writer") {
        return;
    }
    let turns = (0..6).map(|i| Turn::text(format!("answer {i}"))).collect();
    let h = Harness::new(turns, json!({})).await;
    for i in 0..6 {
        h.embedder
            .run(h.params(&format!("many-{i}"), "hello"), Arc::new(NullSink))
            .await
            .unwrap();
    }
    assert_eq!(
        h.embedder.cached_sessions(),
        6,
        "six idle sessions, each with its memory view"
    );
    assert_eq!(writer_threads(), 1, "one writer thread for all of them");
    let db = h.dir.path().join("home/.playfilo/playfilo.db");
    let store = filo_dag::Store::open(&db).unwrap();
    for i in 0..6 {
        let head = store
            .get_ref(&format!("PI_HEAD:many-{i}"))
            .unwrap()
            .expect("own head");
        let entries = store.load_entries(Some(&head)).unwrap();
        assert!(
            entries
                .iter()
                .any(|e| e.to_string().contains(&format!("answer {i}")))
        );
    }
}
