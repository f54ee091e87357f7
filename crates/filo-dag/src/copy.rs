//! Copying a whole database into another, across backends (`filo dag migrate`): every blob,
//! node, ref and action-log row as it is stored. Nothing is re-hashed or re-encoded, so ids,
//! refs and action ids are the same on both sides, and nodes keep their insertion order (which
//! life lists children in).

use serde::Serialize;

use crate::db::{P, Q};
use crate::error::{DagError, Result};
use crate::store::Store;
use crate::write::{INSERT_BLOB, INSERT_NODE, UPSERT_REF};

/// What [`Store::copy_into`] copied.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Copied {
    /// Blob rows.
    pub blobs: u64,
    /// Node rows.
    pub nodes: u64,
    /// Refs.
    pub refs: u64,
    /// Action-log rows.
    pub actions: u64,
}

const COUNT_ROWS: Q = Q {
    sqlite: "SELECT (SELECT COUNT(*) FROM blobs) + (SELECT COUNT(*) FROM nodes) \
             + (SELECT COUNT(*) FROM refs) + (SELECT COUNT(*) FROM action_log)",
    pg: "SELECT (SELECT COUNT(*) FROM blobs) + (SELECT COUNT(*) FROM nodes) \
         + (SELECT COUNT(*) FROM refs) + (SELECT COUNT(*) FROM action_log)",
};

const ALL_BLOBS: Q = Q {
    sqlite: "SELECT hash, type, content, thought_signature FROM blobs ORDER BY rowid",
    pg: "SELECT hash, type, content, thought_signature FROM blobs ORDER BY hash",
};

const ALL_NODES: Q = Q {
    sqlite: "SELECT id, parent_id, role, parts_list, timestamp, config_json, \
             system_prompt_hash, external_id, thought_signatures FROM nodes ORDER BY rowid",
    pg: "SELECT id, parent_id, role, parts_list, timestamp, config_json, \
         system_prompt_hash, external_id, thought_signatures FROM nodes ORDER BY seq",
};

const ALL_ACTIONS: Q = Q {
    sqlite: "SELECT id, timestamp, action_type, from_node, to_node, metadata \
             FROM action_log ORDER BY id",
    pg: "SELECT id, timestamp, action_type, from_node, to_node, metadata \
         FROM action_log ORDER BY id",
};

const INSERT_ACTION_WITH_ID: Q = Q {
    sqlite: "INSERT INTO action_log (id, timestamp, action_type, from_node, to_node, metadata) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    pg: "INSERT INTO action_log (id, timestamp, action_type, from_node, to_node, metadata) \
         VALUES ($1, $2, $3, $4, $5, $6)",
};

/// After explicit ids: the next generated action id follows the highest one.
const RESET_ACTION_SEQUENCE: Q = Q {
    sqlite: "SELECT 1",
    pg: "SELECT setval(pg_get_serial_sequence('playfilo.action_log', 'id'), \
         GREATEST((SELECT MAX(id) FROM action_log), 1))::text",
};

impl Store {
    /// True when the database holds no blob, node, ref or action.
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.first(&COUNT_ROWS, &[], |r| r.i64(0))?.unwrap_or(0) == 0)
    }

    /// Copies every row of this database into `dest`, which must be empty, in one write
    /// transaction on `dest` (all or nothing) over one read snapshot of this one.
    pub fn copy_into(&self, dest: &Store) -> Result<Copied> {
        if !dest.is_empty()? {
            return Err(DagError::Copy(format!(
                "{} is not empty: copying into it would mix two memories (use an empty database)",
                dest.location()
            )));
        }
        self.read(|| dest.write(|| self.copy_rows(dest)))
    }

    fn copy_rows(&self, dest: &Store) -> Result<Copied> {
        let mut copied = Copied::default();
        self.each(&ALL_BLOBS, &[], |r| {
            dest.exec(
                &INSERT_BLOB,
                &[
                    P::Text(r.text(0)?.unwrap_or_default()),
                    P::Text(r.text(1)?.unwrap_or_default()),
                    P::Text(r.text(2)?.unwrap_or_default()),
                    P::OptText(r.text(3)?),
                ],
            )?;
            copied.blobs += 1;
            Ok(true)
        })?;
        self.each(&ALL_NODES, &[], |r| {
            dest.exec(
                &INSERT_NODE,
                &[
                    P::Text(r.text(0)?.unwrap_or_default()),
                    P::OptText(r.text(1)?),
                    P::Text(r.text(2)?.unwrap_or_default()),
                    P::Text(r.text(3)?.unwrap_or_default()),
                    P::Int(r.i64(4)?),
                    P::OptText(r.text(5)?),
                    P::OptText(r.text(6)?),
                    P::OptText(r.text(7)?),
                    P::OptText(r.text(8)?),
                ],
            )?;
            copied.nodes += 1;
            Ok(true)
        })?;
        for (name, node) in self.refs()? {
            dest.exec(&UPSERT_REF, &[P::Text(&name), P::Text(&node)])?;
            copied.refs += 1;
        }
        self.each(&ALL_ACTIONS, &[], |r| {
            dest.exec(
                &INSERT_ACTION_WITH_ID,
                &[
                    P::Int(r.i64(0)?),
                    P::Int(r.i64(1)?),
                    P::Text(r.text(2)?.unwrap_or_default()),
                    P::OptText(r.text(3)?),
                    P::OptText(r.text(4)?),
                    P::OptText(r.text(5)?),
                ],
            )?;
            copied.actions += 1;
            Ok(true)
        })?;
        dest.first(&RESET_ACTION_SEQUENCE, &[], |_| Ok(()))?;
        Ok(copied)
    }
}
