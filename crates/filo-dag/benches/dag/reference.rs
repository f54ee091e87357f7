//! The reference's access pattern, re-created on the same database for comparison.
//!
//! Modelled on the reference module (playfilo-db.ts): every helper calls `db.prepare(sql)`
//! (compiled on every call, better-sqlite3 has no statement cache) and runs one query per node
//! and per blob; writes autocommit statement by statement in WAL mode with
//! `synchronous = NORMAL` (better-sqlite3's build default in WAL mode).

use std::path::Path;
use std::time::Duration;

use filo_dag::canon::{self, NodeHashInput};
use filo_dag::{NewBlob, role};
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::{Value, json};

use super::{PROMPT, Res, pi_commit};

/// `db.prepare(sql).get(param)`: compile, bind, step once.
fn get_one<T>(
    conn: &Connection,
    sql: &str,
    param: &str,
    f: impl FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> Res<Option<T>> {
    Ok(conn.prepare(sql)?.query_row([param], f).optional()?)
}

/// (id, parent_id, role, parts_list) of a `SELECT *` row.
type NodeRow = (String, Option<String>, String, String);

/// `db.prepare(sql).all(param)`.
fn get_all(conn: &Connection, sql: &str, param: &str) -> Res<Vec<NodeRow>> {
    let mut stmt = conn.prepare(sql)?;
    let rows = stmt.query_map([param], |r| {
        Ok((
            r.get("id")?,
            r.get("parent_id")?,
            r.get("role")?,
            r.get("parts_list")?,
        ))
    })?;
    Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
}

fn ref_blob(conn: &Connection, hash: &str) -> Res<Option<(String, String)>> {
    get_one(conn, "SELECT * FROM blobs WHERE hash = ?", hash, |r| {
        Ok((r.get("type")?, r.get("content")?))
    })
}

/// storeBlob / commitNodeWithExternalId / getRef / setRef, one autocommit statement each.
pub(crate) fn reference_commits(conn: &Connection, n: usize) -> Res<()> {
    for i in 0..n {
        let commit = pi_commit(i);
        let parent = get_one(
            conn,
            "SELECT node_id FROM refs WHERE name = ?",
            "PI_HEAD",
            |r| r.get::<_, String>(0),
        )?;
        let mut parts = Vec::new();
        for blob in commit.parts.iter().chain([&NewBlob::system_prompt(PROMPT)]) {
            let hash = blob.hash();
            conn.prepare("INSERT OR IGNORE INTO blobs (hash, type, content) VALUES (?, ?, ?)")?
                .execute(params![hash, blob.blob_type, canon::js_json(&blob.content)])?;
            parts.push(hash);
        }
        let sph = parts.pop().unwrap_or_default();
        let timestamp = commit.timestamp + 10_000_000;
        let id = canon::node_hash(&NodeHashInput {
            parent_id: parent.as_deref(),
            parts: &parts,
            role: &commit.role,
            timestamp,
            external_id: commit.external_id.as_deref(),
            system_prompt_hash: Some(&sph),
        });
        conn.prepare(
            "INSERT OR IGNORE INTO nodes (id, parent_id, role, parts_list, timestamp, config_json, \
             system_prompt_hash, external_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        )?
        .execute(params![
            id,
            parent,
            commit.role,
            serde_json::to_string(&parts)?,
            timestamp,
            commit.config_json,
            sph,
            commit.external_id
        ])?;
        conn.prepare("INSERT OR REPLACE INTO refs (name, node_id) VALUES (?, ?)")?
            .execute(params!["PI_HEAD", id])?;
    }
    Ok(())
}

/// The bare walk: `SELECT *` per node and per blob, rows kept, nothing parsed.
pub(crate) fn reference_lineage(conn: &Connection, head: &str) -> Res<usize> {
    let mut rows: Vec<(String, Vec<(String, String)>)> = Vec::new();
    let mut cur = Some(head.to_owned());
    while let Some(id) = cur {
        let node = get_one(conn, "SELECT * FROM nodes WHERE id = ?", &id, |r| {
            Ok((
                r.get::<_, Option<String>>("parent_id")?,
                r.get::<_, String>("parts_list")?,
            ))
        })?;
        let Some((parent, parts)) = node else { break };
        let mut blobs = Vec::new();
        for hash in serde_json::from_str::<Vec<String>>(&parts)? {
            blobs.extend(ref_blob(conn, &hash)?);
        }
        rows.push((id, blobs));
        cur = parent;
    }
    Ok(rows.len())
}

/// `loadEntriesFromDAG`: a SELECT per node, per blob, per parent external id; entries built.
pub(crate) fn reference_load(conn: &Connection, head: &str) -> Res<usize> {
    let mut trace: Vec<Value> = Vec::new();
    let mut cur = Some(head.to_owned());
    while let Some(id) = cur {
        let node = get_one(conn, "SELECT * FROM nodes WHERE id = ?", &id, |r| {
            Ok((
                r.get::<_, Option<String>>("parent_id")?,
                r.get::<_, String>("role")?,
                r.get::<_, String>("parts_list")?,
                r.get::<_, i64>("timestamp")?,
                r.get::<_, Option<String>>("external_id")?,
                r.get::<_, Option<String>>("config_json")?,
            ))
        })?;
        let Some((parent, role_name, parts, timestamp, ext, config)) = node else {
            break;
        };
        let mut content = Vec::new();
        for hash in serde_json::from_str::<Vec<String>>(&parts)? {
            if let Some((kind, text)) = ref_blob(conn, &hash)? {
                let data: Value = serde_json::from_str(&text)?;
                match kind.as_str() {
                    "text" => content.push(json!({ "type": "text", "text": data })),
                    "tool_call" => content.push(json!({
                        "type": "toolCall", "id": data["id"], "name": data["name"], "arguments": data["arguments"],
                    })),
                    _ => content.push(data),
                }
            }
        }
        let parent_ext = match &parent {
            Some(p) => get_one(conn, "SELECT external_id FROM nodes WHERE id = ?", p, |r| {
                r.get::<_, Option<String>>(0)
            })?
            .flatten(),
            None => None,
        };
        let mut message = json!({ "role": role_name, "content": content, "timestamp": timestamp });
        if role_name == role::ASSISTANT {
            let cfg: Value = config
                .as_deref()
                .map(serde_json::from_str)
                .transpose()?
                .unwrap_or(Value::Null);
            message["api"] = json!("chat");
            message["provider"] = cfg["model"]["provider"].clone();
            message["model"] = cfg["model"]["id"].clone();
            message["stopReason"] = json!("stop");
            message["usage"] = json!({ "input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                "cost": { "input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0 } });
        }
        trace.push(json!({
            "type": "message", "id": ext.unwrap_or_else(|| id[..8].to_owned()), "parentId": parent_ext,
            "timestamp": filo_dag::text::iso_utc(timestamp), "message": message,
        }));
        cur = parent;
    }
    trace.reverse();
    Ok(trace.len())
}

/// A printed life line: the preview reads and parses every blob, then `nodeHasToolCalls` reads
/// the types again (assistants only).
fn reference_line(conn: &Connection, role_name: &str, parts: &str) -> Res<()> {
    let hashes: Vec<String> = serde_json::from_str(parts)?;
    for hash in &hashes {
        if let Some((_, content)) = ref_blob(conn, hash)? {
            std::hint::black_box(serde_json::from_str::<Value>(&content)?);
        }
    }
    if role_name == role::ASSISTANT {
        for hash in &hashes {
            let kind = get_one(conn, "SELECT type FROM blobs WHERE hash = ?", hash, |r| {
                r.get::<_, String>(0)
            })?;
            if kind.as_deref() == Some("tool_call") {
                break;
            }
        }
    }
    Ok(())
}

const CHILDREN: &str = "SELECT * FROM nodes WHERE parent_id = ?";

fn count_descendants(conn: &Connection, id: &str) -> Res<usize> {
    let kids = get_all(conn, CHILDREN, id)?;
    let mut n = kids.len();
    for kid in kids {
        n += count_descendants(conn, &kid.0)?;
    }
    Ok(n)
}

fn reference_tree(conn: &Connection, id: &str, depth: usize, lines: &mut usize) -> Res<()> {
    if depth > 10 {
        return Ok(());
    }
    for (kid, _, role_name, parts) in get_all(conn, CHILDREN, id)? {
        reference_line(conn, &role_name, &parts)?;
        *lines += 1;
        reference_tree(conn, &kid, depth + 1, lines)?;
    }
    Ok(())
}

/// `handleLife` with default options at HEAD, one query per node and per blob.
pub(crate) fn reference_life(conn: &Connection) -> Res<usize> {
    let head = get_one(
        conn,
        "SELECT node_id FROM refs WHERE name = ?",
        "PI_HEAD",
        |r| r.get::<_, String>(0),
    )?
    .unwrap_or_default();
    std::hint::black_box(get_one(
        conn,
        "SELECT id FROM nodes WHERE external_id = ?",
        &head,
        |r| r.get::<_, String>(0),
    )?);
    let mut chain = Vec::new();
    let mut cur = Some(head.clone());
    while let Some(id) = cur.take().filter(|_| chain.len() < 4) {
        let row = get_one(conn, "SELECT * FROM nodes WHERE id = ?", &id, |r| {
            Ok((
                r.get::<_, Option<String>>("parent_id")?,
                r.get::<_, String>("role")?,
                r.get::<_, String>("parts_list")?,
            ))
        })?;
        let Some((parent, role_name, parts)) = row else {
            break;
        };
        chain.push((id, role_name, parts));
        cur = parent;
    }
    let mut lines = 0;
    for (_, role_name, parts) in chain.iter().skip(1) {
        reference_line(conn, role_name, parts)?;
        lines += 1;
    }
    for (sibling, _, role_name, parts) in get_all(conn, CHILDREN, &chain[1].0)? {
        if sibling != head {
            std::hint::black_box(count_descendants(conn, &sibling)?);
        }
        reference_line(conn, &role_name, &parts)?;
        lines += 1;
    }
    reference_tree(conn, &head, 0, &mut lines)?;
    Ok(lines)
}

/// `handleTrace`: walk the lineage one SELECT per node, then one query binding every ancestor.
/// Past SQLite's variable limit the reference query fails; it is chunked here so it finishes.
pub(crate) fn reference_trace(conn: &Connection) -> Res<usize> {
    let head = get_one(
        conn,
        "SELECT node_id FROM refs WHERE name = ?",
        "PI_HEAD",
        |r| r.get::<_, String>(0),
    )?
    .unwrap_or_default();
    let mut ids = Vec::new();
    let mut cur = Some(head);
    while let Some(id) = cur {
        let parent = get_one(conn, "SELECT parent_id FROM nodes WHERE id = ?", &id, |r| {
            r.get::<_, Option<String>>(0)
        })?;
        ids.push(id);
        cur = parent.flatten();
    }
    let mut rows = 0;
    for chunk in ids.chunks(30_000) {
        let marks = vec!["?"; chunk.len()].join(",");
        let sql = format!(
            "SELECT * FROM action_log WHERE to_node IN ({marks}) AND action_type IN \
             ('BOOT','INCARNATE','HYDRATE_GHOST') ORDER BY timestamp DESC LIMIT 15"
        );
        let mut stmt = conn.prepare(&sql)?;
        rows += stmt
            .query_map(rusqlite::params_from_iter(chunk), |_| Ok(()))?
            .count();
    }
    Ok(rows)
}

/// `resolveNodeId`: exact match, then `id LIKE 'p%'` (a full scan); returns the match count.
pub(crate) fn reference_resolve(conn: &Connection, prefix: &str) -> Res<usize> {
    std::hint::black_box(get_one(
        conn,
        "SELECT 1 FROM nodes WHERE id = ?",
        prefix,
        |r| r.get::<_, i64>(0),
    )?);
    let mut stmt = conn.prepare("SELECT id FROM nodes WHERE id LIKE ?")?;
    let found = stmt
        .query_map([format!("{prefix}%")], |r| r.get::<_, String>(0))?
        .count();
    Ok(found)
}

pub(crate) fn open_reference(path: &Path) -> Res<Connection> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))?;
    // better-sqlite3 builds SQLite with SQLITE_DEFAULT_WAL_SYNCHRONOUS=1: in WAL mode the
    // reference commits with `synchronous = NORMAL` (no fsync per statement), not FULL.
    conn.execute_batch("PRAGMA synchronous = NORMAL")?;
    Ok(conn)
}
