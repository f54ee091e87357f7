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

/// A store with 300 unrelated nodes, then a lineage of `n` nodes made by `node`, one of whose
/// parts (of node 600) names a blob that is not in the file; the lineage's commits.
fn lineage_of(
    path: &std::path::Path,
    n: usize,
    node: impl Fn(usize) -> NodeCommit,
) -> (Store, Vec<crate::model::Committed>) {
    let store = Store::open(path).unwrap();
    // Unrelated blobs first, so that the lineage's are not the whole table.
    let other: Vec<NodeCommit> = (0..300)
        .map(|i| NodeCommit::new(role::USER, 0).part(NewBlob::text(format!("other {i}"))))
        .collect();
    store.commit_batch(&other).unwrap();
    let commits: Vec<NodeCommit> = (0..n)
        .map(|i| {
            let c = node(i);
            if i == 0 {
                c
            } else {
                c.parent(Parent::Previous)
            }
        })
        .collect();
    let done = store.commit_batch(&commits).unwrap();
    // A part naming a blob that is not in the file.
    store
        .sqlite()
        .unwrap()
        .execute(
            "UPDATE nodes SET parts_list = json_insert(parts_list, '$[#]', ?1) WHERE id = ?2",
            rusqlite::params!["0".repeat(64), done[600].id],
        )
        .unwrap();
    (store, done)
}

/// Both ways of reading the blobs give the same entries, for the whole lineage and for the part
/// after a node, on a lineage with every node kind, shared blobs and a missing one.
#[test]
fn the_blob_pass_and_the_lookups_give_the_same_entries() {
    let dir = tempfile::tempdir().unwrap();
    let (store, done) = lineage_of(&dir.path().join("kinds.db"), 1_200, kind);
    let head = &done.last().unwrap().id;

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

/// Blob contents as another writer might have stored them (spacing, other escapes and number
/// spellings, duplicate keys, text that is not JSON): `(node kind, blob type, content)`. The
/// node is committed with a placeholder of that type, whose content is then overwritten.
const RAW: &[(usize, &str, &str)] = &[
    (8, "text", r#""spaced \/ \u00e9 \ud83d\ude00 \u000A""#),
    (8, "text", r#""\ud800""#),
    (8, "text", r#""only \/ here""#),
    (8, "thinking", r#""only \u0041 here""#),
    (8, "text", r#"  "padded"  "#),
    (8, "thinking", r#""think\u0009tab\u001F""#),
    (
        7,
        "pi_meta",
        r#"{ "type" : "custom", "customType":"x", "id":"x", "parentId" : "old", "data": {"n": -0, "m": 1E5, "k": 1, "k": 2, "f": 1.0e0, "g": 0.10} }"#,
    ),
    (6, "pi_meta", "[1, 2 ,3]"),
    (9, "tool_call", r#"{"id":"#),
    (
        9,
        "tool_call",
        r#"{"id":"c1","name":"n","arguments":{"x":18446744073709551616,"y":-9223372036854775809,"z":123456789012345678901,"w":1e400}}"#,
    ),
    (
        9,
        "tool_call",
        r#"{"id":"c2","name":"n","arguments":{"x":18446744073709551615,"y":-9223372036854775808,"z":[0.1,1e21,-0.0,5e-324]}}"#,
    ),
    (
        10,
        "tool_result",
        r#"{"toolCallId":"t","toolName":"n","content":[{"type":"text","text":"a\/b"},{"type":"text","text":"x","type":"image"},{"text":"y","type":"text"}],"isError":null}"#,
    ),
];

fn placeholder(i: usize, k: usize, blob_type: &str) -> NewBlob {
    NewBlob::new(blob_type, json!(format!("raw {i} {k}")))
}

/// Node `i` of a lineage of odd content: strings with every escape, unicode and emoji, numbers
/// serde_json writes differently from JavaScript (`1e21`, `-0`, `0.1`, big integers), signatures
/// that override a block's key, defaults of tool calls and results, meta entries without
/// `parentId`, and the [`RAW`] contents.
fn odd(i: usize) -> NodeCommit {
    let t = 1_767_258_000_000 + i64::try_from(i).unwrap() * 1_000;
    let ext = format!("o{i:05}\"é😀\\");
    let odd_text =
        "tab\t quote\" back\\ nl\n ctl\u{1}\u{1f} del\u{7f} é 😀 \u{2028} </script> \\u0041";
    let mut c = match (i / 3) % 13 {
        0 => NodeCommit::new(role::USER, t).part(NewBlob::text(odd_text)),
        1 => NodeCommit::new(role::ASSISTANT, t)
            .part(NewBlob::thinking(odd_text))
            .part(NewBlob::text("plain"))
            .part(NewBlob::tool_call(
                "c",
                "calc",
                Some(json!({"f": 1e21, "g": 0.1, "h": -0.0, "i": 1.5e-7, "big": u64::MAX,
                    "neg": i64::MIN, "s": "😀\u{0}", "n": null, "a": [1.0, 2.5]})),
            ))
            .config_json(r#"{"agent":"pi","model":{"provider":"é\"x\u0001","id":"m\n😀"}}"#)
            .thought_signatures(
                r#"{"parts": [{"thinking": "over\/ride", "thinkingSignature": "x"}, 5, {"thoughtSignature": 1e21, "id": "sig-id"}, {"unused": 1}]}"#,
            ),
        2 => NodeCommit::new(role::TOOL_RESULT, t).part(NewBlob::tool_result(
            "c",
            "calc",
            json!([{"type": "text", "text": "a\"b"}, {"type": "image", "data": "x"},
                {"type": "text", "text": "c\nd😀"}, {"type": "text", "text": 5}]),
            false,
        )),
        3 => NodeCommit::new(role::TOOL_RESULT, t).part(NewBlob::new(
            "tool_result",
            json!({"toolCallId": "", "content": [{"type": "image", "data": "x", "f": 1e21}],
                "isError": null, "toolName": 0}),
        )),
        4 => NodeCommit::new(role::TOOL_RESULT, t),
        5 => NodeCommit::new(role::ASSISTANT, t)
            .part(NewBlob::new("tool_call", json!({"id": "", "f": 1e21})))
            .part(NewBlob::new("tool_call", json!("not an object")))
            .part(NewBlob::new("tool_call", json!({"id": 0, "arguments": null})))
            .config_json("not json"),
        6 => NodeCommit::new(role::PI_INTERNAL, t)
            .part(NewBlob::pi_meta(json!({"type": 0, "v": -0.0})))
            .part(NewBlob::text("kept")),
        11 => NodeCommit::new(role::PI_INTERNAL, t)
            .part(NewBlob::new("pi_entry", json!("just a string")))
            .part(NewBlob::pi_meta(json!({"type": "label", "id": "l", "targetId": "x"}))),
        12 => NodeCommit::new("weird\"role\n", t)
            .part(NewBlob::text(odd_text))
            .part(NewBlob::tool_result(
                "c",
                "calc",
                json!([{"type": "text", "text": "a\"b"}, {"type": "image", "data": "x"},
                    {"type": "text", "text": "c\nd😀"}, {"type": "text", "text": 5}]),
                true,
            ))
            .part(NewBlob::tool_result("c", "calc", json!([{"type": "image", "f": 1e21}]), true))
            .part(NewBlob::pi_meta(json!({"type": "image", "data": "é", "role": null}))),
        k => NodeCommit::new(
            if k == 7 {
                role::PI_INTERNAL
            } else if k == 10 {
                role::TOOL_RESULT
            } else {
                role::ASSISTANT
            },
            t,
        ),
    };
    for (k, (kind, blob_type, _)) in RAW.iter().enumerate() {
        if *kind == (i / 3) % 13 {
            c = c.part(placeholder(i, k, blob_type));
        }
    }
    if i.is_multiple_of(2) {
        c.external_id(ext)
    } else {
        c
    }
}

/// The session lines are, byte for byte, `serde_json::to_string` of the `Value` entries, for
/// the whole lineage and after a node, with the blobs read either way: on the lineage of every
/// node kind interleaved with odd content and contents spelled by other writers.
#[test]
fn the_lines_are_the_text_of_the_entries_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let node = |i: usize| if i % 3 == 2 { odd(i) } else { kind(i) };
    let (store, done) = lineage_of(&dir.path().join("lines.db"), 1_300, node);
    let conn = store.sqlite().unwrap();
    for i in (0..1_300).filter(|i| i % 3 == 2) {
        for (k, (kind, blob_type, content)) in RAW.iter().enumerate() {
            if *kind == (i / 3) % 13 {
                let hash = placeholder(i, k, blob_type).hash();
                let n = conn
                    .execute(
                        "UPDATE blobs SET content = ?1 WHERE hash = ?2",
                        rusqlite::params![content, hash],
                    )
                    .unwrap();
                assert_eq!(n, 1);
            }
        }
    }
    let head = &done.last().unwrap().id;
    let text = |values: &[Value]| -> Vec<String> {
        values
            .iter()
            .map(|v| serde_json::to_string(v).unwrap())
            .collect()
    };
    let after = (done[700].id.as_str(), "e00700");
    for (how, after) in [
        (BlobRead::Lookup, None),
        (BlobRead::Scan, None),
        (BlobRead::Auto, None),
        (BlobRead::Lookup, Some(after)),
        (BlobRead::Scan, Some(after)),
    ] {
        let want = text(&store.entries_read_with(head, after, how).unwrap());
        let got = store.entry_lines_with(head, after, how).unwrap();
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "entry {i} ({how:?}, after {after:?})");
        }
        assert!(want.len() > 1_000 || after.is_some());
    }
    let lines = store.load_entry_lines(Some(head)).unwrap();
    assert_eq!(
        lines.iter().collect::<Vec<_>>(),
        text(&store.load_entries(Some(head)).unwrap())
    );
    // Handed over one at a time: the same lines; stopping early gives the first ones only.
    let mut streamed = Vec::new();
    store
        .each_entry_line(head, &mut |l| {
            streamed.push(l.to_owned());
            true
        })
        .unwrap();
    assert_eq!(streamed, lines.iter().collect::<Vec<_>>());
    let mut first = Vec::new();
    store
        .each_entry_line(head, &mut |l| {
            first.push(l.to_owned());
            first.len() < 5
        })
        .unwrap();
    assert_eq!(first, streamed[..5]);
    let after_lines = store.load_entry_lines_after(head, Some(after)).unwrap();
    assert!(
        after_lines
            .get(0)
            .unwrap()
            .contains(r#""parentId":"e00700""#)
    );
    assert!(store.load_entry_lines(None).unwrap().is_empty());
    // The odd contents were there to be read: some blobs were copied, others written back.
    let all = lines.iter().collect::<String>();
    let float = |f: f64| Value::from(f).to_string();
    for needle in [
        r#""text":"spaced / é 😀 \n""#.to_owned(),
        r#""text":"padded""#.to_owned(),
        r#""text":"only / here""#.to_owned(),
        r#""thinking":"only A here""#.to_owned(),
        format!(r#""m":{}"#, float(1e5)),
        r#""k":2"#.to_owned(),
        r#""x":18446744073709551615,"y":-9223372036854775808"#.to_owned(),
        format!(
            r#""z":[{},{},{},{}]"#,
            float(0.1),
            float(1e21),
            float(-0.0),
            float(5e-324)
        ),
        format!(r#""f":{}"#, float(1e21)),
        r#""thinking":"over/ride""#.to_owned(),
        r#""id":"sig-id","name":"calc","#.to_owned(),
        format!(r#""thoughtSignature":{}"#, float(1e21)),
        r#""text":"a\"b\nc\nd😀""#.to_owned(),
        r#""provider":"é\"x\u0001""#.to_owned(),
        r#""role":"weird\"role\n""#.to_owned(),
    ] {
        assert!(all.contains(&needle), "{needle}");
    }
}

/// The split of the writers' `parts_list` form gives what the JSON reading gives, or declines.
#[test]
fn the_parts_list_split_is_the_json_reading() {
    use proptest::prelude::*;
    let json = |text: &str| -> Vec<String> {
        serde_json::from_str::<Vec<Value>>(text)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect()
    };
    let mut runner = proptest::test_runner::TestRunner::default();
    runner
        .run(&"[\\[\\]\",a0Z ]{0,16}", |text| {
            let mut hashes = super::PartHashes::default();
            if hashes.push_simple(&text) {
                let got: Vec<String> = (0..hashes.ranges.len())
                    .map(|i| hashes.get(i).to_owned())
                    .collect();
                prop_assert_eq!(got, json(&text), "{}", text);
            }
            Ok(())
        })
        .unwrap();
    for (text, simple) in [
        ("[]", true),
        (r#"["a","b0"]"#, true),
        (r#"[""]"#, true),
        (r#"["a",]"#, false),
        (r#"["a" ,"b"]"#, false),
        (r#"[,"a"]"#, false),
        (r#"["a""b"]"#, false),
        (r#"["a",1]"#, false),
    ] {
        let mut hashes = super::PartHashes::default();
        assert_eq!(hashes.push_simple(text), simple, "{text}");
    }
}
