//! Integrity check and statistics: the `git fsck` and `count-objects` of the memory.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::canon::{self, NodeHashInput};
use crate::error::Result;
use crate::model::blob_type;
use crate::store::Store;

/// One integrity problem.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// `blob`, `node`, `ref` or `action`.
    pub kind: &'static str,
    /// The row's key (hash, id, ref name, action id).
    pub key: String,
    /// What is wrong.
    pub message: String,
}

/// What [`Store::fsck`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FsckReport {
    /// Blobs whose hash was recomputed.
    pub blobs_checked: u64,
    /// `playtiss` blobs (CID-addressed, not recomputed).
    pub blobs_skipped: u64,
    /// Nodes whose id was recomputed.
    pub nodes_checked: u64,
    /// How many node ids matched each hash shape: `pi` (with external id), `plain` (departure,
    /// terminal: no external id, no prompt), `plain+prompt`.
    pub shapes: BTreeMap<&'static str, u64>,
    /// Every problem, in table order.
    pub problems: Vec<Problem>,
}

impl FsckReport {
    /// True when nothing is wrong.
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Counts for `filo dag stats`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Nodes per role.
    pub roles: BTreeMap<String, u64>,
    /// Blobs per type.
    pub blob_types: BTreeMap<String, u64>,
    /// Rows in the action log.
    pub actions: u64,
    /// All refs, by name.
    pub refs: BTreeMap<String, String>,
    /// Nodes without children.
    pub leaves: u64,
    /// Database size: page count × page size.
    pub db_bytes: u64,
}

/// The §2.7 writer a matching shape points to.
fn shape_name(external_id: bool, prompt: bool) -> &'static str {
    match (external_id, prompt) {
        (true, _) => "pi",
        (false, false) => "plain",
        (false, true) => "plain+prompt",
    }
}

fn count(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

impl Store {
    /// Counts per role and blob type, refs, leaves and size.
    pub fn stats(&self) -> Result<Stats> {
        self.read(|tx| {
            let group = |sql: &str| -> Result<BTreeMap<String, u64>> {
                let mut stmt = tx.prepare(sql)?;
                let rows = stmt.query_map([], |r| Ok((r.get(0)?, count(r.get(1)?))))?;
                Ok(rows.collect::<rusqlite::Result<_>>()?)
            };
            let one =
                |sql: &str| -> Result<u64> { Ok(count(tx.query_row(sql, [], |r| r.get(0))?)) };
            Ok(Stats {
                roles: group("SELECT role, COUNT(*) FROM nodes GROUP BY role")?,
                blob_types: group("SELECT type, COUNT(*) FROM blobs GROUP BY type")?,
                actions: one("SELECT COUNT(*) FROM action_log")?,
                refs: self.refs()?.into_iter().collect(),
                leaves: one("SELECT COUNT(*) FROM nodes n WHERE NOT EXISTS \
                     (SELECT 1 FROM nodes c WHERE c.parent_id = n.id)")?,
                db_bytes: one(
                    "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()",
                )?,
            })
        })
    }

    /// Recomputes every blob hash and node id (trying the hash shapes of spec §2.7 that fit the
    /// row), and checks that parents, parts, system prompts, refs and action targets exist.
    pub fn fsck(&self) -> Result<FsckReport> {
        self.read(|_| {
            let mut report = FsckReport::default();
            self.check_blobs(&mut report)?;
            self.check_nodes(&mut report)?;
            self.check_links(&mut report)?;
            Ok(report)
        })
    }

    fn check_blobs(&self, report: &mut FsckReport) -> Result<()> {
        let mut stmt = self
            .conn
            .prepare("SELECT hash, type, content FROM blobs ORDER BY rowid")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let (hash, kind, content): (String, String, String) =
                (row.get(0)?, row.get(1)?, row.get(2)?);
            if kind == blob_type::PLAYTISS {
                report.blobs_skipped += 1;
                continue;
            }
            report.blobs_checked += 1;
            let problem = match serde_json::from_str::<Value>(&content) {
                Err(e) => Some(format!("content is not JSON: {e}")),
                Ok(v) => {
                    let actual = canon::blob_hash(&kind, &v);
                    (actual != hash).then(|| format!("hash mismatch: content hashes to {actual}"))
                }
            };
            if let Some(message) = problem {
                report.problems.push(Problem {
                    kind: "blob",
                    key: hash,
                    message,
                });
            }
        }
        Ok(())
    }

    fn check_nodes(&self, report: &mut FsckReport) -> Result<()> {
        let mut stmt = self.conn.prepare(
            "SELECT id, parent_id, role, parts_list, timestamp, system_prompt_hash, external_id \
             FROM nodes ORDER BY rowid",
        )?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            report.nodes_checked += 1;
            let id: String = row.get(0)?;
            let parent: Option<String> = row.get(1)?;
            let role: String = row.get(2)?;
            let parts_text: String = row.get(3)?;
            let timestamp: i64 = row.get(4)?;
            let sph: Option<String> = row.get(5)?;
            let ext: Option<String> = row.get(6)?;
            let Ok(parts) = serde_json::from_str::<Vec<String>>(&parts_text) else {
                let message = "parts_list is not a JSON array of strings".into();
                report.problems.push(Problem {
                    kind: "node",
                    key: id,
                    message,
                });
                continue;
            };
            let shapes: [(Option<&str>, Option<&str>); 4] = [
                (ext.as_deref(), sph.as_deref()),
                (ext.as_deref(), None),
                (None, sph.as_deref()),
                (None, None),
            ];
            let matched = shapes.iter().find(|(e, s)| {
                let input = NodeHashInput {
                    parent_id: parent.as_deref(),
                    parts: &parts,
                    role: &role,
                    timestamp,
                    external_id: *e,
                    system_prompt_hash: *s,
                };
                canon::node_hash(&input) == id
            });
            match matched {
                Some((e, s)) => {
                    *report
                        .shapes
                        .entry(shape_name(e.is_some(), s.is_some()))
                        .or_default() += 1
                }
                None => report.problems.push(Problem {
                    kind: "node",
                    key: id,
                    message: "id matches no known hash shape".into(),
                }),
            }
        }
        Ok(())
    }

    fn check_links(&self, report: &mut FsckReport) -> Result<()> {
        let checks: [(&'static str, &str); 6] = [
            (
                "node",
                "SELECT n.id, 'parent ' || n.parent_id || ' does not exist' FROM nodes n \
                 WHERE n.parent_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM nodes p WHERE p.id = n.parent_id)",
            ),
            (
                "node",
                "SELECT n.id, 'part ' || p.value || ' does not exist' FROM nodes n, json_each(n.parts_list) p \
                 WHERE json_valid(n.parts_list) AND NOT EXISTS (SELECT 1 FROM blobs b WHERE b.hash = p.value)",
            ),
            (
                "node",
                "SELECT n.id, 'system prompt ' || n.system_prompt_hash || ' does not exist' FROM nodes n \
                 WHERE n.system_prompt_hash IS NOT NULL AND n.system_prompt_hash <> '' \
                 AND NOT EXISTS (SELECT 1 FROM blobs b WHERE b.hash = n.system_prompt_hash)",
            ),
            (
                "ref",
                "SELECT r.name, 'points at missing node ' || r.node_id FROM refs r \
                 WHERE r.node_id <> '' AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.id = r.node_id)",
            ),
            (
                "action",
                "SELECT a.id, 'to_node ' || a.to_node || ' does not exist' FROM action_log a \
                 WHERE a.to_node IS NOT NULL AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.id = a.to_node)",
            ),
            (
                "action",
                "SELECT a.id, 'from_node ' || a.from_node || ' does not exist' FROM action_log a \
                 WHERE a.from_node IS NOT NULL AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.id = a.from_node)",
            ),
        ];
        for (kind, sql) in checks {
            let mut stmt = self.conn.prepare(sql)?;
            let rows = stmt.query_map([], |r| {
                let key: rusqlite::types::Value = r.get(0)?;
                let key = match key {
                    rusqlite::types::Value::Integer(i) => i.to_string(),
                    rusqlite::types::Value::Text(t) => t,
                    _ => String::new(),
                };
                Ok(Problem {
                    kind,
                    key,
                    message: r.get(1)?,
                })
            })?;
            for problem in rows {
                report.problems.push(problem?);
            }
        }
        Ok(())
    }
}

/// One entry of a session file's path, as [`Store::check_session_path`] compares it: its id (the
/// node's `external_id`) and its parent entry's id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathEntry {
    /// The entry id.
    pub id: String,
    /// The parent entry's id; `None` for the first entry.
    pub parent_id: Option<String>,
}

impl Store {
    /// Compares a session file's path (root first) with the nodes that mirror it: from the first
    /// entry that has a node on, every entry must have one (`entry … is not in the memory`), and
    /// each node must hang under its session parent's node (`mis-parented`). Entries before the
    /// first mirrored one are history the memory never saw and are not problems, unless none of
    /// the path is mirrored at all. The first entry's node may hang anywhere (a new session
    /// continues the shared life).
    pub fn check_session_path(&self, path: &[PathEntry]) -> Result<Vec<Problem>> {
        self.read(|_| {
            let found = self.node_ids_by_external_ids(path.iter().map(|e| e.id.as_str()))?;
            let mut problems = Vec::new();
            let Some(first) = path.iter().position(|e| found.contains_key(&e.id)) else {
                if !path.is_empty() {
                    problems.push(Problem {
                        kind: "session",
                        key: path.last().map(|e| e.id.clone()).unwrap_or_default(),
                        message: format!("none of its {} entries is in the memory", path.len()),
                    });
                }
                return Ok(problems);
            };
            for entry in &path[first..] {
                let Some(node_id) = found.get(&entry.id) else {
                    problems.push(Problem {
                        kind: "entry",
                        key: entry.id.clone(),
                        message: "is in the session file but not in the memory".into(),
                    });
                    continue;
                };
                let Some(expected) = entry.parent_id.as_ref().and_then(|p| found.get(p)) else {
                    continue;
                };
                let actual = self.node(node_id)?.and_then(|n| n.parent_id);
                if actual.as_ref() != Some(expected) {
                    problems.push(Problem {
                        kind: "entry",
                        key: entry.id.clone(),
                        message: format!(
                            "mis-parented: node {node_id} hangs under {}, but its session parent {} is node {expected}",
                            actual.as_deref().unwrap_or("nothing (a root)"),
                            entry.parent_id.as_deref().unwrap_or_default(),
                        ),
                    });
                }
            }
            Ok(problems)
        })
    }
}
