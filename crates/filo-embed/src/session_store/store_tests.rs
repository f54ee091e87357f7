use super::*;
use crate::clock::ManualClock;
use crate::session_key::to_store_key;

fn paths(dir: &Path) -> EmbedPaths {
    EmbedPaths::new(Some(dir.join("state")), dir.join("home"), dir.join("tmp"))
}

#[test]
fn parse_keeps_unknown_fields_and_round_trips() {
    let text = r#"{
      "agent:main:main": {"sessionId": "abc", "updatedAt": 5, "futureField": {"x": [1]},
                          "authProfileOverrideSource": "user", "compactionCount": 2},
      "agent:main:direct:bob": {"sessionId": "def", "updatedAt": 6, "sessionFile": "def.jsonl"}
    }"#;
    let store = SessionStore::parse(text, Path::new("sessions.json")).unwrap();
    let main = &store.entries["agent:main:main"];
    assert_eq!(main.session_id, "abc");
    assert_eq!(main.extra["futureField"], serde_json::json!({"x": [1]}));
    assert_eq!(
        main.auth_profile_override_source,
        Some(OverrideSource::User)
    );
    let again = SessionStore::parse(&store.to_json_string().unwrap(), Path::new("s.json")).unwrap();
    assert_eq!(again, store);
}

#[test]
fn malformed_inputs_name_file_and_key() {
    let cases = [
        ("not json", "(document)"),
        ("[1]", "(document)"),
        (r#"{"k1": 3}"#, "k1"),
        (r#"{"k2": {"updatedAt": 1}}"#, "k2"),
        (r#"{"k3": {"sessionId": "a", "updatedAt": "soon"}}"#, "k3"),
    ];
    for (text, key) in cases {
        let err = SessionStore::parse(text, Path::new("/x/sessions.json")).unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("/x/sessions.json: "), "{msg}");
        assert!(msg.contains(&format!("`{key}`")), "{text} → {msg}");
    }
    let err = SessionStore::parse(
        r#"{"k3": {"sessionId": "a", "updatedAt": "soon"}}"#,
        Path::new("s.json"),
    )
    .unwrap_err();
    assert!(err.to_string().contains("field `updatedAt`"), "{err}");
}

#[test]
fn a_malformed_file_is_never_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let file = SessionStoreFile::for_agent(&paths(dir.path()), "main");
    fs::create_dir_all(file.path().parent().unwrap()).unwrap();
    let bad = r#"{"agent:main:main": {"sessionId": 42}}"#;
    fs::write(file.path(), bad).unwrap();
    let clock = ManualClock::new(1);
    let err = file
        .update(|s| {
            s.get_or_create("agent:main:other", &clock);
        })
        .unwrap_err();
    assert!(
        matches!(err, SessionStoreError::Malformed { ref key, .. } if key == "agent:main:main")
    );
    assert_eq!(fs::read_to_string(file.path()).unwrap(), bad);
    assert!(file.load().is_err());
}

#[test]
fn new_keys_get_a_uuid_and_rotation_keeps_settings() {
    let clock = ManualClock::new(1_000);
    let mut store = SessionStore::default();
    let (entry, created) = store.get_or_create("agent:main:main", &clock);
    assert!(created);
    let first = entry.session_id.clone();
    assert!(uuid::Uuid::parse_str(&first).is_ok());
    entry.thinking_level = Some("high".into());
    entry.total_tokens = Some(500);
    let (again, created) = store.get_or_create("agent:main:main", &clock);
    assert!(!created);
    assert_eq!(again.session_id, first);
    clock.advance(10);
    let rotated = store.rotate("agent:main:main", &clock).clone();
    assert_ne!(rotated.session_id, first);
    assert_eq!(rotated.thinking_level.as_deref(), Some("high"));
    assert_eq!(rotated.total_tokens, None);
    assert_eq!(rotated.updated_at, 1_010);
}

#[test]
fn update_creates_and_reloads() {
    let dir = tempfile::tempdir().unwrap();
    let file = SessionStoreFile::for_agent(&paths(dir.path()), "Main");
    assert!(
        file.path()
            .ends_with("state/agents/main/sessions/sessions.json")
    );
    assert_eq!(file.load().unwrap(), SessionStore::default());
    let clock = ManualClock::new(7);
    let (id, written) = file
        .update(|s| {
            s.get_or_create("agent:main:main", &clock)
                .0
                .session_id
                .clone()
        })
        .unwrap();
    assert_eq!(file.load().unwrap(), written);
    assert_eq!(written.entries["agent:main:main"].session_id, id);
    let transcript = file
        .transcript_path("agent:main:main", &written.entries["agent:main:main"])
        .unwrap();
    assert_eq!(
        transcript,
        file.path().with_file_name(format!("{id}.jsonl"))
    );
}

#[test]
fn stored_paths_and_keys_cannot_escape_the_state_dir() {
    let dir = tempfile::tempdir().unwrap();
    let p = paths(dir.path());
    let state = p.state_dir.clone();
    for key in [
        "agent:../../etc:main",
        "../../x",
        "agent:..:main",
        "/etc/passwd",
    ] {
        let store_key = to_store_key("main", Some(key), None);
        let agent = crate::session_key::agent_id_from_session_key(&store_key);
        let file = SessionStoreFile::for_agent(&p, &agent);
        assert!(
            file.path().starts_with(state.join("agents")),
            "{key} → {}",
            file.path().display()
        );
        assert_eq!(
            file.path()
                .parent()
                .unwrap()
                .parent()
                .unwrap()
                .parent()
                .unwrap(),
            state.join("agents"),
            "{key}"
        );
    }
    let file = SessionStoreFile::for_agent(&p, "main");
    let sessions = file.path().parent().unwrap().to_path_buf();
    let mut entry = SessionEntry::new("abc", 0);
    for stored in ["../../../escape.jsonl", "/etc/passwd", "  "] {
        entry.session_file = Some(stored.into());
        assert_eq!(
            file.transcript_path("k", &entry).unwrap(),
            sessions.join("abc.jsonl"),
            "{stored}"
        );
    }
    entry.session_file = Some("sub/ok.jsonl".into());
    assert_eq!(
        file.transcript_path("k", &entry).unwrap(),
        sessions.join("sub/ok.jsonl")
    );
    let bad = SessionEntry::new("../evil", 0);
    let err = file.transcript_path("agent:main:x", &bad).unwrap_err();
    assert!(matches!(
        err,
        SessionStoreError::Path {
            source: SessionPathError::InvalidSessionId(_),
            ..
        }
    ));
}

#[test]
fn store_path_templates_expand_agent_and_home() {
    let p = paths(Path::new("/r"));
    let cases = [
        (None, "/r/state/agents/ops/sessions/sessions.json"),
        (Some("  "), "/r/state/agents/ops/sessions/sessions.json"),
        (Some("~/stores/{agentId}.json"), "/r/home/stores/ops.json"),
        (Some("/var/s/{agentId}/s.json"), "/var/s/ops/s.json"),
    ];
    for (template, want) in cases {
        assert_eq!(
            store_path(&p, "Ops", template),
            PathBuf::from(want),
            "{template:?}"
        );
    }
}

const CHILD_ENV: &str = "FILO_EMBED_SESSION_STORE_CHILD";
const UPDATES_PER_WRITER: u64 = 30;

fn bump(file: &SessionStoreFile, writer: &str) {
    let clock = ManualClock::new(0);
    for _ in 0..UPDATES_PER_WRITER {
        file.update(|s| {
            for key in [
                format!("agent:main:{writer}"),
                "agent:main:total".to_owned(),
            ] {
                let (e, _) = s.get_or_create(&key, &clock);
                e.compaction_count = Some(e.compaction_count.unwrap_or(0) + 1);
            }
        })
        .unwrap();
    }
}

/// Two processes (this test binary re-run as a child), a thread with its own handle and this
/// thread update the same store at once; every increment must survive.
#[test]
fn concurrent_processes_lose_no_update() {
    if let Ok(spec) = std::env::var(CHILD_ENV) {
        let (path, writer) = spec.split_once('|').unwrap();
        bump(&SessionStoreFile::at(path), writer);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = SessionStoreFile::for_agent(&paths(dir.path()), "main");
    let exe = std::env::current_exe().unwrap();
    let test_name = "session_store::tests::concurrent_processes_lose_no_update";
    let children: Vec<_> = ["p1", "p2"]
        .iter()
        .map(|w| {
            std::process::Command::new(&exe)
                .args(["--exact", test_name, "--nocapture", "--test-threads=1"])
                .env(CHILD_ENV, format!("{}|{w}", file.path().display()))
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let thread_file = file.clone();
    let thread = std::thread::spawn(move || bump(&thread_file, "t1"));
    bump(&file, "main");
    thread.join().unwrap();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let store = file.load().unwrap();
    for w in ["p1", "p2", "t1", "main"] {
        assert_eq!(
            store.entries[&format!("agent:main:{w}")].compaction_count,
            Some(UPDATES_PER_WRITER),
            "{w}"
        );
    }
    assert_eq!(
        store.entries["agent:main:total"].compaction_count,
        Some(4 * UPDATES_PER_WRITER)
    );
}
