//! Exporting a session (pi's `/export`, `--export`, RPC `export_html`).
//!
//! HTML: one self-contained page holding the whole session tree, every branch. Each entry is
//! rendered once, in Rust (markdown included, see [`markdown`]); a small inline script shows the
//! path to the entry picked in the sidebar tree. The page loads nothing from elsewhere: its
//! Content-Security-Policy allows only inline styles, `data:` images and the one script, named
//! by its hash, so even text that slipped through escaping could not run.
//!
//! JSONL: the current branch as a session file of its own (pi's `exportToJsonl`): a fresh header
//! and the branch's entries, each line as the session file holds it.

mod entries;
pub mod markdown;
mod page;
mod tree;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use filo_session::{EntryKind, SessionEntry, SessionHeader, SessionManager};
use sha2::{Digest, Sha256};

use super::{AgentSession, lock};
use crate::CoreError;

const STYLE: &str = include_str!("viewer.css");
const SCRIPT: &str = include_str!("viewer.js");

/// Escape text for HTML element content and attribute values.
pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The page link that selects an entry: `#select=<id, percent-encoded>` (the viewer reads it on
/// load and when it changes).
pub fn select_href(id: &str) -> String {
    let mut out = String::from("#select=");
    for b in id.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// What a live session adds to an export from a file: the system prompt and the tools.
#[derive(Debug, Clone, Default)]
pub struct ExportExtras {
    pub system_prompt: Option<String>,
    /// Name and description of each active tool.
    pub tools: Vec<(String, String)>,
}

/// The Content-Security-Policy of the page: inline styles, `data:` images, and the viewer
/// script by its hash; nothing else, and nothing fetched.
fn content_security_policy() -> String {
    let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(SCRIPT.as_bytes()));
    format!(
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'sha256-{hash}'; base-uri 'none'; form-action 'none'"
    )
}

/// The whole session tree as one self-contained HTML page. The sections of the current branch
/// are shown even without the script. Refuses a session with no message yet.
pub fn render_session_html(store: &SessionManager) -> Result<String, CoreError> {
    render_session_html_with(store, &ExportExtras::default())
}

/// [`render_session_html`] with what a live session adds.
pub fn render_session_html_with(
    store: &SessionManager,
    extras: &ExportExtras,
) -> Result<String, CoreError> {
    let tree = tree::Tree::build(store.entries().collect());
    if !tree
        .entries
        .iter()
        .any(|e| matches!(e.kind, EntryKind::Message(_)))
    {
        return Err(CoreError::Refused(
            "Nothing to export yet - start a conversation first".into(),
        ));
    }
    let leaf = store
        .leaf_id()
        .and_then(|id| tree.index.get(id).copied())
        .or_else(|| tree.entries.len().checked_sub(1));
    let path = leaf.map_or_else(Vec::new, |l| tree.path_to(l));
    let mut shown = vec![false; tree.entries.len()];
    for &i in &path {
        shown[i] = true;
    }
    let ctx = entries::Context::new(&tree);
    let head = store.header();
    let title = store
        .session_name()
        .map_or_else(|| format!("Session {}", head.id), str::to_string);
    let leaf_id = leaf.map_or("", |l| tree.entries[l].id.as_str());

    let mut html = String::with_capacity(64 * 1024);
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<meta name=\"color-scheme\" content=\"light dark\">\
<meta name=\"generator\" content=\"filo {version}\">\
<title>{title}</title><style>{STYLE}</style></head>\n<body>\n<div id=\"app\">\
<nav id=\"side\" aria-label=\"Session tree\"><div class=\"side-head\">\
<input id=\"search\" type=\"search\" placeholder=\"Search the tree ( / )\" aria-label=\"Search the tree\">\
<div class=\"filters\" role=\"group\" aria-label=\"Show in the tree\">\
<button type=\"button\" data-filter=\"default\" class=\"active\" title=\"Messages, without settings entries\">Default</button>\
<button type=\"button\" data-filter=\"no-tools\" title=\"Without tool results\">No tools</button>\
<button type=\"button\" data-filter=\"user\" title=\"Only your messages\">User</button>\
<button type=\"button\" data-filter=\"labeled\" title=\"Only labelled entries\">Labeled</button>\
<button type=\"button\" data-filter=\"all\" title=\"Every entry\">All</button></div></div>\
<div id=\"tree\" data-leaf=\"{leaf}\">\n",
        csp = content_security_policy(),
        version = env!("CARGO_PKG_VERSION"),
        title = escape_html(&title),
        leaf = escape_html(leaf_id),
    );
    page::sidebar(&mut html, &tree, &ctx, &path);
    html.push_str("</div><div id=\"tree-status\"></div></nav>\n<main id=\"main\">\n");
    page::header(&mut html, &title, head, &tree, extras);
    html.push_str("<div id=\"messages\">\n");
    for (i, e) in tree.entries.iter().enumerate() {
        entries::section(&mut html, &ctx, i, e, shown[i]);
    }
    let _ = write!(
        html,
        "</div></main></div>\n<script>{SCRIPT}</script>\n</body></html>\n"
    );
    Ok(html)
}

/// Write `text` to `target`, creating its directory.
pub fn write_file(target: &Path, text: &str) -> Result<(), CoreError> {
    if let Some(dir) = target.parent() {
        std::fs::create_dir_all(dir).map_err(|e| CoreError::io(dir, e))?;
    }
    std::fs::write(target, text).map_err(|e| CoreError::io(target, e))
}

/// Write `html` to `target`, creating its directory.
pub fn write_html(target: &Path, html: &str) -> Result<(), CoreError> {
    write_file(target, html)
}

/// The lines of a session file by entry id (a later line with the same id wins, as on load).
fn file_lines(path: &Path) -> Result<HashMap<String, String>, CoreError> {
    #[derive(serde::Deserialize)]
    struct Id {
        id: Option<String>,
    }
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        // Not written yet (a session is saved once it has an answer): every entry is in memory.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(HashMap::new()),
        Err(e) => return Err(CoreError::io(path, e)),
    };
    let mut lines = HashMap::new();
    for line in text.split('\n').skip(1) {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if let Ok(Id { id: Some(id) }) = serde_json::from_str::<Id>(line) {
            lines.insert(id, line.to_string());
        }
    }
    Ok(lines)
}

/// The current branch as a session file (pi's `exportToJsonl`): a new header (this session's
/// id and cwd, the time of the export), then the branch's entries root first, each line as the
/// session file holds it. A root whose parent is missing gets `parentId: null`, so the copy is a
/// valid session of its own.
pub fn render_branch_jsonl(store: &SessionManager) -> Result<String, CoreError> {
    let raw = match store.session_file() {
        Some(f) => file_lines(f)?,
        None => HashMap::new(),
    };
    let head = SessionHeader::new(
        store.session_id().to_string(),
        filo_session::ids::iso_from_ms(filo_session::ids::now_ms()),
        store.cwd().to_string(),
        None,
    );
    let mut out = head.to_value().to_string();
    out.push('\n');
    for (k, e) in store.branch_path(None).into_iter().enumerate() {
        let line = if k == 0 && e.parent_id.is_some() {
            SessionEntry {
                parent_id: None,
                ..e.clone()
            }
            .to_line()
        } else {
            raw.get(&e.id).cloned().unwrap_or_else(|| e.to_line())
        };
        out.push_str(&line);
        out.push('\n');
    }
    Ok(out)
}

impl AgentSession {
    /// Write the whole session tree as a self-contained HTML file. The default path is
    /// `filo-session-<session file name>.html` in the working directory; a relative path is
    /// taken from there too. Returns the path written.
    pub fn export_to_html(&self, output_path: Option<&Path>) -> Result<PathBuf, CoreError> {
        let extras = ExportExtras {
            system_prompt: Some(self.system_prompt()).filter(|p| !p.is_empty()),
            tools: self
                .inner
                .agent
                .tools()
                .iter()
                .map(|t| (t.name().to_string(), t.description().to_string()))
                .collect(),
        };
        let (html, stem) = {
            let store = lock(&self.inner.store);
            let file = store.session_file().ok_or_else(|| {
                CoreError::Refused("Cannot export in-memory session to HTML".into())
            })?;
            let stem = file
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            (render_session_html_with(&store, &extras)?, stem)
        };
        let target = match output_path {
            Some(p) => self.inner.cwd.join(p),
            None => self.inner.cwd.join(format!("filo-session-{stem}.html")),
        };
        write_file(&target, &html)?;
        Ok(target)
    }

    /// Write the current branch as a session file of its own ([`render_branch_jsonl`]); a
    /// relative path is taken from the working directory. Returns the path written.
    pub fn export_to_jsonl(&self, output_path: &Path) -> Result<PathBuf, CoreError> {
        let text = render_branch_jsonl(&lock(&self.inner.store))?;
        let target = self.inner.cwd.join(output_path);
        write_file(&target, &text)?;
        Ok(target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use filo_ai::{Message, UserContent, UserMessage};
    use filo_session::SessionMessage;

    fn user(text: &str) -> SessionMessage {
        SessionMessage::Llm(Message::User(UserMessage {
            content: UserContent::Text(text.into()),
            timestamp: 0,
        }))
    }

    #[test]
    fn escapes_every_special_character() {
        assert_eq!(
            escape_html("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }

    #[test]
    fn select_links_percent_encode_the_id() {
        assert_eq!(select_href("a1b2-c_d"), "#select=a1b2-c_d");
        assert_eq!(select_href("a\"<é"), "#select=a%22%3C%C3%A9");
    }

    #[test]
    fn the_script_cannot_end_early_and_its_hash_is_allowed() {
        assert!(!SCRIPT.to_ascii_lowercase().contains("</script"));
        assert!(!SCRIPT.contains("<!--"));
        assert!(!STYLE.to_ascii_lowercase().contains("</style"));
        let csp = content_security_policy();
        assert!(
            csp.starts_with("default-src 'none'; img-src data:;"),
            "{csp}"
        );
        assert!(csp.contains("script-src 'sha256-"), "{csp}");
    }

    #[test]
    fn every_branch_is_in_the_page_and_only_the_current_one_is_shown() {
        let mut s = SessionManager::in_memory("/w");
        let root = s.append_message(user("first <b>question</b>")).unwrap();
        let left = s.append_message(user("left branch")).unwrap();
        s.branch(&root).unwrap();
        let right = s.append_message(user("right branch")).unwrap();
        let html = render_session_html(&s).unwrap();
        assert!(html.contains("first &lt;b&gt;question&lt;/b&gt;"), "{html}");
        assert!(!html.contains("<b>question"));
        assert!(html.contains(&format!(
            "<section class=\"msg user\" data-id=\"{left}\" hidden>"
        )));
        assert!(html.contains(&format!("<section class=\"msg user\" data-id=\"{right}\">")));
        assert!(html.contains(&format!("data-leaf=\"{right}\"")));
        assert_eq!(html.matches("<script>").count(), 1);
    }

    #[test]
    fn a_session_without_messages_is_refused() {
        let s = SessionManager::in_memory("/w");
        let err = render_session_html(&s)
            .err()
            .map(|e| e.to_string())
            .unwrap();
        assert!(err.contains("Nothing to export yet"), "{err}");
    }

    #[test]
    fn the_jsonl_export_is_the_current_branch_with_the_files_own_lines() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.jsonl");
        let lines = [
            r#"{"type":"session","version":3,"id":"s-1","timestamp":"2025-11-01T10:00:00.000Z","cwd":"/w"}"#,
            // A root whose parent is missing, and lines in an unusual (but valid) spelling.
            r#"{"type":"message","id":"a1","parentId":"gone","timestamp":"2025-11-01T10:00:01.000Z","message":{"role":"user","content":"root","timestamp":1}}"#,
            r#"{"type":"message",  "id":"a2","parentId":"a1","timestamp":"2025-11-01T10:00:02.000Z","message":{"role":"user","content":"left","timestamp":2}}"#,
            r#"{"id":"a3","type":"message","parentId":"a1","timestamp":"2025-11-01T10:00:03.000Z","message":{"role":"user","content":"right \u003c","timestamp":3}}"#,
        ];
        std::fs::write(&file, lines.join("\n") + "\n").unwrap();
        let store = SessionManager::open(&file, "/w").unwrap();
        let out = render_branch_jsonl(&store).unwrap();
        let got: Vec<&str> = out.lines().collect();
        assert_eq!(got.len(), 3, "{out}");
        let head: serde_json::Value = serde_json::from_str(got[0]).unwrap();
        assert_eq!(head["type"], "session");
        assert_eq!(head["version"], 3);
        assert_eq!(head["id"], "s-1");
        assert_eq!(head["cwd"], "/w");
        assert_ne!(
            head["timestamp"], "2025-11-01T10:00:00.000Z",
            "the export's own time"
        );
        let root: serde_json::Value = serde_json::from_str(got[1]).unwrap();
        assert_eq!(root["id"], "a1");
        assert_eq!(root["parentId"], serde_json::Value::Null);
        assert_eq!(got[2], lines[3], "copied byte for byte");
        assert!(out.ends_with('\n'));
    }
}
