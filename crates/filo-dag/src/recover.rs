//! Rebuilding pi session entries from the DAG (`loadEntriesFromDAG`, spec §5.1), with the
//! reference's recovery bugs fixed (§10.3):
//!
//! * #12 — a `pi_meta` part (e.g. an image) of a message node is a content part; only a
//!   `pi_internal` node, or a value whose `type` is a known entry type, makes a meta entry;
//! * #13 — a message stored whole as one `pi_meta` (string content, `bashExecution`, …) comes
//!   back as that message instead of a message wrapping it as a content part;
//! * #14 — `parentId` uses the same fallback id as `id` (`external_id`, else the first 8 hex of
//!   the hash), so nodes without an external id (departure, terminal) do not cut the chain;
//! * #15 — meta entries get their `parentId` rewritten from the DAG parent.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Range;

use memchr::memchr;
use serde_json::{Map, Value, json};

use crate::canon;
use crate::db::{Cols, P};
use crate::error::Result;
use crate::model::{blob_type, role};
use crate::read::MAX_WALK_NODES;
use crate::render::preview_truthy as truthy;
use crate::sql;
use crate::store::Store;
use crate::text::iso_utc;

/// Entry types a whole-entry `pi_meta` can carry.
pub(crate) const ENTRY_TYPES: &[&str] = &[
    "thinking_level_change",
    "model_change",
    "compaction",
    "branch_summary",
    "custom",
    "custom_message",
    "label",
    "session_info",
    "message",
    "session",
];

impl Store {
    /// The pi session entries of the lineage ending at `head`, root first: one walk over the
    /// nodes in rowid order ([`crate::walk`]), then their blobs: in one pass over the table when
    /// the lineage needs a large share of it, else by hash in batches.
    pub fn load_entries(&self, head: Option<&str>) -> Result<Vec<Value>> {
        let Some(head) = head else {
            return Ok(Vec::new());
        };
        self.load_entries_after(head, None)
    }

    /// [`Store::load_entries`] for the part of the lineage of `head` that lies after the node
    /// `after` (exclusive), root first; the first entry's parent is `after`'s entry id. Without
    /// `after`, or when the walk does not meet it, the whole lineage.
    pub fn load_entries_after(
        &self,
        head: &str,
        after: Option<(&str, &str)>,
    ) -> Result<Vec<Value>> {
        self.entries_read_with(head, after, BlobRead::Auto)
    }

    /// [`Store::load_entries_after`] with the blobs read as `how` says.
    pub(crate) fn entries_read_with(
        &self,
        head: &str,
        after: Option<(&str, &str)>,
        how: BlobRead,
    ) -> Result<Vec<Value>> {
        self.read(|| {
            let stop = after.map(|(node, _)| node);
            let mut parse = |c: &str| serde_json::from_str::<Value>(c).ok();
            let steps = steps(self, head, stop, how, &mut parse)?;
            let met = stop.is_some() && steps.last().is_some_and(|s| s.stopped_before);
            let mut out = Vec::with_capacity(steps.len());
            let mut parent: Option<String> = match after {
                Some((_, entry)) if met => Some(entry.to_owned()),
                _ => None,
            };
            let mut models = ModelCache::default();
            for step in steps.into_iter().rev() {
                let id = step.entry_id.clone();
                if let Some(entry) = entry_of(step, parent.take(), &mut models) {
                    out.push(entry);
                }
                parent = Some(id);
            }
            Ok(out)
        })
    }
}

/// One node of the lineage, reduced to what its entry needs; `T` is a part's content as the
/// entry builder takes it (a `Value`, or where its JSON text lies).
pub(crate) struct Step<T> {
    /// `external_id`, else the first 8 characters of the hash.
    pub(crate) entry_id: String,
    pub(crate) role: String,
    pub(crate) timestamp: i64,
    /// config_json, read for assistants only.
    pub(crate) config: Option<String>,
    /// Blobs found for the node, whatever their type.
    pub(crate) found: usize,
    /// The parsed blobs the loader reads, with their part index.
    pub(crate) parts: Vec<(usize, &'static str, T)>,
    /// Per-part provider signatures (`thought_signatures` as filo writes it), assistants only.
    pub(crate) signatures: Vec<Value>,
    /// The walk stopped at this node's parent because it was the node to stop before.
    pub(crate) stopped_before: bool,
}

/// `{"parts": [null | {field: value}, …]}` → the per-part objects; anything else → none (the
/// column's other writers use other shapes, which are left alone).
fn part_signatures(column: Option<String>) -> Vec<Value> {
    column
        .and_then(|c| serde_json::from_str::<Value>(&c).ok())
        .and_then(|mut v| v.get_mut("parts").map(Value::take))
        .and_then(|p| match p {
            Value::Array(a) => Some(a),
            _ => None,
        })
        .unwrap_or_default()
}

/// The blob types the loader reads; the others (system_prompt, inline_data, …) are ignored.
fn loaded_type(kind: &str) -> Option<&'static str> {
    [
        blob_type::PI_META,
        blob_type::PI_ENTRY,
        blob_type::TEXT,
        blob_type::THINKING,
        blob_type::TOOL_CALL,
        blob_type::TOOL_RESULT,
    ]
    .into_iter()
    .find(|t| *t == kind)
}

/// Hashes looked up per query when the blobs are read by hash.
const BLOB_BATCH: usize = 4_096;

/// The blobs are read in one pass over the table, in rowid order, when the lineage needs at
/// least one in this many of its rows: a sequential row costs a fraction of a primary-key
/// lookup (one descent of the hash index, then one of the table, per blob).
const SCAN_RATIO: i64 = 8;

/// Every part hash of the walked nodes in one buffer (no string per hash): hash `i` is
/// `text[ranges[i]]`, and a step's hashes are a range of indices into `ranges`.
#[derive(Default)]
struct PartHashes {
    text: String,
    ranges: Vec<Range<usize>>,
}

impl PartHashes {
    fn get(&self, i: usize) -> &str {
        &self.text[self.ranges[i].clone()]
    }

    /// Appends the hashes of a `parts_list` as `json_each` over it yields them (the string
    /// elements of a JSON array, in order; text that is not an array has none); returns their
    /// indices.
    fn push_list(&mut self, parts_list: &str) -> Range<usize> {
        let start = self.ranges.len();
        let text_start = self.text.len();
        if !self.push_simple(parts_list) {
            self.ranges.truncate(start);
            self.text.truncate(text_start);
            let items = serde_json::from_str::<Vec<Value>>(parts_list).unwrap_or_default();
            for item in items {
                if let Value::String(h) = item {
                    self.push(&h);
                }
            }
        }
        start..self.ranges.len()
    }

    /// The writers' form, `["<hex>","<hex>"]` (alphanumeric strings, no spaces), split
    /// without a parser; `false` for anything else.
    fn push_simple(&mut self, parts_list: &str) -> bool {
        let Some(inner) = parts_list
            .strip_prefix('[')
            .and_then(|t| t.strip_suffix(']'))
        else {
            return false;
        };
        let b = inner.as_bytes();
        let mut at = 0;
        while at < b.len() {
            if b[at] != b'"' {
                return false;
            }
            let start = at + 1;
            // The closing quote, then one branch-free pass over the hash (the compiler
            // vectorizes the fold; a byte loop that stops early cost ~5 cycles a byte).
            let Some(len) = memchr(b'"', &b[start..]) else {
                return false;
            };
            let end = start + len;
            if !b[start..end]
                .iter()
                .fold(true, |ok, c| ok & c.is_ascii_alphanumeric())
            {
                return false;
            }
            self.push(&inner[start..end]);
            at = end + 1;
            match b.get(at) {
                None => {}
                Some(b',') if at + 1 < b.len() => at += 1,
                Some(_) => return false,
            }
        }
        true
    }

    fn push(&mut self, hash: &str) {
        let start = self.text.len();
        self.text.push_str(hash);
        self.ranges.push(start..self.text.len());
    }
}

/// How [`steps`] reads the blobs: chosen by size, or forced (tests compare the two).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlobRead {
    /// A scan when the lineage needs a large share of the table, else lookups.
    Auto,
    /// One query per [`BLOB_BATCH`] hashes, by primary key.
    Lookup,
    /// One pass over the table in rowid order (SQLite; PostgreSQL looks up).
    Scan,
}

/// The lineage of `head`, head first, with every node's loaded parts in part order: one walk
/// ([`walk`](crate::walk)) over the nodes, then the blobs they list ([`load_parts`]), each read
/// blob's content decoded once by `decode` (`None`: not JSON). The walk ends before the node
/// `stop` (the last step is then marked `stopped_before`).
pub(crate) fn steps<T: Clone>(
    store: &Store,
    head: &str,
    stop: Option<&str>,
    how: BlobRead,
    decode: &mut dyn FnMut(&str) -> Option<T>,
) -> Result<Vec<Step<T>>> {
    let mut steps: Vec<Step<T>> = Vec::new();
    let mut hashes = PartHashes::default();
    let mut lists: Vec<Range<usize>> = Vec::new();
    store.walk(&sql::WALK_ENTRIES, head, MAX_WALK_NODES, |row| {
        let id = row.text(1)?.unwrap_or_default();
        if stop == Some(id) {
            if let Some(last) = steps.last_mut() {
                last.stopped_before = true;
            }
            return Ok(false);
        }
        let entry_id = match row.text(6)? {
            Some(ext) => ext.to_owned(),
            None => id.chars().take(8).collect(),
        };
        let role = row.text(3)?.unwrap_or_default().to_owned();
        let (config, signatures) = if role == role::ASSISTANT {
            (row.opt_string(5)?, part_signatures(row.opt_string(8)?))
        } else {
            (None, Vec::new())
        };
        steps.push(Step {
            entry_id,
            timestamp: row.i64(4)?,
            role,
            config,
            found: 0,
            parts: Vec::new(),
            signatures,
            stopped_before: false,
        });
        lists.push(hashes.push_list(row.text(7)?.unwrap_or_default()));
        Ok(true)
    })?;
    let (mut parts, slot_of) = load_parts(store, &hashes, how, decode)?;
    for (step, list) in steps.iter_mut().zip(lists) {
        step.parts.reserve_exact(list.len());
        for (index, i) in list.enumerate() {
            let part = &mut parts[slot_of[i] as usize];
            if !part.found {
                continue;
            }
            step.found += 1;
            part.uses -= 1;
            let value = match (&part.value, part.uses) {
                (None, _) => continue,
                (Some(_), 0) => part.value.take(),
                (Some(v), _) => Some(v.clone()),
            };
            if let (Some(kind), Some(value)) = (part.kind, value) {
                step.parts.push((index, kind, value));
            }
        }
    }
    Ok(steps)
}

/// A multiply-rotate hasher (FxHash's) for the part map: its keys are content hashes of the
/// file's own blobs, and SipHash's resistance to chosen keys cost a tenth of a whole load.
#[derive(Default)]
pub(crate) struct PartHasher(u64);

impl Hasher for PartHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(word))
                .wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }

    /// The state, its high bits folded down (splitmix64's finalizer): a product's low bits
    /// depend only on the factors' low bits, so ids that differ only in the last bytes of a
    /// word (`…0001`, `…0002`) would otherwise share their low bits, which pick the bucket.
    fn finish(&self) -> u64 {
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// The distinct blobs of the parts, and the slot of each part's blob.
type Slots<T> = (Vec<Part<T>>, Vec<u32>);

/// Each distinct part hash → its slot in the parts vector.
type PartMap<'h> = HashMap<&'h str, u32, BuildHasherDefault<PartHasher>>;

/// A blob as the loader sees it: whether it exists, its type if the loader reads it, its decoded
/// content (`None` for other types and content that is not JSON), and how many parts still
/// refer to it.
struct Part<T> {
    found: bool,
    kind: Option<&'static str>,
    value: Option<T>,
    uses: usize,
}

/// The blobs that `hashes` name, decoded straight from the rows (no copy of the content), one
/// per distinct hash, and the slot of each of `hashes`' entries: by primary key in batches, or
/// in one pass over the table when the lineage needs a large share of it ([`SCAN_RATIO`]).
/// (The slots spare the parts a second hash lookup each: at 100,000 nodes the map's random
/// probes were a fifth of the load.)
fn load_parts<T>(
    store: &Store,
    hashes: &PartHashes,
    how: BlobRead,
    decode: &mut dyn FnMut(&str) -> Option<T>,
) -> Result<Slots<T>> {
    let mut index = PartMap::default();
    let mut parts: Vec<Part<T>> = Vec::new();
    let mut slot_of = Vec::with_capacity(hashes.ranges.len());
    for i in 0..hashes.ranges.len() {
        let slot = *index.entry(hashes.get(i)).or_insert_with(|| {
            parts.push(Part {
                found: false,
                kind: None,
                value: None,
                uses: 0,
            });
            u32::try_from(parts.len() - 1).unwrap_or(u32::MAX)
        });
        parts[slot as usize].uses += 1;
        slot_of.push(slot);
    }
    if parts.is_empty() {
        return Ok((parts, slot_of));
    }
    let unique: Vec<&str> = index.keys().copied().collect();
    let mut take = |row: &dyn Cols| -> Result<bool> {
        let Some(&slot) = row.text(0)?.and_then(|h| index.get(h)) else {
            return Ok(true);
        };
        let part = &mut parts[slot as usize];
        if part.found {
            return Ok(true);
        }
        part.found = true;
        part.kind = row.text(1)?.and_then(loaded_type);
        if part.kind.is_some() {
            part.value = row.text(2)?.and_then(&mut *decode);
        }
        Ok(true)
    };
    let how = match (how, store.sqlite()) {
        (BlobRead::Auto, Some(conn)) => {
            // A table without rowids (not a layout any writer uses) reads by hash.
            let rows = conn.query_row(sql::BLOBS_LAST_ROWID, [], |r| r.get::<_, Option<i64>>(0));
            let unique = i64::try_from(unique.len()).unwrap_or(i64::MAX);
            match rows {
                Ok(Some(rows)) if unique.saturating_mul(SCAN_RATIO) >= rows => BlobRead::Scan,
                _ => BlobRead::Lookup,
            }
        }
        (_, None) => BlobRead::Lookup,
        (how, Some(_)) => how,
    };
    let scan_on = store.sqlite().filter(|_| how == BlobRead::Scan);
    if let Some(conn) = scan_on {
        let mut stmt = conn.prepare_cached(sql::BLOBS_FROM_ROWID)?;
        let mut rows = stmt.query([i64::MIN])?;
        while let Some(row) = rows.next()? {
            take(row)?;
        }
    } else {
        for chunk in unique.chunks(BLOB_BATCH) {
            store.each(&sql::Q_BLOBS_BY_HASHES, &[P::List(chunk)], &mut take)?;
        }
    }
    Ok((parts, slot_of))
}

fn is_meta(step: &Step<Value>, v: &Value) -> bool {
    let Some(kind) = v.get("type").filter(|t| truthy(t)) else {
        return false;
    };
    if v.get("role").is_some() {
        return false;
    }
    step.role == role::PI_INTERNAL || kind.as_str().is_some_and(|k| ENTRY_TYPES.contains(&k))
}

/// The last config_json seen and its (provider, model): consecutive nodes share one config.
#[derive(Default)]
struct ModelCache {
    config: Option<String>,
    value: (String, String),
    /// The zero `usage` object of every rebuilt assistant message, built once and cloned.
    usage: Option<Value>,
}

impl ModelCache {
    fn get(&mut self, config: Option<&str>) -> (String, String) {
        if self.config.as_deref() != config || self.value.0.is_empty() {
            self.value = provider_model(config);
            self.config = config.map(str::to_owned);
        }
        self.value.clone()
    }
}

fn entry_of(
    mut step: Step<Value>,
    parent: Option<String>,
    models: &mut ModelCache,
) -> Option<Value> {
    let parent_id = parent.map_or(Value::Null, Value::String);
    let timestamp = iso_utc(step.timestamp);
    let mut meta: Option<Value> = None;
    let mut whole_message: Option<Value> = None;
    let mut last_result: Option<Value> = None;
    let mut content: Vec<Value> = Vec::new();
    let signatures = std::mem::take(&mut step.signatures);
    for (index, kind, v) in std::mem::take(&mut step.parts) {
        let before = content.len();
        match kind {
            blob_type::PI_META if is_meta(&step, &v) => meta = Some(v),
            blob_type::PI_META if step.found == 1 && v.get("role").is_some() => {
                whole_message = Some(v);
            }
            blob_type::PI_META => content.push(v),
            blob_type::PI_ENTRY => meta = Some(v),
            blob_type::TEXT => content.push(obj([("type", "text".into()), ("text", v)])),
            blob_type::THINKING => {
                content.push(obj([("type", "thinking".into()), ("thinking", v)]));
            }
            blob_type::TOOL_CALL => content.push(tool_call_part(v)),
            blob_type::TOOL_RESULT => {
                let text = tool_result_text(&v);
                content.push(obj([("type", "text".into()), ("text", text.into())]));
                last_result = Some(v);
            }
            _ => {}
        }
        // Signatures go back on the block this part became (text, thinking, tool call).
        let sig = signatures.get(index);
        if let (Some(Value::Object(fields)), Some(Value::Object(block))) = (
            sig,
            content.get_mut(before).filter(|_| carries_signature(kind)),
        ) {
            for (k, v) in fields {
                block.insert(k.clone(), v.clone());
            }
        }
    }
    if let Some(mut meta) = meta {
        if let Some(map) = meta.as_object_mut().filter(|m| m.contains_key("parentId")) {
            map.insert("parentId".into(), parent_id);
        }
        return Some(meta);
    }
    let message = if let Some(message) = whole_message {
        message
    } else if step.role == role::TOOL_RESULT {
        tool_result_message(last_result.as_ref(), step.timestamp)
    } else {
        if step.role == role::PI_INTERNAL && content.is_empty() {
            return None;
        }
        plain_message(&mut step, content, models)
    };
    Some(obj([
        ("type", "message".into()),
        ("id", step.entry_id.into()),
        ("parentId", parent_id),
        ("timestamp", timestamp.into()),
        ("message", message),
    ]))
}

/// Whether a part of this type becomes a content block a signature belongs to.
pub(crate) fn carries_signature(kind: &str) -> bool {
    matches!(
        kind,
        blob_type::TEXT | blob_type::THINKING | blob_type::TOOL_CALL
    )
}

/// An object from key/value pairs, moving the values (`json!` would re-serialize them).
fn obj<const N: usize>(pairs: [(&str, Value); N]) -> Value {
    Value::Object(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
}

fn tool_call_part(mut v: Value) -> Value {
    let id = match v.get("id") {
        Some(id) if truthy(id) => id.clone(),
        _ => Value::String(canon::hash_value(&v)),
    };
    let name = v.get_mut("name").map_or(Value::Null, Value::take);
    let arguments = match v.get_mut("arguments").map(Value::take) {
        Some(a) if !a.is_null() => a,
        _ => Value::Object(Map::new()),
    };
    obj([
        ("type", "toolCall".into()),
        ("id", id),
        ("name", name),
        ("arguments", arguments),
    ])
}

fn tool_result_text(v: &Value) -> String {
    let texts: Vec<&str> = v
        .get("content")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    if texts.is_empty() {
        canon::js_json(v)
    } else {
        texts.join("\n")
    }
}

fn or_default(v: Option<&Value>, key: &str, default: Value) -> Value {
    match v.and_then(|v| v.get(key)) {
        Some(x) if truthy(x) => x.clone(),
        _ => default,
    }
}

fn tool_result_message(v: Option<&Value>, timestamp: i64) -> Value {
    let is_error = match v.and_then(|v| v.get("isError")) {
        Some(x) if !x.is_null() => x.clone(),
        _ => Value::Bool(false),
    };
    json!({
        "role": "toolResult",
        "toolCallId": or_default(v, "toolCallId", json!("unknown")),
        "toolName": or_default(v, "toolName", json!("unknown")),
        "content": or_default(v, "content", json!([])),
        "isError": is_error,
        "timestamp": timestamp,
    })
}

/// provider and model from config_json (§3.3): Pi unified, terminal, or unknown.
pub(crate) fn provider_model(config: Option<&str>) -> (String, String) {
    let unknown = || ("unknown".to_owned(), "unknown".to_owned());
    let Some(v) = config.and_then(|c| serde_json::from_str::<Value>(c).ok()) else {
        return unknown();
    };
    if v.get("agent").is_some_and(truthy) {
        let field = |k: &str| {
            v.get("model")
                .and_then(|m| m.get(k))
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .unwrap_or("unknown")
                .to_owned()
        };
        return (field("provider"), field("id"));
    }
    match v.get("model").and_then(Value::as_str) {
        Some(model) => ("google".to_owned(), model.to_owned()),
        None => unknown(),
    }
}

fn plain_message(step: &mut Step<Value>, content: Vec<Value>, models: &mut ModelCache) -> Value {
    let is_assistant = step.role == role::ASSISTANT;
    let mut message = Map::with_capacity(if is_assistant { 8 } else { 3 });
    message.insert("role".into(), Value::String(std::mem::take(&mut step.role)));
    message.insert("content".into(), Value::Array(content));
    if is_assistant {
        let (provider, model) = models.get(step.config.as_deref());
        message.insert("api".into(), "chat".into());
        message.insert("provider".into(), provider.into());
        message.insert("model".into(), model.into());
        let usage = models.usage.get_or_insert_with(|| {
            json!({
                "input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                "cost": { "input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0 },
            })
        });
        message.insert("usage".into(), usage.clone());
        message.insert("stopReason".into(), "stop".into());
    }
    message.insert("timestamp".into(), step.timestamp.into());
    Value::Object(message)
}

#[cfg(test)]
#[path = "recover_tests.rs"]
mod tests;
