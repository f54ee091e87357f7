//! The lazily loaded session (issue 16) against the eager reader: the same entries, warnings,
//! tree and context, on a generated 10,000-entry session with branches, compactions and broken
//! lines, and on pi's own files.

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::Path;

use filo_session::file::read_session_file;
use filo_session::{EntryKind, SessionEntry, SessionManager, build_session_context};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{texts, user};

/// A pi v3 session of `n` entries shaped like `scripts/bench-vs-pi/gen_session.py` (user prompt,
/// assistant text + `bash` call, tool result, answer; a compaction every ~1,000 entries), plus
/// what a real file also holds: model and thinking changes, a label, a name, a custom message, a
/// branch (an earlier entry continued, then a branch summary), a duplicate id, a duplicate
/// header, a line that is not JSON, a `message` line whose message is not valid, and an
/// entry of a type this version does not know.
fn generated(n: usize) -> String {
    let mut g = Gen::default();
    let ts = 1_793_491_200_000i64;
    g.push(json!({"type":"model_change","provider":"mock","modelId":"m0"}));
    g.push(json!({"type":"thinking_level_change","thinkingLevel":"low"}));
    let usage = json!({"input":10,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":12,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}});
    let mut i = 0;
    while g.lines.len() < n {
        i += 1;
        g.push(json!({"type":"message","message":{"role":"user","content":[{"type":"text","text":format!("prompt {i}")}],"timestamp":ts + i}}));
        g.push(json!({"type":"message","message":{"role":"assistant","content":[{"type":"text","text":format!("looking {i}")},{"type":"toolCall","id":format!("call_{i}"),"name":"bash","arguments":{"command":"ls"}}],"api":"openai-completions","provider":"mock","model":format!("m{}", i % 3),"usage":usage,"stopReason":"toolUse","timestamp":ts + i}}));
        g.push(json!({"type":"message","message":{"role":"toolResult","toolCallId":format!("call_{i}"),"toolName":"bash","content":[{"type":"text","text":format!("out {i}")}],"isError":false,"timestamp":ts + i}}));
        g.push(json!({"type":"message","message":{"role":"assistant","content":[{"type":"text","text":format!("done {i}")}],"api":"openai-completions","provider":"mock","model":"m1","usage":usage,"stopReason":"stop","timestamp":ts + i}}));
        if i % 250 == 0 {
            let kept = g.back(40);
            g.push(json!({"type":"compaction","summary":format!("summary {i}"),"firstKeptEntryId":kept,"tokensBefore":1000}));
        }
        if i % 97 == 0 {
            let target = g.back(3);
            g.push(json!({"type":"label","targetId":target,"label":format!("l{i}")}));
        }
        if i == 30 {
            g.push(json!({"type":"session_info","name":"generated"}));
            g.push(json!({"type":"custom_message","customType":"note","content":"a note","display":true}));
            g.push(json!({"type":"future_kind","payload":[1, 2]}));
        }
        if i == 1200 {
            // Back to an earlier entry: a branch, then a summary of where it came from.
            g.parent = Some(g.back(30));
            g.push(json!({"type":"branch_summary","fromId":"x","summary":"tried something"}));
            g.push(json!({"type":"thinking_level_change","thinkingLevel":"high"}));
        }
    }
    let mut text: Vec<String> = vec![
        json!({"type":"session","version":3,"id":"s-lazy","timestamp":"2026-11-01T00:00:00.000Z","cwd":"/p"}).to_string(),
    ];
    text.extend(g.lines.iter().map(Value::to_string));
    // A later line with an id seen before replaces that entry (line 20 is an assistant message).
    let mut replaced: Value = serde_json::from_str(&text[20]).unwrap();
    replaced["message"]["content"][0]["text"] = json!("replaced");
    let len = text.len();
    text.insert(len - 5, replaced.to_string());
    text.insert(len / 5, "not json {".into());
    text.insert(2 * len / 5, text[0].clone());
    text.insert(
        3 * len / 5,
        r#"{"type":"message","id":"bad00001","parentId":null,"timestamp":"t","message":{"role":"assistant","content":7}}"#.into(),
    );
    text.insert(4 * len / 5, String::new());
    text.join("\n") + "\n"
}

/// Builds a generated session: each entry a child of `parent`, ids `00000001`, `00000002`, ….
#[derive(Default)]
struct Gen {
    lines: Vec<Value>,
    ids: Vec<String>,
    parent: Option<String>,
}

impl Gen {
    fn push(&mut self, mut v: Value) {
        let k = self.ids.len() + 1;
        let id = format!("{k:08x}");
        v["id"] = json!(id);
        v["parentId"] = json!(self.parent.clone());
        v["timestamp"] = json!(format!(
            "2026-11-01T{:02}:{:02}:{:02}.000Z",
            k / 3600 % 24,
            k / 60 % 60,
            k % 60
        ));
        self.lines.push(v);
        self.ids.push(id.clone());
        self.parent = Some(id);
    }

    /// The id `k` entries back.
    fn back(&self, k: usize) -> String {
        self.ids[self.ids.len() - k].clone()
    }
}

/// The eager reading of a file: entries, index, leaf, and the context pi would build.
struct Eager {
    entries: Vec<SessionEntry>,
    index: HashMap<String, usize>,
    leaf: Option<String>,
}

fn eager(path: &Path) -> Eager {
    let loaded = read_session_file(path).unwrap();
    let mut entries: Vec<SessionEntry> = Vec::new();
    let mut index = HashMap::new();
    let leaf = loaded.entries.last().map(|e| e.id.clone());
    for e in loaded.entries {
        match index.get(&e.id) {
            Some(&i) => entries[i] = e,
            None => {
                index.insert(e.id.clone(), entries.len());
                entries.push(e);
            }
        }
    }
    Eager {
        entries,
        index,
        leaf,
    }
}

fn eager_path<'a>(e: &'a Eager, id: &str) -> Vec<&'a SessionEntry> {
    filo_session::context::path_to(&e.entries, &e.index, id)
}

/// Every question the tree answers, lazily and eagerly, gives the same answer.
fn assert_same(path: &Path) -> SessionManager {
    let e = eager(path);
    let loaded = read_session_file(path).unwrap();
    let lazy = SessionManager::open_read_only(path).unwrap();
    // The context first, before anything else made the lazy session parse its entries.
    let ctx = lazy.build_context();
    assert_eq!(
        ctx,
        build_session_context(&e.entries, &e.index, e.leaf.as_deref())
    );
    assert_eq!(lazy.warnings(), loaded.warnings.as_slice());
    assert_eq!(lazy.warnings_dropped(), loaded.warnings_dropped);
    assert_eq!(lazy.leaf_id(), e.leaf.as_deref());
    let ids: Vec<&str> = lazy.entry_ids().collect();
    let eager_ids: Vec<&str> = e.entries.iter().map(|x| x.id.as_str()).collect();
    assert_eq!(ids, eager_ids);
    for x in &e.entries {
        assert_eq!(lazy.entry_type(&x.id), Some(x.kind.type_name()));
    }
    let leaf = e.leaf.clone().unwrap_or_default();
    let path_ids: Vec<&str> = eager_path(&e, &leaf)
        .iter()
        .map(|x| x.id.as_str())
        .collect();
    assert_eq!(lazy.branch_ids(None), path_ids);
    assert_eq!(lazy.branch_path(None), eager_path(&e, &leaf));
    // The entries of one type on a branch, nearest first, to the leaf and to other entries.
    let targets = e.entries.iter().step_by(97).map(|x| Some(x.id.as_str()));
    for target in std::iter::once(None).chain(targets) {
        let to = target.map_or(leaf.as_str(), |t| t);
        for t in [
            "compaction",
            "message",
            "model_change",
            "label",
            "branch_summary",
            "custom",
        ] {
            let nearest: Vec<&SessionEntry> = lazy.on_branch_nearest_first(target, t).collect();
            let mut eager_nearest = eager_path(&e, to);
            eager_nearest.retain(|x| x.kind.type_name() == t);
            eager_nearest.reverse();
            assert_eq!(nearest, eager_nearest, "{t} to {to}");
        }
    }
    let roots: Vec<&str> = lazy.roots().iter().map(|x| x.id.as_str()).collect();
    let eager_roots: Vec<&str> = e
        .entries
        .iter()
        .filter(|x| match &x.parent_id {
            None => true,
            Some(p) => p == &x.id || !e.index.contains_key(p),
        })
        .map(|x| x.id.as_str())
        .collect();
    assert_eq!(roots, eager_roots);
    for x in e.entries.iter().step_by(7) {
        let mut kids: Vec<&SessionEntry> = e
            .entries
            .iter()
            .filter(|c| c.parent_id.as_deref() == Some(x.id.as_str()))
            .collect();
        kids.sort_by(|a, b| a.timestamp.cmp(&b.timestamp));
        assert_eq!(lazy.children(&x.id), kids);
        let label = e.entries.iter().rev().find_map(|l| match &l.kind {
            EntryKind::Label { target_id, label } if target_id == &x.id => Some(label.as_deref()),
            _ => None,
        });
        assert_eq!(lazy.label(&x.id), label.flatten());
    }
    let all: Vec<&SessionEntry> = lazy.entries().collect();
    assert_eq!(all, e.entries.iter().collect::<Vec<_>>());
    // Built again from entries now held parsed (the first build parsed its messages without
    // keeping them).
    assert_eq!(lazy.build_context(), ctx);
    lazy
}

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    fs::write(&path, text).unwrap();
    path
}

#[test]
fn lazy_session_equals_eager_on_a_generated_10k_session() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "gen.jsonl", &generated(10_000));
    let lazy = assert_same(&path);
    assert!(lazy.entry_count() >= 10_000);
    assert_eq!(lazy.warnings().len(), 3, "{:?}", lazy.warnings());
    let ctx = lazy.build_context();
    assert_eq!(ctx.thinking_level, "high");
    assert!(ctx.messages.len() > 100 && ctx.messages.len() < 1200);
    assert_eq!(lazy.session_name(), Some("generated"));
}

#[test]
fn lazy_session_equals_eager_on_pi_files() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../filo-cli/tests/fixtures/pi073/edit.session.jsonl");
    let lazy = assert_same(&fixture);
    assert!(!lazy.build_context().messages.is_empty());
}

#[test]
fn an_old_file_is_migrated_and_held_as_eagerly_as_before() {
    // pi's v1 shape: the migration gives entries new ids on every read, so the two readings are
    // compared without them.
    let dir = tempfile::tempdir().unwrap();
    let v1 = write(dir.path(), "v1.jsonl", &super::files::v1_fixture());
    let lazy = SessionManager::open_read_only(&v1).unwrap();
    let e = eager(&v1);
    assert_eq!(
        lazy.build_context(),
        build_session_context(&e.entries, &e.index, e.leaf.as_deref())
    );
    let kinds = |v: Vec<&SessionEntry>| -> Vec<(String, Option<Value>)> {
        v.iter()
            .map(|x| {
                (
                    x.kind.type_name().to_string(),
                    x.message().map(|m| m.to_value()),
                )
            })
            .collect()
    };
    assert_eq!(
        kinds(lazy.entries().collect()),
        kinds(e.entries.iter().collect())
    );
    assert_eq!(lazy.branch_path(None).len(), e.entries.len());
}

#[test]
fn a_torn_last_line_and_a_missing_newline_read_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let text = generated(300);
    let torn = format!("{text}{{\"type\":\"message\",\"id\":\"zz\"");
    assert_same(&write(dir.path(), "torn.jsonl", &torn));
    let unterminated = text.trim_end_matches('\n');
    assert_same(&write(dir.path(), "nonl.jsonl", unterminated));
}

#[test]
fn appends_after_opening_leave_lazy_entries_readable() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "s.jsonl", &generated(2_000));
    let mut s = SessionManager::open(&path, "/p").unwrap();
    let before = s.build_context();
    // Another writer appends a line (pi on the same file), then this session appends its own.
    let mut f = fs::OpenOptions::new().append(true).open(&path).unwrap();
    writeln!(
        f,
        r#"{{"type":"session_info","id":"other01","parentId":null,"timestamp":"t","name":"x"}}"#
    )
    .unwrap();
    drop(f);
    s.append_message(user("after")).unwrap();
    let ctx = s.build_context();
    assert_eq!(ctx.messages[..before.messages.len()], before.messages[..]);
    assert_eq!(texts(&ctx.messages).last().unwrap(), "after");
    let all: Vec<SessionEntry> = s.entries().cloned().collect();
    let reopened = SessionManager::open(&path, "/p").unwrap();
    let again: Vec<SessionEntry> = reopened
        .entries()
        .filter(|e| e.id != "other01")
        .cloned()
        .collect();
    assert_eq!(all, again);
}

#[test]
fn a_file_replaced_by_rename_keeps_the_open_session_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "s.jsonl", &generated(500));
    let s = SessionManager::open(&path, "/p").unwrap();
    let e = eager(&path);
    let replacement = write(dir.path(), "other.jsonl", &generated(40));
    fs::rename(&replacement, &path).unwrap();
    let all: Vec<&SessionEntry> = s.entries().collect();
    assert_eq!(all, e.entries.iter().collect::<Vec<_>>());
}

#[test]
fn a_file_rewritten_in_place_gives_stand_ins_not_wrong_entries() {
    let dir = tempfile::tempdir().unwrap();
    let text = generated(60);
    let path = write(dir.path(), "s.jsonl", &text);
    let s = SessionManager::open(&path, "/p").unwrap();
    // Same length, other ids: what an in-place rewrite by another program could leave.
    fs::write(&path, text.replace("\"id\":\"0000", "\"id\":\"ffff")).unwrap();
    let leaf = s.leaf_entry().unwrap();
    assert_eq!(leaf.id, s.leaf_id().unwrap());
    match &leaf.kind {
        EntryKind::Unknown { entry_type, fields } => {
            assert_eq!(entry_type, "message");
            assert!(fields.is_empty());
        }
        other => panic!("expected a stand-in, got {other:?}"),
    }
}
