//! Faults on the write side: failed appends, migrations that must not lose lines, entries restored
//! from another store, file permissions.

use std::fs;
use std::path::Path;

use filo_session::{SessionEntry, SessionManager};

use super::{assistant, texts, user};

fn msg(role: &str, text: &str, extra: &str) -> String {
    format!(
        r#"{{"type":"message","timestamp":"2025-11-01T10:00:00.000Z","message":{{"role":"{role}","content":[{{"type":"text","text":"{text}"}}]{extra},"timestamp":1761991201000}}}}"#
    )
}

fn v1_with_surprises() -> String {
    let assistant_extra = r#","api":"anthropic-messages","provider":"anthropic","model":"m","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop""#;
    [
        r#"{"type":"session","id":"3f1c2b9e-0000-4000-8000-000000000002","timestamp":"2025-11-01T10:00:00.000Z","cwd":"/work/app"}"#.to_string(),
        msg("user", "first question", ""),
        msg("mystery", "a role from the future", ""),
        msg("assistant", "first answer", assistant_extra),
        "this line is not JSON".to_string(),
        msg("user", "second question", ""),
        msg("assistant", "second answer", assistant_extra),
        String::new(),
    ]
    .join("\n")
}

#[test]
fn a_v1_migration_keeps_a_backup_every_line_it_does_not_understand_and_the_first_message() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.jsonl");
    let original = v1_with_surprises();
    fs::write(&path, &original).unwrap();
    // Someone's file already has the backup name: it must not be overwritten.
    let taken = dir.path().join("old.jsonl.v1.bak");
    fs::write(&taken, "not mine to overwrite").unwrap();

    let s = SessionManager::open(&path, "/p").unwrap();
    assert_eq!(
        texts(&s.build_context().messages),
        [
            "first question",
            "first answer",
            "second question",
            "second answer"
        ],
        "the first user message stays in the context"
    );
    assert_eq!(fs::read_to_string(&taken).unwrap(), "not mine to overwrite");
    let backup = dir.path().join("old.jsonl.v1.1.bak");
    assert_eq!(s.migration_backup(), Some(backup.as_path()));
    assert_eq!(fs::read_to_string(&backup).unwrap(), original);

    let migrated = fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = migrated.lines().collect();
    assert_eq!(lines.len(), 7, "{migrated}");
    assert_eq!(lines[2], msg("mystery", "a role from the future", ""));
    assert_eq!(lines[4], "this line is not JSON");
    let first: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(first["version"], 3);

    // Opening the migrated file again: same context, no second backup.
    let again = SessionManager::open(&path, "/p").unwrap();
    assert_eq!(
        texts(&again.build_context().messages),
        texts(&s.build_context().messages)
    );
    assert!(again.migration_backup().is_none());
    assert!(!dir.path().join("old.jsonl.v1.2.bak").exists());
}

#[test]
fn a_failed_append_is_reported_kept_queued_and_written_in_order_later() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = SessionManager::create("/p", dir.path());
    s.append_message(user("q1")).unwrap();
    s.append_message(assistant("a1")).unwrap();
    assert_eq!(s.unsaved_entries(), 0);
    let path = s.session_file().unwrap().to_path_buf();
    let saved = dir.path().join("aside");
    // A directory where the file was: the append fails even for root.
    fs::rename(&path, &saved).unwrap();
    fs::create_dir(&path).unwrap();

    let err = s.append_message(user("q2")).unwrap_err();
    assert!(
        std::error::Error::source(&err).is_none(),
        "the cause is in the message only"
    );
    let err = err.to_string();
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert_eq!(
        err.matches("Is a directory").count(),
        1,
        "cause once: {err}"
    );
    assert!(s.append_message(assistant("a2")).is_err());
    assert_eq!(s.unsaved_entries(), 2);
    assert!(
        s.write_error()
            .is_some_and(|e| e.contains("Is a directory"))
    );

    fs::remove_dir(&path).unwrap();
    fs::rename(&saved, &path).unwrap();
    s.retry_unsaved().unwrap();
    assert_eq!(s.unsaved_entries(), 0);
    assert!(s.write_error().is_none());
    let back = SessionManager::open(&path, "/p").unwrap();
    assert!(back.warnings().is_empty());
    assert_eq!(
        texts(&back.build_context().messages),
        ["q1", "a1", "q2", "a2"]
    );
}

#[test]
fn entries_restored_from_another_store_are_written_before_anything_refers_to_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = SessionManager::create("/p", dir.path());
    s.append_message(user("q1")).unwrap();
    s.append_message(assistant("a1")).unwrap();
    s.append_message(user("q2")).unwrap();
    s.append_message(assistant("a2")).unwrap();
    let all: Vec<SessionEntry> = s.entries().cloned().collect();
    let path = s.session_file().unwrap().to_path_buf();
    // A crash tore the last line: the file lost a2, another store (the DAG) still has it.
    let text = fs::read_to_string(&path).unwrap();
    let cut = text.trim_end().rfind('\n').unwrap() + 20;
    fs::write(&path, &text[..cut]).unwrap();

    let mut resumed = SessionManager::open(&path, "/p").unwrap();
    assert_eq!(resumed.entries().len(), 3);
    resumed.merge_in_memory(all.clone());
    resumed.branch(&all[3].id).unwrap();
    resumed.append_message(user("q3")).unwrap();
    resumed.append_message(assistant("a3")).unwrap();

    let next = SessionManager::open(&path, "/p").unwrap();
    assert_eq!(
        texts(&next.build_context().messages),
        ["q1", "a1", "q2", "a2", "q3", "a3"],
        "the restored entry is in the file, so the next resume sees the whole history"
    );
}

#[test]
fn a_later_line_with_a_known_id_is_still_the_leaf() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = SessionManager::create("/p", dir.path());
    s.append_message(user("q1")).unwrap();
    let q1 = s.leaf_id().unwrap().to_string();
    s.append_message(assistant("a1")).unwrap();
    let path = s.session_file().unwrap().to_path_buf();
    let repeated = s.entry(&q1).unwrap().to_line();
    let mut text = fs::read_to_string(&path).unwrap();
    text.push_str(&repeated);
    text.push('\n');
    fs::write(&path, text).unwrap();
    let again = SessionManager::open(&path, "/p").unwrap();
    assert_eq!(
        again.leaf_id(),
        Some(q1.as_str()),
        "pi: the last line is the leaf"
    );
}

#[cfg(unix)]
fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[cfg(unix)]
#[test]
fn session_files_are_private_and_only_new_directories_are_restricted() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let existing = dir.path().join("existing");
    fs::create_dir(&existing).unwrap();
    fs::set_permissions(&existing, fs::Permissions::from_mode(0o755)).unwrap();
    let sessions = existing.join("sessions").join("--p--");
    let mut s = SessionManager::create("/p", &sessions);
    s.append_message(user("q")).unwrap();
    s.append_message(assistant("a")).unwrap();
    let file = s.session_file().unwrap().to_path_buf();
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(&sessions), 0o700);
    assert_eq!(mode(&existing.join("sessions")), 0o700);
    assert_eq!(mode(&existing), 0o755, "a directory filo did not create");
}
