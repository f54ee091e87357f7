//! The entries of a session in file order, held lazily (issue 16).
//!
//! Opening a file reads every line once, checks it exactly as the eager reader does (so the same
//! lines are skipped with the same warnings), and keeps for each plain message line (a `message`
//! entry holding a user, assistant or tool-result message, nearly all of a long session) only
//! its id, parent id, role and where it is in the file. The full entry is parsed again from the
//! file the first time it is asked for and then kept. Every other entry is held parsed, as are
//! entries appended or merged after opening.
//!
//! The file is re-read through the handle it was opened with, so appends (by filo or another
//! process) and a file replaced by a rename leave earlier lines where they were. A file rewritten
//! in place under an open session breaks pi's append-only contract; an entry that can then no
//! longer be read back is given as an entry of the unknown type `message` with no fields (it
//! contributes nothing to the context).

use std::fs::File;
use std::sync::{Arc, OnceLock};

use crate::entry::{EntryKind, SessionEntry};
use crate::key::{FastHash, Id};

/// The role of a message entry held as a file position (the only kind held that way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    User,
    Assistant,
    ToolResult,
}

/// A message line of the opened file, not parsed yet.
#[derive(Debug, Clone)]
pub(crate) struct LazyLine {
    pub id: Id,
    pub parent: Option<Id>,
    pub role: Role,
    pub offset: u64,
    pub len: u32,
}

/// What the reader gives for one entry line.
#[derive(Debug, Clone)]
pub(crate) enum Item {
    Entry(Box<SessionEntry>),
    Lazy(LazyLine),
}

impl Item {
    pub(crate) fn id(&self) -> &str {
        match self {
            Item::Entry(e) => &e.id,
            Item::Lazy(l) => l.id.as_str(),
        }
    }
}

/// How an entry figures in tree and context operations, known without parsing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    Message(Option<Role>),
    ThinkingLevelChange,
    ModelChange,
    Compaction,
    Label,
    SessionInfo,
    Other,
}

impl Shape {
    pub(crate) fn of(e: &SessionEntry) -> Shape {
        use filo_ai::Message;
        match &e.kind {
            EntryKind::Message(crate::SessionMessage::Llm(m)) => Shape::Message(Some(match m {
                Message::User(_) => Role::User,
                Message::Assistant(_) => Role::Assistant,
                Message::ToolResult(_) => Role::ToolResult,
            })),
            EntryKind::Message(_) => Shape::Message(None),
            EntryKind::ThinkingLevelChange { .. } => Shape::ThinkingLevelChange,
            EntryKind::ModelChange { .. } => Shape::ModelChange,
            EntryKind::Compaction { .. } => Shape::Compaction,
            EntryKind::Label { .. } => Shape::Label,
            EntryKind::SessionInfo { .. } => Shape::SessionInfo,
            _ => Shape::Other,
        }
    }
}

#[derive(Debug, Clone)]
struct Slot {
    /// `None` once the entry is held parsed (then `cell` is set).
    lazy: Option<LazyLine>,
    cell: OnceLock<Box<SessionEntry>>,
}

impl Slot {
    fn loaded(e: Box<SessionEntry>) -> Slot {
        Slot {
            lazy: None,
            cell: OnceLock::from(e),
        }
    }
}

/// Entries in file order; lazy ones are parsed from `file` when first read.
#[derive(Debug, Clone, Default)]
pub(crate) struct EntryStore {
    slots: Vec<Slot>,
    /// Beside each slot, the position of its parent when known ([`UNRESOLVED`]: look the
    /// parent id up). A position, once found, stays right: an id keeps its position for good
    /// (a later entry with the same id replaces it in place), and a replaced slot is resolved
    /// again.
    parents: Vec<u32>,
    /// The position of each id (a table of positions hashed by the slots' ids: 8 bytes a
    /// bucket where a map from ids would take 32).
    index: hashbrown::HashTable<usize>,
    file: Option<Arc<File>>,
}

/// No parent position known: the entry has no parent, its parent is not in the session (yet),
/// or the session is too large for `u32` positions.
const UNRESOLVED: u32 = u32::MAX;

impl EntryStore {
    /// An empty store whose lazy items will be read from `file`.
    pub(crate) fn over(file: File, capacity: usize) -> EntryStore {
        EntryStore {
            slots: Vec::with_capacity(capacity),
            parents: Vec::with_capacity(capacity),
            index: hashbrown::HashTable::with_capacity(capacity),
            file: Some(Arc::new(file)),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    pub(crate) fn reserve(&mut self, n: usize) {
        self.slots.reserve(n);
        self.parents.reserve(n);
        let slots = &self.slots;
        self.index.reserve(n, |&p| hash_id(slot_id(slots, p)));
    }

    /// The position of the entry with id `id`.
    pub(crate) fn position(&self, id: &str) -> Option<usize> {
        self.index
            .find(hash_id(id), |&p| slot_id(&self.slots, p) == id)
            .copied()
    }

    pub(crate) fn contains(&self, id: &str) -> bool {
        self.position(id).is_some()
    }

    /// Add an entry at the end, or in place of the entry with the same id (which keeps its
    /// position); gives the position.
    pub(crate) fn insert(&mut self, item: Item) -> usize {
        if let Some(at) = self.position(item.id()) {
            self.put(Some(at), item);
            return at;
        }
        let at = self.slots.len();
        let hash = hash_id(item.id());
        self.put(None, item);
        let slots = &self.slots;
        self.index
            .insert_unique(hash, at, |&p| hash_id(slot_id(slots, p)));
        at
    }

    /// The parent position of the entry at `i`, if it was resolved.
    pub(crate) fn parent_pos(&self, i: usize) -> Option<usize> {
        let p = self.parents[i];
        (p != UNRESOLVED).then_some(p as usize)
    }

    pub(crate) fn set_parent_pos(&mut self, i: usize, pos: Option<usize>) {
        self.parents[i] = pos
            .and_then(|p| u32::try_from(p).ok())
            .unwrap_or(UNRESOLVED);
    }

    /// Add an entry at the end, or put it in place of the one at `at` (the index is the
    /// caller's to keep).
    fn put(&mut self, at: Option<usize>, item: Item) {
        let slot = match item {
            Item::Entry(e) => Slot::loaded(e),
            Item::Lazy(l) => Slot {
                lazy: Some(l),
                cell: OnceLock::new(),
            },
        };
        match at {
            Some(i) => {
                self.slots[i] = slot;
                self.parents[i] = UNRESOLVED;
            }
            None => {
                self.slots.push(slot);
                self.parents.push(UNRESOLVED);
            }
        }
    }

    pub(crate) fn id(&self, i: usize) -> &str {
        slot_id(&self.slots, i)
    }

    pub(crate) fn parent(&self, i: usize) -> Option<&str> {
        match &self.slots[i].lazy {
            Some(l) => l.parent.as_ref().map(Id::as_str),
            None => self.get(i).parent_id.as_deref(),
        }
    }

    pub(crate) fn shape(&self, i: usize) -> Shape {
        match &self.slots[i].lazy {
            Some(l) => Shape::Message(Some(l.role)),
            None => Shape::of(self.get(i)),
        }
    }

    /// The entry at `i`, parsed now if it was not yet.
    pub(crate) fn get(&self, i: usize) -> &SessionEntry {
        let slot = &self.slots[i];
        slot.cell.get_or_init(|| {
            let l = slot.lazy.as_ref();
            Box::new(l.map_or_else(unreadable_without_line, |l| self.read(l)))
        })
    }

    /// The entry at `i`: the one held if it was parsed before, else parsed now and not kept.
    pub(crate) fn get_unkept(&self, i: usize) -> std::borrow::Cow<'_, SessionEntry> {
        let slot = &self.slots[i];
        if let Some(e) = slot.cell.get() {
            return std::borrow::Cow::Borrowed(e);
        }
        std::borrow::Cow::Owned(
            slot.lazy
                .as_ref()
                .map_or_else(unreadable_without_line, |l| self.read(l)),
        )
    }

    fn read(&self, l: &LazyLine) -> SessionEntry {
        let mut buf = vec![0u8; l.len as usize];
        let read = match &self.file {
            Some(f) => read_at(f, &mut buf, l.offset),
            None => Err(std::io::Error::other("no file")),
        };
        read.ok()
            .and_then(|()| std::str::from_utf8(&buf).ok())
            .and_then(|text| crate::line::read_message_line(text).map(|e| e.keeping_line(text)))
            .filter(|e| e.id == l.id.as_str())
            .unwrap_or_else(|| unreadable(l))
    }
}

fn hash_id(id: &str) -> u64 {
    use std::hash::BuildHasher;
    FastHash.hash_one(id)
}

/// The id of the slot at `i` (a slot held parsed always has its entry).
fn slot_id(slots: &[Slot], i: usize) -> &str {
    let Some(slot) = slots.get(i) else {
        return "";
    };
    match (&slot.lazy, slot.cell.get()) {
        (Some(l), _) => l.id.as_str(),
        (None, Some(e)) => &e.id,
        (None, None) => "",
    }
}

#[cfg(unix)]
fn read_at(f: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    f.read_exact_at(buf, offset)
}

#[cfg(not(unix))]
fn read_at(mut f: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    f.seek(SeekFrom::Start(offset))?;
    f.read_exact(buf)
}

/// The stand-in for a line that changed on disk under the open session.
fn unreadable(l: &LazyLine) -> SessionEntry {
    SessionEntry::new(
        l.id.as_str().to_string(),
        l.parent.as_ref().map(|p| p.as_str().to_string()),
        String::new(),
        EntryKind::Unknown {
            entry_type: "message".into(),
            fields: serde_json::Map::new(),
        },
    )
}

fn unreadable_without_line() -> SessionEntry {
    SessionEntry::new(
        String::new(),
        None,
        String::new(),
        EntryKind::Unknown {
            entry_type: "message".into(),
            fields: serde_json::Map::new(),
        },
    )
}
