//! Reading session files tolerantly and writing them safely (pi spec §3.3, §9 items 2 and 12).
//!
//! Reading never fails on a bad line: malformed lines, lines that are not valid UTF-8, entries of a
//! known type with broken fields and a torn last line (a crash mid-write) are skipped and reported
//! as [`LoadWarning`]s. Writing only ever appends whole lines, or — for a migration — writes a new
//! file beside the old one and renames it into place, so a file is never left half-written.

use std::fs::File;
use std::path::{Path, PathBuf};

use serde_json::Value;

use std::borrow::Cow;

use crate::entry::{EntryKind, SessionEntry, SessionHeader, SessionMessage};
use crate::key::Id;
use crate::migrate::migrate_to_current;
use crate::store::{Item, LazyLine};

/// Errors of the session layer.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The cause is part of the message (not a `source`), so it is printed once.
    #[error("{path}: {cause}")]
    Io {
        path: PathBuf,
        cause: std::io::Error,
    },
    /// An append failed and the file could not be put back to its length before it: the file may
    /// end in a partial line.
    #[error("{path}: {cause}; the partial line could not be removed ({rollback})")]
    TornAppend {
        path: PathBuf,
        cause: std::io::Error,
        rollback: std::io::Error,
    },
    #[error("{0}: not a session file (the first line is not a session header); left untouched")]
    NotASessionFile(PathBuf),
    #[error("Entry {0} not found")]
    EntryNotFound(String),
    #[error("Cannot fork: source session file is empty or invalid: {0}")]
    InvalidForkSource(PathBuf),
}

impl SessionError {
    pub(crate) fn io(path: &Path, cause: std::io::Error) -> Self {
        SessionError::Io {
            path: path.to_path_buf(),
            cause,
        }
    }
}

/// Something skipped while reading a file. Line numbers are 1-based.
#[derive(Debug, Clone, PartialEq)]
pub enum LoadWarning {
    /// Not JSON, or not valid UTF-8.
    Malformed { line: usize, reason: String },
    /// The last line has no newline and does not parse: a write was cut short.
    TornLastLine { line: usize },
    /// A second header line (pi can write duplicates); the first one wins.
    DuplicateHeader { line: usize },
    /// JSON, but not a usable entry.
    BadEntry { line: usize, reason: String },
    /// An entry (a `type` and an `id`) filo cannot read: kept as it is, in the tree (its
    /// children keep their parent) and in the file, contributing nothing to the context.
    KeptEntry {
        line: usize,
        entry_type: String,
        reason: String,
    },
}

impl LoadWarning {
    /// The 1-based line the warning is about.
    pub fn line(&self) -> usize {
        match self {
            LoadWarning::Malformed { line, .. }
            | LoadWarning::TornLastLine { line }
            | LoadWarning::DuplicateHeader { line }
            | LoadWarning::BadEntry { line, .. }
            | LoadWarning::KeptEntry { line, .. } => *line,
        }
    }
}

impl std::fmt::Display for LoadWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadWarning::Malformed { line, reason } => {
                write!(f, "line {line}: skipped malformed line ({reason})")
            }
            LoadWarning::TornLastLine { line } => {
                write!(
                    f,
                    "line {line}: ignored a torn last line (incomplete write)"
                )
            }
            LoadWarning::DuplicateHeader { line } => write!(f, "line {line}: duplicate header"),
            LoadWarning::BadEntry { line, reason } => {
                write!(f, "line {line}: skipped entry ({reason})")
            }
            LoadWarning::KeptEntry {
                line,
                entry_type,
                reason,
            } => write!(
                f,
                "line {line}: `{entry_type}` entry kept as it is but not understood ({reason})"
            ),
        }
    }
}

/// What a file held.
#[derive(Debug, Clone, Default)]
pub struct LoadedFile {
    /// `None` when the file is empty or its first object is not a header.
    pub header: Option<SessionHeader>,
    pub entries: Vec<SessionEntry>,
    pub warnings: Vec<LoadWarning>,
    /// The version an older file had; it was migrated in memory and `rewrite` holds the new text.
    pub migrated_from: Option<u64>,
    /// The migrated file: header and entries migrated, every line not understood kept verbatim.
    pub rewrite: Option<Vec<u8>>,
    /// False when the file's last byte is not a newline (so an append must start a new line).
    pub ends_with_newline: bool,
    /// True when the file has no bytes at all.
    pub empty: bool,
    /// Warnings past [`MAX_WARNINGS`], counted instead of kept (memory stays bounded on a file
    /// of garbage).
    pub warnings_dropped: usize,
}

/// At most this many warnings are kept per file; the rest are counted.
pub const MAX_WARNINGS: usize = 1000;

/// Lines before the header (of an older file) kept for its rewrite, in bytes; a file whose header
/// comes after more garbage than this keeps the rest only in its backup.
const PRE_HEADER_KEEP: usize = 1 << 20;

impl LoadedFile {
    fn warn(&mut self, w: LoadWarning) {
        if self.warnings.len() < MAX_WARNINGS {
            self.warnings.push(w);
        } else {
            self.warnings_dropped += 1;
        }
    }
}

/// One line of an older-version file, kept whole so the migration can write back what it does not
/// understand exactly as it was.
struct OldLine {
    raw: Vec<u8>,
    value: Option<Value>,
}

/// Line-by-line session file parser: a current (v3) file is converted one line at a time, so
/// only one line's JSON tree exists at once; an older file is kept whole for the migration.
#[derive(Default)]
struct Parser {
    out: LoadedFile,
    header: Option<Value>,
    current: bool,
    old_lines: Vec<(usize, OldLine)>,
    /// The first object was not a header: the file is not a session (pi's rule).
    invalid: bool,
    /// Bytes of unreadable lines held from before the header.
    pre_header_bytes: usize,
    /// The entries in file order.
    items: Vec<Item>,
    /// Keep plain message lines of a current file as positions instead of entries.
    lazy: bool,
    /// Where the line being fed starts in the file.
    offset: u64,
}

impl Parser {
    /// One line without its newline; `torn` when it is the last line and had no newline.
    fn feed(&mut self, line: usize, bytes: &[u8], torn: bool) {
        if self.invalid {
            return;
        }
        let value = match self.parse(line, bytes, torn) {
            Parsed::Blank | Parsed::Loaded => return,
            Parsed::Skipped => None,
            Parsed::Value(v) => Some(v),
        };
        if let Some(v) = value {
            if self.header.is_none() {
                if SessionHeader::from_value(&v).is_err() {
                    self.invalid = true;
                    return;
                }
                self.current = v.get("version").and_then(Value::as_u64).unwrap_or(1) >= 3;
                if self.current {
                    self.old_lines = Vec::new();
                }
                self.header = Some(v);
                return;
            }
            if self.current {
                push_entry(&mut self.out, &mut self.items, line, &v, true);
                return;
            }
            let raw = bytes.to_vec();
            self.old_lines.push((
                line,
                OldLine {
                    raw,
                    value: Some(v),
                },
            ));
        } else if !self.current {
            // Not understood: an older file's rewrite keeps it verbatim. Before the header the
            // version is not known yet, so only a bounded amount is held.
            if self.header.is_none() {
                if self.pre_header_bytes + bytes.len() > PRE_HEADER_KEEP {
                    return;
                }
                self.pre_header_bytes += bytes.len();
            }
            let raw = bytes.to_vec();
            self.old_lines.push((line, OldLine { raw, value: None }));
        }
    }

    /// Parse one line; warnings for what is skipped are recorded here.
    fn parse(&mut self, line: usize, bytes: &[u8], torn: bool) -> Parsed {
        let Ok(text) = std::str::from_utf8(bytes) else {
            self.out.warn(LoadWarning::Malformed {
                line,
                reason: "invalid UTF-8".into(),
            });
            return Parsed::Skipped;
        };
        if text.trim().is_empty() {
            return Parsed::Blank;
        }
        if self.current {
            // A lazy line is checked, not built; the check accepts exactly the lines the typed
            // fast path does, so a line it refuses goes down the general path as before.
            let lazy_len = self.lazy.then(|| u32::try_from(bytes.len()).ok()).flatten();
            if let Some(len) = lazy_len {
                if let Some(line) = crate::line::index_message_line(text) {
                    self.items.push(Item::Lazy(LazyLine {
                        id: Id::new(&line.id),
                        parent: line.parent_id.as_deref().map(Id::new),
                        role: line.role,
                        offset: self.offset,
                        len,
                    }));
                    return Parsed::Loaded;
                }
            } else if let Some(line) = crate::line::parse_message_parts(text) {
                let entry = SessionEntry::new(
                    line.id.into_owned(),
                    line.parent_id.map(Cow::into_owned),
                    line.timestamp.map(Cow::into_owned).unwrap_or_default(),
                    EntryKind::Message(SessionMessage::Llm(line.message)),
                );
                self.items
                    .push(Item::Entry(Box::new(entry.keeping_line(text))));
                return Parsed::Loaded;
            }
        }
        match serde_json::from_str::<Value>(text) {
            Ok(v) => Parsed::Value(v),
            Err(_) if torn => {
                self.out.warn(LoadWarning::TornLastLine { line });
                Parsed::Skipped
            }
            Err(e) => {
                self.out.warn(LoadWarning::Malformed {
                    line,
                    reason: e.to_string(),
                });
                Parsed::Skipped
            }
        }
    }

    /// The file, and its entries in file order (lazy ones only in lazy mode).
    fn finish(mut self) -> (LoadedFile, Vec<Item>) {
        if self.invalid {
            self.out.warnings.clear();
            self.out.warnings_dropped = 0;
            return (self.out, Vec::new());
        }
        let Some(header) = self.header else {
            return (self.out, Vec::new());
        };
        let mut out = self.out;
        let mut items = self.items;
        if self.current {
            out.header = SessionHeader::from_value(&header).ok();
        } else {
            migrate_old(&mut out, &mut items, header, self.old_lines);
        }
        out.warnings.sort_by_key(LoadWarning::line);
        (out, items)
    }

    /// The whole file parsed.
    fn finish_eager(self) -> LoadedFile {
        let (mut out, items) = self.finish();
        out.entries = items
            .into_iter()
            .filter_map(|i| match i {
                Item::Entry(e) => Some(*e),
                Item::Lazy(_) => None,
            })
            .collect();
        out
    }
}

enum Parsed {
    Blank,
    /// Parsed straight into an entry (the fast path).
    Loaded,
    /// Not usable; a warning was recorded.
    Skipped,
    Value(Value),
}

/// Migrate an older file in memory and prepare its rewrite: entries are written migrated, every
/// line the migration does not understand (malformed, unknown role, duplicate header) verbatim,
/// in the original order.
fn migrate_old(
    out: &mut LoadedFile,
    items: &mut Vec<Item>,
    header: Value,
    mut old: Vec<(usize, OldLine)>,
) {
    out.migrated_from = Some(header.get("version").and_then(Value::as_u64).unwrap_or(1));
    let mut values = vec![header];
    let mut slots = Vec::new();
    for (i, (_, l)) in old.iter_mut().enumerate() {
        if let Some(v) = l.value.take() {
            values.push(v);
            slots.push(i);
        }
    }
    migrate_to_current(&mut values, &is_entry);
    let mut values = values.into_iter();
    let header = values.next().unwrap_or(Value::Null);
    for (slot, v) in slots.into_iter().zip(values) {
        old[slot].1.value = Some(v);
    }
    let mut text = header.to_string().into_bytes();
    text.push(b'\n');
    out.header = SessionHeader::from_value(&header).ok();
    for (line, l) in old {
        let loaded = l.value.as_ref().is_some_and(|v| {
            let before = items.len();
            // A migrated line not understood is written back as it was, not kept as opaque.
            push_entry(out, items, line, v, false);
            items.len() > before
        });
        match (&l.value, loaded) {
            (Some(v), true) => text.extend_from_slice(v.to_string().as_bytes()),
            _ => text.extend_from_slice(&l.raw),
        }
        text.push(b'\n');
    }
    out.rewrite = Some(text);
}

/// Whether a (migrated) line is an entry the loader keeps.
fn is_entry(v: &Value) -> bool {
    v.get("type").and_then(Value::as_str) != Some("session") && SessionEntry::from_value(v).is_ok()
}

/// Parse the text of a session file.
pub fn parse_session_bytes(bytes: &[u8]) -> LoadedFile {
    let mut p = Parser::default();
    p.out.ends_with_newline = bytes.last().is_none_or(|b| *b == b'\n');
    p.out.empty = bytes.is_empty();
    let torn_possible = !p.out.ends_with_newline;
    let segments: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    let last = segments.len().saturating_sub(1);
    for (i, seg) in segments.iter().enumerate() {
        p.feed(i + 1, seg, torn_possible && i == last);
    }
    p.finish_eager()
}

fn push_entry(
    out: &mut LoadedFile,
    items: &mut Vec<Item>,
    line: usize,
    v: &Value,
    keep_opaque: bool,
) {
    if v.get("type").and_then(Value::as_str) == Some("session") {
        out.warn(LoadWarning::DuplicateHeader { line });
        return;
    }
    match SessionEntry::from_value(v) {
        Ok(e) => items.push(Item::Entry(Box::new(e))),
        Err(e) => match SessionEntry::opaque(v).filter(|_| keep_opaque) {
            Some(kept) => {
                out.warn(LoadWarning::KeptEntry {
                    line,
                    entry_type: kept.kind.type_name().to_string(),
                    reason: e.to_string(),
                });
                items.push(Item::Entry(Box::new(kept)));
            }
            None => out.warn(LoadWarning::BadEntry {
                line,
                reason: e.to_string(),
            }),
        },
    }
}

/// Read and parse a session file, streaming it line by line (the file is never held whole).
pub fn read_session_file(path: &Path) -> Result<LoadedFile, SessionError> {
    let (p, _) = stream_file(path, false)?;
    Ok(p.finish_eager())
}

/// Read a session file as [`read_session_file`] does (the same lines kept, the same warnings),
/// keeping the plain message lines of a current file as positions in it (see `crate::store`).
/// Returns the open file, which lazy items are read back from.
pub(crate) fn index_session_file(
    path: &Path,
) -> Result<(LoadedFile, Vec<Item>, File), SessionError> {
    let (p, file) = stream_file(path, true)?;
    let (out, items) = p.finish();
    Ok((out, items, file))
}

fn stream_file(path: &Path, lazy: bool) -> Result<(Parser, File), SessionError> {
    use std::io::Read;
    let mut file = File::open(path).map_err(|e| SessionError::io(path, e))?;
    let mut p = Parser {
        lazy,
        ..Parser::default()
    };
    p.out.ends_with_newline = true;
    p.out.empty = true;
    // Lines are fed in place from a chunk of the file (a line longer than the chunk grows it);
    // `buf[start..end]` is what is read and not fed yet.
    let mut buf = vec![0u8; 1 << 18];
    let (mut start, mut end, mut line) = (0, 0, 0);
    loop {
        if let Some(nl) = memchr::memchr(b'\n', &buf[start..end]) {
            line += 1;
            p.out.empty = false;
            p.feed(line, &buf[start..start + nl], false);
            p.offset += nl as u64 + 1;
            start += nl + 1;
            continue;
        }
        buf.copy_within(start..end, 0);
        end -= start;
        start = 0;
        if end == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        let n = match file.read(&mut buf[end..]) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(SessionError::io(path, e)),
        };
        if n == 0 {
            if end > 0 {
                // The last line, without a newline.
                line += 1;
                p.out.empty = false;
                p.out.ends_with_newline = false;
                p.feed(line, &buf[..end], true);
            }
            break;
        }
        end += n;
    }
    Ok((p, file))
}

/// The lines of a whole file: header then entries, each followed by `\n`.
pub fn render_file(header: &SessionHeader, entries: &[SessionEntry]) -> String {
    let mut s = header.to_value().to_string();
    s.push('\n');
    for e in entries {
        s.push_str(&e.to_line());
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = r#"{"type":"session","version":3,"id":"u1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}"#;
    const E1: &str =
        r#"{"type":"session_info","id":"a","parentId":null,"timestamp":"t","name":"n"}"#;

    #[test]
    fn tolerant_reading() {
        let text = format!(
            "{HEADER}\n\nnot json\n{E1}\n{HEADER}\n{{\"type\":\"label\"}}\n{{\"type\":\"session_in"
        );
        let f = parse_session_bytes(text.as_bytes());
        assert!(f.header.is_some());
        assert_eq!(f.entries.len(), 1);
        assert!(!f.ends_with_newline);
        assert!(matches!(
            f.warnings[0],
            LoadWarning::Malformed { line: 3, .. }
        ));
        assert!(matches!(
            f.warnings[1],
            LoadWarning::DuplicateHeader { line: 5 }
        ));
        assert!(matches!(
            f.warnings[2],
            LoadWarning::BadEntry { line: 6, .. }
        ));
        assert_eq!(f.warnings[3], LoadWarning::TornLastLine { line: 7 });
    }

    #[test]
    fn headerless_and_empty() {
        let f = parse_session_bytes(E1.as_bytes());
        assert!(f.header.is_none());
        let e = parse_session_bytes(b"");
        assert!(e.empty && e.header.is_none());
    }
}
