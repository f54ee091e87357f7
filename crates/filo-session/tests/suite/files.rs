use std::fs;

use filo_session::{
    EntryKind, LoadWarning, SessionError, SessionManager, list_sessions, most_recent_session,
};
use serde_json::Value;

use super::{assistant, texts, user};

fn lines(path: &std::path::Path) -> Vec<Value> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn nothing_is_written_before_the_first_assistant_then_append_only() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = SessionManager::create("/p", dir.path());
    s.append_model_change("anthropic", "claude").unwrap();
    s.append_message(user("hi")).unwrap();
    let path = s.session_file().unwrap().to_path_buf();
    assert!(!path.exists());
    assert!(!s.is_persisted());
    s.append_message(assistant("hello")).unwrap();
    let l = lines(&path);
    assert_eq!(l.len(), 4);
    assert_eq!(l[0]["type"], "session");
    assert_eq!(l[0]["version"], 3);
    let first = fs::read_to_string(&path).unwrap();
    s.append_message(user("again")).unwrap();
    let second = fs::read_to_string(&path).unwrap();
    assert!(
        second.starts_with(&first),
        "earlier lines are never rewritten"
    );
    assert!(second.ends_with('\n'));
    let name = path.file_name().unwrap().to_str().unwrap();
    assert!(name.ends_with(&format!("_{}.jsonl", s.session_id())));
    assert!(!name.contains(':'));
}

#[test]
fn reopen_restores_entries_leaf_and_context() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = SessionManager::create("/p", dir.path());
    s.append_message(user("q")).unwrap();
    s.append_message(assistant("a")).unwrap();
    let leaf = s.leaf_id().unwrap().to_string();
    let again = SessionManager::continue_recent("/p", dir.path()).unwrap();
    assert_eq!(again.leaf_id(), Some(leaf.as_str()));
    assert_eq!(texts(&again.build_context().messages), ["q", "a"]);
    assert_eq!(again.cwd(), "/p");
}

#[test]
fn torn_last_line_is_ignored_and_the_next_append_starts_a_new_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = SessionManager::create("/p", dir.path());
    s.append_message(user("q")).unwrap();
    s.append_message(assistant("a")).unwrap();
    let path = s.session_file().unwrap().to_path_buf();
    let mut text = fs::read_to_string(&path).unwrap();
    text.push_str(r#"{"type":"message","id":"zz","parentId""#);
    fs::write(&path, &text).unwrap();
    let mut again = SessionManager::open(&path, "/p").unwrap();
    assert!(matches!(
        again.warnings()[0],
        LoadWarning::TornLastLine { line: 4 }
    ));
    assert_eq!(again.entries().len(), 2);
    again.append_message(user("after crash")).unwrap();
    let after = fs::read_to_string(&path).unwrap();
    assert!(
        after.starts_with(&text),
        "the torn bytes are kept, not truncated"
    );
    let third = SessionManager::open(&path, "/p").unwrap();
    assert_eq!(
        texts(&third.build_context().messages),
        ["q", "a", "after crash"]
    );
    assert_eq!(third.warnings().len(), 1);
    assert!(matches!(
        third.warnings()[0],
        LoadWarning::Malformed { line: 4, .. }
    ));
}

#[test]
fn a_file_that_is_not_a_session_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.jsonl");
    fs::write(&path, "{\"hello\":1}\nprecious data\n").unwrap();
    let err = SessionManager::open(&path, "/p").unwrap_err();
    assert!(matches!(err, SessionError::NotASessionFile(_)));
    assert!(err.to_string().contains("not a session file"));
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "{\"hello\":1}\nprecious data\n"
    );
    // An empty file is fine: it gets a header when first written.
    let empty = dir.path().join("empty.jsonl");
    fs::write(&empty, "").unwrap();
    let mut s = SessionManager::open(&empty, "/p").unwrap();
    s.append_message(user("q")).unwrap();
    s.append_message(assistant("a")).unwrap();
    assert_eq!(lines(&empty).len(), 3);
}

/// A v1 file shaped like pi's `large-session.jsonl` fixture (legacy header keys, no ids, usage
/// without totalTokens, a leftover `partialJson`, a v1 compaction with `firstKeptEntryIndex`).
pub(super) fn v1_fixture() -> String {
    let mut l = vec![
        r#"{"type":"session","id":"3f1c2b9e-0000-4000-8000-000000000001","timestamp":"2025-11-01T10:00:00.000Z","cwd":"/work/app","provider":"anthropic","modelId":"claude-sonnet-4-5","thinkingLevel":"off"}"#.to_string(),
        r#"{"type":"thinking_level_change","timestamp":"2025-11-01T10:00:00.001Z","thinkingLevel":"off"}"#.into(),
        r#"{"type":"message","timestamp":"2025-11-01T10:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"list files"}],"timestamp":1761991201000}}"#.into(),
        r#"{"type":"message","timestamp":"2025-11-01T10:00:02.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"toolu_1","name":"bash","arguments":{"command":"ls"},"partialJson":"{\"command\":\"ls\"}"}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"cost":{"input":0.00003,"output":0.000075,"cacheRead":0,"cacheWrite":0,"total":0.000105}},"stopReason":"toolUse","timestamp":1761991202000}}"#.into(),
        r#"{"type":"message","timestamp":"2025-11-01T10:00:03.000Z","message":{"role":"toolResult","toolCallId":"toolu_1","toolName":"bash","content":[{"type":"text","text":"README.md"}],"isError":false,"timestamp":1761991203000}}"#.into(),
        r#"{"type":"message","timestamp":"2025-11-01T10:00:04.000Z","message":{"role":"assistant","content":[{"type":"text","text":"One file."}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":20,"output":3,"cacheRead":0,"cacheWrite":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1761991204000}}"#.into(),
        r#"{"type":"compaction","timestamp":"2025-11-01T10:00:05.000Z","summary":"User listed files.","firstKeptEntryIndex":4,"tokensBefore":175004}"#.into(),
        r#"{"type":"message","timestamp":"2025-11-01T10:00:06.000Z","message":{"role":"hookMessage","customType":"ext","content":"hook said hi","display":true,"timestamp":1761991206000}}"#.into(),
    ];
    l.push(String::new());
    l.join("\n")
}

#[test]
fn v1_file_is_migrated_atomically_and_reads_like_pi() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.jsonl");
    fs::write(&path, v1_fixture()).unwrap();
    let s = SessionManager::open(&path, "/elsewhere").unwrap();
    assert_eq!(s.header().version, 3);
    assert_eq!(s.cwd(), "/work/app");
    assert_eq!(s.entries().len(), 7);
    let l = lines(&path);
    assert_eq!(l[0]["version"], 3);
    assert_eq!(l[0]["provider"], "anthropic", "legacy header keys are kept");
    for w in l.windows(2).skip(1) {
        assert_eq!(w[1]["parentId"], w[0]["id"], "linear chain");
    }
    // firstKeptEntryIndex 4 counts the header as index 0: the toolResult line.
    assert_eq!(l[6]["firstKeptEntryId"], l[4]["id"]);
    assert_eq!(l[7]["message"]["role"], "custom");
    let ctx = s.build_context();
    let t = texts(&ctx.messages);
    assert!(t[0].contains("User listed files."));
    assert_eq!(t[1..], ["README.md", "One file.", "hook said hi"]);
    // Opening again changes nothing (no second migration).
    let before = fs::read_to_string(&path).unwrap();
    SessionManager::open(&path, "/p").unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), before);
    assert!(matches!(
        s.entries().nth(5).unwrap().kind,
        EntryKind::Compaction { .. }
    ));
}

#[test]
fn fork_copies_entries_and_records_the_parent() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src.jsonl");
    fs::write(&src, v1_fixture()).unwrap();
    SessionManager::open(&src, "/p").unwrap(); // migrate
    let target = dir.path().join("t");
    let f = SessionManager::fork_from(&src, "/target", &target).unwrap();
    assert_eq!(f.cwd(), "/target");
    assert_eq!(
        f.header().parent_session.as_deref(),
        Some(src.to_str().unwrap())
    );
    assert_eq!(f.entries().len(), 7);
    assert!(f.session_file().unwrap().exists());
    let bad = dir.path().join("bad.jsonl");
    fs::write(&bad, "nope\n").unwrap();
    let err = SessionManager::fork_from(&bad, "/p", &target).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("Cannot fork: source session file is empty or invalid")
    );
}

#[test]
fn listing_and_most_recent() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("junk.jsonl"), "not a header\n").unwrap();
    fs::write(dir.path().join("other.txt"), "x").unwrap();
    assert_eq!(most_recent_session(dir.path()), None);
    let mut s = SessionManager::create("/p", dir.path());
    s.append_message(user("first question")).unwrap();
    s.append_message(assistant("answer")).unwrap();
    s.append_session_info("demo").unwrap();
    assert_eq!(most_recent_session(dir.path()).as_deref(), s.session_file());
    let list = list_sessions(dir.path());
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].first_message, "first question");
    assert_eq!(list[0].message_count, 2);
    assert_eq!(list[0].name.as_deref(), Some("demo"));
    assert_eq!(
        list[0].modified, 1_700_000_000_001,
        "last message time, not mtime"
    );
}

#[test]
fn open_or_create_starts_the_named_session_at_the_exact_path_and_keeps_an_existing_header() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agents/main/sessions/chat-42.jsonl");
    let mut s = SessionManager::open_or_create(&path, "chat-42", "/w").unwrap();
    assert_eq!(s.session_id(), "chat-42");
    s.append_message(user("hi")).unwrap();
    s.append_message(assistant("hello")).unwrap();
    let l = lines(&path);
    assert_eq!(l[0]["type"], "session");
    assert_eq!(l[0]["id"], "chat-42");
    assert_eq!(l[0]["cwd"], "/w");
    // An empty file is a new session too.
    let empty = dir.path().join("empty.jsonl");
    fs::write(&empty, "").unwrap();
    assert_eq!(
        SessionManager::open_or_create(&empty, "e1", "/w")
            .unwrap()
            .session_id(),
        "e1"
    );
    // A file with a header is the session it says it is, and is not rewritten.
    let before = fs::read(&path).unwrap();
    let again = SessionManager::open_or_create(&path, "another-id", "/elsewhere").unwrap();
    assert_eq!(again.session_id(), "chat-42");
    assert_eq!(again.build_context().messages.len(), 2);
    assert_eq!(fs::read(&path).unwrap(), before);
    // A file that is not a session file is refused, not replaced.
    let foreign = dir.path().join("notes.jsonl");
    fs::write(&foreign, "{\"hello\":1}\n").unwrap();
    assert!(SessionManager::open_or_create(&foreign, "x", "/w").is_err());
    assert_eq!(fs::read_to_string(&foreign).unwrap(), "{\"hello\":1}\n");
}

#[test]
fn a_session_lock_is_exclusive_names_its_holder_and_dies_with_its_process() {
    use filo_session::{LockError, SessionLock};
    use std::time::Duration;
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("sessions/s.jsonl");
    let held = SessionLock::acquire(&session, Duration::ZERO, 1_700_000_000_000).unwrap();
    assert_eq!(held.path(), dir.path().join("sessions/s.jsonl.lock"));
    // A second holder (another open of the file, as another process would have) waits, then
    // gives up naming the holder.
    let err = SessionLock::acquire(&session, Duration::from_millis(60), 0).unwrap_err();
    let LockError::Busy { holder, waited, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(
        holder,
        &format!("pid {} since 1700000000000", std::process::id())
    );
    assert!(*waited >= Duration::from_millis(60));
    assert!(
        err.to_string()
            .contains("another process is writing this session")
    );
    // A waiter gets the lock as soon as it is released.
    let waiter = {
        let session = session.clone();
        std::thread::spawn(move || {
            SessionLock::acquire(&session, Duration::from_secs(10), 2).is_ok()
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    drop(held);
    assert!(waiter.join().unwrap());
    // A process that dies releases its lock: nothing stale is left to clean up.
    let script = "import fcntl, sys, time\nf = open(sys.argv[1], 'a')\nfcntl.flock(f, fcntl.LOCK_EX)\nprint('locked', flush=True)\ntime.sleep(30)\n";
    let mut child = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(filo_session::lock::lock_path(&session))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "locked");
    assert!(SessionLock::acquire(&session, Duration::from_millis(30), 3).is_err());
    child.kill().unwrap();
    child.wait().unwrap();
    let lock = SessionLock::acquire(&session, Duration::from_secs(10), 4);
    assert!(lock.is_ok(), "{lock:?}");
}

/// Lines of a session pi 0.73.1 wrote (the `Done.` turn of the recorded edit run): its assistant
/// message carries `responseId` after `timestamp`.
const PI_073_LINES: [&str; 3] = [
    r#"{"type":"session","version":3,"id":"01a230ed-5096-7114-9814-7b4b58b44c8b","timestamp":"2026-12-01T09:26:28.759Z","cwd":"/p"}"#,
    r#"{"type":"message","id":"c367a561","parentId":null,"timestamp":"2026-12-01T09:26:28.801Z","message":{"role":"user","content":[{"type":"text","text":"apply the edits"}],"timestamp":1796117188800}}"#,
    r#"{"type":"message","id":"b2be8e78","parentId":"c367a561","timestamp":"2026-12-01T09:26:28.988Z","message":{"role":"assistant","content":[{"type":"text","text":"Done."}],"api":"openai-completions","provider":"mock","model":"mock-model","usage":{"input":100,"output":10,"cacheRead":0,"cacheWrite":0,"totalTokens":110,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1796117188972,"responseId":"chatcmpl-mock"}}"#,
];

#[test]
fn a_pi_073_response_id_survives_load_and_rewrite_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("pi.jsonl");
    fs::write(&src, PI_073_LINES.join("\n") + "\n").unwrap();
    let mut s = SessionManager::open(&src, "/p").unwrap();
    let entry = s.entry("b2be8e78").unwrap();
    let Some(filo_session::SessionMessage::Llm(filo_ai::Message::Assistant(a))) = entry.message()
    else {
        panic!("{entry:?}")
    };
    assert_eq!(a.response_id.as_deref(), Some("chatcmpl-mock"));
    assert_eq!(entry.to_line(), PI_073_LINES[2]);
    // A branched copy writes the line again, unchanged.
    s.create_branched_session("b2be8e78").unwrap();
    let copy = fs::read_to_string(s.session_file().unwrap()).unwrap();
    assert!(copy.lines().any(|l| l == PI_073_LINES[2]), "{copy}");
}

#[test]
fn filo_writes_the_response_id_where_pi_does() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = SessionManager::create("/p", dir.path());
    s.append_message(user("q")).unwrap();
    let mut with_id = assistant("a");
    if let filo_session::SessionMessage::Llm(filo_ai::Message::Assistant(a)) = &mut with_id {
        a.response_id = Some("msg_01XFDUDYJgAACzvnptvVoYEL".into());
    }
    s.append_message(with_id).unwrap();
    s.append_message(assistant("no id")).unwrap();
    let text = fs::read_to_string(s.session_file().unwrap()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[2].ends_with(
            r#""timestamp":1700000000001,"responseId":"msg_01XFDUDYJgAACzvnptvVoYEL"}}"#
        ),
        "{}",
        lines[2]
    );
    assert!(!lines[3].contains("responseId"), "{}", lines[3]);
    let again = SessionManager::open(s.session_file().unwrap(), "/p").unwrap();
    let ids: Vec<Option<String>> = again
        .entries()
        .filter_map(|e| match e.message() {
            Some(filo_session::SessionMessage::Llm(filo_ai::Message::Assistant(a))) => {
                Some(a.response_id.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        ids,
        [Some("msg_01XFDUDYJgAACzvnptvVoYEL".to_string()), None]
    );
}
