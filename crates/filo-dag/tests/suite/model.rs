//! Commits, refs with compare-and-set, the action log, resolution and the graph queries.

use filo_dag::canon::{NodeHashInput, blob_hash, node_hash};
use filo_dag::{
    DagError, Expect, NewAction, NewBlob, NodeCommit, Parent, Store, blob_type, golden, role,
};
use serde_json::json;

fn chain(store: &Store, n: usize) -> Vec<String> {
    let commits: Vec<NodeCommit> = (0..n)
        .map(|i| {
            let parent = if i == 0 {
                Parent::Root
            } else {
                Parent::Previous
            };
            NodeCommit::new(role::USER, 1_000 + i as i64)
                .parent(parent)
                .part(NewBlob::text(format!("m{i}")))
        })
        .collect();
    store
        .commit_batch(&commits)
        .unwrap()
        .into_iter()
        .map(|c| c.id)
        .collect()
}

#[test]
fn commit_writes_blobs_node_and_refs_with_reference_hashes() {
    let store = Store::open_in_memory().unwrap();
    let commit = NodeCommit::new(role::ASSISTANT, 1_700_000_001_000)
        .part(NewBlob::thinking("Let me think."))
        .part(NewBlob::tool_call(
            "toolu_01",
            "bash",
            Some(json!({"command":"ls -la","timeout":30})),
        ))
        .external_id("e5f6a7b8")
        .system_prompt("You are Filo.")
        .config_json("{\"agent\":\"pi\"}")
        .move_ref("PI_HEAD", Expect::Parent);
    let done = store.commit_node(&commit).unwrap();
    assert!(done.inserted);
    let parts = vec![
        blob_hash(blob_type::THINKING, &json!("Let me think.")),
        blob_hash(
            blob_type::TOOL_CALL,
            &json!({"id":"toolu_01","name":"bash","arguments":{"command":"ls -la","timeout":30}}),
        ),
    ];
    let sph = blob_hash(blob_type::SYSTEM_PROMPT, &json!("You are Filo."));
    let expected = node_hash(&NodeHashInput {
        parent_id: None,
        parts: &parts,
        role: role::ASSISTANT,
        timestamp: 1_700_000_001_000,
        external_id: Some("e5f6a7b8"),
        system_prompt_hash: Some(&sph),
    });
    assert_eq!(done.id, expected);
    let node = store.node(&done.id).unwrap().unwrap();
    assert_eq!(node.parts, parts);
    assert_eq!(node.system_prompt_hash.as_deref(), Some(sph.as_str()));
    assert_eq!(node.config_json.as_deref(), Some("{\"agent\":\"pi\"}"));
    // The content column is plain JSON.stringify: insertion order, not canonical.
    let call = store.blob(&parts[1]).unwrap().unwrap();
    assert_eq!(
        call.content,
        r#"{"id":"toolu_01","name":"bash","arguments":{"command":"ls -la","timeout":30}}"#
    );
    assert_eq!(store.get_ref("PI_HEAD").unwrap(), Some(done.id.clone()));
    // Same node again: ignored, first writer wins.
    let mut same = commit.clone().config_json("other");
    same.refs.clear();
    let again = store.commit_node(&same).unwrap();
    assert!(!again.inserted);
    assert_eq!(
        store
            .node(&done.id)
            .unwrap()
            .unwrap()
            .config_json
            .as_deref(),
        Some("{\"agent\":\"pi\"}")
    );
}

#[test]
fn refs_get_set_clear_and_compare_and_set() {
    let store = Store::open_in_memory().unwrap();
    let ids = chain(&store, 2);
    assert_eq!(store.get_ref("PI_HEAD").unwrap(), None);
    store
        .compare_and_set_ref("PI_HEAD", None, Some(&ids[0]))
        .unwrap();
    let err = store
        .compare_and_set_ref("PI_HEAD", None, Some(&ids[1]))
        .unwrap_err();
    assert!(
        matches!(err, DagError::RefConflict { ref actual, .. } if actual.as_deref() == Some(ids[0].as_str()))
    );
    store
        .compare_and_set_ref("PI_HEAD", Some(&ids[0]), Some(&ids[1]))
        .unwrap();
    assert_eq!(store.get_ref("PI_HEAD").unwrap(), Some(ids[1].clone()));
    store.set_ref("terminal_head", "").unwrap();
    assert_eq!(
        store.get_ref("terminal_head").unwrap(),
        None,
        "an empty value is no ref"
    );
    store.clear_ref("PI_HEAD").unwrap();
    assert_eq!(store.get_ref("PI_HEAD").unwrap(), None);
    store.set_ref("a", &ids[0]).unwrap();
    assert_eq!(
        store.refs().unwrap(),
        vec![
            ("a".into(), ids[0].clone()),
            ("terminal_head".into(), String::new())
        ]
    );
}

#[test]
fn a_failed_compare_and_set_writes_nothing() {
    let store = Store::open_in_memory().unwrap();
    let ids = chain(&store, 1);
    store.set_ref("S", &ids[0]).unwrap();
    let commit = NodeCommit::new(role::USER, 5)
        .parent(Parent::Node(ids[0].clone()))
        .part(NewBlob::text("never stored"))
        .move_ref("S", Expect::Value(Some("someone-else".into())));
    assert!(matches!(
        store.commit_node(&commit),
        Err(DagError::RefConflict { .. })
    ));
    assert!(
        store
            .blob(&NewBlob::text("never stored").hash())
            .unwrap()
            .is_none()
    );
    assert_eq!(store.children(&ids[0]).unwrap().len(), 0);
    // Parent from the ref, checked against the same ref: an atomic advance.
    let ok = store
        .commit_node(
            &NodeCommit::new(role::USER, 6)
                .parent(Parent::Ref("S".into()))
                .move_ref("S", Expect::Parent),
        )
        .unwrap();
    assert_eq!(ok.parent_id, Some(ids[0].clone()));
    assert_eq!(store.get_ref("S").unwrap(), Some(ok.id));
}

#[test]
fn a_batch_is_all_or_nothing() {
    let store = Store::open_in_memory().unwrap();
    let err = store
        .commit_batch(&[NodeCommit::new(role::USER, 1).parent(Parent::Previous)])
        .unwrap_err();
    assert!(matches!(err, DagError::NoPreviousNode { index: 0 }));
    let bad = vec![
        NodeCommit::new(role::USER, 1).part(NewBlob::text("a")),
        NodeCommit::new(role::USER, 2)
            .parent(Parent::Previous)
            .move_ref("R", Expect::Value(Some("x".into()))),
    ];
    assert!(store.commit_batch(&bad).is_err());
    assert!(store.blob(&NewBlob::text("a").hash()).unwrap().is_none());
}

#[test]
fn the_action_log_keeps_order_and_text() {
    let store = Store::open_in_memory().unwrap();
    let first = store
        .log_action(&NewAction {
            timestamp: 5,
            action_type: "BOOT".into(),
            from_node: None,
            to_node: Some("n".into()),
            metadata: None,
        })
        .unwrap();
    let second = store
        .log_action(&NewAction {
            timestamp: 5,
            action_type: "INCARNATE".into(),
            from_node: Some("a".into()),
            to_node: Some("b".into()),
            metadata: Some("raw text".into()),
        })
        .unwrap();
    assert!(second > first);
    let actions = store.actions().unwrap();
    assert_eq!(actions.len(), 2);
    assert_eq!(actions[1].metadata.as_deref(), Some("raw text"));
}

#[test]
fn resolution_by_id_prefix_and_external_id() {
    let store = Store::open_in_memory().unwrap();
    golden::build(&store).unwrap();
    let row4 = golden::ids::ROW4;
    assert_eq!(store.resolve_prefix(row4).unwrap(), row4);
    assert_eq!(store.resolve_prefix("b85004a7").unwrap(), row4);
    assert_eq!(store.resolve("pi:11223344").unwrap(), row4);
    assert_eq!(store.resolve("11223344").unwrap(), row4);
    // Case-sensitive, and LIKE wildcards are plain characters.
    assert_eq!(
        store.resolve_prefix("B85004A7").unwrap_err().to_string(),
        "Node not found for \"B85004A7\"."
    );
    assert!(matches!(
        store.resolve_prefix("_"),
        Err(DagError::NotFound(_))
    ));
    assert!(matches!(
        store.resolve_prefix("%"),
        Err(DagError::NotFound(_))
    ));
    assert_eq!(
        store.resolve("pi:nothing").unwrap_err().to_string(),
        "Node not found for \"nothing\"."
    );
    // 13 nodes: every empty prefix is ambiguous; find a real shared prefix among the ids.
    assert_eq!(
        store.resolve_prefix("").unwrap_err().to_string(),
        "Ambiguous hash prefix \"\" matches 13 nodes."
    );
    let c_ids: Vec<&str> = golden::SHORT_IDS
        .iter()
        .copied()
        .filter(|s| s.starts_with('c'))
        .collect();
    assert_eq!(c_ids.len(), 2);
    assert_eq!(
        store.resolve_prefix("c").unwrap_err().to_string(),
        "Ambiguous hash prefix \"c\" matches 2 nodes."
    );
    assert!(store.resolve_prefix("c").unwrap_err().is_resolution());
}

#[test]
fn lineage_children_subtree_and_counts() {
    let store = Store::open_in_memory().unwrap();
    golden::build(&store).unwrap();
    let head = store.get_ref("PI_HEAD").unwrap().unwrap();
    let lineage = store.lineage(&head, None).unwrap();
    let roles: Vec<&str> = lineage.iter().map(|n| n.role.as_str()).collect();
    assert_eq!(
        roles,
        [
            "assistant",
            "user",
            "assistant",
            "toolResult",
            "assistant",
            "user"
        ]
    );
    assert_eq!(store.lineage(&head, Some(2)).unwrap().len(), 2);
    assert_eq!(store.lineage("missing", None).unwrap().len(), 0);
    let kids = store.children(golden::ids::ROW1).unwrap();
    assert_eq!(kids.len(), 2);
    assert_eq!(kids[1].role, "model", "children come in insertion order");
    let sub = store.subtree(golden::ids::ROW1, 100).unwrap();
    assert_eq!(sub.len(), 12);
    assert_eq!(store.subtree(golden::ids::ROW1, 0).unwrap().len(), 2);
    let counts = store.descendant_counts(golden::ids::ROW1).unwrap();
    assert_eq!(counts.get(&kids[0].id), Some(&10));
    assert_eq!(counts.get(&kids[1].id), Some(&0));
}

#[test]
fn fsck_passes_the_golden_db_and_reports_every_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.db");
    let store = Store::open(&path).unwrap();
    golden::build(&store).unwrap();
    let report = store.fsck().unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    assert_eq!(report.nodes_checked, 13);
    assert_eq!(report.shapes.get("pi"), Some(&11));
    assert_eq!(
        report.shapes.get("plain"),
        Some(&2),
        "departure and terminal rows"
    );
    let stats = store.stats().unwrap();
    assert_eq!(stats.roles.get("assistant"), Some(&5));
    assert_eq!(stats.blob_types.get("system_prompt"), Some(&1));
    assert_eq!(stats.leaves, 3);
    assert_eq!(stats.refs.len(), 2);
    drop(store);

    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(&format!(
        "UPDATE blobs SET content = '\"tampered\"' WHERE type = 'thinking';
         UPDATE nodes SET timestamp = timestamp + 1 WHERE id = '{}';
         UPDATE nodes SET parts_list = '[\"feed\"]' WHERE id = '{}';
         INSERT INTO refs VALUES ('dangling', 'abc');
         INSERT INTO action_log (timestamp, action_type, from_node, to_node) VALUES (1, 'BOOT', NULL, 'gone');",
        golden::ids::ROW4,
        golden::ids::ROW11
    ))
    .unwrap();
    drop(conn);
    let report = Store::open(&path).unwrap().fsck().unwrap();
    let kinds: Vec<(&str, &str)> = report
        .problems
        .iter()
        .map(|p| (p.kind, p.message.split(' ').next().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("blob", "hash"),
            ("node", "id"),
            ("node", "id"),
            ("node", "part"),
            ("ref", "points"),
            ("action", "to_node")
        ],
        "{:#?}",
        report.problems
    );
}

#[test]
fn many_external_ids_resolve_in_one_query() {
    let store = Store::open_in_memory().unwrap();
    golden::build(&store).unwrap();
    // A second node reusing an external id: the oldest one wins, as with one lookup.
    store
        .commit_node(
            &NodeCommit::new(role::USER, 1)
                .part(NewBlob::text("dup"))
                .external_id("a1b2c3d4"),
        )
        .unwrap();
    let found = store
        .node_ids_by_external_ids(["a1b2c3d4", "11223344", "nope", ""])
        .unwrap();
    assert_eq!(found.len(), 2);
    assert_eq!(found["a1b2c3d4"], golden::ids::ROW1);
    assert_eq!(found["11223344"], golden::ids::ROW4);
    assert_eq!(
        store.node_id_by_external_id("a1b2c3d4").unwrap().as_deref(),
        Some(golden::ids::ROW1)
    );
}
