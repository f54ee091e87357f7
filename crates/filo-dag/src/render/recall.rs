//! `recall`: one node with its budgeted context (spec §7.2).

use crate::error::{DagError, Result};
use crate::read::MAX_WALK_NODES;
use crate::render::preview::{FilterMode, full_text};
use crate::sql;
use crate::store::Store;
use crate::text::{truncate, utf16_len, utf16_prefix};

/// The parameters of the `recall` tool, plus the ref `HEAD` stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecallOptions {
    /// The ref `HEAD` means (the reference hard-wires `PI_HEAD`).
    pub ref_name: String,
    /// Hash prefix, `pi:<id>`, external id or `HEAD`.
    pub hash: String,
    /// Total character budget (UTF-16 units).
    pub budget: usize,
    /// Per-node budget of the context entries.
    pub context_budget: usize,
    /// Which context nodes are shown (the target always is).
    pub filter: FilterMode,
}

impl RecallOptions {
    /// The tool defaults for `hash`: budget 5000, context budget 200, default filter, `PI_HEAD`.
    pub fn new(hash: impl Into<String>) -> Self {
        Self {
            ref_name: "PI_HEAD".into(),
            hash: hash.into(),
            budget: 5000,
            context_budget: 200,
            filter: FilterMode::Default,
        }
    }
}

fn resolve(store: &Store, opts: &RecallOptions) -> Result<String> {
    let x = opts.hash.strip_prefix("pi:").unwrap_or(&opts.hash);
    if x == "HEAD" {
        return store.get_ref(&opts.ref_name)?.ok_or(DagError::NoHead);
    }
    if let Some(id) = store.node_id_by_external_id(x)? {
        return Ok(id);
    }
    store.resolve_prefix(x)
}

/// How many ancestors of `start` (inclusive) pass the filter: one walk, no blob reads.
fn count_visible(store: &Store, start: Option<&str>, filter: FilterMode) -> Result<usize> {
    let Some(start) = start else { return Ok(0) };
    let mut total = 0usize;
    store.walk(&sql::WALK_ROLES, start, MAX_WALK_NODES, |row| {
        if row.text(3)?.is_some_and(|r| filter.shows(r)) {
            total += 1;
        }
        Ok(true)
    })?;
    Ok(total)
}

/// Renders `recall`.
///
/// Two fixes of spec §10.5, both output-visible only: the chain is walked only until the budget
/// is spent (#29; the context is counted by one CTE instead of materialized), and the remaining
/// budget for the target is clamped at 0 (#30; the reference can print
/// `showing -179/58 chars` with an empty text).
pub fn recall(store: &Store, opts: &RecallOptions) -> Result<String> {
    store.read(|| render(store, opts))
}

fn render(store: &Store, opts: &RecallOptions) -> Result<String> {
    let id = resolve(store, opts)?;
    let target = store
        .node(&id)?
        .ok_or_else(|| DagError::NodeMissing(crate::short_id(&id).into()))?;
    let (b, c) = (opts.budget, opts.context_budget);
    let total = count_visible(store, target.parent_id.as_deref(), opts.filter)?;
    // reserve = B − min(len(context) × C, B / 2); the context may use B − reserve.
    let allowed = ((total as f64) * (c as f64)).min(b as f64 / 2.0);

    let mut entries: Vec<String> = Vec::new();
    let mut used = 0usize;
    let mut omitted = 0usize;
    let mut seen = 0usize;
    let mut next = target.parent_id.clone();
    let mut page = 64usize;
    'walk: while let Some(start) = next.take() {
        let nodes = store.lineage(&start, Some(page))?;
        next = nodes
            .last()
            .and_then(|n| n.parent_id.clone())
            .filter(|_| nodes.len() == page);
        page = page.saturating_mul(2);
        let visible: Vec<_> = nodes
            .iter()
            .filter(|n| opts.filter.shows(&n.role))
            .collect();
        let blobs = store.blobs(visible.iter().flat_map(|n| &n.parts))?;
        for node in visible {
            let index = total.saturating_sub(seen + 1);
            let text = truncate(&full_text(node, &blobs), c);
            let entry = format!(
                "  {{ role: \"{}\", text: \"{text}\" }}  // archived",
                node.role
            );
            let len = utf16_len(&entry);
            if (used + len) as f64 > allowed && seen > 0 {
                omitted = index + 1;
                break 'walk;
            }
            entries.push(entry);
            used += len;
            omitted = index;
            seen += 1;
        }
    }
    entries.reverse();

    let blobs = store.blobs(&target.parts)?;
    let text = target_text(&full_text(&target, &blobs), b.saturating_sub(used));
    let config = target
        .config_json
        .clone()
        .unwrap_or_else(|| "// config: not available for this node".into());
    let mut lines = vec![
        "--- archived node content ---".to_owned(),
        "{".into(),
        format!("  config: {config},"),
        "  contents: [".into(),
    ];
    if omitted > 0 {
        lines.push(format!("    // ... {omitted} earlier turns omitted"));
    }
    lines.extend(entries.into_iter().map(|e| format!("  {e},")));
    lines.push(format!(
        "    {{ role: \"{}\", text: \"{text}\" }}  // <-- TARGET NODE ({})",
        target.role,
        target.label()
    ));
    lines.extend([
        "  ]".to_owned(),
        "}".into(),
        "--- end of archive ---".into(),
    ]);
    Ok(lines.join("\n"))
}

fn target_text(text: &str, remaining: usize) -> String {
    let len = utf16_len(text);
    if len <= remaining {
        return text.to_owned();
    }
    format!(
        "{}\n    // text truncated (showing {remaining}/{len} chars)...",
        utf16_prefix(text, remaining)
    )
}
