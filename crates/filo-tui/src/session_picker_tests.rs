use super::*;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

const T0: i64 = 1_767_225_600_000; // 2026-01-01

/// A pi v3 session file with one user message at `T0 + minutes`.
pub(crate) fn write_session(
    dir: &Path,
    id: &str,
    text: &str,
    minutes: i64,
    parent: Option<&Path>,
    name: Option<&str>,
) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let ts = filo_session::ids::iso_from_ms(T0 + minutes * 60_000);
    let mut header =
        serde_json::json!({"type":"session","version":3,"id":id,"timestamp":ts,"cwd":"/p"});
    if let Some(p) = parent {
        header["parentSession"] = p.to_string_lossy().into_owned().into();
    }
    let mut lines = vec![
        header.to_string(),
        serde_json::json!({"type":"message","id":format!("{id}01"),"parentId":null,"timestamp":ts,
            "message":{"role":"user","content":text,"timestamp":T0 + minutes * 60_000}})
        .to_string(),
    ];
    if let Some(n) = name {
        lines.push(
            serde_json::json!({"type":"session_info","id":format!("{id}02"),"parentId":format!("{id}01"),
                "timestamp":ts,"name":n})
            .to_string(),
        );
    }
    let path = dir.join(format!("{id}.jsonl"));
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

fn picker(root: &Path, current: Option<PathBuf>) -> SessionPicker {
    SessionPicker::new(
        PickerSource {
            dir: root.join("here"),
            all_root: root.to_path_buf(),
            current_file: current,
            cwd: "/p".into(),
            home: None,
            can_rename: true,
        },
        T0 + 90 * 60_000,
    )
}

fn labels(p: &SessionPicker) -> Vec<String> {
    p.rows
        .iter()
        .map(|r| {
            let s = &p.sessions()[r.session];
            format!(
                "{}{}",
                r.prefix,
                s.name.clone().unwrap_or(s.first_message.clone())
            )
        })
        .collect()
}

#[test]
fn threaded_then_recent_named_and_search() {
    let tmp = tempfile::tempdir().unwrap();
    let here = tmp.path().join("here");
    let a = write_session(&here, "aaaa", "root session", 10, None, None);
    write_session(&here, "bbbb", "child one", 20, Some(&a), None);
    write_session(
        &here,
        "cccc",
        "child two",
        30,
        Some(&a),
        Some("Named child"),
    );
    write_session(&here, "dddd", "lonely", 5, None, None);
    let mut p = picker(tmp.path(), None);
    assert_eq!(
        labels(&p),
        vec!["root session", "├─ Named child", "└─ child one", "lonely"]
    );
    p.handle_key(ctrl('s'));
    assert_eq!(p.sort, SortMode::Recent);
    assert_eq!(
        labels(&p),
        vec!["Named child", "child one", "root session", "lonely"]
    );
    p.handle_key(ctrl('n'));
    assert_eq!(labels(&p), vec!["Named child"]);
    p.handle_key(ctrl('n'));
    for c in "lonely".chars() {
        p.handle_key(key(KeyCode::Char(c)));
    }
    assert_eq!(labels(&p), vec!["lonely"]);
    assert_eq!(
        p.handle_key(key(KeyCode::Enter)),
        PickerAction::Open(here.join("dddd.jsonl"))
    );
    assert_eq!(p.handle_key(key(KeyCode::Esc)), PickerAction::Cancel);
}

#[test]
fn tab_shows_every_project_and_delete_asks_first() {
    let tmp = tempfile::tempdir().unwrap();
    let here = tmp.path().join("here");
    let current = write_session(&here, "aaaa", "the open one", 10, None, None);
    write_session(&here, "bbbb", "doomed", 20, None, None);
    write_session(
        &tmp.path().join("elsewhere"),
        "cccc",
        "far away",
        30,
        None,
        None,
    );
    let mut p = picker(tmp.path(), Some(current.clone()));
    assert_eq!(labels(&p), vec!["doomed", "the open one"]);
    p.handle_key(key(KeyCode::Tab));
    assert_eq!(p.scope, Scope::All);
    assert_eq!(labels(&p), vec!["far away", "doomed", "the open one"]);
    p.handle_key(key(KeyCode::Tab));
    // The open session cannot be deleted.
    p.handle_key(key(KeyCode::Down));
    p.handle_key(ctrl('d'));
    assert!(p.status.as_ref().is_some_and(|s| s.error), "{:?}", p.status);
    assert!(current.exists());
    // Another one: a confirmation, Escape keeps it, Enter deletes it.
    p.handle_key(key(KeyCode::Up));
    p.handle_key(ctrl('d'));
    assert_eq!(p.mode, Mode::ConfirmDelete(here.join("bbbb.jsonl")));
    p.handle_key(key(KeyCode::Char('x')));
    assert!(matches!(p.mode, Mode::ConfirmDelete(_)), "other keys wait");
    p.handle_key(key(KeyCode::Esc));
    assert!(here.join("bbbb.jsonl").exists());
    p.handle_key(ctrl('d'));
    p.handle_key(key(KeyCode::Enter));
    assert!(!here.join("bbbb.jsonl").exists());
    assert_eq!(labels(&p), vec!["the open one"]);
}

#[test]
fn rename_writes_a_session_info_entry() {
    let tmp = tempfile::tempdir().unwrap();
    let here = tmp.path().join("here");
    let current = write_session(&here, "aaaa", "open", 10, None, None);
    let other = write_session(&here, "bbbb", "other", 20, None, None);
    let mut p = picker(tmp.path(), Some(current));
    p.handle_key(ctrl('r'));
    assert!(matches!(p.mode, Mode::Rename { .. }));
    for c in "Renamed".chars() {
        p.handle_key(key(KeyCode::Char(c)));
    }
    assert_eq!(p.handle_key(key(KeyCode::Enter)), PickerAction::None);
    let text = std::fs::read_to_string(&other).unwrap();
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "session_info");
    assert_eq!(last["name"], "Renamed");
    assert_eq!(labels(&p), vec!["Renamed", "open"]);
    // The open session is renamed by the app (through the live session).
    p.handle_key(key(KeyCode::Down));
    p.handle_key(ctrl('r'));
    for c in "Mine".chars() {
        p.handle_key(key(KeyCode::Char(c)));
    }
    assert_eq!(
        p.handle_key(key(KeyCode::Enter)),
        PickerAction::RenameCurrent("Mine".into())
    );
}

#[test]
fn ages_are_short() {
    assert_eq!(short_age(T0, T0), "now");
    assert_eq!(short_age(T0 + 5 * 60_000, T0), "5m");
    assert_eq!(short_age(T0 + 3 * 3_600_000, T0), "3h");
    assert_eq!(short_age(T0 + 9 * 86_400_000, T0), "1w");
    assert_eq!(short_age(T0 + 400 * 86_400_000, T0), "1y");
}
