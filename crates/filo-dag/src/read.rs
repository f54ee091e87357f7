//! Reads without N+1: node resolution, lineage, children, subtrees, batched blob loads.

use std::collections::HashMap;

use crate::db::{Cols, Db, P};
use crate::error::{DagError, Result};
use crate::model::{Action, Blob, Node};
use crate::sql;
use crate::store::Store;

/// Blobs by hash, with the multiply-rotate hasher of session loading.
pub(crate) type BlobMap =
    HashMap<String, Blob, std::hash::BuildHasherDefault<crate::recover::PartHasher>>;

/// The depth bound of the recursive CTEs (subtrees, descendant counts): their recursion never
/// expands the node they start from again, so they end on any graph; this only caps a forged one.
pub(crate) const MAX_WALK: i64 = 100_000_000;
/// The node bound callers give a walk that should go to the root: the walk's own guard
/// ([`Store::max_depth`]) ends it first.
pub(crate) const MAX_WALK_NODES: usize = usize::MAX;

/// Maps a row selected with `sql::node_columns!()` starting at column `offset`.
pub(crate) fn node_from_row(row: &dyn Cols, offset: usize) -> Result<Node> {
    Ok(Node {
        id: row.string(offset)?,
        parent_id: row.opt_string(offset + 1)?,
        role: row.string(offset + 2)?,
        parts: parse_parts(row.text(offset + 3)?.unwrap_or_default()),
        timestamp: row.i64(offset + 4)?,
        config_json: row.opt_string(offset + 5)?,
        thought_signatures: row.opt_string(offset + 6)?,
        system_prompt_hash: row.opt_string(offset + 7)?,
        external_id: row.opt_string(offset + 8)?,
    })
}

/// `JSON.parse(parts_list)` for a list of hashes. Writers produce `["<hex>","<hex>"]`, which
/// is split directly; anything else goes through serde (unparsable text gives an empty list).
pub(crate) fn parse_parts(text: &str) -> Vec<String> {
    let simple = text
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .and_then(|inner| {
            if inner.is_empty() {
                return Some(Vec::new());
            }
            inner
                .split(',')
                .map(|item| {
                    let h = item.strip_prefix('"')?.strip_suffix('"')?;
                    h.bytes()
                        .all(|b| b.is_ascii_alphanumeric())
                        .then(|| h.to_owned())
                })
                .collect::<Option<Vec<String>>>()
        });
    simple.unwrap_or_else(|| serde_json::from_str(text).unwrap_or_default())
}

pub(crate) fn blob_from_row(row: &dyn Cols) -> Result<Blob> {
    Ok(Blob {
        hash: row.string(0)?,
        blob_type: row.string(1)?,
        content: row.string(2)?,
        thought_signature: row.opt_string(3)?,
    })
}

/// The exclusive upper bound of the ids starting with `prefix` (binary collation).
fn prefix_end(prefix: &str) -> String {
    let mut end = String::with_capacity(prefix.len() + 4);
    end.push_str(prefix);
    end.push(char::MAX);
    end
}

impl Store {
    /// One node by exact id.
    pub fn node(&self, id: &str) -> Result<Option<Node>> {
        self.first(&sql::Q_NODE_BY_ID, &[P::Text(id)], |r| node_from_row(r, 0))
    }

    /// One blob by hash.
    pub fn blob(&self, hash: &str) -> Result<Option<Blob>> {
        self.first(&sql::Q_BLOB_BY_HASH, &[P::Text(hash)], blob_from_row)
    }

    /// The blobs with the given hashes, in one query (missing ones are absent from the map).
    pub fn blobs<'a>(
        &self,
        hashes: impl IntoIterator<Item = &'a String>,
    ) -> Result<HashMap<String, Blob>> {
        self.blobs_keyed(hashes.into_iter().map(String::as_str))
    }

    /// [`Store::blobs`] in a map keyed with a fast hasher (its keys are the file's own content
    /// hashes), for the renderers that look every part up several times.
    pub(crate) fn blob_map<'a>(
        &self,
        hashes: impl IntoIterator<Item = &'a str>,
    ) -> Result<BlobMap> {
        self.blobs_keyed(hashes)
    }

    /// The blobs with the given hashes, in one query, in a map with the hasher `S`.
    fn blobs_keyed<'a, S: std::hash::BuildHasher + Default>(
        &self,
        hashes: impl IntoIterator<Item = &'a str>,
    ) -> Result<HashMap<String, Blob, S>> {
        let list: Vec<&str> = hashes.into_iter().collect();
        let mut out = HashMap::default();
        self.each(&sql::Q_BLOBS_BY_HASHES, &[P::List(&list)], |row| {
            let blob = blob_from_row(row)?;
            out.insert(blob.hash.clone(), blob);
            Ok(true)
        })?;
        Ok(out)
    }

    /// Resolves a node id prefix: exact id, else the unique id starting with `prefix`
    /// (case-sensitive, no wildcards, a primary-key range scan).
    pub fn resolve_prefix(&self, prefix: &str) -> Result<String> {
        if let Some(id) = self.first(&sql::Q_ID_EXACT, &[P::Text(prefix)], |r| r.string(0))? {
            return Ok(id);
        }
        let end = prefix_end(prefix);
        let range = [P::Text(prefix), P::Text(&end)];
        let ids = self.rows(&sql::Q_IDS_IN_RANGE, &range, |r| r.string(0))?;
        match ids.as_slice() {
            [] => Err(DagError::NotFound(prefix.to_owned())),
            [one] => Ok(one.clone()),
            _ => {
                let count = self
                    .first(&sql::Q_COUNT_IN_RANGE, &range, |r| r.i64(0))?
                    .unwrap_or(0);
                Err(DagError::Ambiguous {
                    prefix: prefix.to_owned(),
                    count: u64::try_from(count).unwrap_or(0),
                })
            }
        }
    }

    /// Whether `id` is a node or the parent id of one (two index lookups).
    pub(crate) fn node_or_parent_exists(&self, id: &str) -> Result<bool> {
        Ok(self
            .first(&sql::Q_NODE_OR_PARENT, &[P::Text(id)], |r| r.i64(0))?
            .is_some_and(|n| n > 0))
    }

    /// The oldest inserted node whose `external_id` equals `ext` (the reference's
    /// `getHashByExternalId`). Empty input finds nothing.
    pub fn node_id_by_external_id(&self, ext: &str) -> Result<Option<String>> {
        if ext.is_empty() {
            return Ok(None);
        }
        self.first(&sql::Q_ID_BY_EXTERNAL_ID, &[P::Text(ext)], |r| r.string(0))
    }

    /// [`Store::node_id_by_external_id`] for many ids in one query: external id → the oldest
    /// node carrying it. Ids without a node are absent from the map. (Resume scans a session
    /// file backwards for its last mirrored entry; this answers the whole scan at once.)
    pub fn node_ids_by_external_ids<'a>(
        &self,
        ids: impl IntoIterator<Item = &'a str>,
    ) -> Result<HashMap<String, String>> {
        let list: Vec<&str> = ids.into_iter().collect();
        let mut out = HashMap::new();
        self.each(&sql::Q_IDS_BY_EXTERNAL_IDS, &[P::List(&list)], |r| {
            if let (Some(ext), Some(id)) = (r.text(0)?, r.text(1)?) {
                out.insert(ext.to_owned(), id.to_owned());
            }
            Ok(true)
        })?;
        Ok(out)
    }

    /// Resolution as life and recall do it: strip one leading `pi:`, try the external id, then the
    /// hash prefix. Errors carry the stripped text, as in the reference.
    pub fn resolve(&self, reference: &str) -> Result<String> {
        let stripped = reference.strip_prefix("pi:").unwrap_or(reference);
        if let Some(id) = self.node_id_by_external_id(stripped)? {
            return Ok(id);
        }
        self.resolve_prefix(stripped)
    }

    /// The lineage of `head`: head first, then its ancestors, at most `limit` nodes, stopping at a
    /// root or a missing parent. One guarded walk ([`Store::walk`]): a cycle or a lineage deeper
    /// than [`Store::max_depth`] is an error.
    pub fn lineage(&self, head: &str, limit: Option<usize>) -> Result<Vec<Node>> {
        let limit = limit.unwrap_or(usize::MAX);
        let mut out = Vec::new();
        self.read(|| {
            self.walk(&sql::WALK_NODES, head, limit, |r| {
                out.push(Node {
                    id: r.string(1)?,
                    parent_id: r.opt_string(2)?,
                    role: r.string(3)?,
                    parts: parse_parts(r.text(7)?.unwrap_or_default()),
                    timestamp: r.i64(4)?,
                    config_json: r.opt_string(5)?,
                    thought_signatures: r.opt_string(8)?,
                    system_prompt_hash: r.opt_string(9)?,
                    external_id: r.opt_string(6)?,
                });
                Ok(true)
            })
        })?;
        Ok(out)
    }

    /// [`Store::lineage`] as one recursive CTE, the oracle of the walk's tests.
    #[cfg(test)]
    pub(crate) fn lineage_cte(&self, head: &str, limit: usize) -> Result<Vec<Node>> {
        let limit = i64::try_from(limit).unwrap_or(MAX_WALK);
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut out = self.rows(&sql::Q_LINEAGE, &[P::Text(head), P::Int(limit)], |r| {
            Ok((r.i64(0)?, node_from_row(r, 1)?))
        })?;
        out.sort_by_key(|(depth, _)| *depth);
        Ok(out.into_iter().map(|(_, n)| n).collect())
    }

    /// The lineage of `head` (head first) with every node's blobs in part order: the guarded
    /// lineage ([`Store::lineage`]), then its blobs in one query.
    pub fn lineage_with_blobs(&self, head: &str) -> Result<Vec<(Node, Vec<Blob>)>> {
        self.read(|| {
            let nodes = self.lineage(head, None)?;
            let blobs = self.blob_map(nodes.iter().flat_map(|n| &n.parts).map(String::as_str))?;
            Ok(nodes
                .into_iter()
                .map(|n| {
                    let parts = n
                        .parts
                        .iter()
                        .filter_map(|h| blobs.get(h).cloned())
                        .collect();
                    (n, parts)
                })
                .collect())
        })
    }

    /// The children of a node in insertion (rowid) order, in one indexed query.
    pub fn children(&self, id: &str) -> Result<Vec<Node>> {
        self.rows(&sql::Q_CHILDREN, &[P::Text(id)], |r| node_from_row(r, 0))
    }

    /// [`Store::children`] as `life` reads them: `config_json`, `thought_signatures` and
    /// `system_prompt_hash` are left `None` on SQLite (life shows none of them).
    pub(crate) fn children_shown(&self, id: &str) -> Result<Vec<Node>> {
        self.rows(&sql::Q_CHILDREN_SHOWN, &[P::Text(id)], |r| {
            node_from_row(r, 0)
        })
    }

    /// The descendants of `id` down to `max_depth` (children are depth 0), in rowid order, each
    /// with its depth. One recursive CTE over `idx_nodes_parent`. `id` below itself (a forged
    /// cycle) is [`DagError::Cycle`].
    pub fn subtree(&self, id: &str, max_depth: usize) -> Result<Vec<(Node, usize)>> {
        let max = i64::try_from(max_depth).unwrap_or(MAX_WALK);
        let nodes = self.rows(&sql::Q_SUBTREE, &[P::Text(id), P::Int(max)], |r| {
            let depth = r.i64(0)?;
            Ok((node_from_row(r, 1)?, usize::try_from(depth).unwrap_or(0)))
        })?;
        // The query never expands `id` again: met below itself, it is on a forged cycle.
        if nodes.iter().any(|(n, _)| n.id == id) {
            return Err(DagError::Cycle {
                node: id.to_owned(),
            });
        }
        Ok(nodes)
    }

    /// For every child of `parent`: the number of its descendants (all roles). On SQLite a
    /// sequential pass checked against the index ([`crate::counts`]), else one recursive CTE.
    pub fn descendant_counts(&self, parent: &str) -> Result<HashMap<String, u64>> {
        self.descendant_counts_except(parent, None)
    }

    /// [`Store::descendant_counts`] where the count of `except` may be left out (its subtree is
    /// not walked on SQLite): `life` shows no count for its focus.
    pub(crate) fn descendant_counts_except(
        &self,
        parent: &str,
        except: Option<&str>,
    ) -> Result<HashMap<String, u64>> {
        #[cfg(test)]
        if self.cte_counts.get() {
            return self.descendant_counts_cte(parent);
        }
        if let Db::Sqlite(conn) = &self.db
            && let Some(counts) =
                self.read(|| crate::counts::descendant_counts(conn, parent, except))?
        {
            return Ok(counts);
        }
        self.descendant_counts_cte(parent)
    }

    /// [`Store::descendant_counts`] as one recursive CTE (PostgreSQL, odd SQLite files, and the
    /// oracle of the tests).
    pub(crate) fn descendant_counts_cte(&self, parent: &str) -> Result<HashMap<String, u64>> {
        // Ids are hashes over the parent id, so only a forged file holds a cycle: the query
        // never expands `parent` again and reports meeting it.
        let mut looped = false;
        let rows = self.rows(
            &sql::Q_DESCENDANT_COUNTS,
            &[P::Text(parent), P::Int(MAX_WALK)],
            |r| {
                looped |= r.int(2)?.unwrap_or(0) > 0;
                Ok((r.string(0)?, u64::try_from(r.i64(1)?).unwrap_or(0)))
            },
        )?;
        if looped {
            return Err(DagError::Cycle {
                node: parent.to_owned(),
            });
        }
        Ok(rows.into_iter().collect())
    }

    /// The whole action log in id order.
    pub fn actions(&self) -> Result<Vec<Action>> {
        self.rows(&sql::Q_ACTIONS, &[], action_from_row)
    }
}

pub(crate) fn action_from_row(r: &dyn Cols) -> Result<Action> {
    Ok(Action {
        id: r.i64(0)?,
        timestamp: r.i64(1)?,
        action_type: r.string(2)?,
        from_node: r.opt_string(3)?,
        to_node: r.opt_string(4)?,
        metadata: r.opt_string(5)?,
    })
}

#[cfg(test)]
mod tests {
    use super::parse_parts;
    use crate::model::{NewBlob, NodeCommit, Parent};
    use crate::store::Store;

    /// `children_shown` is `children` without the three columns life does not show.
    #[test]
    fn children_shown_are_the_children_without_config_signatures_and_prompt() {
        let store = Store::open_in_memory().unwrap();
        let top = store
            .commit_node(&NodeCommit::new("user", 1).part(NewBlob::text("top")))
            .unwrap()
            .id;
        for i in 0..5 {
            let commit = NodeCommit::new(if i % 2 == 0 { "user" } else { "assistant" }, 10 + i)
                .parent(Parent::Node(top.clone()))
                .config_json(format!(r#"{{"n":{i}}}"#))
                .system_prompt("prompt")
                .external_id(format!("x{i}"))
                .part(NewBlob::text(format!("child {i}")));
            store.commit_node(&commit).unwrap();
        }
        let full = store.children(&top).unwrap();
        assert_eq!(full.len(), 5);
        assert!(full.iter().all(|n| n.config_json.is_some()));
        assert!(full.iter().all(|n| n.system_prompt_hash.is_some()));
        let expected: Vec<_> = full
            .into_iter()
            .map(|mut n| {
                n.config_json = None;
                n.thought_signatures = None;
                n.system_prompt_hash = None;
                n
            })
            .collect();
        assert_eq!(store.children_shown(&top).unwrap(), expected);
    }

    #[test]
    fn parts_lists_parse_like_json() {
        assert_eq!(parse_parts("[]"), Vec::<String>::new());
        assert_eq!(parse_parts(r#"["ab","cd"]"#), ["ab", "cd"]);
        assert_eq!(parse_parts(r#"[ "ab" , "c\u0064" ]"#), ["ab", "cd"]);
        assert_eq!(parse_parts(r#"["a,b"]"#), ["a,b"]);
        assert_eq!(parse_parts("not json"), Vec::<String>::new());
    }
}
