//! Writes: node commits (blobs + node + ref moves in one transaction), refs, the action log.

use crate::canon::{self, NodeHashInput};
use crate::db::{P, Q};
use crate::error::{DagError, Result};
use crate::model::{Committed, Expect, NewAction, NewBlob, NodeCommit, Parent};
use crate::sql;
use crate::store::Store;

pub(crate) const INSERT_BLOB: Q = Q {
    sqlite: "INSERT OR IGNORE INTO blobs (hash, type, content, thought_signature) \
             VALUES (?1, ?2, ?3, ?4)",
    pg: "INSERT INTO blobs (hash, type, content, thought_signature) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (hash) DO NOTHING",
};
pub(crate) const INSERT_NODE: Q = Q {
    sqlite: "INSERT OR IGNORE INTO nodes (id, parent_id, role, parts_list, timestamp, \
             config_json, system_prompt_hash, external_id, thought_signatures) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    pg: "INSERT INTO nodes (id, parent_id, role, parts_list, timestamp, \
         config_json, system_prompt_hash, external_id, thought_signatures) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (id) DO NOTHING",
};
pub(crate) const UPSERT_REF: Q = Q {
    sqlite: "INSERT OR REPLACE INTO refs (name, node_id) VALUES (?1, ?2)",
    pg: "INSERT INTO refs (name, node_id) VALUES ($1, $2) \
         ON CONFLICT (name) DO UPDATE SET node_id = EXCLUDED.node_id",
};
const DELETE_REF: Q = Q {
    sqlite: "DELETE FROM refs WHERE name = ?1",
    pg: "DELETE FROM refs WHERE name = $1",
};
const INSERT_ACTION: Q = Q {
    sqlite: "INSERT INTO action_log (timestamp, action_type, from_node, to_node, metadata) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
    pg: "INSERT INTO action_log (timestamp, action_type, from_node, to_node, metadata) \
         VALUES ($1, $2, $3, $4, $5) RETURNING id",
};

impl Store {
    /// Stores one blob (`INSERT OR IGNORE`) and returns its hash.
    pub fn store_blob(&self, blob: &NewBlob) -> Result<String> {
        self.write(|| self.insert_blob(blob))
    }

    /// Commits one node: its blobs, the system prompt blob, the node row and the ref moves, all in
    /// one write transaction. A failed compare-and-set writes nothing.
    pub fn commit_node(&self, commit: &NodeCommit) -> Result<Committed> {
        let mut prompt = self.last_prompt.borrow().clone();
        let done = self.write(|| self.commit_in(commit, None, 0, &mut prompt))?;
        // Only after the commit: the cached blob is then known to be in the database.
        *self.last_prompt.borrow_mut() = prompt;
        Ok(done)
    }

    /// Commits several nodes in one transaction, in order. [`Parent::Previous`] chains a node to
    /// the one before it. All or nothing.
    pub fn commit_batch(&self, commits: &[NodeCommit]) -> Result<Vec<Committed>> {
        self.write(|| {
            let mut out: Vec<Committed> = Vec::with_capacity(commits.len());
            let mut prompt = None;
            for (index, commit) in commits.iter().enumerate() {
                let previous = out.last().map(|c| c.id.as_str());
                let done = self.commit_in(commit, previous, index, &mut prompt)?;
                out.push(done);
            }
            Ok(out)
        })
    }

    /// The node a ref points to; a missing row or an empty value is "no ref".
    pub fn get_ref(&self, name: &str) -> Result<Option<String>> {
        let value = self.first(&sql::Q_SELECT_REF, &[P::Text(name)], |r| r.string(0))?;
        Ok(value.filter(|v| !v.is_empty()))
    }

    /// Points `name` at `node_id` (upsert).
    pub fn set_ref(&self, name: &str, node_id: &str) -> Result<()> {
        self.write(|| {
            self.exec(&UPSERT_REF, &[P::Text(name), P::Text(node_id)])?;
            Ok(())
        })
    }

    /// Deletes the ref row.
    pub fn clear_ref(&self, name: &str) -> Result<()> {
        self.write(|| {
            self.exec(&DELETE_REF, &[P::Text(name)])?;
            Ok(())
        })
    }

    /// Sets `name` to `new` (`None` deletes it) only if it currently holds `expected`
    /// (`None` = no ref). Otherwise returns [`DagError::RefConflict`] and writes nothing.
    pub fn compare_and_set_ref(
        &self,
        name: &str,
        expected: Option<&str>,
        new: Option<&str>,
    ) -> Result<()> {
        self.write(|| {
            self.check_ref(name, expected)?;
            match new {
                Some(id) => self.exec(&UPSERT_REF, &[P::Text(name), P::Text(id)])?,
                None => self.exec(&DELETE_REF, &[P::Text(name)])?,
            };
            Ok(())
        })
    }

    /// All refs, by name.
    pub fn refs(&self) -> Result<Vec<(String, String)>> {
        self.rows(&sql::Q_ALL_REFS, &[], |r| Ok((r.string(0)?, r.string(1)?)))
    }

    /// Appends to the action log and returns the new row id.
    pub fn log_action(&self, action: &NewAction) -> Result<i64> {
        self.write(|| {
            self.insert_id(
                &INSERT_ACTION,
                &[
                    P::Int(action.timestamp),
                    P::Text(&action.action_type),
                    P::OptText(action.from_node.as_deref()),
                    P::OptText(action.to_node.as_deref()),
                    P::OptText(action.metadata.as_deref()),
                ],
            )
        })
    }

    fn check_ref(&self, name: &str, expected: Option<&str>) -> Result<()> {
        let actual = self.get_ref(name)?;
        if actual.as_deref() == expected {
            return Ok(());
        }
        Err(DagError::RefConflict {
            name: name.to_owned(),
            expected: expected.map(str::to_owned),
            actual,
        })
    }

    fn insert_blob(&self, blob: &NewBlob) -> Result<String> {
        let hash = blob.hash();
        let content = canon::js_json(&blob.content);
        self.exec(
            &INSERT_BLOB,
            &[
                P::Text(&hash),
                P::Text(&blob.blob_type),
                P::Text(&content),
                P::OptText(None),
            ],
        )?;
        Ok(hash)
    }

    fn store_prompt(&self, prompt: &str, cache: &mut PromptCache) -> Result<String> {
        if let Some((text, hash)) = cache.as_ref()
            && text == prompt
        {
            return Ok(hash.clone());
        }
        let hash = self.insert_blob(&NewBlob::system_prompt(prompt))?;
        *cache = Some((prompt.to_owned(), hash.clone()));
        Ok(hash)
    }

    fn commit_in(
        &self,
        commit: &NodeCommit,
        previous: Option<&str>,
        index: usize,
        prompt_cache: &mut PromptCache,
    ) -> Result<Committed> {
        let parent_id: Option<String> = match &commit.parent {
            Parent::Root => None,
            Parent::Node(id) => Some(id.clone()),
            Parent::Ref(name) => self.get_ref(name)?,
            Parent::Previous => Some(
                previous
                    .ok_or(DagError::NoPreviousNode { index })?
                    .to_owned(),
            ),
        };
        let mut parts = Vec::with_capacity(commit.parts.len());
        for blob in &commit.parts {
            parts.push(self.insert_blob(blob)?);
        }
        let prompt_hash = match commit.system_prompt.as_deref().filter(|p| !p.is_empty()) {
            Some(prompt) => Some(self.store_prompt(prompt, prompt_cache)?),
            None => None,
        };
        let id = canon::node_hash(&NodeHashInput {
            parent_id: parent_id.as_deref(),
            parts: &parts,
            role: &commit.role,
            timestamp: commit.timestamp,
            external_id: commit.external_id.as_deref(),
            system_prompt_hash: prompt_hash.as_deref(),
        });
        let parts_list = parts_list_json(&parts);
        let inserted = self.exec(
            &INSERT_NODE,
            &[
                P::Text(&id),
                P::OptText(parent_id.as_deref()),
                P::Text(&commit.role),
                P::Text(&parts_list),
                P::Int(commit.timestamp),
                P::OptText(commit.config_json.as_deref()),
                P::OptText(prompt_hash.as_deref()),
                P::OptText(commit.external_id.as_deref()),
                P::OptText(commit.thought_signatures.as_deref()),
            ],
        )? > 0;
        for mv in &commit.refs {
            match &mv.expect {
                Expect::Any => {}
                Expect::Value(v) => self.check_ref(&mv.name, v.as_deref())?,
                Expect::Parent => self.check_ref(&mv.name, parent_id.as_deref())?,
            }
            self.exec(&UPSERT_REF, &[P::Text(&mv.name), P::Text(&id)])?;
        }
        Ok(Committed {
            id,
            parent_id,
            inserted,
        })
    }
}

/// The last system prompt stored in this transaction and its hash (prompts repeat, and can be
/// long: hashing and inserting them once per batch is enough).
type PromptCache = Option<(String, String)>;

/// `JSON.stringify(parts)`: `["a","b"]`.
pub(crate) fn parts_list_json(parts: &[String]) -> String {
    let mut out = String::with_capacity(2 + parts.len() * 67);
    out.push('[');
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        canon::write_js_string(part, &mut out);
    }
    out.push(']');
    out
}
