use serde_json::{Value, json};

use super::BlobRead;
use crate::model::{NewBlob, NodeCommit, Parent, role};
use crate::store::Store;

/// Node `i` of a lineage that cycles through every kind of node the loader rebuilds: user text
/// (some shared with other nodes), assistants with thinking, text, tool calls, signatures and
/// their config, tool results, `pi_internal` meta entries, a legacy `pi_entry`, whole messages
/// stored as one `pi_meta`, image parts, terminal nodes without external id, and blobs of types
/// the loader does not read.
fn kind(i: usize) -> NodeCommit {
    let t = 1_767_258_000_000 + i64::try_from(i).unwrap() * 1_000;
    let ext = format!("e{i:05}");
    let config =
        r#"{"agent":"pi","model":{"provider":"anthropic","id":"m"},"thinkingLevel":"off"}"#;
    match i % 11 {
        0 => NodeCommit::new(role::USER, t)
            .part(NewBlob::text(format!("question {i}\nwith two lines")))
            .external_id(ext),
        1 => NodeCommit::new(role::ASSISTANT, t)
            .part(NewBlob::thinking("let me see"))
            .part(NewBlob::text(format!("answer {i}")))
            .part(NewBlob::tool_call(
                &format!("call_{i}"),
                "bash",
                Some(json!({"command": "ls", "n": i})),
            ))
            .config_json(config)
            .thought_signatures(
                json!({"parts": [{"thinkingSignature": "s"}, null, {"thoughtSignature": "c"}]})
                    .to_string(),
            )
            .external_id(ext),
        2 => NodeCommit::new(role::TOOL_RESULT, t)
            .part(NewBlob::tool_result(
                &format!("call_{}", i - 1),
                "bash",
                json!([{"type": "text", "text": format!("out {i}")}]),
                i.is_multiple_of(2),
            ))
            .external_id(ext),
        3 => NodeCommit::new(role::PI_INTERNAL, t)
            .part(NewBlob::pi_meta(json!({"type": "model_change", "id": ext,
                "parentId": "stale", "timestamp": "x", "provider": "p", "modelId": "m"})))
            .external_id(ext),
        4 => NodeCommit::new(role::USER, t)
            .part(NewBlob::text("the same text"))
            .part(NewBlob::pi_meta(
                json!({"type": "image", "data": "AAAA", "mimeType": "image/png"}),
            ))
            .part(NewBlob::text("the same text"))
            .external_id(ext),
        5 => NodeCommit::new("bashExecution", t)
            .part(NewBlob::pi_meta(
                json!({"role": "bashExecution", "command": "ls",
                "output": format!("{i}"), "exitCode": 0, "timestamp": t}),
            ))
            .external_id(ext),
        6 => NodeCommit::new(role::USER, t).part(NewBlob::new(
            "pi_entry",
            json!({"type": "message", "id": ext, "parentId": "gone", "timestamp": "x",
                "message": {"role": "user", "content": [{"type": "text", "text": "legacy"}]}}),
        )),
        7 => NodeCommit::new("model", t)
            .part(NewBlob::text(format!("terminal {i}")))
            .part(NewBlob::new(
                "inline_data",
                json!({"mimeType": "image/png", "data": "AA"}),
            )),
        8 => NodeCommit::new(role::ASSISTANT, t)
            .part(NewBlob::tool_call("", "read", None))
            .config_json(r#"{"model":"gemini"}"#)
            .external_id(ext),
        9 => NodeCommit::new(role::PI_INTERNAL, t).external_id(ext),
        _ => NodeCommit::new(role::USER, t)
            .part(NewBlob::text("the same text"))
            .system_prompt("a prompt")
            .external_id(ext),
    }
}

/// Both ways of reading the blobs give the same entries, for the whole lineage and for the part
/// after a node, on a lineage with every node kind, shared blobs and a missing one.
#[test]
fn the_blob_pass_and_the_lookups_give_the_same_entries() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kinds.db");
    let store = Store::open(&path).unwrap();
    // Unrelated blobs first, so that the lineage's are not the whole table.
    let other: Vec<NodeCommit> = (0..300)
        .map(|i| NodeCommit::new(role::USER, 0).part(NewBlob::text(format!("other {i}"))))
        .collect();
    store.commit_batch(&other).unwrap();
    let commits: Vec<NodeCommit> = (0..1_200)
        .map(|i| {
            let c = kind(i);
            if i == 0 {
                c
            } else {
                c.parent(Parent::Previous)
            }
        })
        .collect();
    let done = store.commit_batch(&commits).unwrap();
    let head = &done.last().unwrap().id;
    // A part naming a blob that is not in the file.
    store
        .sqlite()
        .unwrap()
        .execute(
            "UPDATE nodes SET parts_list = json_insert(parts_list, '$[#]', ?1) WHERE id = ?2",
            rusqlite::params!["0".repeat(64), done[600].id],
        )
        .unwrap();

    let lookup = store
        .entries_read_with(head, None, BlobRead::Lookup)
        .unwrap();
    let scan = store.entries_read_with(head, None, BlobRead::Scan).unwrap();
    let auto = store.load_entries(Some(head)).unwrap();
    assert!(lookup == scan, "the pass differs from the lookups");
    assert!(lookup == auto);
    // Every kind came back (node 9, a content-less pi_internal node, has no entry).
    assert_eq!(lookup.len(), (0..1_200).filter(|i| i % 11 != 9).count());
    let types: std::collections::BTreeSet<String> = lookup
        .iter()
        .map(|e| {
            let role = e["message"]["role"].as_str().unwrap_or("-");
            format!("{}/{role}", e["type"].as_str().unwrap_or("?"))
        })
        .collect();
    let want = [
        "message/assistant",
        "message/bashExecution",
        "message/model",
        "message/toolResult",
        "message/user",
        "model_change/-",
    ];
    assert_eq!(types.iter().map(String::as_str).collect::<Vec<_>>(), want);
    assert_eq!(
        lookup[1]["message"]["content"][0]["thinkingSignature"],
        json!("s")
    );
    assert_eq!(lookup[1]["message"]["provider"], json!("anthropic"));

    let after = (done[700].id.as_str(), "e00700");
    let lookup = store
        .entries_read_with(head, Some(after), BlobRead::Lookup)
        .unwrap();
    let scan = store
        .entries_read_with(head, Some(after), BlobRead::Scan)
        .unwrap();
    assert!(lookup == scan);
    assert_eq!(lookup[0]["parentId"], json!("e00700"));
    assert!(lookup.iter().all(|e| e["id"] != json!("e00700")));
    assert_ne!(lookup.first().map(|e| &e["id"]), Some(&Value::Null));
}

/// A `blobs` table without rowids (no writer makes one, but SQLite allows it) is read by hash.
#[test]
fn a_blobs_table_without_rowids_is_read_by_hash() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("norowid.db");
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(
            "CREATE TABLE blobs (hash TEXT PRIMARY KEY, type TEXT NOT NULL, content TEXT NOT NULL, \
             thought_signature TEXT) WITHOUT ROWID;",
        )
        .unwrap();
    let store = Store::open(&path).unwrap();
    let done = store
        .commit_batch(&[kind(0), kind(1).parent(Parent::Previous)])
        .unwrap();
    let entries = store.load_entries(Some(&done[1].id)).unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(
        entries[0]["message"]["content"][0]["text"],
        json!("question 0\nwith two lines")
    );
    assert_eq!(
        entries[1]["message"]["content"].as_array().unwrap().len(),
        3
    );
}
