//! `keybindings.json`: pi 0.73's action names, default keys and file format, and the matching
//! of a terminal key event against a key such as `ctrl+p`, `shift+ctrl+p`, `alt+enter` or
//! `ctrl+]`.
//!
//! The file maps an action id to one key or a list of keys (`{"app.model.select": "ctrl+k",
//! "tui.editor.undo": ["ctrl+-", "ctrl+z"]}`); an action the file names gets exactly those keys,
//! an empty list unbinds it. pi's older names (`selectModel`, `cursorUp`, …) are read as the new
//! ones. A file that cannot be read or parsed, an unknown action or a key that is not one are
//! warnings; the defaults stay in force for what the file does not validly set.

use std::collections::BTreeMap;
use std::path::Path;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Every action: id, default keys, description (pi 0.73.1's table, in its order).
pub const DEFINITIONS: &[(&str, &[&str], &str)] = &[
    ("tui.editor.cursorUp", &["up"], "Move cursor up"),
    ("tui.editor.cursorDown", &["down"], "Move cursor down"),
    (
        "tui.editor.cursorLeft",
        &["left", "ctrl+b"],
        "Move cursor left",
    ),
    (
        "tui.editor.cursorRight",
        &["right", "ctrl+f"],
        "Move cursor right",
    ),
    (
        "tui.editor.cursorWordLeft",
        &["alt+left", "ctrl+left", "alt+b"],
        "Move cursor word left",
    ),
    (
        "tui.editor.cursorWordRight",
        &["alt+right", "ctrl+right", "alt+f"],
        "Move cursor word right",
    ),
    (
        "tui.editor.cursorLineStart",
        &["home", "ctrl+a"],
        "Move to line start",
    ),
    (
        "tui.editor.cursorLineEnd",
        &["end", "ctrl+e"],
        "Move to line end",
    ),
    (
        "tui.editor.jumpForward",
        &["ctrl+]"],
        "Jump forward to character",
    ),
    (
        "tui.editor.jumpBackward",
        &["ctrl+alt+]"],
        "Jump backward to character",
    ),
    ("tui.editor.pageUp", &["pageUp"], "Page up"),
    ("tui.editor.pageDown", &["pageDown"], "Page down"),
    (
        "tui.editor.deleteCharBackward",
        &["backspace"],
        "Delete character backward",
    ),
    (
        "tui.editor.deleteCharForward",
        &["delete", "ctrl+d"],
        "Delete character forward",
    ),
    (
        "tui.editor.deleteWordBackward",
        &["ctrl+w", "alt+backspace"],
        "Delete word backward",
    ),
    (
        "tui.editor.deleteWordForward",
        &["alt+d", "alt+delete"],
        "Delete word forward",
    ),
    (
        "tui.editor.deleteToLineStart",
        &["ctrl+u"],
        "Delete to line start",
    ),
    (
        "tui.editor.deleteToLineEnd",
        &["ctrl+k"],
        "Delete to line end",
    ),
    ("tui.editor.yank", &["ctrl+y"], "Yank"),
    ("tui.editor.yankPop", &["alt+y"], "Yank pop"),
    ("tui.editor.undo", &["ctrl+-"], "Undo"),
    ("tui.input.newLine", &["shift+enter"], "Insert newline"),
    ("tui.input.submit", &["enter"], "Submit input"),
    ("tui.input.tab", &["tab"], "Tab / autocomplete"),
    ("tui.input.copy", &["ctrl+c"], "Copy selection"),
    ("tui.select.up", &["up"], "Move selection up"),
    ("tui.select.down", &["down"], "Move selection down"),
    ("tui.select.pageUp", &["pageUp"], "Selection page up"),
    ("tui.select.pageDown", &["pageDown"], "Selection page down"),
    ("tui.select.confirm", &["enter"], "Confirm selection"),
    (
        "tui.select.cancel",
        &["escape", "ctrl+c"],
        "Cancel selection",
    ),
    ("app.interrupt", &["escape"], "Cancel or abort"),
    ("app.clear", &["ctrl+c"], "Clear editor"),
    ("app.exit", &["ctrl+d"], "Exit when editor is empty"),
    ("app.suspend", &["ctrl+z"], "Suspend to background"),
    ("app.thinking.cycle", &["shift+tab"], "Cycle thinking level"),
    ("app.model.cycleForward", &["ctrl+p"], "Cycle to next model"),
    (
        "app.model.cycleBackward",
        &["shift+ctrl+p"],
        "Cycle to previous model",
    ),
    ("app.model.select", &["ctrl+l"], "Open model selector"),
    ("app.tools.expand", &["ctrl+o"], "Toggle tool output"),
    ("app.thinking.toggle", &["ctrl+t"], "Toggle thinking blocks"),
    (
        "app.session.toggleNamedFilter",
        &["ctrl+n"],
        "Toggle named session filter",
    ),
    ("app.editor.external", &["ctrl+g"], "Open external editor"),
    (
        "app.message.followUp",
        &["alt+enter"],
        "Queue follow-up message",
    ),
    (
        "app.message.dequeue",
        &["alt+up"],
        "Restore queued messages",
    ),
    (
        "app.clipboard.pasteImage",
        &["ctrl+v"],
        "Paste image from clipboard",
    ),
    ("app.session.new", &[], "Start a new session"),
    ("app.session.tree", &[], "Open session tree"),
    ("app.session.fork", &[], "Fork current session"),
    ("app.session.resume", &[], "Resume a session"),
    (
        "app.tree.foldOrUp",
        &["ctrl+left", "alt+left"],
        "Fold tree branch or move up",
    ),
    (
        "app.tree.unfoldOrDown",
        &["ctrl+right", "alt+right"],
        "Unfold tree branch or move down",
    ),
    ("app.tree.editLabel", &["shift+l"], "Edit tree label"),
    (
        "app.tree.toggleLabelTimestamp",
        &["shift+t"],
        "Toggle tree label timestamps",
    ),
    (
        "app.session.togglePath",
        &["ctrl+p"],
        "Toggle session path display",
    ),
    (
        "app.session.toggleSort",
        &["ctrl+s"],
        "Toggle session sort mode",
    ),
    ("app.session.rename", &["ctrl+r"], "Rename session"),
    ("app.session.delete", &["ctrl+d"], "Delete session"),
    (
        "app.session.deleteNoninvasive",
        &["ctrl+backspace"],
        "Delete session when query is empty",
    ),
    ("app.models.save", &["ctrl+s"], "Save model selection"),
    ("app.models.enableAll", &["ctrl+a"], "Enable all models"),
    ("app.models.clearAll", &["ctrl+x"], "Clear all models"),
    (
        "app.models.toggleProvider",
        &["ctrl+p"],
        "Toggle all models for provider",
    ),
    (
        "app.models.reorderUp",
        &["alt+up"],
        "Move model up in order",
    ),
    (
        "app.models.reorderDown",
        &["alt+down"],
        "Move model down in order",
    ),
    (
        "app.tree.filter.default",
        &["ctrl+d"],
        "Tree filter: default view",
    ),
    (
        "app.tree.filter.noTools",
        &["ctrl+t"],
        "Tree filter: hide tool results",
    ),
    (
        "app.tree.filter.userOnly",
        &["ctrl+u"],
        "Tree filter: user messages only",
    ),
    (
        "app.tree.filter.labeledOnly",
        &["ctrl+l"],
        "Tree filter: labeled entries only",
    ),
    (
        "app.tree.filter.all",
        &["ctrl+a"],
        "Tree filter: show all entries",
    ),
    (
        "app.tree.filter.cycleForward",
        &["ctrl+o"],
        "Tree filter: cycle forward",
    ),
    (
        "app.tree.filter.cycleBackward",
        &["shift+ctrl+o"],
        "Tree filter: cycle backward",
    ),
];

/// pi's names before 0.60, read as today's.
const LEGACY_NAMES: &[(&str, &str)] = &[
    ("cursorUp", "tui.editor.cursorUp"),
    ("cursorDown", "tui.editor.cursorDown"),
    ("cursorLeft", "tui.editor.cursorLeft"),
    ("cursorRight", "tui.editor.cursorRight"),
    ("cursorWordLeft", "tui.editor.cursorWordLeft"),
    ("cursorWordRight", "tui.editor.cursorWordRight"),
    ("cursorLineStart", "tui.editor.cursorLineStart"),
    ("cursorLineEnd", "tui.editor.cursorLineEnd"),
    ("jumpForward", "tui.editor.jumpForward"),
    ("jumpBackward", "tui.editor.jumpBackward"),
    ("pageUp", "tui.editor.pageUp"),
    ("pageDown", "tui.editor.pageDown"),
    ("deleteCharBackward", "tui.editor.deleteCharBackward"),
    ("deleteCharForward", "tui.editor.deleteCharForward"),
    ("deleteWordBackward", "tui.editor.deleteWordBackward"),
    ("deleteWordForward", "tui.editor.deleteWordForward"),
    ("deleteToLineStart", "tui.editor.deleteToLineStart"),
    ("deleteToLineEnd", "tui.editor.deleteToLineEnd"),
    ("yank", "tui.editor.yank"),
    ("yankPop", "tui.editor.yankPop"),
    ("undo", "tui.editor.undo"),
    ("newLine", "tui.input.newLine"),
    ("submit", "tui.input.submit"),
    ("tab", "tui.input.tab"),
    ("copy", "tui.input.copy"),
    ("selectUp", "tui.select.up"),
    ("selectDown", "tui.select.down"),
    ("selectPageUp", "tui.select.pageUp"),
    ("selectPageDown", "tui.select.pageDown"),
    ("selectConfirm", "tui.select.confirm"),
    ("selectCancel", "tui.select.cancel"),
    ("interrupt", "app.interrupt"),
    ("clear", "app.clear"),
    ("exit", "app.exit"),
    ("suspend", "app.suspend"),
    ("cycleThinkingLevel", "app.thinking.cycle"),
    ("cycleModelForward", "app.model.cycleForward"),
    ("cycleModelBackward", "app.model.cycleBackward"),
    ("selectModel", "app.model.select"),
    ("expandTools", "app.tools.expand"),
    ("toggleThinking", "app.thinking.toggle"),
    ("toggleSessionNamedFilter", "app.session.toggleNamedFilter"),
    ("externalEditor", "app.editor.external"),
    ("followUp", "app.message.followUp"),
    ("dequeue", "app.message.dequeue"),
    ("pasteImage", "app.clipboard.pasteImage"),
    ("newSession", "app.session.new"),
    ("tree", "app.session.tree"),
    ("fork", "app.session.fork"),
    ("resume", "app.session.resume"),
    ("treeFoldOrUp", "app.tree.foldOrUp"),
    ("treeUnfoldOrDown", "app.tree.unfoldOrDown"),
    ("treeEditLabel", "app.tree.editLabel"),
    ("treeToggleLabelTimestamp", "app.tree.toggleLabelTimestamp"),
    ("toggleSessionPath", "app.session.togglePath"),
    ("toggleSessionSort", "app.session.toggleSort"),
    ("renameSession", "app.session.rename"),
    ("deleteSession", "app.session.delete"),
    ("deleteSessionNoninvasive", "app.session.deleteNoninvasive"),
];

/// A key as a binding names it: modifiers plus one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct KeySpec {
    code: KeyCode,
    mods: KeyModifiers,
}

/// The key a name stands for (`pageUp`, `escape`, `f5`, `]`, `a`), case-insensitive.
fn named_key(name: &str) -> Option<KeyCode> {
    let lower = name.to_ascii_lowercase();
    Some(match lower.as_str() {
        "escape" | "esc" => KeyCode::Esc,
        "enter" | "return" => KeyCode::Enter,
        "tab" => KeyCode::Tab,
        "space" => KeyCode::Char(' '),
        "backspace" => KeyCode::Backspace,
        "delete" => KeyCode::Delete,
        "insert" => KeyCode::Insert,
        "home" => KeyCode::Home,
        "end" => KeyCode::End,
        "pageup" => KeyCode::PageUp,
        "pagedown" => KeyCode::PageDown,
        "up" => KeyCode::Up,
        "down" => KeyCode::Down,
        "left" => KeyCode::Left,
        "right" => KeyCode::Right,
        _ => {
            if let Some(n) = lower.strip_prefix('f').and_then(|n| n.parse::<u8>().ok())
                && (1..=12).contains(&n)
            {
                return Some(KeyCode::F(n));
            }
            let mut chars = lower.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) if c.is_ascii_graphic() => KeyCode::Char(c),
                _ => return None,
            }
        }
    })
}

/// Parse `shift+ctrl+p` and the like; `None` for what is not a key.
fn parse_spec(spec: &str) -> Option<KeySpec> {
    let parts: Vec<&str> = spec.split('+').collect();
    let (key, mods) = parts.split_last()?;
    let mut m = KeyModifiers::NONE;
    for part in mods {
        m |= match part.to_ascii_lowercase().as_str() {
            "ctrl" => KeyModifiers::CONTROL,
            "shift" => KeyModifiers::SHIFT,
            "alt" => KeyModifiers::ALT,
            "super" => KeyModifiers::SUPER,
            _ => return None,
        };
    }
    Some(KeySpec {
        code: named_key(key)?,
        mods: m,
    })
}

/// A key event as a spec compares it: letters lower-case with Shift, Shift+Tab as `shift+tab`.
fn normalize(ev: &KeyEvent) -> KeySpec {
    let keep =
        KeyModifiers::CONTROL | KeyModifiers::SHIFT | KeyModifiers::ALT | KeyModifiers::SUPER;
    let mut mods = ev.modifiers & keep;
    let code = match ev.code {
        KeyCode::BackTab => {
            mods |= KeyModifiers::SHIFT;
            KeyCode::Tab
        }
        KeyCode::Char(c) if c.is_ascii_uppercase() => {
            mods |= KeyModifiers::SHIFT;
            KeyCode::Char(c.to_ascii_lowercase())
        }
        // A shifted symbol arrives as the symbol itself: Shift is part of the character.
        KeyCode::Char(c) if !c.is_ascii_alphanumeric() && c != ' ' => {
            if !mods.contains(KeyModifiers::CONTROL) {
                mods -= KeyModifiers::SHIFT;
            }
            KeyCode::Char(c)
        }
        other => other,
    };
    KeySpec { code, mods }
}

/// What a legacy terminal sends for Ctrl with a symbol: the control byte crossterm reads as
/// Ctrl with a digit (`ctrl+]` is 0x1d, read as `ctrl+5`).
fn legacy_control_alias(c: char) -> Option<char> {
    match c {
        '\\' => Some('4'),
        ']' => Some('5'),
        '^' => Some('6'),
        '-' | '_' | '/' => Some('7'),
        _ => None,
    }
}

fn spec_matches(spec: &KeySpec, ev: &KeyEvent) -> bool {
    let got = normalize(ev);
    if got == *spec {
        return true;
    }
    if let (KeyCode::Char(want), KeyCode::Char(have)) = (spec.code, got.code)
        && spec.mods.contains(KeyModifiers::CONTROL)
        && got.mods == spec.mods
        && legacy_control_alias(want) == Some(have)
    {
        return true;
    }
    // Without the keyboard protocol Shift+Ctrl+letter arrives as Ctrl+letter; a spec with
    // Shift never matches that (it must stay distinguishable), but Backspace with Ctrl may come
    // as Ctrl+H.
    if spec.code == KeyCode::Backspace
        && spec.mods == KeyModifiers::CONTROL
        && got.code == KeyCode::Char('h')
        && got.mods == KeyModifiers::CONTROL
    {
        return true;
    }
    false
}

/// Whether the key event is the key `spec` names (`ctrl+p`, `alt+enter`, …).
pub fn key_matches(spec: &str, ev: &KeyEvent) -> bool {
    parse_spec(spec).is_some_and(|s| spec_matches(&s, ev))
}

/// The keys of every action: the defaults with what `keybindings.json` sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keybindings {
    /// Action id → its keys as written.
    keys: BTreeMap<&'static str, Vec<String>>,
    /// Parsed form of `keys`.
    parsed: BTreeMap<&'static str, Vec<KeySpec>>,
    /// Keys the file gives to more than one action: (key, actions).
    conflicts: Vec<(String, Vec<String>)>,
}

impl Default for Keybindings {
    fn default() -> Self {
        Keybindings::with_user(&BTreeMap::new())
    }
}

impl Keybindings {
    fn with_user(user: &BTreeMap<&'static str, Vec<String>>) -> Keybindings {
        let mut keys = BTreeMap::new();
        let mut parsed = BTreeMap::new();
        for (id, defaults, _) in DEFINITIONS {
            let list: Vec<String> = match user.get(id) {
                Some(l) => dedup(l),
                None => defaults.iter().map(|s| (*s).to_string()).collect(),
            };
            parsed.insert(*id, list.iter().filter_map(|k| parse_spec(k)).collect());
            keys.insert(*id, list);
        }
        let mut claims: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (id, list) in user {
            for k in dedup(list) {
                claims.entry(k).or_default().push((*id).to_string());
            }
        }
        let conflicts = claims.into_iter().filter(|(_, a)| a.len() > 1).collect();
        Keybindings {
            keys,
            parsed,
            conflicts,
        }
    }

    /// Read `keybindings.json` (missing: the defaults, no warning). Problems come back as
    /// warnings naming the file; whatever the file validly sets is used.
    pub fn load(path: &Path) -> (Keybindings, Vec<String>) {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return (Keybindings::default(), Vec::new());
            }
            Err(e) => {
                return (
                    Keybindings::default(),
                    vec![format!("{}: {e}; using the default keys", path.display())],
                );
            }
        };
        match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(v) => {
                let (kb, problems) = Keybindings::from_json(&v);
                let warnings = problems
                    .into_iter()
                    .map(|p| format!("{}: {p}", path.display()))
                    .collect();
                (kb, warnings)
            }
            Err(e) => (
                Keybindings::default(),
                vec![format!(
                    "{}: not valid JSON ({e}); using the default keys",
                    path.display()
                )],
            ),
        }
    }

    /// Build from the file's JSON value; the second value lists what was not used and why.
    pub fn from_json(v: &serde_json::Value) -> (Keybindings, Vec<String>) {
        let mut problems = Vec::new();
        let Some(obj) = v.as_object() else {
            problems.push("expected an object of action → key(s); using the default keys".into());
            return (Keybindings::default(), problems);
        };
        let mut user: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
        // Today's names win over a legacy name for the same action, as in pi.
        let mut entries: Vec<(&String, &serde_json::Value)> = obj.iter().collect();
        entries.sort_by_key(|(k, _)| legacy_target(k).is_some());
        for (name, value) in entries {
            let id = match action_id(name).or_else(|| legacy_target(name)) {
                Some(id) => id,
                None => {
                    problems.push(format!("unknown action \"{name}\" (ignored)"));
                    continue;
                }
            };
            if user.contains_key(id) {
                continue;
            }
            let list: Vec<String> = match value {
                serde_json::Value::String(s) => vec![s.clone()],
                serde_json::Value::Array(a) if a.iter().all(serde_json::Value::is_string) => a
                    .iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect(),
                _ => {
                    problems.push(format!(
                        "\"{name}\": expected a key or a list of keys (ignored)"
                    ));
                    continue;
                }
            };
            let (good, bad): (Vec<String>, Vec<String>) =
                list.into_iter().partition(|k| parse_spec(k).is_some());
            for b in bad {
                problems.push(format!("\"{name}\": \"{b}\" is not a key (ignored)"));
            }
            user.insert(id, good);
        }
        let kb = Keybindings::with_user(&user);
        for (key, actions) in &kb.conflicts {
            problems.push(format!("\"{key}\" is bound to {}", actions.join(", ")));
        }
        (kb, problems)
    }

    /// Whether `ev` is one of the action's keys.
    pub fn matches(&self, ev: &KeyEvent, action: &str) -> bool {
        debug_assert!(action_id(action).is_some(), "unknown action {action}");
        self.parsed
            .get(action)
            .is_some_and(|l| l.iter().any(|s| spec_matches(s, ev)))
    }

    /// Whether any action has this key.
    pub fn is_bound(&self, ev: &KeyEvent) -> bool {
        self.parsed
            .values()
            .any(|l| l.iter().any(|s| spec_matches(s, ev)))
    }

    /// The action's keys as written (`["ctrl+left", "alt+left"]`).
    pub fn keys(&self, action: &str) -> &[String] {
        self.keys.get(action).map_or(&[], Vec::as_slice)
    }

    /// The action's keys for people: `Ctrl+Left/Alt+Left` (pi's `/hotkeys` spelling).
    pub fn display(&self, action: &str) -> String {
        self.keys(action)
            .iter()
            .map(|k| capitalize_key(k))
            .collect::<Vec<_>>()
            .join("/")
    }

    /// The action's keys lower-case, for hints (`ctrl+o`).
    pub fn hint(&self, action: &str) -> String {
        self.keys(action).join("/")
    }

    /// Keys the file gives to more than one action.
    pub fn conflicts(&self) -> &[(String, Vec<String>)] {
        &self.conflicts
    }
}

fn dedup(list: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for k in list {
        if !out.contains(k) {
            out.push(k.clone());
        }
    }
    out
}

fn action_id(name: &str) -> Option<&'static str> {
    DEFINITIONS
        .iter()
        .find(|(id, _, _)| *id == name)
        .map(|(id, _, _)| *id)
}

fn legacy_target(name: &str) -> Option<&'static str> {
    LEGACY_NAMES
        .iter()
        .find(|(old, _)| *old == name)
        .map(|(_, new)| *new)
}

/// `ctrl+shift+p` → `Ctrl+Shift+P`.
fn capitalize_key(k: &str) -> String {
    k.split('+')
        .map(|part| {
            let mut c = part.chars();
            match c.next() {
                Some(f) => f.to_uppercase().chain(c).collect(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join("+")
}

#[cfg(test)]
#[path = "keybindings_tests.rs"]
mod tests;
