//! The editor's editing keys as pi has them: cursor and word moves, deletes that fill the kill
//! ring, yank and yank-pop, undo, and jump-to-character.

use crate::editor::{Editor, LastEdit, next_boundary, prev_boundary};

/// At most this many undo steps and kill-ring entries are kept.
const UNDO_DEPTH: usize = 200;
const KILL_RING: usize = 30;

fn is_space(c: char) -> bool {
    c.is_whitespace() && c != '\n'
}

fn is_punct(c: char) -> bool {
    c.is_ascii_punctuation()
}

impl Editor {
    /// Remember the text before an edit, for undo.
    pub(crate) fn snapshot(&mut self) {
        if self.undo.last() != Some(&(self.text.clone(), self.cursor)) {
            self.undo.push((self.text.clone(), self.cursor));
            if self.undo.len() > UNDO_DEPTH {
                self.undo.remove(0);
            }
        }
    }

    /// Typed text: one undo step per word (a space or newline starts a new one).
    pub(crate) fn type_text(&mut self, s: &str) {
        let starts_word = s.chars().all(|c| !c.is_whitespace());
        if !starts_word || self.last != LastEdit::TypeWord {
            self.snapshot();
        }
        self.insert(s);
        self.last = if starts_word {
            LastEdit::TypeWord
        } else {
            LastEdit::Other
        };
    }

    /// The editing actions; `false` when the key is none of them.
    pub(crate) fn edit_key(&mut self, is: &dyn Fn(&str) -> bool) -> bool {
        let last = self.last;
        self.last = LastEdit::Other;
        if is("tui.editor.cursorUp") {
            self.up_or_history(true);
        } else if is("tui.editor.cursorDown") {
            self.up_or_history(false);
        } else if is("tui.editor.cursorWordLeft") {
            self.cursor = self.word_left();
        } else if is("tui.editor.cursorWordRight") {
            self.cursor = self.word_right();
        } else if is("tui.editor.cursorLeft") {
            self.cursor = prev_boundary(&self.text, self.cursor);
        } else if is("tui.editor.cursorRight") {
            self.cursor = next_boundary(&self.text, self.cursor);
        } else if is("tui.editor.cursorLineStart") {
            self.cursor = self.line_bounds(self.cursor).0;
        } else if is("tui.editor.cursorLineEnd") {
            self.cursor = self.line_bounds(self.cursor).1;
        } else if is("tui.editor.jumpForward") {
            self.jump = Some(true);
        } else if is("tui.editor.jumpBackward") {
            self.jump = Some(false);
        } else if is("tui.editor.deleteCharBackward") {
            let p = prev_boundary(&self.text, self.cursor);
            self.delete(p, self.cursor);
        } else if is("tui.editor.deleteCharForward") {
            let n = next_boundary(&self.text, self.cursor);
            self.delete(self.cursor, n);
        } else if is("tui.editor.deleteWordBackward") {
            let start = match self.text[..self.cursor].ends_with('\n') {
                true => self.cursor - 1,
                false => self.word_left(),
            };
            self.kill(start, self.cursor, true, last);
        } else if is("tui.editor.deleteWordForward") {
            let end = match self.text[self.cursor..].starts_with('\n') {
                true => self.cursor + 1,
                false => self.word_right(),
            };
            self.kill(self.cursor, end, false, last);
        } else if is("tui.editor.deleteToLineStart") {
            let s = self.line_bounds(self.cursor).0;
            let s = if s == self.cursor && s > 0 { s - 1 } else { s };
            self.kill(s, self.cursor, true, last);
        } else if is("tui.editor.deleteToLineEnd") {
            let e = self.line_bounds(self.cursor).1;
            let e = if e == self.cursor && e < self.text.len() {
                e + 1
            } else {
                e
            };
            self.kill(self.cursor, e, false, last);
        } else if is("tui.editor.yank") {
            self.yank();
        } else if is("tui.editor.yankPop") {
            if last == LastEdit::Yank {
                self.yank_pop();
            }
        } else if is("tui.editor.undo") {
            if let Some((text, cursor)) = self.undo.pop() {
                self.text = text;
                self.cursor = cursor.min(self.text.len());
            }
        } else {
            self.last = last;
            return false;
        }
        true
    }

    fn delete(&mut self, start: usize, end: usize) {
        if start < end {
            self.snapshot();
            self.text.replace_range(start..end, "");
            self.cursor = start;
        }
    }

    /// Delete `start..end` into the kill ring; consecutive kills make one entry.
    fn kill(&mut self, start: usize, end: usize, backward: bool, last: LastEdit) {
        if start >= end {
            self.last = last;
            return;
        }
        self.snapshot();
        let cut: String = self.text[start..end].to_string();
        self.text.replace_range(start..end, "");
        self.cursor = start;
        match self.kill_ring.last_mut() {
            Some(top) if last == LastEdit::Kill => {
                *top = if backward {
                    format!("{cut}{top}")
                } else {
                    format!("{top}{cut}")
                };
            }
            _ => {
                self.kill_ring.push(cut);
                if self.kill_ring.len() > KILL_RING {
                    self.kill_ring.remove(0);
                }
            }
        }
        self.last = LastEdit::Kill;
    }

    fn yank(&mut self) {
        if self.kill_ring.is_empty() {
            return;
        }
        self.snapshot();
        self.insert_top();
    }

    /// Insert the ring's newest entry, remembered for yank-pop.
    fn insert_top(&mut self) {
        let Some(text) = self.kill_ring.last().cloned() else {
            return;
        };
        let start = self.cursor;
        self.insert(&text);
        self.yanked = Some((start, self.cursor));
        self.last = LastEdit::Yank;
    }

    /// Replace the text just yanked with the entry before it (the ring turns).
    fn yank_pop(&mut self) {
        let Some((start, end)) = self.yanked else {
            return;
        };
        if self.kill_ring.len() < 2 || end > self.text.len() {
            self.last = LastEdit::Yank;
            return;
        }
        self.snapshot();
        self.text.replace_range(start..end, "");
        self.cursor = start;
        if let Some(top) = self.kill_ring.pop() {
            self.kill_ring.insert(0, top);
        }
        self.insert_top();
    }

    /// Where a word move to the left lands: over spaces, then a run of word or punctuation
    /// characters; at a line's start, the end of the line before.
    pub(crate) fn word_left(&self) -> usize {
        let before = &self.text[..self.cursor];
        if before.ends_with('\n') {
            return self.cursor - 1;
        }
        let mut chars = before.char_indices().rev().peekable();
        let mut pos = self.cursor;
        while let Some(&(i, c)) = chars.peek() {
            if !is_space(c) {
                break;
            }
            pos = i;
            chars.next();
        }
        let Some(&(_, first)) = chars.peek() else {
            return pos;
        };
        if first == '\n' {
            return pos;
        }
        let punct = is_punct(first);
        for (i, c) in chars {
            if c.is_whitespace() || is_punct(c) != punct {
                break;
            }
            pos = i;
        }
        pos
    }

    /// Where a word move to the right lands (the mirror of [`Editor::word_left`]).
    pub(crate) fn word_right(&self) -> usize {
        let after = &self.text[self.cursor..];
        if after.starts_with('\n') {
            return self.cursor + 1;
        }
        let mut chars = after.char_indices().peekable();
        let mut pos = self.cursor;
        while let Some(&(i, c)) = chars.peek() {
            if !is_space(c) {
                break;
            }
            pos = self.cursor + i + c.len_utf8();
            chars.next();
        }
        let Some(&(_, first)) = chars.peek() else {
            return pos;
        };
        if first == '\n' {
            return pos;
        }
        let punct = is_punct(first);
        for (i, c) in chars {
            if c.is_whitespace() || is_punct(c) != punct {
                break;
            }
            pos = self.cursor + i + c.len_utf8();
        }
        pos
    }

    /// Move to the next (previous) `c`, across lines; nowhere when there is none.
    pub(crate) fn jump_to(&mut self, c: char, forward: bool) {
        let found = if forward {
            let from = next_boundary(&self.text, self.cursor);
            self.text[from..].find(c).map(|i| from + i)
        } else {
            self.text[..self.cursor].rfind(c)
        };
        if let Some(i) = found {
            self.cursor = i;
        }
    }
}

#[cfg(test)]
mod tests {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    use crate::editor::Editor;

    fn press(e: &mut Editor, code: KeyCode, mods: KeyModifiers) {
        e.handle_key(KeyEvent::new(code, mods));
    }

    fn typed(e: &mut Editor, s: &str) {
        for c in s.chars() {
            press(e, KeyCode::Char(c), KeyModifiers::NONE);
        }
    }

    const ALT: KeyModifiers = KeyModifiers::ALT;
    const CTRL: KeyModifiers = KeyModifiers::CONTROL;

    #[test]
    fn word_moves_stop_at_words_and_punctuation() {
        let mut e = Editor::default();
        typed(&mut e, "let x = foo.bar(1);");
        press(&mut e, KeyCode::Left, ALT);
        assert_eq!(&e.text[e.cursor..], ");");
        press(&mut e, KeyCode::Char('b'), ALT);
        assert_eq!(&e.text[e.cursor..], "1);");
        press(&mut e, KeyCode::Left, CTRL);
        assert_eq!(&e.text[e.cursor..], "(1);");
        press(&mut e, KeyCode::Left, CTRL);
        assert_eq!(&e.text[e.cursor..], "bar(1);");
        press(&mut e, KeyCode::Char('a'), CTRL);
        press(&mut e, KeyCode::Char('f'), ALT);
        assert_eq!(&e.text[..e.cursor], "let");
        press(&mut e, KeyCode::Right, ALT);
        assert_eq!(&e.text[..e.cursor], "let x");
    }

    #[test]
    fn kills_yank_and_yank_pop() {
        let mut e = Editor::default();
        typed(&mut e, "one two three");
        press(&mut e, KeyCode::Char('w'), CTRL);
        assert_eq!(e.text, "one two ");
        // Two kills in a row make one entry.
        press(&mut e, KeyCode::Char('w'), CTRL);
        assert_eq!(e.text, "one ");
        typed(&mut e, "x");
        press(&mut e, KeyCode::Char('a'), CTRL);
        press(&mut e, KeyCode::Char('d'), ALT);
        assert_eq!(e.text, " x");
        press(&mut e, KeyCode::Char('e'), CTRL);
        press(&mut e, KeyCode::Char('y'), CTRL);
        assert_eq!(e.text, " xone");
        press(&mut e, KeyCode::Char('y'), ALT);
        assert_eq!(e.text, " xtwo three");
        press(&mut e, KeyCode::Char('y'), ALT);
        assert_eq!(e.text, " xone");
        // One undo takes a yank-pop back whole.
        press(&mut e, KeyCode::Char('-'), CTRL);
        assert_eq!(e.text, " xtwo three");
        press(&mut e, KeyCode::Char('y'), ALT);
        assert_eq!(e.text, " xtwo three", "no yank-pop after an undo");
        press(&mut e, KeyCode::Char('y'), CTRL);
        assert_eq!(e.text, " xtwo threeone");
        press(&mut e, KeyCode::Char('-'), CTRL);
        // Yank-pop right after something else does nothing.
        typed(&mut e, "!");
        press(&mut e, KeyCode::Char('y'), ALT);
        assert_eq!(e.text, " xtwo three!");
    }

    #[test]
    fn ctrl_k_and_ctrl_u_join_lines_at_their_ends() {
        let mut e = Editor::default();
        typed(&mut e, "ab");
        press(&mut e, KeyCode::Enter, KeyModifiers::SHIFT);
        typed(&mut e, "cd");
        press(&mut e, KeyCode::Char('a'), CTRL);
        press(&mut e, KeyCode::Char('u'), CTRL);
        assert_eq!(e.text, "abcd");
        press(&mut e, KeyCode::Char('k'), CTRL);
        assert_eq!(e.text, "ab");
    }

    #[test]
    fn undo_steps_back_a_word_or_an_edit_at_a_time() {
        let mut e = Editor::default();
        typed(&mut e, "hello big world");
        // Legacy terminals send ctrl+- as 0x1f, read as ctrl+7.
        press(&mut e, KeyCode::Char('7'), CTRL);
        assert_eq!(e.text, "hello big ");
        press(&mut e, KeyCode::Char('w'), CTRL);
        assert_eq!(e.text, "hello ");
        press(&mut e, KeyCode::Char('-'), CTRL);
        assert_eq!(e.text, "hello big ");
        press(&mut e, KeyCode::Char('-'), CTRL);
        assert_eq!(e.text, "hello big");
    }

    #[test]
    fn jump_to_a_character_forward_and_back() {
        let mut e = Editor::default();
        typed(&mut e, "a-b-c");
        press(&mut e, KeyCode::Home, KeyModifiers::NONE);
        press(&mut e, KeyCode::Char(']'), CTRL);
        typed(&mut e, "-");
        assert_eq!(e.cursor, 1);
        press(&mut e, KeyCode::Char('5'), CTRL);
        typed(&mut e, "-");
        assert_eq!(e.cursor, 3);
        press(&mut e, KeyCode::Char(']'), CTRL | ALT);
        typed(&mut e, "a");
        assert_eq!(e.cursor, 0);
        // No match: the cursor stays, and the character is not typed.
        press(&mut e, KeyCode::Char(']'), CTRL);
        typed(&mut e, "z");
        assert_eq!((e.cursor, e.text.as_str()), (0, "a-b-c"));
    }
}
