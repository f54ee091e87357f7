//! Session files the real pi 1.6.0 wrote (`filo-cli/tests/fixtures/pi-1.6.0`, recorded by
//! `scripts/record-pi/record.py /work/pi16 1.6.0 …`, one per wire): a first `role:"system"`
//! entry, a mid-session system patch (pi resumed after an `AGENTS.md` appeared), a failed reply
//! omitted by a `context_edit`, a compaction with its `systemMessage` checkpoint, and the request
//! pi sent when it resumed the file for the last exchange. filo must build the same
//! conversation, prompt and tools from the same lines.

use std::path::{Path, PathBuf};

use filo_ai::Message;
use filo_session::{LoadWarning, SessionManager, SessionMessage, convert_to_llm};
use serde_json::{Value, json};

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../filo-cli/tests/fixtures/pi-1.6.0"
);
const WIRES: [&str; 2] = ["openai", "anthropic"];

fn fixture_lines(wire: &str) -> Vec<String> {
    let text = std::fs::read_to_string(Path::new(FIXTURES).join(format!("session16-{wire}.jsonl")))
        .unwrap();
    text.lines().map(str::to_string).collect()
}

/// The request pi 1.6.0 sent for the file's last user message.
fn pi_request(wire: &str) -> Value {
    let path = Path::new(FIXTURES).join(format!("session16-{wire}.resume.requests.json"));
    let requests: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    requests.last().unwrap().clone()
}

/// A message's role and text, the same for both wires.
fn wire_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// pi's conversation (system prompt left out) as (role, text).
fn pi_turns(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_string(),
                wire_text(&m["content"]),
            )
        })
        .collect()
}

/// The recording's temporary directory (the session's cwd less `/project`): the requests name
/// it `<TMP>`, the session files as it was.
fn tmp_dir(lines: &[String]) -> String {
    let header: Value = serde_json::from_str(&lines[0]).unwrap();
    let cwd = header["cwd"].as_str().unwrap();
    cwd.strip_suffix("/project").unwrap().to_string()
}

/// pi's system prompt, from either wire.
fn pi_prompt(body: &Value) -> String {
    match body.get("system") {
        Some(system) => wire_text(system),
        None => wire_text(&body["messages"][0]["content"]),
    }
}

/// pi's tool names, from either wire.
fn pi_tools(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            t.get("function")
                .map_or(&t["name"], |f| &f["name"])
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

/// filo's conversation for the context at the file's last user message, as (role, text).
fn filo_turns(s: &SessionManager) -> Vec<(String, String)> {
    convert_to_llm(&s.build_context().messages)
        .iter()
        .filter(
            |m| !matches!(m, Message::Assistant(a) if a.stop_reason == filo_ai::StopReason::Error),
        )
        .map(|m| {
            let v = serde_json::to_value(m).unwrap();
            (
                v["role"].as_str().unwrap().to_string(),
                wire_text(&v["content"]),
            )
        })
        .collect()
}

/// The fixture (or `lines`) written to a temporary file and opened at its last user message.
fn open_at_last_user(lines: &[String]) -> (SessionManager, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path: PathBuf = dir.path().join("s.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let mut s = SessionManager::open(&path, "/p").unwrap();
    let last_user = lines
        .iter()
        .rev()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["message"]["role"] == "user")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    s.branch(&last_user).unwrap();
    (s, dir)
}

#[test]
fn a_pi_16_file_gives_the_conversation_prompt_and_tools_pi_16_sends_on_both_wires() {
    for wire in WIRES {
        let lines = fixture_lines(wire);
        let (s, _dir) = open_at_last_user(&lines);
        assert!(s.warnings().is_empty(), "{wire}: {:?}", s.warnings());
        let body = pi_request(wire);
        assert_eq!(filo_turns(&s), pi_turns(&body), "{wire}: the conversation");
        let state = s.build_context().system_state();
        assert_eq!(
            state.prompt().replace(&tmp_dir(&lines), "<TMP>"),
            pi_prompt(&body),
            "{wire}: the replayed prompt"
        );
        let tools: Vec<String> = state.tool_list().into_iter().map(|t| t.name).collect();
        assert_eq!(tools, pi_tools(&body), "{wire}: the replayed tools");
    }
}

#[test]
fn every_line_pi_16_wrote_is_written_back_byte_for_byte() {
    for wire in WIRES {
        let lines = fixture_lines(wire);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let s = SessionManager::open(&path, "/p").unwrap();
        let written: Vec<String> = s.entries().map(|e| e.to_line()).collect();
        assert_same_lines(&written, &lines[1..], wire);
        let text = lines.join("\n");
        for field in ["\"durationMs\"", "\"rawStopReason\"", "\"thinkingLevel\""] {
            assert!(text.contains(field), "{wire}: the fixture has {field}");
        }
    }
}

/// The line of the entry with `id`, edited.
fn edit_line(lines: &mut [String], pred: impl Fn(&Value) -> bool, f: impl Fn(&mut Value)) {
    let i = lines
        .iter()
        .position(|l| pred(&serde_json::from_str(l).unwrap()))
        .unwrap();
    let mut v: Value = serde_json::from_str(&lines[i]).unwrap();
    f(&mut v);
    lines[i] = v.to_string();
}

fn recovered_id(lines: &[String]) -> String {
    lines
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| wire_text(&e["message"]["content"]) == "Recovered.")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn a_context_edit_omits_or_replaces_its_target_and_the_latest_on_the_path_wins() {
    let lines = fixture_lines("openai");
    let target = recovered_id(&lines);
    let is_edit = |e: &Value| e["type"] == "context_edit";

    let mut omitted = lines.clone();
    edit_line(&mut omitted, is_edit, |e| {
        e["targetId"] = target.clone().into()
    });
    let (s, _d) = open_at_last_user(&omitted);
    let turns = filo_turns(&s);
    assert!(
        !turns.iter().any(|(_, t)| t == "Recovered."),
        "omitted: {turns:?}"
    );

    let mut replaced = lines.clone();
    edit_line(&mut replaced, is_edit, |e| {
        e["targetId"] = target.clone().into();
        e["replacement"] = json!({"content": "Replaced."});
    });
    let (s, _d) = open_at_last_user(&replaced);
    let turns = filo_turns(&s);
    assert!(
        turns.contains(&("assistant".into(), "Replaced.".into())),
        "{turns:?}"
    );
    assert!(!turns.iter().any(|(_, t)| t == "Recovered."), "{turns:?}");
}

#[test]
fn the_compaction_checkpoint_carries_the_prompt_and_the_kept_range_drops_system_messages() {
    let lines = fixture_lines("openai");
    let body = pi_request("openai");
    // Without the checkpoint the compacted context holds no system message at all: the prompt
    // pi sends comes from the checkpoint alone.
    let mut bare = lines.clone();
    edit_line(
        &mut bare,
        |e| e["type"] == "compaction",
        |e| {
            e.as_object_mut().unwrap().remove("systemMessage");
        },
    );
    let (s, _d) = open_at_last_user(&bare);
    assert!(!s.build_context().system_state().seen);
    let (s, _d) = open_at_last_user(&lines);
    let systems = s
        .build_context()
        .messages
        .iter()
        .filter(|m| matches!(m, SessionMessage::System(_)))
        .count();
    assert_eq!(
        systems, 1,
        "only the checkpoint, not the kept range's patch"
    );
    assert_eq!(
        s.build_context()
            .system_state()
            .prompt()
            .replace(&tmp_dir(&lines), "<TMP>"),
        pi_prompt(&body)
    );

    // Retain-none: the compaction names itself; nothing before it is kept.
    let mut none = lines.clone();
    edit_line(
        &mut none,
        |e| e["type"] == "compaction",
        |e| e["firstKeptEntryId"] = e["id"].clone(),
    );
    let (s, _d) = open_at_last_user(&none);
    let turns = filo_turns(&s);
    assert_eq!(turns.len(), 2, "summary and the last question: {turns:?}");
}

#[test]
fn an_entry_filo_cannot_read_keeps_its_childrens_chain_and_is_named_once() {
    let mut lines = fixture_lines("openai");
    // The first system entry becomes a role no version knows; a deferred reply stays readable.
    edit_line(
        &mut lines,
        |e| e["message"]["role"] == "system",
        |e| e["message"]["role"] = "future-role".into(),
    );
    edit_line(
        &mut lines,
        |e| e["message"]["role"] == "assistant" && wire_text(&e["message"]["content"]) == "Done.",
        |e| {
            e["message"]["stopReason"] = "deferred".into();
            e["message"]["deferred"] = json!({"provider": "mock", "modelId": "mock-model",
                                              "api": "openai-completions", "id": "job_1"});
        },
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let s = SessionManager::open(&path, "/p").unwrap();
    let kept: Vec<_> = s
        .warnings()
        .iter()
        .filter(|w| matches!(w, LoadWarning::KeptEntry { .. }))
        .collect();
    assert_eq!(kept.len(), 1, "{:?}", s.warnings());
    assert_eq!(s.warnings().len(), 1, "{:?}", s.warnings());
    // Every entry is in the tree and on the path from the last one to the root.
    let path_len = s.branch_path(None).len();
    assert_eq!(path_len, lines.len() - 1);
    let written: Vec<String> = s.entries().map(|e| e.to_line()).collect();
    assert_same_lines(&written, &lines[1..], "planted");
}

/// Line for line, naming the first that differs.
fn assert_same_lines(written: &[String], read: &[String], what: &str) {
    for (i, (w, r)) in written.iter().zip(read).enumerate() {
        assert_eq!(w, r, "{what}: entry {i}");
    }
    assert_eq!(written.len(), read.len(), "{what}");
}
