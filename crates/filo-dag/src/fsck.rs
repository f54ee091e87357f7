//! Integrity check and statistics: the `git fsck` and `count-objects` of the memory.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::canon::{self, NodeHashInput};
use crate::db::Q;
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
        self.read(|| {
            let group = |q: &Q| -> Result<BTreeMap<String, u64>> {
                let rows = self.rows(q, &[], |r| Ok((r.string(0)?, count(r.i64(1)?))))?;
                Ok(rows.into_iter().collect())
            };
            let one = |q: &Q| -> Result<u64> {
                Ok(count(self.first(q, &[], |r| r.i64(0))?.unwrap_or(0)))
            };
            let same = |sql: &'static str| Q {
                sqlite: sql,
                pg: sql,
            };
            Ok(Stats {
                roles: group(&same("SELECT role, COUNT(*) FROM nodes GROUP BY role"))?,
                blob_types: group(&same("SELECT type, COUNT(*) FROM blobs GROUP BY type"))?,
                actions: one(&same("SELECT COUNT(*) FROM action_log"))?,
                refs: self.refs()?.into_iter().collect(),
                leaves: one(&same(
                    "SELECT COUNT(*) FROM nodes n WHERE NOT EXISTS \
                     (SELECT 1 FROM nodes c WHERE c.parent_id = n.id)",
                ))?,
                db_bytes: one(&Q {
                    sqlite: "SELECT page_count * page_size FROM pragma_page_count(), \
                             pragma_page_size()",
                    pg: "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0)::bigint \
                         FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace \
                         WHERE s.nspname = 'playfilo' AND c.relkind = 'r'",
                })?,
            })
        })
    }

    /// Recomputes every blob hash and node id (trying the hash shapes of spec §2.7 that fit the
    /// row), and checks that parents, parts, system prompts, refs and action targets exist.
    pub fn fsck(&self) -> Result<FsckReport> {
        self.read(|| {
            let mut report = FsckReport::default();
            self.check_blobs(&mut report)?;
            self.check_nodes(&mut report)?;
            self.check_links(&mut report)?;
            Ok(report)
        })
    }

    fn check_blobs(&self, report: &mut FsckReport) -> Result<()> {
        let q = Q {
            sqlite: "SELECT hash, type, content FROM blobs ORDER BY rowid",
            pg: "SELECT hash, type, content FROM blobs ORDER BY hash",
        };
        self.each(&q, &[], |row| {
            let (hash, kind, content) = (row.string(0)?, row.string(1)?, row.text(2)?);
            if kind == blob_type::PLAYTISS {
                report.blobs_skipped += 1;
                return Ok(true);
            }
            report.blobs_checked += 1;
            let problem = match serde_json::from_str::<Value>(content.unwrap_or_default()) {
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
            Ok(true)
        })
    }

    fn check_nodes(&self, report: &mut FsckReport) -> Result<()> {
        let q = Q {
            sqlite: "SELECT id, parent_id, role, parts_list, timestamp, system_prompt_hash, \
                     external_id FROM nodes ORDER BY rowid",
            pg: "SELECT id, parent_id, role, parts_list, timestamp, system_prompt_hash, \
                 external_id FROM nodes ORDER BY seq",
        };
        self.each(&q, &[], |row| {
            report.nodes_checked += 1;
            let id = row.string(0)?;
            let parent = row.opt_string(1)?;
            let role = row.string(2)?;
            let parts_text = row.string(3)?;
            let timestamp = row.i64(4)?;
            let sph = row.opt_string(5)?;
            let ext = row.opt_string(6)?;
            let Ok(parts) = serde_json::from_str::<Vec<String>>(&parts_text) else {
                let message = "parts_list is not a JSON array of strings".into();
                report.problems.push(Problem {
                    kind: "node",
                    key: id,
                    message,
                });
                return Ok(true);
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
            Ok(true)
        })
    }

    fn check_links(&self, report: &mut FsckReport) -> Result<()> {
        for (kind, q) in &LINK_CHECKS {
            self.each(q, &[], |r| {
                // SQLite's action ids are integers; PostgreSQL's come cast to text.
                let key = match r.text(0)? {
                    Some(t) => t.to_owned(),
                    None => r.int(0)?.map(|i| i.to_string()).unwrap_or_default(),
                };
                report.problems.push(Problem {
                    kind,
                    key,
                    message: r.string(1)?,
                });
                Ok(true)
            })?;
        }
        Ok(())
    }
}

/// The link checks of [`Store::fsck`]: each row is (key, message).
const LINK_CHECKS: [(&str, Q); 6] = [
    (
        "node",
        Q {
            sqlite: "SELECT n.id, 'parent ' || n.parent_id || ' does not exist' FROM nodes n \
                 WHERE n.parent_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM nodes p WHERE p.id = n.parent_id)",
            pg: "SELECT n.id, 'parent ' || n.parent_id || ' does not exist' FROM nodes n \
                 WHERE n.parent_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM nodes p WHERE p.id = n.parent_id) \
                 ORDER BY n.seq",
        },
    ),
    (
        "node",
        Q {
            sqlite: "SELECT n.id, 'part ' || p.value || ' does not exist' FROM nodes n, json_each(n.parts_list) p \
                 WHERE json_valid(n.parts_list) AND NOT EXISTS (SELECT 1 FROM blobs b WHERE b.hash = p.value)",
            pg: "SELECT n.id, 'part ' || p.value || ' does not exist' FROM nodes n \
                 CROSS JOIN LATERAL jsonb_array_elements_text(CASE WHEN \
                   jsonb_typeof(playfilo.try_jsonb(n.parts_list)) = 'array' \
                   THEN playfilo.try_jsonb(n.parts_list) ELSE '[]'::jsonb END) \
                   WITH ORDINALITY AS p(value, i) \
                 WHERE NOT EXISTS (SELECT 1 FROM blobs b WHERE b.hash = p.value) ORDER BY n.seq, p.i",
        },
    ),
    (
        "node",
        Q {
            sqlite: "SELECT n.id, 'system prompt ' || n.system_prompt_hash || ' does not exist' FROM nodes n \
                 WHERE n.system_prompt_hash IS NOT NULL AND n.system_prompt_hash <> '' \
                 AND NOT EXISTS (SELECT 1 FROM blobs b WHERE b.hash = n.system_prompt_hash)",
            pg: "SELECT n.id, 'system prompt ' || n.system_prompt_hash || ' does not exist' FROM nodes n \
                 WHERE n.system_prompt_hash IS NOT NULL AND n.system_prompt_hash <> '' \
                 AND NOT EXISTS (SELECT 1 FROM blobs b WHERE b.hash = n.system_prompt_hash) ORDER BY n.seq",
        },
    ),
    (
        "ref",
        Q {
            sqlite: "SELECT r.name, 'points at missing node ' || r.node_id FROM refs r \
                 WHERE r.node_id <> '' AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.id = r.node_id)",
            pg: "SELECT r.name, 'points at missing node ' || r.node_id FROM refs r \
                 WHERE r.node_id <> '' AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.id = r.node_id) \
                 ORDER BY r.name",
        },
    ),
    (
        "action",
        Q {
            sqlite: "SELECT a.id, 'to_node ' || a.to_node || ' does not exist' FROM action_log a \
                 WHERE a.to_node IS NOT NULL AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.id = a.to_node)",
            pg: "SELECT a.id::text, 'to_node ' || a.to_node || ' does not exist' FROM action_log a \
                 WHERE a.to_node IS NOT NULL AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.id = a.to_node) \
                 ORDER BY a.id",
        },
    ),
    (
        "action",
        Q {
            sqlite: "SELECT a.id, 'from_node ' || a.from_node || ' does not exist' FROM action_log a \
                 WHERE a.from_node IS NOT NULL AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.id = a.from_node)",
            pg: "SELECT a.id::text, 'from_node ' || a.from_node || ' does not exist' FROM action_log a \
                 WHERE a.from_node IS NOT NULL AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.id = a.from_node) \
                 ORDER BY a.id",
        },
    ),
];

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
        self.read(|| {
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
