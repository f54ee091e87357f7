//! The session tree as the exported page needs it: every entry with its parent and children,
//! the path to an entry, and the sidebar's rows (one per entry, in reading order, indented only
//! where the conversation branches so a long linear session stays flat).

use std::collections::HashMap;

use filo_session::SessionEntry;

/// How a sidebar row joins its parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Joint {
    /// The next step of a linear run, or a root.
    Straight,
    /// One of several children, not the last.
    Branch,
    /// The last of several children.
    Last,
}

/// One sidebar row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Row {
    pub at: usize,
    pub depth: usize,
    pub joint: Joint,
}

/// Entries (file order) with their links resolved to positions.
pub(super) struct Tree<'a> {
    pub entries: Vec<&'a SessionEntry>,
    pub index: HashMap<&'a str, usize>,
    /// The parent's position; `None` for a root (no parent, its own parent, or a missing one).
    pub parent: Vec<Option<usize>>,
    pub children: Vec<Vec<usize>>,
}

impl<'a> Tree<'a> {
    pub fn build(entries: Vec<&'a SessionEntry>) -> Self {
        let index: HashMap<&str, usize> = entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.id.as_str(), i))
            .collect();
        let parent: Vec<Option<usize>> = entries
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let p = e.parent_id.as_deref().and_then(|p| index.get(p).copied());
                p.filter(|&p| p != i)
            })
            .collect();
        let mut children = vec![Vec::new(); entries.len()];
        for (i, p) in parent.iter().enumerate() {
            if let Some(p) = p {
                children[*p].push(i);
            }
        }
        Tree {
            entries,
            index,
            parent,
            children,
        }
    }

    /// Positions from the root to `at` (a cycle in a corrupt file ends the walk).
    pub fn path_to(&self, at: usize) -> Vec<usize> {
        let mut on_path = vec![false; self.entries.len()];
        on_path[at] = true;
        let mut path = vec![at];
        let mut cursor = self.parent[at];
        while let Some(p) = cursor {
            if std::mem::replace(&mut on_path[p], true) {
                break;
            }
            path.push(p);
            cursor = self.parent[p];
        }
        path.reverse();
        path
    }

    /// Every entry once, depth first in file order. A run of single children stays at one depth;
    /// the children of a branch point go one deeper. Entries caught in a parent cycle (which no
    /// root reaches) come last, as roots of their own.
    pub fn rows(&self) -> Vec<Row> {
        let n = self.entries.len();
        let mut seen = vec![false; n];
        let mut rows = Vec::with_capacity(n);
        let roots = (0..n).filter(|&i| self.parent[i].is_none());
        let rest = (0..n).filter(|&i| self.parent[i].is_some());
        for start in roots.chain(rest) {
            let mut stack = vec![(start, 0, Joint::Straight)];
            while let Some((at, depth, joint)) = stack.pop() {
                if std::mem::replace(&mut seen[at], true) {
                    continue;
                }
                rows.push(Row { at, depth, joint });
                match self.children[at].as_slice() {
                    [] => {}
                    [only] => stack.push((*only, depth, Joint::Straight)),
                    many => {
                        for (k, &c) in many.iter().enumerate().rev() {
                            let joint = if k + 1 == many.len() {
                                Joint::Last
                            } else {
                                Joint::Branch
                            };
                            stack.push((c, depth + 1, joint));
                        }
                    }
                }
            }
        }
        rows
    }

    /// How many leaves (entries without children) the tree has.
    pub fn leaf_count(&self) -> usize {
        self.children.iter().filter(|c| c.is_empty()).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use filo_session::EntryKind;

    fn entry(id: &str, parent: Option<&str>) -> SessionEntry {
        SessionEntry {
            id: id.into(),
            parent_id: parent.map(str::to_string),
            timestamp: "2025-01-01T00:00:00.000Z".into(),
            kind: EntryKind::SessionInfo { name: id.into() },
            verbatim: None,
        }
    }

    #[test]
    fn rows_indent_only_at_branch_points() {
        let es = [
            entry("a", None),
            entry("b", Some("a")),
            entry("c", Some("b")),
            entry("d", Some("b")),
            entry("e", Some("d")),
            entry("x", Some("missing")),
        ];
        let tree = Tree::build(es.iter().collect());
        let rows: Vec<_> = tree
            .rows()
            .iter()
            .map(|r| (tree.entries[r.at].id.as_str(), r.depth, r.joint))
            .collect();
        assert_eq!(
            rows,
            [
                ("a", 0, Joint::Straight),
                ("b", 0, Joint::Straight),
                ("c", 1, Joint::Branch),
                ("d", 1, Joint::Last),
                ("e", 1, Joint::Straight),
                ("x", 0, Joint::Straight),
            ]
        );
        assert_eq!(tree.path_to(4), [0, 1, 3, 4]);
        assert_eq!(tree.leaf_count(), 3);
    }

    #[test]
    fn a_parent_cycle_still_lists_every_entry_once() {
        let es = [
            entry("a", Some("b")),
            entry("b", Some("a")),
            entry("s", Some("s")),
        ];
        let tree = Tree::build(es.iter().collect());
        let mut ids: Vec<_> = tree
            .rows()
            .iter()
            .map(|r| tree.entries[r.at].id.as_str())
            .collect();
        ids.sort_unstable();
        assert_eq!(ids, ["a", "b", "s"]);
        assert_eq!(tree.path_to(0), [1, 0]);
    }
}
