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
        Ok(Some(on_lineage(store, &head, opts.mode, opts.limit)?))
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

/// The first `limit` actions of the mode's types whose `to_node` is `head` or one of its
/// ancestors, newest first (ties by id).
///
/// The candidates are sorted first; the walk up from `head` stops as soon as the first `limit`
/// of them on the lineage are known, i.e. every candidate before the last of those has been met
/// or shown to lie elsewhere. A target that is not a node and no node's parent cannot be on the
/// lineage (unless it is `head` itself): it is settled by two index lookups, without the walk.
/// Only a candidate that is a node elsewhere in the graph makes the walk go on to the root.
fn on_lineage(store: &Store, head: &str, mode: TraceMode, limit: usize) -> Result<Vec<Action>> {
    let mut actions = store.rows(
        &sql::Q_ACTIONS_TO_NODES,
        &[crate::db::P::OptList(mode.types())],
        action_from_row,
    )?;
    actions.sort_by(|a, b| b.timestamp.cmp(&a.timestamp).then(a.id.cmp(&b.id)));
    // The lineage as the reference sees it: the head (even without a node), then each node's
    // parent id (even when that parent is missing).
    let mut found: HashSet<String> = HashSet::new();
    {
        let mut wanted: HashSet<&str> = actions
            .iter()
            .filter_map(|a| a.to_node.as_deref())
            .collect();
        // Targets known to lie nowhere (no node, no node's parent) or known to be in the graph.
        let mut absent: HashSet<&str> = HashSet::new();
        let mut present: HashSet<&str> = HashSet::new();
        // Candidates settled so far (in sort order) and how many of them are on the lineage.
        let mut settled = 0usize;
        let mut shown = 0usize;
        // Takes one more id of the lineage; whether the walk must go on.
        let mut meet = |id: &str, found: &mut HashSet<String>| -> Result<bool> {
            if wanted.remove(id) {
                found.insert(id.to_owned());
            }
            while shown < limit {
                let Some(to) = actions.get(settled).and_then(|a| a.to_node.as_deref()) else {
                    return Ok(false);
                };
                if found.contains(to) {
                    shown += 1;
                } else if !absent.contains(to) {
                    if present.contains(to) || to == head || store.node_or_parent_exists(to)? {
                        // Not met yet: only the rest of the walk can tell.
                        present.insert(to);
                        return Ok(!wanted.is_empty());
                    }
                    absent.insert(to);
                    wanted.remove(to);
                }
                settled += 1;
            }
            Ok(false)
        };
        if meet(head, &mut found)? {
            store.walk(&sql::WALK_ROLES, head, MAX_WALK_NODES, |row| {
                match row.text(2)? {
                    Some(p) => meet(p, &mut found),
                    None => Ok(false),
                }
            })?;
        }
    }
    actions.retain(|a| a.to_node.as_ref().is_some_and(|t| found.contains(t)));
    actions.truncate(limit);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::NewAction;
    use crate::test_support::{Lcg, insert_node};

    /// The early-stopping walk against the plain definition (every action whose target is the
    /// head or a parent id of the head's lineage, sorted, cut at the limit), on random forests
    /// with missing parents and targets on, off and outside the graph.
    #[test]
    fn the_early_stop_gives_what_the_whole_walk_gives() {
        let mut rng = Lcg(11);
        for round in 0..8 {
            let store = Store::open_in_memory().unwrap();
            let n = 400;
            for i in 0..n {
                let parent = match rng.below(10) {
                    0 => None,
                    1 => Some(format!("missing-{}", rng.below(5))),
                    _ if i > 0 => Some(format!("n{}", rng.below(i))),
                    _ => None,
                };
                insert_node(&store, &format!("n{i}"), parent.as_deref());
            }
            let kinds = [
                "BOOT",
                "INCARNATE",
                "HYDRATE_GHOST",
                "SESSION_SWITCH",
                "COMMIT",
            ];
            for k in 0..300 {
                let to = match rng.below(4) {
                    0 => format!("nowhere-{k}"),
                    1 => format!("missing-{}", rng.below(5)),
                    _ => format!("n{}", rng.below(n)),
                };
                store
                    .log_action(&NewAction {
                        timestamp: i64::try_from(rng.below(200)).unwrap(),
                        action_type: kinds[rng.below(kinds.len())].into(),
                        from_node: None,
                        to_node: Some(to),
                        metadata: None,
                    })
                    .unwrap();
            }
            for _ in 0..20 {
                let head = format!("n{}", rng.below(n));
                let mut lineage: HashSet<String> = HashSet::from([head.clone()]);
                for node in store.lineage_cte(&head, usize::MAX).unwrap() {
                    lineage.extend(node.parent_id);
                }
                for mode in [TraceMode::Default, TraceMode::Switches, TraceMode::All] {
                    for limit in [0, 1, 3, 15, 1_000] {
                        let mut want: Vec<Action> = store
                            .actions()
                            .unwrap()
                            .into_iter()
                            .filter(|a| mode.types().is_none_or(|t| t.contains(&&*a.action_type)))
                            .filter(|a| a.to_node.as_ref().is_some_and(|t| lineage.contains(t)))
                            .collect();
                        want.sort_by(|a, b| b.timestamp.cmp(&a.timestamp).then(a.id.cmp(&b.id)));
                        want.truncate(limit);
                        let got = on_lineage(&store, &head, mode, limit).unwrap();
                        assert_eq!(got, want, "round {round} head {head} {mode:?} {limit}");
                    }
                }
            }
        }
    }
}
