//! A session file that cannot be written: the failure is a warning naming the file and the
//! cause, the memory (extensions) still gets every entry, and `ensure_saved` reports what is not
//! in the file until a later write lands it.

use std::sync::{Arc, Mutex};

use filo_core::extension::EntryContext;
use filo_core::{
    AgentSession, AgentSessionOptions, Extension, PromptOptions, Resources, SessionEvent, Settings,
};
use filo_session::{SessionEntry, SessionManager};
use filo_testkit::{MockProvider, Reply, Turn};
use serde_json::json;

use super::{Echo, fast_client, mock_model};

#[derive(Default)]
struct Recorder(Mutex<Vec<String>>);

impl Extension for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }
    fn entry_appended(&self, entry: &SessionEntry, _ctx: &EntryContext) {
        self.0.lock().unwrap().push(entry.id.clone());
    }
}

#[tokio::test]
async fn a_session_that_cannot_be_written_warns_keeps_the_memory_fed_and_catches_up_later() {
    let mock = MockProvider::start(vec![Turn::Reply(Reply::text("Answer."))]).await;
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    // A regular file where the session directory should be: every write fails.
    std::fs::write(&sessions, "in the way").unwrap();
    let recorder = Arc::new(Recorder::default());
    let model = mock_model(&mock, 100_000);
    let session = AgentSession::create(AgentSessionOptions {
        cwd: dir.path().to_path_buf(),
        client: Arc::new(fast_client()),
        models: vec![model.clone()].into(),
        model: Some(model),
        thinking_level: None,
        tools: vec![Arc::new(Echo)],
        session: SessionManager::create(dir.path().to_str().unwrap(), &sessions),
        settings: Settings::in_memory(json!({})),
        api_key: Arc::new(|_| Some("test-key".to_string())),
        resources: Resources::default(),
        extensions: vec![recorder.clone() as Arc<dyn Extension>],
        date: "2026-11-30".into(),
    })
    .unwrap();
    let (_, mut events) = session.subscribe_channel();
    session
        .prompt("hello", PromptOptions::default())
        .await
        .unwrap();

    let mut warnings = Vec::new();
    while let Ok(ev) = events.try_recv() {
        if let SessionEvent::Warning { message } = ev {
            warnings.push(message);
        }
    }
    let path = sessions.display().to_string();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("not saved") && w.contains(&path) && w.contains("File exists")),
        "{warnings:?}"
    );
    let all: Vec<String> = session
        .session_manager()
        .entries()
        .map(|e| e.id.clone())
        .collect();
    assert_eq!(
        *recorder.0.lock().unwrap(),
        all,
        "the memory is told about every entry, saved or not"
    );
    let unsaved = session.ensure_saved().unwrap_err();
    assert_eq!(unsaved.count, all.len());
    assert_eq!(session.unsaved(), Some(unsaved));
    // Leaving the session would drop what the file does not hold: refused, with the reason.
    let id_before = session.session_id();
    let refused = session.new_session().await.unwrap_err().to_string();
    assert!(
        refused.contains("not saved") && refused.contains(&path),
        "{refused}"
    );
    assert_eq!(session.session_id(), id_before);

    std::fs::remove_file(&sessions).unwrap();
    session.ensure_saved().unwrap();
    assert_eq!(session.unsaved(), None);
    let file = session.session_file().unwrap();
    let text = std::fs::read_to_string(file).unwrap();
    assert_eq!(
        text.lines().count(),
        all.len() + 1,
        "header and every entry"
    );
    assert!(text.contains("hello") && text.contains("Answer."));
}

#[tokio::test]
async fn switching_to_a_file_with_skipped_lines_says_which_lines() {
    let mock = MockProvider::start(Vec::new()).await;
    let fixture = super::session_with(&mock, 100_000, json!({}));
    let other = fixture._dir.path().join("other.jsonl");
    let header = r#"{"type":"session","version":3,"id":"3f1c2b9e-0000-4000-8000-00000000000a","timestamp":"2025-11-01T10:00:00.000Z","cwd":"/p"}"#;
    let entry = r#"{"type":"session_info","id":"aaaaaaaa","parentId":null,"timestamp":"2025-11-01T10:00:01.000Z","name":"n"}"#;
    std::fs::write(
        &other,
        format!("{header}\ngarbage\n{entry}\n{{\"type\":\"mess"),
    )
    .unwrap();
    let (_, mut events) = fixture.session.subscribe_channel();
    fixture.session.switch_session(&other).await.unwrap();
    let mut warnings = Vec::new();
    while let Ok(ev) = events.try_recv() {
        if let SessionEvent::Warning { message } = ev {
            warnings.push(message);
        }
    }
    let path = other.display().to_string();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains(&path) && w.contains("line 2") && w.contains("malformed")),
        "{warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.contains(&path) && w.contains("line 4") && w.contains("torn")),
        "{warnings:?}"
    );
}
