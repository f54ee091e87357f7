//! The prompt editor: multi-line text with a cursor, history, large pastes kept as markers, and
//! `/command` / `@file` completion.

use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::keybindings::Keybindings;

/// Pastes longer than this many lines (or characters) are shown as a marker.
const PASTE_LINES: usize = 10;
const PASTE_CHARS: usize = 1000;

/// What a key did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditorAction {
    None,
    /// Enter: send (steer while the agent works).
    Submit(String),
    /// Alt+Enter: queue as a follow-up while the agent works (send otherwise).
    FollowUp(String),
}

/// The completion popup.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Completion {
    /// Byte range of the text being completed.
    pub start: usize,
    pub items: Vec<(String, String)>,
    pub selected: usize,
}

#[derive(Debug, Clone, Default)]
pub struct Editor {
    pub text: String,
    /// Byte offset of the cursor.
    pub cursor: usize,
    history: Vec<String>,
    /// Position while browsing history, and the draft it replaced.
    browsing: Option<(usize, String)>,
    pastes: Vec<String>,
    pub completion: Option<Completion>,
    /// The keys of every action (`keybindings.json`).
    pub keys: Arc<Keybindings>,
    /// Deleted text, most recent last (yank / yank-pop).
    pub(crate) kill_ring: Vec<String>,
    /// The yanked text's byte range, while yank-pop may replace it.
    pub(crate) yanked: Option<(usize, usize)>,
    /// (text, cursor) before each edit, most recent last.
    pub(crate) undo: Vec<(String, usize)>,
    pub(crate) last: LastEdit,
    /// Waiting for the character to jump to: `Some(true)` forward.
    pub(crate) jump: Option<bool>,
}

/// What the previous key did, for undo grouping, kill accumulation and yank-pop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum LastEdit {
    #[default]
    Other,
    TypeWord,
    Kill,
    Yank,
}

pub(crate) fn prev_boundary(s: &str, i: usize) -> usize {
    s[..i].char_indices().next_back().map_or(0, |(j, _)| j)
}

pub(crate) fn next_boundary(s: &str, i: usize) -> usize {
    s[i..].chars().next().map_or(i, |c| i + c.len_utf8())
}

impl Editor {
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    pub fn clear(&mut self) {
        self.text.clear();
        self.cursor = 0;
        self.pastes.clear();
        self.completion = None;
        self.browsing = None;
        self.jump = None;
        self.yanked = None;
        self.undo.clear();
        self.last = LastEdit::Other;
    }

    /// Replace the text (undoable), cursor at the end.
    pub fn set_text(&mut self, t: &str) {
        let t = crate::text::sanitize(t).into_owned();
        if t != self.text {
            self.snapshot();
        }
        self.text = t;
        self.cursor = self.text.len();
        self.last = LastEdit::Other;
    }

    pub fn insert(&mut self, s: &str) {
        self.text.insert_str(self.cursor, s);
        self.cursor += s.len();
    }

    /// A bracketed paste: large ones become `[paste #n +L lines]` and expand on submit.
    pub fn paste(&mut self, s: &str) {
        self.snapshot();
        self.last = LastEdit::Other;
        let s = s.replace("\r\n", "\n").replace('\r', "\n");
        let s = crate::text::sanitize(&s).into_owned();
        let lines = s.lines().count();
        if lines > PASTE_LINES || s.len() > PASTE_CHARS {
            self.pastes.push(s);
            let marker = if lines > 1 {
                format!("[paste #{} +{lines} lines]", self.pastes.len())
            } else {
                format!(
                    "[paste #{} {} chars]",
                    self.pastes.len(),
                    self.pastes[self.pastes.len() - 1].len()
                )
            };
            self.insert(&marker);
        } else {
            self.insert(&s);
        }
    }

    /// The text with paste markers expanded.
    pub fn expanded(&self) -> String {
        let mut out = self.text.clone();
        for (i, p) in self.pastes.iter().enumerate() {
            let n = i + 1;
            let lines = p.lines().count();
            for marker in [
                format!("[paste #{n} +{lines} lines]"),
                format!("[paste #{n} {} chars]", p.len()),
            ] {
                out = out.replace(&marker, p);
            }
        }
        out
    }

    /// (row, column in chars) of the cursor.
    pub fn cursor_pos(&self) -> (usize, usize) {
        let before = &self.text[..self.cursor];
        let row = before.matches('\n').count();
        let col_start = before.rfind('\n').map_or(0, |i| i + 1);
        (row, before[col_start..].chars().count())
    }

    pub(crate) fn line_bounds(&self, at: usize) -> (usize, usize) {
        let start = self.text[..at].rfind('\n').map_or(0, |i| i + 1);
        let end = self.text[at..]
            .find('\n')
            .map_or(self.text.len(), |i| at + i);
        (start, end)
    }

    fn move_vertical(&mut self, up: bool) -> bool {
        let (start, end) = self.line_bounds(self.cursor);
        let col = self.text[start..self.cursor].chars().count();
        let target = if up {
            if start == 0 {
                return false;
            }
            self.line_bounds(start - 1)
        } else {
            if end == self.text.len() {
                return false;
            }
            self.line_bounds(end + 1)
        };
        let line = &self.text[target.0..target.1];
        let off: usize = line.chars().take(col).map(char::len_utf8).sum();
        self.cursor = target.0 + off;
        true
    }

    fn history_step(&mut self, back: bool) {
        if self.history.is_empty() {
            return;
        }
        let next = match (&self.browsing, back) {
            (None, true) => Some(self.history.len() - 1),
            (None, false) => return,
            (Some((i, _)), true) => Some(i.saturating_sub(1)),
            (Some((i, _)), false) if i + 1 < self.history.len() => Some(i + 1),
            (Some(_), false) => None,
        };
        match next {
            Some(i) => {
                let draft = match self.browsing.take() {
                    Some((_, d)) => d,
                    None => self.text.clone(),
                };
                self.browsing = Some((i, draft));
                self.text = self.history[i].clone();
            }
            None => {
                if let Some((_, d)) = self.browsing.take() {
                    self.text = d;
                }
            }
        }
        self.cursor = self.text.len();
    }

    /// Move a line up (down), or through the history from the first (last) line.
    pub(crate) fn up_or_history(&mut self, up: bool) {
        let moved = self.move_vertical(up);
        if !moved {
            self.history_step(up);
        }
    }

    /// Take the text for sending and remember it in the history.
    pub fn take(&mut self) -> String {
        let out = self.expanded();
        if !self.text.trim().is_empty() && self.history.last() != Some(&self.text) {
            self.history.push(self.text.clone());
        }
        self.clear();
        out
    }

    /// Handle a key; returns what to do with it. `Completion` keys are handled by the caller.
    /// Keys are looked up in [`Editor::keys`] (pi's `tui.editor.*` and `tui.input.*` actions).
    pub fn handle_key(&mut self, key: KeyEvent) -> EditorAction {
        let keys = self.keys.clone();
        let is = |action: &str| keys.matches(&key, action);
        if let Some(forward) = self.jump.take() {
            if is("tui.editor.jumpForward") || is("tui.editor.jumpBackward") {
                return EditorAction::None;
            }
            if let KeyCode::Char(c) = key.code
                && !key
                    .modifiers
                    .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
            {
                self.jump_to(c, forward);
                return EditorAction::None;
            }
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        if is("tui.input.newLine") || (ctrl && key.code == KeyCode::Char('j')) {
            self.type_text("\n");
        } else if is("app.message.followUp") {
            return EditorAction::FollowUp(self.take());
        } else if is("tui.input.submit") {
            if self.text.ends_with('\\') && self.cursor == self.text.len() {
                self.snapshot();
                self.text.pop();
                self.cursor -= 1;
                self.insert("\n");
            } else {
                return EditorAction::Submit(self.take());
            }
        } else if !self.edit_key(&is) {
            match key.code {
                KeyCode::Char(c) if !ctrl && !alt => {
                    let mut b = [0u8; 4];
                    self.type_text(c.encode_utf8(&mut b));
                }
                _ => {}
            }
        }
        EditorAction::None
    }

    /// The word being completed, if it is a `/command` (first word) or an `@path`.
    pub fn completion_query(&self) -> Option<(usize, String)> {
        let before = &self.text[..self.cursor];
        let start = before
            .rfind(|c: char| c.is_whitespace())
            .map_or(0, |i| i + 1);
        let word = &before[start..];
        if start == 0 && word.starts_with('/') && !self.text[self.cursor..].contains(' ') {
            return Some((0, word.to_string()));
        }
        word.starts_with('@').then(|| (start, word.to_string()))
    }

    /// Replace the completed word with `value` (plus a space).
    pub fn accept(&mut self, start: usize, value: &str) {
        self.text.replace_range(start..self.cursor, value);
        self.cursor = start + value.len();
        if !value.ends_with('/') {
            self.insert(" ");
        }
        self.completion = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn typed(e: &mut Editor, s: &str) {
        for c in s.chars() {
            e.handle_key(key(KeyCode::Char(c)));
        }
    }

    #[test]
    fn multi_line_editing_and_submit() {
        let mut e = Editor::default();
        typed(&mut e, "héllo");
        e.handle_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::SHIFT));
        typed(&mut e, "wörld");
        assert_eq!(e.cursor_pos(), (1, 5));
        e.handle_key(key(KeyCode::Up));
        assert_eq!(e.cursor_pos(), (0, 5));
        e.handle_key(key(KeyCode::Backspace));
        assert_eq!(e.text, "héll\nwörld");
        assert_eq!(
            e.handle_key(key(KeyCode::Enter)),
            EditorAction::Submit("héll\nwörld".into())
        );
        assert!(e.is_empty());
        typed(&mut e, "next");
        let alt = KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT);
        assert_eq!(e.handle_key(alt), EditorAction::FollowUp("next".into()));
    }

    #[test]
    fn history_browses_and_restores_the_draft() {
        let mut e = Editor::default();
        for s in ["one", "two"] {
            typed(&mut e, s);
            e.handle_key(key(KeyCode::Enter));
        }
        typed(&mut e, "draft");
        e.handle_key(key(KeyCode::Up));
        assert_eq!(e.text, "two");
        e.handle_key(key(KeyCode::Up));
        assert_eq!(e.text, "one");
        e.handle_key(key(KeyCode::Down));
        e.handle_key(key(KeyCode::Down));
        assert_eq!(e.text, "draft");
    }

    #[test]
    fn large_paste_is_a_marker_expanded_on_submit() {
        let mut e = Editor::default();
        typed(&mut e, "see ");
        let big: String = (0..20).map(|i| format!("line {i}\n")).collect();
        e.paste(&big);
        assert_eq!(e.text, "see [paste #1 +20 lines]");
        assert_eq!(e.take(), format!("see {big}"));
        e.paste("small");
        assert_eq!(e.text, "small");
    }

    #[test]
    fn completion_queries() {
        let mut e = Editor::default();
        typed(&mut e, "/mo");
        assert_eq!(e.completion_query(), Some((0, "/mo".into())));
        e.accept(0, "/model");
        assert_eq!(e.text, "/model ");
        e.clear();
        typed(&mut e, "look at @src/li");
        assert_eq!(e.completion_query(), Some((8, "@src/li".into())));
        e.accept(8, "@src/lib.rs");
        assert_eq!(e.text, "look at @src/lib.rs ");
        e.clear();
        typed(&mut e, "plain");
        assert_eq!(e.completion_query(), None);
    }
}
