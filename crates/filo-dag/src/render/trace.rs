//! `trace`: the navigation log of the current lineage (spec §7.3).

use std::collections::HashSet;

use serde_json::Value;

use crate::canon;
use crate::error::Result;
use crate::model::{Action, short_id};
use crate::read::{MAX_WALK_NODES, action_from_row};
use crate::render::preview::truthy;
use crate::sql;
use crate::store::Store;
use crate::text::{local_minutes, utf16_len, utf16_prefix};

/// trace's type filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TraceMode {
    /// BOOT, INCARNATE, HYDRATE_GHOST.
    #[default]
    Default,
    /// Also SESSION_SWITCH.
    Switches,
    /// Every action type.
    All,
}

impl TraceMode {
    /// Parses the tool parameter; anything unknown behaves like `default`.
    pub fn parse(s: &str) -> Self {
        match s {
            "switches" => Self::Switches,
            "all" => Self::All,
            _ => Self::Default,
        }
    }

    fn types(self) -> Option<&'static [&'static str]> {
        match self {
            Self::Default => Some(&["BOOT", "INCARNATE", "HYDRATE_GHOST"]),
            Self::Switches => Some(&["BOOT", "INCARNATE", "HYDRATE_GHOST", "SESSION_SWITCH"]),
            Self::All => None,
        }
    }
}

/// The parameters of the `trace` tool, plus the ref whose lineage is traced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceOptions {
    /// The head ref (the reference hard-wires `PI_HEAD`).
    pub ref_name: String,
    /// Number of visible events.
    pub limit: usize,
    /// Type filter.
    pub mode: TraceMode,
}

impl Default for TraceOptions {
    fn default() -> Self {
        Self {
            ref_name: "PI_HEAD".into(),
            limit: 15,
            mode: TraceMode::Default,
        }
    }
}

/// The local time zone as trace needs it: seconds east of UTC at a given instant.
pub trait LocalOffset {
    /// Offset from UTC, in seconds, in force at `utc_ms`.
    fn offset_seconds(&self, utc_ms: i64) -> i64;
}

/// A fixed offset (0 = UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FixedOffset(pub i64);

impl LocalOffset for FixedOffset {
    fn offset_seconds(&self, _utc_ms: i64) -> i64 {
        self.0
    }
}

const HEADER: &str = "--- archived action log ---";
const FOOTER: &str = "--- end of archive ---";

/// Renders `trace`. The reference binds one SQL variable per ancestor (§10.5 #32); filo reads the
/// (few) actions of the wanted types first, then walks the lineage once ([`walk`]) until every
/// action's target has been met or the root is reached. No depth limit.
pub fn trace(store: &Store, opts: &TraceOptions, zone: &dyn LocalOffset) -> Result<String> {
    let found = store.read(|| {
        let Some(head) = store.get_ref(&opts.ref_name)? else {
            return Ok(None);
        };
        let mut actions = on_lineage(store, &head, opts.mode)?;
        actions.truncate(opts.limit);
        Ok(Some(actions))
    })?;
    let Some(actions) = found else {
        return Ok([HEADER, "(no PI_HEAD set)", FOOTER].join("\n"));
    };
    if actions.is_empty() {
        return Ok([HEADER, "(no actions recorded)", FOOTER].join("\n"));
    }
    let mut lines = vec![HEADER.to_owned()];
    for a in actions {
        let when = local_minutes(a.timestamp, zone.offset_seconds(a.timestamp));
        let from = a.from_node.as_deref().map_or("null", short_id);
        let to = a.to_node.as_deref().map_or("null", short_id);
        let mut entry = format!("[{when}] {}: {from} → {to}", a.action_type);
        if let Some(meta) = a.metadata.as_deref().filter(|m| !m.is_empty()) {
            let (label, body) = describe_metadata(meta);
            entry.push_str(&format!(". {label}:\n{}", quote(&body)));
        }
        lines.push(entry);
    }
    lines.push(FOOTER.into());
    Ok(lines.join("\n"))
}

/// The actions of the mode's types whose `to_node` is `head` or one of its ancestors, newest
/// first (ties by id).
fn on_lineage(store: &Store, head: &str, mode: TraceMode) -> Result<Vec<Action>> {
    let mut actions = store.rows(
        &sql::Q_ACTIONS_TO_NODES,
        &[crate::db::P::OptList(mode.types())],
        action_from_row,
    )?;
    // The lineage as the reference sees it: the head (even without a node), then each node's
    // parent id (even when that parent is missing).
    let mut found: HashSet<String> = HashSet::new();
    {
        let mut wanted: HashSet<&str> = actions
            .iter()
            .filter_map(|a| a.to_node.as_deref())
            .collect();
        let mut meet = |id: &str| {
            if wanted.remove(id) {
                found.insert(id.to_owned());
            }
            !wanted.is_empty()
        };
        if meet(head) {
            store.walk(&sql::WALK_ROLES, head, MAX_WALK_NODES, |row| {
                Ok(row.text(2)?.is_none_or(&mut meet))
            })?;
        }
    }
    actions.retain(|a| a.to_node.as_ref().is_some_and(|t| found.contains(t)));
    actions.sort_by(|a, b| b.timestamp.cmp(&a.timestamp).then(a.id.cmp(&b.id)));
    Ok(actions)
}

/// The reference's metadata heuristics (kept as they are, §10.5 #35).
fn describe_metadata(meta: &str) -> (&'static str, String) {
    match serde_json::from_str::<Value>(meta) {
        // Reading a property of `null` throws: the raw text is shown as a carryover.
        Err(_) | Ok(Value::Null) => ("Carryover", meta.to_owned()),
        Ok(v) => match v.get("carryover_message").filter(|c| truthy(c)) {
            Some(Value::String(s)) => ("Carryover", s.clone()),
            Some(other) => ("Carryover", canon::js_json(other)),
            None => ("Metadata", canon::js_json_pretty(&v, 2)),
        },
    }
}

fn quote(text: &str) -> String {
    let text = if utf16_len(text) > 500 {
        format!("{}\n...(truncated)", utf16_prefix(text, 500))
    } else {
        text.to_owned()
    };
    text.split('\n')
        .map(|l| format!("    > {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}
