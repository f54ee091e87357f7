//! `life`: the DAG around a focus node (spec §7.1).
//!
//! Data access is a fixed number of queries whatever the size: one recursive CTE for the chain,
//! one for the focus subtree (bounded by `max_depth`), one for the siblings, one grouped CTE for
//! all sibling descendant counts, and one batched blob load.

use std::collections::HashMap;
use std::fmt::Write as _;

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
    let mut out = String::new();
    write_age(&mut out, now_ms, timestamp);
    out
}

/// [`age`], appended to `out`.
fn write_age(out: &mut String, now_ms: i64, timestamp: i64) {
    let diff = now_ms - timestamp;
    // Writing to a `String` cannot fail.
    let _ = if diff < 1_000 {
        out.write_str("now")
    } else if diff < 60_000 {
        write!(out, "{}s ago", diff / 1_000)
    } else if diff < 3_600_000 {
        write!(out, "{}m ago", diff / 60_000)
    } else {
        write!(out, "{}h ago", diff / 3_600_000)
    };
}

/// One open level of [`View::tree`]: its visible children, the next one to draw, and the gutter
/// length of their lines.
type Level<'n> = (Vec<(&'n Node, usize)>, usize, usize);

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

    /// Appends a node's line (without its tree prefix) to `out`.
    fn line(&self, node: &Node, out: &mut String) {
        // The id column: `[pi:<external id>]` or `[<short id>]`, blank of the same width (in
        // UTF-16 units) for an assistant's tool call.
        let (open, id) = match &node.external_id {
            Some(ext) => ("[pi:", ext.as_str()),
            None => ("[", node.short()),
        };
        if has_tool_call(node, &self.blobs) {
            let width = open.len() + utf16_len(id) + 1;
            out.extend(std::iter::repeat_n(' ', width));
        } else {
            out.push_str(open);
            out.push_str(id);
            out.push(']');
        }
        let is_focus = node.id == self.focus;
        let is_head = Some(node.id.as_str()) == self.head;
        let markers = match (is_focus, is_head) {
            (true, true) => "  <-- FOCUS, HEAD",
            (true, false) => "  <-- FOCUS",
            (false, true) => "  <-- HEAD",
            (false, false) => "",
        };
        out.push_str(" (");
        write_age(out, self.now_ms, node.timestamp);
        out.push_str(") ");
        out.push_str(&preview(node, &self.blobs));
        out.push_str(markers);
    }

    /// The children of `id` in the subtree, in rowid order.
    fn kids_of(&self, id: &str) -> &[(&Node, usize)] {
        self.kids.get(id).map(Vec::as_slice).unwrap_or_default()
    }

    /// Visible children of `id` (at raw depth `depth`), descending through hidden ones if asked.
    /// Iterative (a depth-first walk over an explicit stack), so no depth can exhaust the stack.
    fn visible_kids(&self, id: &str, depth: usize) -> Vec<(&Node, usize)> {
        let mut out = Vec::new();
        // Each entry: the siblings still to look at, and their parent's raw depth.
        let mut stack: Vec<(&[(&Node, usize)], usize)> = vec![(self.kids_of(id), depth)];
        while let Some((siblings, d)) = stack.pop() {
            let Some(((kid, kid_depth), rest)) = siblings.split_first() else {
                continue;
            };
            stack.push((rest, d));
            if self.visible(kid) {
                out.push((*kid, *kid_depth));
            } else if self.opts.descend_hidden && d < self.opts.max_depth {
                stack.push((self.kids_of(&kid.id), d + 1));
            }
        }
        out
    }

    /// Appends the child tree of `id`, one line each, every line prefixed with `gutter`.
    /// Iterative: one frame per open level (its visible children, the next one to draw, and the
    /// gutter length of its lines) on an explicit stack.
    fn tree(&self, id: &str, depth: usize, gutter: &mut String, out: &mut String) {
        if depth > self.opts.max_depth {
            return;
        }
        let outer = gutter.len();
        let mut stack: Vec<Level<'_>> = vec![(self.visible_kids(id, depth), 0, outer)];
        while let Some((kids, next, base)) = stack.last_mut() {
            let Some(&(kid, kid_depth)) = kids.get(*next) else {
                stack.pop();
                continue;
            };
            *next += 1;
            let last = *next == kids.len();
            gutter.truncate(*base);
            out.push_str(gutter);
            out.push_str(if last { "└── " } else { "├── " });
            self.line(kid, out);
            out.push('\n');
            gutter.push_str(if last { "    " } else { "│   " });
            if kid_depth < self.opts.max_depth {
                stack.push((self.visible_kids(&kid.id, kid_depth + 1), 0, gutter.len()));
            }
        }
        gutter.truncate(outer);
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

    // Every line ends with a newline but the last one.
    let mut out = String::with_capacity(128 * (chain.len() + siblings_all.len() + subtree.len()));
    let mut gutter = String::new();
    if chain.first().is_some_and(|n| n.parent_id.is_some()) {
        out.push_str("...\n");
    }
    let line = |node: &Node, out: &mut String| {
        view.line(node, out);
        out.push('\n');
    };
    if !layered {
        for node in chain.iter().filter(|n| view.visible(n)) {
            line(node, &mut out);
        }
        if opts.children {
            view.tree(&focus, 0, &mut gutter, &mut out);
        }
    } else {
        let (upper, focus_node) = chain.split_at(chain.len() - 1);
        for node in upper.iter().filter(|n| view.visible(n)) {
            line(node, &mut out);
        }
        let parent = &upper[upper.len() - 1];
        let siblings: Vec<&Node> = siblings_all
            .iter()
            .filter(|n| n.id != focus && view.visible(n))
            .collect();
        if siblings.is_empty() {
            line(&focus_node[0], &mut out);
            view.tree(&focus, 0, &mut gutter, &mut out);
        } else {
            let counts = store.descendant_counts_except(&parent.id, Some(&focus))?;
            for sibling in siblings {
                out.push_str("├── ");
                view.line(sibling, &mut out);
                // Writing to a `String` cannot fail.
                let _ = match counts.get(&sibling.id).copied().unwrap_or(0) {
                    0 => Ok(()),
                    1 => out.write_str(" (1 descendant)"),
                    n => write!(out, " ({n} descendants)"),
                };
                out.push('\n');
            }
            out.push_str("└── ");
            line(&focus_node[0], &mut out);
            gutter.push_str("    ");
            view.tree(&focus, 0, &mut gutter, &mut out);
        }
    }
    out.push_str("--- end of archive ---");
    Ok(out)
}

#[cfg(test)]
#[path = "life_tests.rs"]
mod tests;
