use super::*;
use serde_json::json;

fn ev(code: KeyCode, mods: KeyModifiers) -> KeyEvent {
    KeyEvent::new(code, mods)
}

#[test]
fn keys_match_as_terminals_send_them() {
    let ctrl = KeyModifiers::CONTROL;
    let shift_ctrl = KeyModifiers::CONTROL | KeyModifiers::SHIFT;
    assert!(key_matches("ctrl+p", &ev(KeyCode::Char('p'), ctrl)));
    assert!(!key_matches("ctrl+p", &ev(KeyCode::Char('p'), shift_ctrl)));
    // The keyboard protocol (kitty) and tmux's extended keys spell Shift two ways.
    assert!(key_matches(
        "shift+ctrl+p",
        &ev(KeyCode::Char('P'), shift_ctrl)
    ));
    assert!(key_matches(
        "ctrl+shift+p",
        &ev(KeyCode::Char('p'), shift_ctrl)
    ));
    assert!(!key_matches("shift+ctrl+p", &ev(KeyCode::Char('p'), ctrl)));
    // Legacy control bytes: ctrl+] is 0x1d (crossterm: ctrl+5), ctrl+- is 0x1f (ctrl+7).
    assert!(key_matches("ctrl+]", &ev(KeyCode::Char('5'), ctrl)));
    assert!(key_matches("ctrl+]", &ev(KeyCode::Char(']'), ctrl)));
    assert!(key_matches("ctrl+-", &ev(KeyCode::Char('7'), ctrl)));
    assert!(key_matches(
        "ctrl+alt+]",
        &ev(KeyCode::Char('5'), ctrl | KeyModifiers::ALT)
    ));
    assert!(!key_matches("ctrl+5", &ev(KeyCode::Char(']'), ctrl)));
    assert!(key_matches(
        "shift+tab",
        &ev(KeyCode::BackTab, KeyModifiers::SHIFT)
    ));
    assert!(key_matches(
        "shift+l",
        &ev(KeyCode::Char('L'), KeyModifiers::SHIFT)
    ));
    assert!(!key_matches(
        "shift+l",
        &ev(KeyCode::Char('l'), KeyModifiers::NONE)
    ));
    assert!(key_matches("alt+up", &ev(KeyCode::Up, KeyModifiers::ALT)));
    assert!(key_matches(
        "pageUp",
        &ev(KeyCode::PageUp, KeyModifiers::NONE)
    ));
    assert!(key_matches("escape", &ev(KeyCode::Esc, KeyModifiers::NONE)));
    assert!(key_matches("f5", &ev(KeyCode::F(5), KeyModifiers::NONE)));
    assert!(!key_matches(
        "alt+enter",
        &ev(KeyCode::Enter, KeyModifiers::NONE)
    ));
    assert!(!key_matches("ctrl+nope", &ev(KeyCode::Char('n'), ctrl)));
}

#[test]
fn the_file_rebinds_unbinds_and_reads_legacy_names() {
    let (kb, problems) = Keybindings::from_json(&json!({
        "app.model.select": "ctrl+k",
        "tui.editor.undo": ["ctrl+-", "ctrl+z"],
        "app.suspend": [],
        "expandTools": "ctrl+e",
        "app.tools.expand": "ctrl+x",
    }));
    assert_eq!(problems, Vec::<String>::new());
    let ctrl = |c| ev(KeyCode::Char(c), KeyModifiers::CONTROL);
    assert!(kb.matches(&ctrl('k'), "app.model.select"));
    assert!(!kb.matches(&ctrl('l'), "app.model.select"));
    assert!(kb.matches(&ctrl('z'), "tui.editor.undo"));
    assert!(!kb.matches(&ctrl('z'), "app.suspend"));
    // Today's name wins over the legacy one for the same action.
    assert_eq!(kb.keys("app.tools.expand"), ["ctrl+x"]);
    assert_eq!(kb.display("tui.editor.undo"), "Ctrl+-/Ctrl+Z");
    assert_eq!(
        Keybindings::default().display("tui.editor.cursorWordLeft"),
        "Alt+Left/Ctrl+Left/Alt+B"
    );
    assert_eq!(kb.display("app.suspend"), "");
}

#[test]
fn problems_are_reported_and_the_rest_is_used() {
    let (kb, problems) = Keybindings::from_json(&json!({
        "app.nothing": "ctrl+q",
        "app.model.select": ["ctrl+k", "hyper+x"],
        "app.clear": 5,
        "app.thinking.toggle": "ctrl+k",
    }));
    assert_eq!(
        problems,
        vec![
            "unknown action \"app.nothing\" (ignored)".to_string(),
            "\"app.model.select\": \"hyper+x\" is not a key (ignored)".to_string(),
            "\"app.clear\": expected a key or a list of keys (ignored)".to_string(),
            "\"ctrl+k\" is bound to app.model.select, app.thinking.toggle".to_string(),
        ]
    );
    assert_eq!(kb.keys("app.model.select"), ["ctrl+k"]);
    assert_eq!(kb.keys("app.clear"), ["ctrl+c"]);
}

#[test]
fn a_broken_or_missing_file_keeps_the_defaults_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("keybindings.json");
    let (kb, w) = Keybindings::load(&path);
    assert_eq!(kb, Keybindings::default());
    assert!(w.is_empty());
    std::fs::write(&path, "{ not json").unwrap();
    let (kb, w) = Keybindings::load(&path);
    assert_eq!(kb, Keybindings::default());
    assert_eq!(w.len(), 1);
    assert!(w[0].contains("keybindings.json: not valid JSON"), "{w:?}");
    // The file is left as it was.
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "{ not json");
}

#[test]
fn every_default_key_parses() {
    for (id, keys, _) in DEFINITIONS {
        for k in *keys {
            assert!(parse_spec(k).is_some(), "{id}: {k}");
        }
    }
    for (_, new) in LEGACY_NAMES {
        assert!(action_id(new).is_some(), "{new}");
    }
}
