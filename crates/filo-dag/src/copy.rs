//! Copying a whole database into another, across backends (`filo dag migrate`): every blob,
//! node, ref and action-log row as it is stored. Nothing is re-hashed or re-encoded, so ids,
//! refs and action ids are the same on both sides, and nodes keep their insertion order (which
//! life lists children in).

use serde::Serialize;

use crate::db::{Cols, Db, P, Q};
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

/// A whole table as the copy reads it: its columns in the destination's order, and the order of
/// its rows on each backend.
struct Table {
    name: &'static str,
    columns: &'static [&'static str],
    sqlite_order: &'static str,
    /// The whole query on PostgreSQL (whose layout is always current).
    pg: &'static str,
}

const ALL_BLOBS: Table = Table {
    name: "blobs",
    columns: &["hash", "type", "content", "thought_signature"],
    sqlite_order: "rowid",
    pg: "SELECT hash, type, content, thought_signature FROM blobs ORDER BY hash",
};

const ALL_NODES: Table = Table {
    name: "nodes",
    columns: &[
        "id",
        "parent_id",
        "role",
        "parts_list",
        "timestamp",
        "config_json",
        "system_prompt_hash",
        "external_id",
        "thought_signatures",
    ],
    sqlite_order: "rowid",
    pg: "SELECT id, parent_id, role, parts_list, timestamp, config_json, system_prompt_hash, \
         external_id, thought_signatures FROM nodes ORDER BY seq",
};

const ALL_ACTIONS: Table = Table {
    name: "action_log",
    columns: &[
        "id",
        "timestamp",
        "action_type",
        "from_node",
        "to_node",
        "metadata",
    ],
    sqlite_order: "id",
    pg: "SELECT id, timestamp, action_type, from_node, to_node, metadata FROM action_log \
         ORDER BY id",
};

const ALL_REFS: Table = Table {
    name: "refs",
    columns: &["name", "node_id"],
    sqlite_order: "name",
    pg: "SELECT name, node_id FROM refs ORDER BY name",
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
    /// transaction on `dest` (all or nothing) over one read snapshot of this one. The emptiness
    /// check runs inside that transaction (SQLite's `BEGIN IMMEDIATE`, PostgreSQL's write lock),
    /// so of two copies racing into one empty database exactly one succeeds; the other finds it
    /// filled and fails with [`DagError::Copy`], writing nothing.
    pub fn copy_into(&self, dest: &Store) -> Result<Copied> {
        self.read(|| {
            dest.write(|| {
                if !dest.is_empty()? {
                    return Err(DagError::Copy(format!(
                        "{} is not empty: copying into it would mix two memories (use an empty \
                         database; another migrate may have filled it first)",
                        dest.location()
                    )));
                }
                self.copy_rows(dest)
            })
        })
    }

    /// Every row of `table` in its copy order. A file opened read-only as it is
    /// ([`Store::open_read_only`]) reads the columns its layout lacks as NULL, and a table it
    /// lacks as no rows.
    fn each_row(&self, table: &Table, visit: impl FnMut(&dyn Cols) -> Result<bool>) -> Result<()> {
        let mut visit = visit;
        let absent = |c: &str| self.absent.contains(&(table.name.to_owned(), c.to_owned()));
        if absent("*") {
            return Ok(());
        }
        let list = |columns: &[&str]| {
            columns
                .iter()
                .map(|c| if absent(c) { "NULL" } else { c })
                .collect::<Vec<_>>()
                .join(", ")
        };
        match &self.db {
            Db::Sqlite(conn) => {
                let sql = format!(
                    "SELECT {} FROM {} ORDER BY {}",
                    list(table.columns),
                    table.name,
                    table.sqlite_order
                );
                let mut stmt = conn.prepare(&sql)?;
                let mut rows = stmt.query([])?;
                while let Some(row) = rows.next()? {
                    if !visit(row)? {
                        break;
                    }
                }
                Ok(())
            }
            Db::Postgres(pg) => pg.each(table.pg, &[], &mut visit),
        }
    }

    fn copy_rows(&self, dest: &Store) -> Result<Copied> {
        let mut copied = Copied::default();
        self.each_row(&ALL_BLOBS, |r| {
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
        self.each_row(&ALL_NODES, |r| {
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
        self.each_row(&ALL_REFS, |r| {
            let (name, node) = (r.string(0)?, r.string(1)?);
            dest.exec(&UPSERT_REF, &[P::Text(&name), P::Text(&node)])?;
            copied.refs += 1;
            Ok(true)
        })?;
        self.each_row(&ALL_ACTIONS, |r| {
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
