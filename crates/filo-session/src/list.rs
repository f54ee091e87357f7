//! Finding and listing sessions (pi spec §3.4 "Listing", `--continue` discovery).

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use filo_ai::{ContentBlock, Message, UserContent};

use crate::entry::{EntryKind, SessionHeader, SessionMessage};
use crate::file::read_session_file;
use crate::ids::{ms_from_iso, now_ms};

/// Whether the first line of a file (read within its first 512 bytes, as pi does) is a header.
pub fn has_valid_header(path: &Path) -> bool {
    let mut buf = [0u8; 512];
    let Ok(mut f) = fs::File::open(path) else {
        return false;
    };
    let Ok(n) = f.read(&mut buf) else {
        return false;
    };
    let first = buf[..n].split(|b| *b == b'\n').next().unwrap_or_default();
    serde_json::from_slice::<serde_json::Value>(first)
        .ok()
        .is_some_and(|v| SessionHeader::from_value(&v).is_ok())
}

fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl") && p.is_file())
        .collect()
}

fn mtime(path: &Path) -> SystemTime {
    fs::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

/// The newest (by mtime) valid session file in `dir`.
pub fn most_recent_session(dir: &Path) -> Option<PathBuf> {
    jsonl_files(dir)
        .into_iter()
        .filter(|p| has_valid_header(p))
        .max_by_key(|p| mtime(p))
}

/// A session as a picker shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionInfo {
    pub path: PathBuf,
    pub id: String,
    pub cwd: String,
    pub name: Option<String>,
    pub parent_session_path: Option<String>,
    /// Header timestamp (ISO).
    pub created: String,
    /// Last user/assistant message time in ms (fallbacks as pi).
    pub modified: i64,
    pub message_count: usize,
    pub first_message: String,
    pub all_messages_text: String,
}

fn content_text(content: &UserContent) -> String {
    match content {
        UserContent::Text(s) => s.clone(),
        UserContent::Blocks(b) => b
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// Read one file's summary; `None` when it is not a session file.
pub fn session_info(path: &Path) -> Option<SessionInfo> {
    let loaded = read_session_file(path).ok()?;
    let header = loaded.header?;
    let mut info = SessionInfo {
        path: path.to_path_buf(),
        id: header.id.clone(),
        cwd: header.cwd.clone(),
        name: None,
        parent_session_path: header.parent_session.clone(),
        created: header.timestamp.clone(),
        modified: 0,
        message_count: 0,
        first_message: String::new(),
        all_messages_text: String::new(),
    };
    let mut texts = Vec::new();
    for e in &loaded.entries {
        match &e.kind {
            EntryKind::SessionInfo { name } if !name.is_empty() => info.name = Some(name.clone()),
            EntryKind::Message(m) => {
                info.message_count += 1;
                let (text, ts) = match m {
                    SessionMessage::Llm(Message::User(u)) => {
                        (Some(content_text(&u.content)), Some(u.timestamp))
                    }
                    SessionMessage::Llm(Message::Assistant(a)) => {
                        (Some(a.text()), Some(a.timestamp))
                    }
                    _ => (None, None),
                };
                if let Some(ts) = ts.or_else(|| ms_from_iso(&e.timestamp)) {
                    info.modified = info.modified.max(ts);
                }
                if let (Some(t), SessionMessage::Llm(Message::User(_))) = (&text, m)
                    && info.first_message.is_empty()
                {
                    info.first_message = t.clone();
                }
                texts.extend(text);
            }
            _ => {}
        }
    }
    if info.first_message.is_empty() {
        info.first_message = "(no messages)".into();
    }
    if info.modified == 0 {
        info.modified = ms_from_iso(&header.timestamp).unwrap_or_else(|| {
            mtime(path)
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or_else(|_| now_ms(), |d| i64::try_from(d.as_millis()).unwrap_or(0))
        });
    }
    info.all_messages_text = texts.join(" ");
    Some(info)
}

/// Sessions in one directory, newest first.
pub fn list_sessions(dir: &Path) -> Vec<SessionInfo> {
    let mut v: Vec<_> = jsonl_files(dir)
        .iter()
        .filter_map(|p| session_info(p))
        .collect();
    v.sort_by_key(|s| std::cmp::Reverse(s.modified));
    v
}

/// Sessions of every working directory under `sessions_root`, newest first.
pub fn list_all_sessions(sessions_root: &Path) -> Vec<SessionInfo> {
    let Ok(rd) = fs::read_dir(sessions_root) else {
        return Vec::new();
    };
    let mut v: Vec<_> = rd
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .flat_map(|e| list_sessions(&e.path()))
        .collect();
    v.sort_by_key(|s| std::cmp::Reverse(s.modified));
    v
}
