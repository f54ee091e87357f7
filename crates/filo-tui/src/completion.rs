//! Completion in the editor: `/command` names (built-ins, prompt templates, skills, extension
//! commands) and `@path` files under the working directory (respecting `.gitignore`).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent};

use crate::editor::{Completion, Editor};

/// Files listed at most (a huge tree is cut, not walked to the end).
const MAX_FILES: usize = 20_000;
/// A file list older than this is walked again.
const STALE: Duration = Duration::from_secs(10);
/// Rows of the popup.
const SHOWN: usize = 50;

/// The files under the working directory, walked lazily and cached briefly.
#[derive(Debug, Clone)]
pub struct FileIndex {
    root: PathBuf,
    files: Vec<String>,
    loaded: Option<Instant>,
}

impl FileIndex {
    pub fn new(root: PathBuf) -> Self {
        FileIndex {
            root,
            files: Vec::new(),
            loaded: None,
        }
    }

    fn files(&mut self) -> &[String] {
        if self.loaded.is_none_or(|t| t.elapsed() > STALE) {
            let mut files = Vec::new();
            for entry in ignore::WalkBuilder::new(&self.root)
                .hidden(true)
                .build()
                .filter_map(Result::ok)
                .skip(1)
                .take(MAX_FILES)
            {
                if let Ok(rel) = entry.path().strip_prefix(&self.root) {
                    let mut s = rel.to_string_lossy().into_owned();
                    if entry.file_type().is_some_and(|t| t.is_dir()) {
                        s.push('/');
                    }
                    files.push(s);
                }
            }
            files.sort();
            self.files = files;
            self.loaded = Some(Instant::now());
        }
        &self.files
    }
}

/// Rank a path for a query: file-name prefix, then path prefix, then substring.
fn rank(path: &str, q: &str) -> Option<u8> {
    let p = path.to_lowercase();
    let name = p.trim_end_matches('/').rsplit('/').next().unwrap_or(&p);
    if name.starts_with(q) {
        Some(0)
    } else if p.starts_with(q) {
        Some(1)
    } else if p.contains(q) {
        Some(2)
    } else {
        None
    }
}

/// Recompute the popup after an edit.
pub fn update(editor: &mut Editor, commands: &[(String, String)], files: &mut FileIndex) {
    let Some((start, word)) = editor.completion_query() else {
        editor.completion = None;
        return;
    };
    let items: Vec<(String, String)> = if let Some(q) = word.strip_prefix('/') {
        commands
            .iter()
            .filter(|(n, _)| n.starts_with(q))
            .map(|(n, d)| (format!("/{n}"), d.clone()))
            .collect()
    } else {
        let q = word.trim_start_matches('@').to_lowercase();
        let mut ranked: Vec<(u8, &String)> = files
            .files()
            .iter()
            .filter_map(|f| rank(f, &q).map(|r| (r, f)))
            .collect();
        ranked.sort_by_key(|(r, f)| (*r, f.len()));
        ranked
            .into_iter()
            .take(SHOWN)
            .map(|(_, f)| (format!("@{f}"), String::new()))
            .collect()
    };
    editor.completion = (!items.is_empty()).then_some(Completion {
        start,
        items,
        selected: 0,
    });
}

/// Keys of an open popup: ↑/↓ move, Tab/Enter accept. Returns whether the key was used.
pub fn handle_key(editor: &mut Editor, key: KeyEvent) -> bool {
    let Some(c) = editor.completion.as_mut() else {
        return false;
    };
    match key.code {
        KeyCode::Up => {
            c.selected = c.selected.checked_sub(1).unwrap_or(c.items.len() - 1);
            true
        }
        KeyCode::Down => {
            c.selected = (c.selected + 1) % c.items.len();
            true
        }
        KeyCode::Tab | KeyCode::Enter if key.modifiers.is_empty() => {
            let start = c.start;
            let value = c.items[c.selected].0.clone();
            // Enter on an exact command runs it rather than completing it again.
            if key.code == KeyCode::Enter && editor.text.trim() == value {
                editor.completion = None;
                return false;
            }
            editor.accept(start, &value);
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyModifiers;

    #[test]
    fn commands_and_files_complete() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), "").unwrap();
        std::fs::write(dir.path().join("README.md"), "").unwrap();
        let mut files = FileIndex::new(dir.path().to_path_buf());
        let cmds = vec![
            ("model".to_string(), "select model".to_string()),
            ("name".to_string(), String::new()),
        ];
        let mut e = Editor::default();
        e.insert("/mo");
        update(&mut e, &cmds, &mut files);
        assert_eq!(e.completion.as_ref().unwrap().items[0].0, "/model");
        assert!(handle_key(
            &mut e,
            KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE)
        ));
        assert_eq!(e.text, "/model ");
        e.clear();
        e.insert("see @lib");
        update(&mut e, &cmds, &mut files);
        let items: Vec<&str> = e
            .completion
            .as_ref()
            .unwrap()
            .items
            .iter()
            .map(|i| i.0.as_str())
            .collect();
        assert_eq!(items, vec!["@src/lib.rs"]);
        e.insert("zzz");
        update(&mut e, &cmds, &mut files);
        assert!(e.completion.is_none());
    }
}
