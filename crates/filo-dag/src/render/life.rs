//! `life`: the DAG around a focus node (spec §7.1).
//!
//! Data access is a fixed number of queries whatever the size: one recursive CTE for the chain,
//! one for the focus subtree (bounded by `max_depth`), one for the siblings, one grouped CTE for
//! all sibling descendant counts, and one batched blob load.

use std::collections::HashMap;

use crate::error::{DagError, Result};
use crate::model::Node;
use crate::read::BlobMap;
use crate::render::preview::{FilterMode, has_tool_call, preview};
use crate::store::Store;
use crate::text::utf16_len;

/// The parameters of the `life` tool, plus the ref it renders for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LifeOptions {
    /// The ref that is HEAD (`PI_HEAD` for Pi, `terminal_head` for the terminal).
    pub ref_name: String,
    /// Hash prefix, `pi:<id>`, external id or `HEAD`; `None` or empty means HEAD.
    pub focus: Option<String>,
    /// Ancestors shown above the focus.
    pub ancestors: usize,
    /// Whether child branches are drawn.
    pub children: bool,
    /// Which nodes are shown.
    pub filter: FilterMode,
    /// Deepest child level drawn (children of the focus are level 0).
    pub max_depth: usize,
    /// Fix for spec §10.5 #27. The reference drops a hidden child **with its whole subtree**, so in
    /// default mode every conversation after a `model_change` or `thinking_level_change` vanishes
    /// from child trees. When true (the default), the visible descendants of a hidden child are
    /// drawn in its place; hidden nodes still count toward `max_depth`. Set it to false for the
    /// reference output.
    pub descend_hidden: bool,
}

impl Default for LifeOptions {
    fn default() -> Self {
        Self {
            ref_name: "PI_HEAD".into(),
            focus: None,
            ancestors: 3,
            children: true,
            filter: FilterMode::Default,
            max_depth: 10,
            descend_hidden: true,
        }
    }
}

/// `life age`: floored, no day unit, the future is `now`.
pub fn age(now_ms: i64, timestamp: i64) -> String {
    let diff = now_ms - timestamp;
    if diff < 1_000 {
        "now".into()
    } else if diff < 60_000 {
        format!("{}s ago", diff / 1_000)
    } else if diff < 3_600_000 {
        format!("{}m ago", diff / 60_000)
    } else {
        format!("{}h ago", diff / 3_600_000)
    }
}

struct View<'a> {
    opts: &'a LifeOptions,
    focus: &'a str,
    head: Option<&'a str>,
    now_ms: i64,
    blobs: BlobMap,
    kids: HashMap<&'a str, Vec<(&'a Node, usize)>>,
}

impl View<'_> {
    fn visible(&self, node: &Node) -> bool {
        node.id == self.focus
            || Some(node.id.as_str()) == self.head
            || self.opts.filter.shows(&node.role)
    }

    fn line(&self, node: &Node) -> String {
        let label = match &node.external_id {
            Some(ext) => format!("[pi:{ext}]"),
            None => format!("[{}]", node.short()),
        };
        let idcol = if has_tool_call(node, &self.blobs) {
            " ".repeat(utf16_len(&label))
        } else {
            label
        };
        let is_focus = node.id == self.focus;
        let is_head = Some(node.id.as_str()) == self.head;
        let markers = match (is_focus, is_head) {
            (true, true) => "  <-- FOCUS, HEAD",
            (true, false) => "  <-- FOCUS",
            (false, true) => "  <-- HEAD",
            (false, false) => "",
        };
        let age = age(self.now_ms, node.timestamp);
        format!("{idcol} ({age}) {}{markers}", preview(node, &self.blobs))
    }

    /// Visible children of `id` (at raw depth `depth`), descending through hidden ones if asked.
    fn visible_kids(&self, id: &str, depth: usize) -> Vec<(&Node, usize)> {
        let mut out = Vec::new();
        for (kid, kid_depth) in self.kids.get(id).map(Vec::as_slice).unwrap_or_default() {
            if self.visible(kid) {
                out.push((*kid, *kid_depth));
            } else if self.opts.descend_hidden && depth < self.opts.max_depth {
                out.extend(self.visible_kids(&kid.id, depth + 1));
            }
        }
        out
    }

    fn tree(&self, id: &str, depth: usize, gutter: &str, lines: &mut Vec<String>) {
        if depth > self.opts.max_depth {
            return;
        }
        let kids = self.visible_kids(id, depth);
        let count = kids.len();
        for (i, (kid, kid_depth)) in kids.into_iter().enumerate() {
            let last = i + 1 == count;
            let branch = if last { "└── " } else { "├── " };
            lines.push(format!("{gutter}{branch}{}", self.line(kid)));
            let next = format!("{gutter}{}", if last { "    " } else { "│   " });
            self.tree(&kid.id, kid_depth + 1, &next, lines);
        }
    }
}

fn resolve_focus(store: &Store, opts: &LifeOptions, head: Option<&str>) -> Result<String> {
    let asked = opts
        .focus
        .as_deref()
        .filter(|f| !f.is_empty() && *f != "HEAD");
    let focus = match (asked, head) {
        (Some(f), _) => f,
        (None, Some(h)) => h,
        (None, None) => return Err(DagError::NoHeadNoFocus),
    };
    let focus = focus.strip_prefix("pi:").unwrap_or(focus);
    if let Some(id) = store.node_id_by_external_id(focus)? {
        return Ok(id);
    }
    if Some(focus) == head {
        return Ok(focus.to_owned());
    }
    store.resolve_prefix(focus)
}

/// Renders `life` at time `now_ms`. Resolution failures are errors whose `Display` is the
/// reference's text without the `Error: ` prefix.
pub fn life(store: &Store, opts: &LifeOptions, now_ms: i64) -> Result<String> {
    store.read(|| render(store, opts, now_ms))
}

fn render(store: &Store, opts: &LifeOptions, now_ms: i64) -> Result<String> {
    let head = store.get_ref(&opts.ref_name)?;
    let focus = resolve_focus(store, opts, head.as_deref())?;
    let mut chain = store.lineage(&focus, Some(opts.ancestors.saturating_add(1)))?;
    chain.reverse();
    let layered = opts.children && chain.len() >= 2;
    let siblings_all = match chain.len().checked_sub(2).filter(|_| layered) {
        Some(i) => store.children_shown(&chain[i].id)?,
        None => Vec::new(),
    };
    let subtree = if opts.children {
        store.subtree(&focus, opts.max_depth)?
    } else {
        Vec::new()
    };

    let mut hashes: Vec<&str> = chain
        .iter()
        .chain(&siblings_all)
        .chain(subtree.iter().map(|(n, _)| n))
        .flat_map(|n| n.parts.iter().map(String::as_str))
        .collect();
    hashes.sort_unstable();
    hashes.dedup();
    let mut kids: HashMap<&str, Vec<(&Node, usize)>> = HashMap::new();
    for (node, depth) in &subtree {
        if let Some(parent) = node.parent_id.as_deref() {
            kids.entry(parent).or_default().push((node, *depth));
        }
    }
    let view = View {
        opts,
        focus: &focus,
        head: head.as_deref(),
        now_ms,
        blobs: store.blob_map(hashes)?,
        kids,
    };

    let mut lines: Vec<String> = Vec::new();
    if chain.first().is_some_and(|n| n.parent_id.is_some()) {
        lines.push("...".into());
    }
    if !layered {
        lines.extend(
            chain
                .iter()
                .filter(|n| view.visible(n))
                .map(|n| view.line(n)),
        );
        if opts.children {
            view.tree(&focus, 0, "", &mut lines);
        }
    } else {
        let (upper, focus_node) = chain.split_at(chain.len() - 1);
        lines.extend(
            upper
                .iter()
                .filter(|n| view.visible(n))
                .map(|n| view.line(n)),
        );
        let parent = &upper[upper.len() - 1];
        let siblings: Vec<&Node> = siblings_all
            .iter()
            .filter(|n| n.id != focus && view.visible(n))
            .collect();
        if siblings.is_empty() {
            lines.push(view.line(&focus_node[0]));
            view.tree(&focus, 0, "", &mut lines);
        } else {
            let counts = store.descendant_counts(&parent.id)?;
            for sibling in siblings {
                let n = counts.get(&sibling.id).copied().unwrap_or(0);
                let suffix = match n {
                    0 => String::new(),
                    1 => " (1 descendant)".into(),
                    n => format!(" ({n} descendants)"),
                };
                lines.push(format!("├── {}{suffix}", view.line(sibling)));
            }
            lines.push(format!("└── {}", view.line(&focus_node[0])));
            view.tree(&focus, 0, "    ", &mut lines);
        }
    }
    lines.push("--- end of archive ---".into());
    Ok(lines.join("\n"))
}

#[cfg(test)]
#[path = "life_tests.rs"]
mod tests;
