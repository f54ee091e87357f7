//! `load_entries`: pi session entries rebuilt from the DAG, with the §10.3 fixes.

use filo_dag::{NewBlob, NodeCommit, Parent, Store, golden, role};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

#[test]
fn the_golden_head_gives_the_post_tobe_context() {
    let store = Store::open_in_memory().unwrap();
    golden::build(&store).unwrap();
    let entries = store.load_entries(Some(golden::ids::ROW12)).unwrap();
    let ids: Vec<&str> = entries.iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert_eq!(ids, golden::ROW12_ENTRY_IDS);
    let parents: Vec<&Value> = entries.iter().map(|e| &e["parentId"]).collect();
    assert_eq!(parents[0], &Value::Null);
    for pair in entries.windows(2) {
        assert_eq!(pair[1]["parentId"], pair[0]["id"]);
    }
    insta::assert_snapshot!(
        "load_entries_golden",
        serde_json::to_string_pretty(&entries).unwrap()
    );
    assert!(store.load_entries(None).unwrap().is_empty());
}

#[test]
fn parents_without_external_id_keep_the_chain() {
    // §10.3 #14: the departure node has no external id; its child still points at it.
    let store = Store::open_in_memory().unwrap();
    golden::build(&store).unwrap();
    let child = store
        .commit_node(
            &NodeCommit::new(role::USER, 1)
                .parent(Parent::Node(golden::ids::ROW10.into()))
                .part(NewBlob::text("after"))
                .external_id("kid"),
        )
        .unwrap();
    let entries = store.load_entries(Some(&child.id)).unwrap();
    let n = entries.len();
    assert_eq!(entries[n - 2]["id"], json!("5fc17736"));
    assert_eq!(
        entries[n - 2]["message"]["toolCallId"],
        json!("tobe_departure")
    );
    assert_eq!(entries[n - 1]["parentId"], json!("5fc17736"));
}

#[test]
fn image_parts_stay_content_and_meta_entries_get_dag_parents() {
    let store = Store::open_in_memory().unwrap();
    let image = json!({"type":"image","data":"AAAA","mimeType":"image/png"});
    let user = store
        .commit_node(
            &NodeCommit::new(role::USER, 1_767_258_000_000)
                .part(NewBlob::text("look"))
                .part(NewBlob::pi_meta(image.clone()))
                .external_id("u1"),
        )
        .unwrap();
    let meta = json!({"type":"model_change","id":"m1","parentId":"skipped-aborted","timestamp":"x","provider":"p","modelId":"m"});
    let internal = store
        .commit_node(
            &NodeCommit::new(role::PI_INTERNAL, 1_767_258_001_000)
                .parent(Parent::Node(user.id.clone()))
                .part(NewBlob::pi_meta(meta))
                .external_id("m1"),
        )
        .unwrap();
    let bash =
        json!({"role":"bashExecution","command":"ls","output":"a","exitCode":0,"timestamp":1});
    let tail = store
        .commit_node(
            &NodeCommit::new("bashExecution", 1_767_258_002_000)
                .parent(Parent::Node(internal.id))
                .part(NewBlob::pi_meta(bash.clone()))
                .external_id("b1"),
        )
        .unwrap();
    let entries = store.load_entries(Some(&tail.id)).unwrap();
    assert_eq!(entries.len(), 3);
    // #12: the image is a content part of the user message, not a bare "entry".
    assert_eq!(entries[0]["type"], json!("message"));
    assert_eq!(entries[0]["timestamp"], json!("2026-01-01T09:00:00.000Z"));
    assert_eq!(
        entries[0]["message"]["content"],
        json!([{"type":"text","text":"look"}, image])
    );
    // #15: the meta entry keeps its id but its parent comes from the DAG.
    assert_eq!(entries[1]["type"], json!("model_change"));
    assert_eq!(entries[1]["parentId"], json!("u1"));
    // #13: a whole stored message comes back as the message.
    assert_eq!(entries[2]["message"], bash);
    assert_eq!(entries[2]["parentId"], json!("m1"));
}

#[test]
fn assistants_get_provider_and_model_from_config() {
    let store = Store::open_in_memory().unwrap();
    golden::build(&store).unwrap();
    let terminal = store.get_ref("terminal_head").unwrap().unwrap();
    let entries = store.load_entries(Some(&terminal)).unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[1]["message"]["role"], json!("model"));
    let head = store.load_entries(Some(golden::ids::ROW12)).unwrap();
    let last = &head[5]["message"];
    assert_eq!(
        (&last["provider"], &last["model"]),
        (&json!("anthropic"), &json!("claude-sonnet-4-5"))
    );
    assert_eq!(last["stopReason"], json!("stop"));
    let call = &head[1]["message"]["content"][2];
    assert_eq!(
        call,
        &json!({"type":"toolCall","id":"toolu_01","name":"bash","arguments":{"command":"ls"}})
    );
}

#[test]
fn legacy_and_terminal_blob_types_are_read() {
    use filo_dag::render::{FilterMode, LifeOptions, RecallOptions, life, recall};
    let store = Store::open_in_memory().unwrap();
    // V2: a whole pi entry in one `pi_entry` blob; a terminal node with `inline_data`.
    let entry = json!({"type":"message","id":"old1","parentId":"gone","timestamp":"2025-01-01T00:00:00.000Z",
        "message":{"role":"user","content":[{"type":"text","text":"legacy\nhello"}]}});
    let v2 = store
        .commit_node(
            &NodeCommit::new(role::USER, 1_767_258_000_000)
                .part(NewBlob::new("pi_entry", entry.clone()))
                .external_id("old1"),
        )
        .unwrap();
    let terminal = store
        .commit_node(
            &NodeCommit::new("model", 1_767_258_001_000)
                .parent(Parent::Node(v2.id.clone()))
                .part(NewBlob::text("look at this"))
                .part(NewBlob::new(
                    "inline_data",
                    json!({"mimeType":"image/png","data":"AAAA"}),
                )),
        )
        .unwrap();
    store.set_ref("PI_HEAD", &terminal.id).unwrap();
    let entries = store.load_entries(Some(&terminal.id)).unwrap();
    let mut expected = entry;
    expected["parentId"] = Value::Null; // rewritten from the DAG (root)
    assert_eq!(entries[0], expected);
    assert_eq!(
        entries[1]["message"]["content"],
        json!([{"type":"text","text":"look at this"}])
    );
    assert_eq!(entries[1]["parentId"], json!("old1"));

    let opts = LifeOptions {
        filter: FilterMode::All,
        ancestors: 5,
        ..LifeOptions::default()
    };
    let out = life(&store, &opts, 1_767_258_002_000).unwrap();
    assert!(
        out.contains("[pi:old1] (2s ago) user: \"legacy hello\""),
        "{out}"
    );
    let out = recall(&store, &RecallOptions::new("HEAD")).unwrap();
    assert!(
        out.contains("{ role: \"user\", text: \"legacy\nhello\" }  // archived,"),
        "{out}"
    );
    assert!(
        out.contains("text: \"look at this\n[inline_data]\" }  // <-- TARGET NODE"),
        "{out}"
    );
}

#[test]
fn playtiss_blobs_are_skipped_by_fsck() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.db");
    drop(Store::open(&path).unwrap());
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute(
            "INSERT INTO blobs (hash, type, content) VALUES ('bafkreiexample', 'playtiss', 'AAAA')",
            [],
        )
        .unwrap();
    let report = Store::open(&path).unwrap().fsck().unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    assert_eq!((report.blobs_checked, report.blobs_skipped), (0, 1));
}

#[test]
fn part_signatures_come_back_on_their_blocks() {
    let store = Store::open_in_memory().unwrap();
    let node = NodeCommit::new(role::ASSISTANT, 1_767_258_000_000)
        .part(NewBlob::thinking("hm"))
        .part(NewBlob::text("hello"))
        .part(NewBlob::tool_call("call_1", "bash", Some(json!({"command": "ls"}))))
        .external_id("aa000001")
        .thought_signatures(
            json!({"parts": [{"thinkingSignature": "sig-think", "redacted": false}, null, {"thoughtSignature": "sig-call"}]})
                .to_string(),
        );
    let mut plain = node.clone();
    plain.thought_signatures = None;
    let with = store.commit_node(&node).unwrap();
    let without = Store::open_in_memory()
        .unwrap()
        .commit_node(&plain)
        .unwrap();
    assert_eq!(with.id, without.id, "signatures are outside the hash");
    let entries = store.load_entries(Some(&with.id)).unwrap();
    let content = &entries[0]["message"]["content"];
    assert_eq!(content[0]["thinkingSignature"], "sig-think");
    assert_eq!(content[0]["redacted"], false);
    assert_eq!(content[1].get("textSignature"), None);
    assert_eq!(content[2]["thoughtSignature"], "sig-call");
    // Another writer's shape in the column is left alone.
    let odd = NodeCommit::new(role::ASSISTANT, 1)
        .part(NewBlob::text("x"))
        .thought_signatures("opaque-terminal-format");
    let odd = store.commit_node(&odd).unwrap();
    let entries = store.load_entries(Some(&odd.id)).unwrap();
    assert_eq!(
        entries[0]["message"]["content"][0],
        json!({"type": "text", "text": "x"})
    );
}

/// A blob shared by several parts and nodes (also across the loader's batches of 2,048 nodes),
/// and a part whose blob is missing.
#[test]
fn shared_and_missing_blobs_come_back_as_their_parts_are_listed() {
    let store = Store::open_in_memory().unwrap();
    let commits: Vec<NodeCommit> = (0..2_100)
        .map(|i| {
            let c = NodeCommit::new(role::USER, 1_767_258_000_000 + i)
                .part(NewBlob::text("same"))
                .part(NewBlob::text(format!("own {i}")))
                .part(NewBlob::text("same"))
                .external_id(format!("e{i}"));
            if i == 0 {
                c
            } else {
                c.parent(Parent::Previous)
            }
        })
        .collect();
    let done = store.commit_batch(&commits).unwrap();
    let head = &done.last().unwrap().id;
    let expected = |i: usize| {
        json!([
            {"type":"text","text":"same"},
            {"type":"text","text":format!("own {i}")},
            {"type":"text","text":"same"},
        ])
    };
    let entries = store.load_entries(Some(head)).unwrap();
    assert_eq!(entries.len(), 2_100);
    for i in [0, 1, 1_000, 2_047, 2_048, 2_099] {
        assert_eq!(entries[i]["message"]["content"], expected(i), "entry {i}");
        assert_eq!(entries[i]["id"], json!(format!("e{i}")));
    }
    // A parts list naming a blob that is not there (written by hand): the part is left out.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("forged.db");
    let forged = Store::open(&path).unwrap();
    let node = forged
        .commit_node(&NodeCommit::new(role::USER, 0).part(NewBlob::text("kept")))
        .unwrap();
    let kept = NewBlob::text("kept").hash();
    let list = format!("[\"{}\",\"{kept}\",\"{}\"]", "0".repeat(64), "f".repeat(64));
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE nodes SET parts_list = ?1 WHERE id = ?2",
            rusqlite::params![list, node.id],
        )
        .unwrap();
    let entries = forged.load_entries(Some(&node.id)).unwrap();
    assert_eq!(
        entries[0]["message"]["content"],
        json!([{"type":"text","text":"kept"}])
    );
}
