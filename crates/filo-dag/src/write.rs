//! Writes: node commits (blobs + node + ref moves in one transaction), refs, the action log.

use rusqlite::{OptionalExtension, Transaction, params};

use crate::canon::{self, NodeHashInput};
use crate::error::{DagError, Result};
use crate::model::{Committed, Expect, NewAction, NewBlob, NodeCommit, Parent};
use crate::store::Store;

const INSERT_BLOB: &str = "INSERT OR IGNORE INTO blobs (hash, type, content) VALUES (?1, ?2, ?3)";
const INSERT_NODE: &str = "INSERT OR IGNORE INTO nodes (id, parent_id, role, parts_list, timestamp, \
     config_json, system_prompt_hash, external_id, thought_signatures) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";
const UPSERT_REF: &str = "INSERT OR REPLACE INTO refs (name, node_id) VALUES (?1, ?2)";

impl Store {
    /// Stores one blob (`INSERT OR IGNORE`) and returns its hash.
    pub fn store_blob(&self, blob: &NewBlob) -> Result<String> {
        self.write(|tx| insert_blob(tx, blob))
    }

    /// Commits one node: its blobs, the system prompt blob, the node row and the ref moves, all in
    /// one `BEGIN IMMEDIATE` transaction. A failed compare-and-set writes nothing.
    pub fn commit_node(&self, commit: &NodeCommit) -> Result<Committed> {
        let mut prompt = self.last_prompt.borrow().clone();
        let done = self.write(|tx| commit_in(tx, commit, None, 0, &mut prompt))?;
        // Only after the commit: the cached blob is then known to be in the database.
        *self.last_prompt.borrow_mut() = prompt;
        Ok(done)
    }

    /// Commits several nodes in one transaction, in order. [`Parent::Previous`] chains a node to
    /// the one before it. All or nothing.
    pub fn commit_batch(&self, commits: &[NodeCommit]) -> Result<Vec<Committed>> {
        self.write(|tx| {
            let mut out: Vec<Committed> = Vec::with_capacity(commits.len());
            let mut prompt = None;
            for (index, commit) in commits.iter().enumerate() {
                let previous = out.last().map(|c| c.id.as_str());
                let done = commit_in(tx, commit, previous, index, &mut prompt)?;
                out.push(done);
            }
            Ok(out)
        })
    }

    /// The node a ref points to; a missing row or an empty value is "no ref".
    pub fn get_ref(&self, name: &str) -> Result<Option<String>> {
        read_ref(&self.conn, name)
    }

    /// Points `name` at `node_id` (upsert).
    pub fn set_ref(&self, name: &str, node_id: &str) -> Result<()> {
        self.write(|tx| {
            tx.prepare_cached(UPSERT_REF)?
                .execute(params![name, node_id])?;
            Ok(())
        })
    }

    /// Deletes the ref row.
    pub fn clear_ref(&self, name: &str) -> Result<()> {
        self.write(|tx| {
            tx.prepare_cached("DELETE FROM refs WHERE name = ?1")?
                .execute([name])?;
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
        self.write(|tx| {
            check_ref(tx, name, expected)?;
            match new {
                Some(id) => tx.prepare_cached(UPSERT_REF)?.execute(params![name, id])?,
                None => tx
                    .prepare_cached("DELETE FROM refs WHERE name = ?1")?
                    .execute([name])?,
            };
            Ok(())
        })
    }

    /// All refs, by name.
    pub fn refs(&self) -> Result<Vec<(String, String)>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT name, node_id FROM refs ORDER BY name")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// Appends to the action log and returns the new row id.
    pub fn log_action(&self, action: &NewAction) -> Result<i64> {
        self.write(|tx| {
            tx.prepare_cached(
                "INSERT INTO action_log (timestamp, action_type, from_node, to_node, metadata) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![
                action.timestamp,
                action.action_type,
                action.from_node,
                action.to_node,
                action.metadata
            ])?;
            Ok(tx.last_insert_rowid())
        })
    }
}

pub(crate) fn read_ref(conn: &rusqlite::Connection, name: &str) -> Result<Option<String>> {
    let value: Option<String> = conn
        .prepare_cached(crate::sql::SELECT_REF)?
        .query_row([name], |r| r.get(0))
        .optional()?;
    Ok(value.filter(|v| !v.is_empty()))
}

fn check_ref(tx: &Transaction<'_>, name: &str, expected: Option<&str>) -> Result<()> {
    let actual = read_ref(tx, name)?;
    if actual.as_deref() == expected {
        return Ok(());
    }
    Err(DagError::RefConflict {
        name: name.to_owned(),
        expected: expected.map(str::to_owned),
        actual,
    })
}

fn insert_blob(tx: &Transaction<'_>, blob: &NewBlob) -> Result<String> {
    let hash = blob.hash();
    let content = canon::js_json(&blob.content);
    tx.prepare_cached(INSERT_BLOB)?
        .execute(params![hash, blob.blob_type, content])?;
    Ok(hash)
}

/// The last system prompt stored in this transaction and its hash (prompts repeat, and can be
/// long: hashing and inserting them once per batch is enough).
type PromptCache = Option<(String, String)>;

fn store_prompt(tx: &Transaction<'_>, prompt: &str, cache: &mut PromptCache) -> Result<String> {
    if let Some((text, hash)) = cache.as_ref()
        && text == prompt
    {
        return Ok(hash.clone());
    }
    let hash = insert_blob(tx, &NewBlob::system_prompt(prompt))?;
    *cache = Some((prompt.to_owned(), hash.clone()));
    Ok(hash)
}

fn commit_in(
    tx: &Transaction<'_>,
    commit: &NodeCommit,
    previous: Option<&str>,
    index: usize,
    prompt_cache: &mut PromptCache,
) -> Result<Committed> {
    let parent_id: Option<String> = match &commit.parent {
        Parent::Root => None,
        Parent::Node(id) => Some(id.clone()),
        Parent::Ref(name) => read_ref(tx, name)?,
        Parent::Previous => Some(
            previous
                .ok_or(DagError::NoPreviousNode { index })?
                .to_owned(),
        ),
    };
    let mut parts = Vec::with_capacity(commit.parts.len());
    for blob in &commit.parts {
        parts.push(insert_blob(tx, blob)?);
    }
    let prompt_hash = match commit.system_prompt.as_deref().filter(|p| !p.is_empty()) {
        Some(prompt) => Some(store_prompt(tx, prompt, prompt_cache)?),
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
    let inserted = tx.prepare_cached(INSERT_NODE)?.execute(params![
        id,
        parent_id,
        commit.role,
        parts_list,
        commit.timestamp,
        commit.config_json,
        prompt_hash,
        commit.external_id,
        commit.thought_signatures
    ])? > 0;
    for mv in &commit.refs {
        match &mv.expect {
            Expect::Any => {}
            Expect::Value(v) => check_ref(tx, &mv.name, v.as_deref())?,
            Expect::Parent => check_ref(tx, &mv.name, parent_id.as_deref())?,
        }
        tx.prepare_cached(UPSERT_REF)?
            .execute(params![mv.name, id])?;
    }
    Ok(Committed {
        id,
        parent_id,
        inserted,
    })
}

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
