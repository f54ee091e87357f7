//! The session picker of `/resume` and `filo -r` (pi 0.73's): this folder's sessions or all of
//! them (tab), threaded by parent session, most recent first, or sorted by relevance (ctrl+s); only
//! named ones (ctrl+n); paths shown (ctrl+p); delete after a confirmation (ctrl+d, or
//! ctrl+backspace with an empty search); rename (ctrl+r, in `/resume` only). The search box takes
//! words, `"phrases"` and `re:` patterns ([`crate::session_search`]).

use std::path::{Path, PathBuf};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use filo_session::SessionInfo;

use crate::session_search;

/// Rows shown at once (pi's).
pub const MAX_VISIBLE: usize = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Current,
    All,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortMode {
    Threaded,
    Recent,
    Relevance,
}

impl SortMode {
    pub fn label(self) -> &'static str {
        match self {
            SortMode::Threaded => "Threaded",
            SortMode::Recent => "Recent",
            SortMode::Relevance => "Fuzzy",
        }
    }
}

/// One line of the list: a session and its tree prefix (`├─ `, `└─ `, `│  `).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub session: usize,
    pub prefix: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    List,
    Rename { path: PathBuf, input: String },
    ConfirmDelete(PathBuf),
}

/// A message under the header until the next key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub error: bool,
    pub text: String,
}

/// What a key asks of the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PickerAction {
    None,
    Cancel,
    Open(PathBuf),
    /// Rename the session that is open now (through the live session, so it sees the name).
    RenameCurrent(String),
}

/// Where sessions are listed from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PickerSource {
    /// This folder's session directory.
    pub dir: PathBuf,
    /// The root of every project's session directories (`<agent dir>/sessions`).
    pub all_root: PathBuf,
    /// The session open now (marked, never deleted).
    pub current_file: Option<PathBuf>,
    /// `cwd` given to a session file opened for renaming.
    pub cwd: String,
    /// `$HOME`, to shorten paths to `~/…`.
    pub home: Option<PathBuf>,
    /// Whether ctrl+r renames (pi's `/resume` offers it, `-r` does not).
    pub can_rename: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SessionPicker {
    pub source: PickerSource,
    pub scope: Scope,
    pub sort: SortMode,
    pub named_only: bool,
    pub show_path: bool,
    pub query: String,
    current: Vec<SessionInfo>,
    all: Option<Vec<SessionInfo>>,
    pub rows: Vec<Row>,
    pub selected: usize,
    pub mode: Mode,
    pub status: Option<Status>,
    /// "Now" for ages, in ms.
    pub now: i64,
    /// The keys of pi's `app.session.*` and `tui.select.*` actions.
    pub keys: std::sync::Arc<crate::keybindings::Keybindings>,
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

/// Flatten sessions into a tree by `parentSession`, newest first at every level.
fn threaded(sessions: &[&SessionInfo], index_of: &dyn Fn(&SessionInfo) -> usize) -> Vec<Row> {
    let keys: Vec<PathBuf> = sessions.iter().map(|s| canonical(&s.path)).collect();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); sessions.len()];
    let mut roots = Vec::new();
    for (i, s) in sessions.iter().enumerate() {
        let parent = s
            .parent_session_path
            .as_deref()
            .map(|p| canonical(Path::new(p)))
            .and_then(|p| keys.iter().position(|k| *k == p))
            .filter(|p| *p != i);
        match parent {
            Some(p) => children[p].push(i),
            None => roots.push(i),
        }
    }
    let by_recent =
        |v: &mut Vec<usize>| v.sort_by_key(|i| std::cmp::Reverse(sessions[*i].modified));
    by_recent(&mut roots);
    for c in &mut children {
        by_recent(c);
    }
    let mut rows = Vec::new();
    // (node, depth, ancestors-continue, is last); a cycle of parents cannot loop: each node once.
    let mut seen = vec![false; sessions.len()];
    let mut stack: Vec<(usize, usize, Vec<bool>, bool)> = roots
        .iter()
        .rev()
        .map(|r| (*r, 0, Vec::new(), true))
        .collect();
    while let Some((i, depth, cont, last)) = stack.pop() {
        if std::mem::replace(&mut seen[i], true) {
            continue;
        }
        let mut prefix: String = cont
            .iter()
            .map(|c| if *c { "│  " } else { "   " })
            .collect();
        if depth > 0 {
            prefix.push_str(if last { "└─ " } else { "├─ " });
        }
        rows.push(Row {
            session: index_of(sessions[i]),
            prefix,
        });
        let kids = &children[i];
        for (k, c) in kids.iter().enumerate().rev() {
            let mut next = cont.clone();
            if depth > 0 {
                next.push(!last);
            }
            stack.push((*c, depth + 1, next, k + 1 == kids.len()));
        }
    }
    rows
}

/// pi's short ages: now, 5m, 3h, 2d, 1w, 4mo, 1y.
pub fn short_age(now: i64, then: i64) -> String {
    let mins = (now - then).max(0) / 60_000;
    let (hours, days) = (mins / 60, mins / 1440);
    match () {
        _ if mins < 1 => "now".into(),
        _ if mins < 60 => format!("{mins}m"),
        _ if hours < 24 => format!("{hours}h"),
        _ if days < 7 => format!("{days}d"),
        _ if days < 30 => format!("{}w", days / 7),
        _ if days < 365 => format!("{}mo", days / 30),
        _ => format!("{}y", days / 365),
    }
}

impl SessionPicker {
    /// A picker over this folder's sessions.
    pub fn new(source: PickerSource, now: i64) -> SessionPicker {
        let current = filo_session::list_sessions(&source.dir);
        let mut p = SessionPicker {
            source,
            scope: Scope::Current,
            sort: SortMode::Threaded,
            named_only: false,
            show_path: false,
            query: String::new(),
            current,
            all: None,
            rows: Vec::new(),
            selected: 0,
            mode: Mode::List,
            status: None,
            now,
            keys: Default::default(),
        };
        p.refilter();
        p
    }

    /// The sessions of the scope shown.
    pub fn sessions(&self) -> &[SessionInfo] {
        match self.scope {
            Scope::Current => &self.current,
            Scope::All => self.all.as_deref().unwrap_or(&[]),
        }
    }

    pub fn is_current(&self, s: &SessionInfo) -> bool {
        self.source
            .current_file
            .as_deref()
            .is_some_and(|c| canonical(c) == canonical(&s.path))
    }

    /// `~/…` for paths under the home directory.
    pub fn shorten(&self, p: &str) -> String {
        match &self.source.home {
            Some(h) if !h.as_os_str().is_empty() => {
                let h = h.to_string_lossy();
                match p.strip_prefix(h.as_ref()) {
                    Some(rest) => format!("~{rest}"),
                    None => p.to_string(),
                }
            }
            _ => p.to_string(),
        }
    }

    fn refilter(&mut self) {
        let keep = |s: &SessionInfo| {
            !self.named_only || s.name.as_deref().is_some_and(|n| !n.trim().is_empty())
        };
        let all = self.sessions();
        let shown: Vec<(usize, &SessionInfo)> =
            all.iter().enumerate().filter(|(_, s)| keep(s)).collect();
        let q = self.query.trim();
        self.rows = if q.is_empty() {
            match self.sort {
                SortMode::Threaded => {
                    let list: Vec<&SessionInfo> = shown.iter().map(|(_, s)| *s).collect();
                    let index_of =
                        |s: &SessionInfo| all.iter().position(|x| x.path == s.path).unwrap_or(0);
                    threaded(&list, &index_of)
                }
                SortMode::Recent | SortMode::Relevance => shown
                    .iter()
                    .map(|(i, _)| Row {
                        session: *i,
                        prefix: String::new(),
                    })
                    .collect(),
            }
        } else {
            let query = session_search::parse(q);
            let mut scored: Vec<(usize, f64)> = shown
                .iter()
                .filter_map(|(i, s)| session_search::score(s, &query).map(|sc| (*i, sc)))
                .collect();
            if self.sort != SortMode::Recent {
                scored.sort_by(|a, b| {
                    a.1.total_cmp(&b.1)
                        .then(all[b.0].modified.cmp(&all[a.0].modified))
                });
            }
            scored
                .into_iter()
                .map(|(i, _)| Row {
                    session: i,
                    prefix: String::new(),
                })
                .collect()
        };
        self.selected = self.selected.min(self.rows.len().saturating_sub(1));
    }

    /// The session under the cursor.
    pub fn selected_session(&self) -> Option<&SessionInfo> {
        self.rows
            .get(self.selected)
            .and_then(|r| self.sessions().get(r.session))
    }

    fn toggle_scope(&mut self) {
        self.scope = match self.scope {
            Scope::Current => {
                if self.all.is_none() {
                    self.all = Some(filo_session::list_all_sessions(&self.source.all_root));
                }
                Scope::All
            }
            Scope::All => Scope::Current,
        };
        self.refilter();
    }

    fn reload(&mut self) {
        self.current = filo_session::list_sessions(&self.source.dir);
        if self.all.is_some() {
            self.all = Some(filo_session::list_all_sessions(&self.source.all_root));
        }
        self.refilter();
    }

    fn start_delete(&mut self) {
        let Some(s) = self.selected_session() else {
            return;
        };
        if self.is_current(s) {
            self.status = Some(Status {
                error: true,
                text: "Cannot delete the currently active session".into(),
            });
            return;
        }
        self.mode = Mode::ConfirmDelete(s.path.clone());
    }

    fn delete(&mut self, path: &Path) {
        self.status = Some(match delete_session_file(path) {
            Ok(trashed) => {
                self.reload();
                Status {
                    error: false,
                    text: if trashed {
                        "Session moved to trash".into()
                    } else {
                        "Session deleted".into()
                    },
                }
            }
            Err(e) => Status {
                error: true,
                text: format!("Failed to delete: {e}"),
            },
        });
    }

    fn rename(&mut self, path: &Path, name: &str) -> PickerAction {
        let is_current = self
            .source
            .current_file
            .as_deref()
            .is_some_and(|c| canonical(c) == canonical(path));
        if is_current {
            self.mode = Mode::List;
            // The list is refreshed when the picker sees the file again (the app writes it).
            for s in &mut self.current {
                if canonical(&s.path) == canonical(path) {
                    s.name = Some(name.to_string());
                }
            }
            self.refilter();
            return PickerAction::RenameCurrent(name.to_string());
        }
        let written = filo_session::SessionManager::open(path, &self.source.cwd)
            .and_then(|mut m| m.append_session_info(name).map(|_| ()));
        if let Err(e) = written {
            self.status = Some(Status {
                error: true,
                text: format!("Failed to rename: {e}"),
            });
        }
        self.mode = Mode::List;
        self.reload();
        PickerAction::None
    }

    fn move_by(&mut self, delta: isize) {
        let max = self.rows.len().saturating_sub(1) as isize;
        self.selected = (self.selected as isize + delta).clamp(0, max) as usize;
    }

    pub fn handle_key(&mut self, key: KeyEvent) -> PickerAction {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match std::mem::replace(&mut self.mode, Mode::List) {
            Mode::ConfirmDelete(path) => {
                match key.code {
                    KeyCode::Enter => self.delete(&path),
                    KeyCode::Esc => {}
                    _ => self.mode = Mode::ConfirmDelete(path),
                }
                return PickerAction::None;
            }
            Mode::Rename { path, mut input } => {
                match key.code {
                    KeyCode::Esc => {}
                    KeyCode::Enter if !input.trim().is_empty() => {
                        return self.rename(&path, input.trim());
                    }
                    KeyCode::Backspace => {
                        input.pop();
                        self.mode = Mode::Rename { path, input };
                    }
                    KeyCode::Char(c) if !ctrl => {
                        input.push(c);
                        self.mode = Mode::Rename { path, input };
                    }
                    _ => self.mode = Mode::Rename { path, input },
                }
                return PickerAction::None;
            }
            Mode::List => {}
        }
        self.status = None;
        let keys = self.keys.clone();
        let is = |action: &str| keys.matches(&key, action);
        if is("tui.select.cancel") {
            return PickerAction::Cancel;
        } else if is("tui.select.confirm") {
            if let Some(s) = self.selected_session() {
                return PickerAction::Open(s.path.clone());
            }
        } else if key.code == KeyCode::Tab {
            self.toggle_scope();
        } else if is("app.session.toggleSort") {
            self.sort = match self.sort {
                SortMode::Threaded => SortMode::Recent,
                SortMode::Recent => SortMode::Relevance,
                SortMode::Relevance => SortMode::Threaded,
            };
            self.refilter();
        } else if is("app.session.toggleNamedFilter") {
            self.named_only = !self.named_only;
            self.refilter();
        } else if is("app.session.togglePath") {
            self.show_path = !self.show_path;
        } else if is("app.session.delete") {
            self.start_delete();
        } else if is("app.session.rename") {
            if self.source.can_rename
                && let Some(s) = self.selected_session()
            {
                self.mode = Mode::Rename {
                    path: s.path.clone(),
                    input: s.name.clone().unwrap_or_default(),
                };
            }
        } else if is("app.session.deleteNoninvasive") && self.query.is_empty() {
            self.start_delete();
        } else if is("tui.select.up") {
            self.move_by(-1);
        } else if is("tui.select.down") {
            self.move_by(1);
        } else if is("tui.select.pageUp") {
            self.move_by(-(MAX_VISIBLE as isize));
        } else if is("tui.select.pageDown") {
            self.move_by(MAX_VISIBLE as isize);
        } else {
            match key.code {
                KeyCode::Backspace => {
                    self.query.pop();
                    self.refilter();
                }
                KeyCode::Char(c) if !ctrl => {
                    self.query.push(c);
                    self.refilter();
                }
                _ => {}
            }
        }
        PickerAction::None
    }
}

/// Delete a session file: to the trash with the `trash` command when there is one (as pi),
/// otherwise for good. `Ok(true)` when it went to the trash.
fn delete_session_file(path: &Path) -> Result<bool, String> {
    let trashed = std::process::Command::new("trash")
        .arg("--")
        .arg(path)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if trashed || !path.exists() {
        return Ok(true);
    }
    std::fs::remove_file(path).map_err(|e| e.to_string())?;
    Ok(false)
}

#[cfg(test)]
#[path = "session_picker_tests.rs"]
mod tests;
