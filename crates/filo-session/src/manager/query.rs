//! Reading the tree: paths, children, roots, the context, labels, names and accessors.
//!
//! Only what a question needs is parsed: walking a path reads ids and parent ids, the context
//! parses the entries it returns (and the one that names the model), labels and names look only
//! at entries of their type.

use std::path::Path;

use super::SessionManager;
use crate::context::{PathView, SessionContext, context_of_path, empty_context};
use crate::entry::{EntryKind, SessionEntry, SessionHeader};
use crate::file::LoadWarning;
use crate::store::{EntryStore, Shape};

/// The entries of a session in file order (see [`SessionManager::entries`]); each is parsed
/// when the iterator reaches it, if it was not before.
#[derive(Debug, Clone)]
pub struct Entries<'a> {
    store: &'a EntryStore,
    range: std::ops::Range<usize>,
}

impl<'a> Iterator for Entries<'a> {
    type Item = &'a SessionEntry;
    fn next(&mut self) -> Option<&'a SessionEntry> {
        self.range.next().map(|i| self.store.get(i))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.range.size_hint()
    }
    fn nth(&mut self, n: usize) -> Option<&'a SessionEntry> {
        self.range.nth(n).map(|i| self.store.get(i))
    }
}

impl DoubleEndedIterator for Entries<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.range.next_back().map(|i| self.store.get(i))
    }
}

impl ExactSizeIterator for Entries<'_> {}

/// A root-first path of store positions.
struct StorePath<'a> {
    store: &'a EntryStore,
    path: Vec<usize>,
}

impl PathView for StorePath<'_> {
    fn len(&self) -> usize {
        self.path.len()
    }
    fn id(&self, i: usize) -> &str {
        self.store.id(self.path[i])
    }
    fn shape(&self, i: usize) -> Shape {
        self.store.shape(self.path[i])
    }
    fn entry(&self, i: usize) -> &SessionEntry {
        self.store.get(self.path[i])
    }
    fn message_entry(&self, i: usize) -> std::borrow::Cow<'_, SessionEntry> {
        self.store.get_unkept(self.path[i])
    }
}

impl SessionManager {
    /// Root-first store positions of the path to the entry at `leaf` (walking `parentId`; a
    /// missing parent ends the walk, as does a cycle in a corrupt file).
    fn path_positions(&self, leaf: usize) -> Vec<usize> {
        let mut path = Vec::new();
        let mut cursor = Some(leaf);
        while let Some(i) = cursor {
            if path.len() > self.entries.len() {
                break;
            }
            path.push(i);
            cursor = self.entries.parent_pos(i).or_else(|| {
                self.entries
                    .parent(i)
                    .and_then(|p| self.entries.position(p))
            });
        }
        path.reverse();
        path
    }

    fn positions_to(&self, id: Option<&str>) -> Vec<usize> {
        match id
            .or(self.leaf.as_deref())
            .and_then(|id| self.entries.position(id))
        {
            Some(i) => self.path_positions(i),
            None => Vec::new(),
        }
    }

    /// Root-first path to `id` (default: the leaf).
    pub fn branch_path(&self, id: Option<&str>) -> Vec<&SessionEntry> {
        self.positions_to(id)
            .into_iter()
            .map(|i| self.entries.get(i))
            .collect()
    }

    /// The ids of [`SessionManager::branch_path`], without parsing the entries.
    pub fn branch_ids(&self, id: Option<&str>) -> Vec<&str> {
        self.positions_to(id)
            .into_iter()
            .map(|i| self.entries.id(i))
            .collect()
    }

    /// The `type` of an entry (`message`, `compaction`, …), without parsing it.
    pub fn entry_type(&self, id: &str) -> Option<&str> {
        self.entries.position(id).map(|i| self.type_at(i))
    }

    fn type_at(&self, i: usize) -> &str {
        match self.entries.shape(i) {
            Shape::Message(_) => "message",
            Shape::ThinkingLevelChange => "thinking_level_change",
            Shape::ModelChange => "model_change",
            Shape::Compaction => "compaction",
            Shape::Label => "label",
            Shape::SessionInfo => "session_info",
            Shape::Other => self.entries.get(i).kind.type_name(),
        }
    }

    /// The last entry of type `entry_type` on the path to `id` (default: the leaf), parsing
    /// only that entry.
    pub fn last_on_branch(&self, id: Option<&str>, entry_type: &str) -> Option<&SessionEntry> {
        self.positions_to(id)
            .into_iter()
            .rev()
            .find(|&i| self.type_at(i) == entry_type)
            .map(|i| self.entries.get(i))
    }

    /// The entries of type `entry_type` on the path to `id` (default: the leaf), nearest first;
    /// each entry is parsed only when the iterator reaches it.
    pub fn on_branch_nearest_first<'a>(
        &'a self,
        id: Option<&str>,
        entry_type: &'a str,
    ) -> impl Iterator<Item = &'a SessionEntry> + 'a {
        self.positions_to(id)
            .into_iter()
            .rev()
            .filter(move |&i| self.type_at(i) == entry_type)
            .map(move |i| self.entries.get(i))
    }

    /// Children of an entry, sorted by timestamp.
    pub fn children(&self, id: &str) -> Vec<&SessionEntry> {
        let mut c: Vec<_> = (0..self.entries.len())
            .filter(|&i| self.entries.parent(i) == Some(id))
            .map(|i| self.entries.get(i))
            .collect();
        c.sort_by(|a, b| a.timestamp.cmp(&b.timestamp));
        c
    }

    /// Entries that start a tree: no parent, their own parent, or a missing parent.
    pub fn roots(&self) -> Vec<&SessionEntry> {
        (0..self.entries.len())
            .filter(|&i| match self.entries.parent(i) {
                None => true,
                Some(p) => p == self.entries.id(i) || !self.entries.contains(p),
            })
            .map(|i| self.entries.get(i))
            .collect()
    }

    /// The context for the current leaf (pi's `buildSessionContext`; an unknown leaf id falls
    /// back to the last entry, a reset leaf gives an empty context). Parses only the entries
    /// the context holds.
    pub fn build_context(&self) -> SessionContext {
        let Some(leaf) = self.leaf.as_deref() else {
            return empty_context();
        };
        let at = match self.entries.position(leaf) {
            Some(i) => i,
            None => match self.entries.len().checked_sub(1) {
                Some(last) => last,
                None => return empty_context(),
            },
        };
        context_of_path(&StorePath {
            store: &self.entries,
            path: self.path_positions(at),
        })
    }

    /// The latest entry of `shape`, newest first, for which `f` gives something.
    fn latest<'a, T>(
        &'a self,
        shape: Shape,
        f: impl Fn(&'a SessionEntry) -> Option<T>,
    ) -> Option<T> {
        (0..self.entries.len())
            .rev()
            .filter(|&i| self.entries.shape(i) == shape)
            .find_map(|i| f(self.entries.get(i)))
    }

    /// The latest label of an entry.
    pub fn label(&self, id: &str) -> Option<&str> {
        self.latest(Shape::Label, |e| match &e.kind {
            EntryKind::Label { target_id, label } if target_id == id => Some(label.as_deref()),
            _ => None,
        })?
    }

    /// The latest non-empty session name.
    pub fn session_name(&self) -> Option<&str> {
        self.latest(Shape::SessionInfo, |e| match &e.kind {
            EntryKind::SessionInfo { name } if !name.is_empty() => Some(name.as_str()),
            _ => None,
        })
    }

    pub fn header(&self) -> &SessionHeader {
        &self.header
    }
    /// Every entry in file order. Entries not read before are parsed as the iterator reaches
    /// them (and kept), so walking all of a large session costs what an eager load does; the
    /// tree questions above read less.
    pub fn entries(&self) -> Entries<'_> {
        Entries {
            store: &self.entries,
            range: 0..self.entries.len(),
        }
    }
    /// The ids of [`SessionManager::entries`], without parsing the entries.
    pub fn entry_ids(&self) -> impl DoubleEndedIterator<Item = &str> + ExactSizeIterator {
        (0..self.entries.len()).map(|i| self.entries.id(i))
    }
    /// How many entries the session holds.
    pub fn entry_count(&self) -> usize {
        self.entries.len()
    }
    /// Whether the session holds no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.len() == 0
    }
    pub fn entry(&self, id: &str) -> Option<&SessionEntry> {
        self.entries.position(id).map(|i| self.entries.get(i))
    }
    pub fn leaf_id(&self) -> Option<&str> {
        self.leaf.as_deref()
    }
    pub fn leaf_entry(&self) -> Option<&SessionEntry> {
        self.leaf.as_deref().and_then(|id| self.entry(id))
    }
    pub fn session_id(&self) -> &str {
        &self.header.id
    }
    pub fn cwd(&self) -> &str {
        &self.header.cwd
    }
    pub fn session_file(&self) -> Option<&Path> {
        self.file.as_deref()
    }
    pub fn session_dir(&self) -> Option<&Path> {
        self.session_dir.as_deref()
    }
    /// Whether the session has been written to its file.
    pub fn is_persisted(&self) -> bool {
        self.file.is_some() && self.flushed
    }
    /// What was skipped while loading (at most [`crate::file::MAX_WARNINGS`]).
    pub fn warnings(&self) -> &[LoadWarning] {
        &self.warnings
    }
    /// How many more lines were skipped than [`SessionManager::warnings`] lists.
    pub fn warnings_dropped(&self) -> usize {
        self.warnings_dropped
    }
}
