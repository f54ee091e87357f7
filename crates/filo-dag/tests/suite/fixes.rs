//! The §10.5 fixes, the reference behaviour behind their switches, and edge outputs.

use filo_dag::golden::{self, NOW};
use filo_dag::render::{
    FilterMode, FixedOffset, LifeOptions, RecallOptions, TraceOptions, life, recall, trace,
};
use filo_dag::{NewAction, NewBlob, NodeCommit, Store, role};
use pretty_assertions::assert_eq;

fn golden_store() -> Store {
    let store = Store::open_in_memory().unwrap();
    golden::build(&store).unwrap();
    store
}

fn root_default(descend_hidden: bool) -> LifeOptions {
    LifeOptions {
        focus: Some("pi:a1b2c3d4".into()),
        ancestors: 0,
        descend_hidden,
        ..LifeOptions::default()
    }
}

#[test]
fn reference_life_hides_the_subtree_under_a_meta_node() {
    let store = golden_store();
    let out = life(&store, &root_default(false), NOW).unwrap();
    assert!(!out.contains("Actually, use Python instead."));
    assert!(!out.contains("5fc17736fa65"));
    insta::assert_snapshot!("life_root_default_reference", out);
}

#[test]
fn fixed_life_descends_through_hidden_nodes() {
    let store = golden_store();
    let out = life(&store, &root_default(true), NOW).unwrap();
    assert!(
        !out.contains("thinking_level_change"),
        "the meta node itself stays hidden"
    );
    assert!(out.contains("[pi:55667788] (2h ago) user: \"Actually, use Python instead.\""));
    assert!(out.contains("[5fc17736fa65] (2h ago) [tobe]"));
    insta::assert_snapshot!("life_root_default_fixed", out);
}

#[test]
fn life_for_the_terminal_ref_shows_the_pi_branch_as_a_sibling() {
    let store = golden_store();
    let opts = LifeOptions {
        ref_name: "terminal_head".into(),
        ..LifeOptions::default()
    };
    let out = life(&store, &opts, NOW).unwrap();
    assert_eq!(
        out,
        "[pi:a1b2c3d4] (2h ago) user: \"Build a CLI that prints the weather for a city.\"\n\
         ├──               (2h ago) assistant: \"Let me look at the repo first.\" (10 descendants)\n\
         └── [c00007ea2fc0] (2h ago) model: \"Terminal here: checked API quota.\"  <-- FOCUS, HEAD\n\
         --- end of archive ---"
    );
}

#[test]
fn life_errors_use_the_reference_texts() {
    let empty = Store::open_in_memory().unwrap();
    let err = life(&empty, &LifeOptions::default(), NOW).unwrap_err();
    assert_eq!(
        format!("Error: {err}"),
        "Error: No HEAD set and no focus_hash provided."
    );
    let store = golden_store();
    let opts = LifeOptions {
        focus: Some("pi:zzzz".into()),
        ..LifeOptions::default()
    };
    assert_eq!(
        life(&store, &opts, NOW).unwrap_err().to_string(),
        "Node not found for \"zzzz\"."
    );
    let opts = LifeOptions {
        focus: Some("c".into()),
        ..LifeOptions::default()
    };
    assert_eq!(
        life(&store, &opts, NOW).unwrap_err().to_string(),
        "Ambiguous hash prefix \"c\" matches 2 nodes."
    );
}

#[test]
fn life_without_children_is_flat_and_filters_apply() {
    let store = golden_store();
    let opts = LifeOptions {
        children: false,
        ancestors: 10,
        filter: FilterMode::UserOnly,
        ..LifeOptions::default()
    };
    let out = life(&store, &opts, NOW).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{out}");
    assert!(lines[0].starts_with("[pi:a1b2c3d4]"));
    assert!(lines[2].starts_with("[pi:bb000003]") && lines[2].ends_with("<-- FOCUS, HEAD"));
}

#[test]
fn recall_clamps_a_negative_remaining_budget() {
    let store = golden_store();
    let opts = RecallOptions {
        budget: 10,
        context_budget: 200,
        ..RecallOptions::new("HEAD")
    };
    let out = recall(&store, &opts).unwrap();
    // The reference prints "showing -<n>/58 chars" and an empty text here.
    assert!(out.contains("text: \"\n    // text truncated (showing 0/58 chars)...\" }  // <-- TARGET NODE (pi:bb000003)"), "{out}");
    insta::assert_snapshot!("recall_negative_budget", out);
}

#[test]
fn recall_of_a_departure_node_and_errors() {
    let store = golden_store();
    let out = recall(
        &store,
        &RecallOptions {
            filter: FilterMode::All,
            ..RecallOptions::new("5fc17736")
        },
    )
    .unwrap();
    assert!(out.contains("  config: // config: not available for this node,"));
    assert!(out.contains("[tool_result: tobe → Incarnation initiated → b85004a7b193]\" }  // <-- TARGET NODE (5fc17736fa65)"));
    assert!(out.contains("[tool_call: tobe({\"target_node_hash\":\"pi:11223344\",\"carryover_message\":\"User wants Python, not TypeScript.\"})]"));
    assert!(
        out.contains("{ role: \"pi_internal\", text: \"[thinking_level_change]\" }  // archived,")
    );
    let empty = Store::open_in_memory().unwrap();
    assert_eq!(
        recall(&empty, &RecallOptions::new("HEAD"))
            .unwrap_err()
            .to_string(),
        "No HEAD set."
    );
    assert_eq!(
        recall(&store, &RecallOptions::new("ffff"))
            .unwrap_err()
            .to_string(),
        "Node not found for \"ffff\"."
    );
    // A ref pointing at a missing row.
    store.set_ref("PI_HEAD", "0123456789abcdef").unwrap();
    assert_eq!(
        recall(&store, &RecallOptions::new("HEAD"))
            .unwrap_err()
            .to_string(),
        "Node 0123456789ab not found."
    );
}

#[test]
fn trace_edge_outputs() {
    let empty = Store::open_in_memory().unwrap();
    let utc = FixedOffset(0);
    assert_eq!(
        trace(&empty, &TraceOptions::default(), &utc).unwrap(),
        "--- archived action log ---\n(no PI_HEAD set)\n--- end of archive ---"
    );
    let n = empty
        .commit_node(
            &NodeCommit::new(role::USER, 0)
                .part(NewBlob::text("x"))
                .move_ref("PI_HEAD", filo_dag::Expect::Any),
        )
        .unwrap();
    assert_eq!(
        trace(&empty, &TraceOptions::default(), &utc).unwrap(),
        "--- archived action log ---\n(no actions recorded)\n--- end of archive ---"
    );
    let long = "é".repeat(501);
    for meta in [
        "42",
        "null",
        "{\"carryover_message\":\"go\"}",
        long.as_str(),
    ] {
        empty
            .log_action(&NewAction {
                timestamp: 0,
                action_type: "INCARNATE".into(),
                from_node: None,
                to_node: Some(n.id.clone()),
                metadata: Some(meta.into()),
            })
            .unwrap();
    }
    let out = trace(
        &empty,
        &TraceOptions {
            limit: 10,
            ..TraceOptions::default()
        },
        &FixedOffset(3600),
    )
    .unwrap();
    insta::assert_snapshot!("trace_metadata_heuristics", out);
    assert!(out.contains("[1970-01-01 01:00] INCARNATE: null → "));
    assert!(out.contains(". Metadata:\n    > 42"));
    assert!(out.contains(". Carryover:\n    > null"));
    assert!(out.contains(". Carryover:\n    > go"));
    assert!(out.contains("\n    > ...(truncated)"));
    let limited = trace(
        &empty,
        &TraceOptions {
            limit: 1,
            ..TraceOptions::default()
        },
        &utc,
    )
    .unwrap();
    assert_eq!(limited.lines().filter(|l| l.starts_with('[')).count(), 1);
}

#[test]
fn trace_keeps_only_actions_on_the_lineage_newest_first() {
    let store = Store::open_in_memory().unwrap();
    let commit = |parent: Option<&str>, t: i64| {
        let c = NodeCommit::new(role::USER, t).part(NewBlob::text(format!("n{t}")));
        let c = match parent {
            Some(p) => c.parent(filo_dag::Parent::Node(p.to_owned())),
            None => c,
        };
        store.commit_node(&c).unwrap().id
    };
    let root = commit(None, 1);
    let a = commit(Some(&root), 2);
    let b = commit(Some(&a), 3);
    let off = commit(Some(&root), 4);
    store.set_ref("PI_HEAD", &b).unwrap();
    // (timestamp, target): two actions share a timestamp, so the id breaks the tie.
    let targets = [
        (10, a.as_str()),
        (30, off.as_str()),
        (20, b.as_str()),
        (20, root.as_str()),
        (40, "missing"),
    ];
    for (t, to) in targets {
        store
            .log_action(&NewAction {
                timestamp: t * 60_000,
                action_type: "BOOT".into(),
                from_node: None,
                to_node: Some(to.to_owned()),
                metadata: None,
            })
            .unwrap();
    }
    let utc = FixedOffset(0);
    let out = trace(&store, &TraceOptions::default(), &utc).unwrap();
    let short = |id: &str| id[..12].to_owned();
    assert_eq!(
        out,
        format!(
            "--- archived action log ---\n\
             [1970-01-01 00:20] BOOT: null → {}\n\
             [1970-01-01 00:20] BOOT: null → {}\n\
             [1970-01-01 00:10] BOOT: null → {}\n\
             --- end of archive ---",
            short(&b),
            short(&root),
            short(&a)
        )
    );
    let none = TraceOptions {
        limit: 0,
        ..TraceOptions::default()
    };
    assert_eq!(
        trace(&store, &none, &utc).unwrap(),
        "--- archived action log ---\n(no actions recorded)\n--- end of archive ---"
    );
}
