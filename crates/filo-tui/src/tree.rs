//! `/tree`'s model: the session file's entries as a tree (every branch), with pi 0.73's filters
//! (default, no-tools, user-only, labeled-only, all), search, folding and labels. An entry a
//! filter hides keeps its children visible under its nearest visible ancestor. Keys and drawing
//! are in `tree_view`.

use std::collections::{HashMap, HashSet};

use filo_ai::{ContentBlock, Message, StopReason, UserContent};
use filo_session::{EntryKind, SessionEntry, SessionManager, SessionMessage};

/// pi's filter modes, in cycling order.
pub const FILTERS: [&str; 5] = ["default", "no-tools", "user-only", "labeled-only", "all"];

/// What kind of entry a node is, for the filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    User,
    /// An assistant message with text (or an error, or aborted).
    Assistant,
    /// An assistant message with only tool calls (hidden unless it is the leaf).
    ToolCallsOnly,
    ToolResult,
    /// Labels, model and thinking changes, session names, custom entries.
    Setting,
    /// Compactions, branch summaries, bash runs, custom messages.
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub id: String,
    pub parent: Option<String>,
    pub kind: NodeKind,
    /// One line, as pi shows it (`user: …`, `assistant: …`, `[bash: ls]`).
    pub text: String,
    pub label: Option<String>,
    /// When the label was set (ms since the epoch).
    pub label_ms: Option<i64>,
}

/// Each visible node's visible parent, and each visible parent's visible children.
type Links<'a> = (
    HashMap<&'a str, Option<&'a str>>,
    HashMap<Option<&'a str>, Vec<&'a str>>,
);

/// Where a row sits, while [`Tree::rows`] lays the tree out.
struct Layout<'a> {
    id: &'a str,
    /// Levels in (before the shift left when there are several roots).
    indent: usize,
    /// The row's parent branches (its children go one level further in).
    after_branch: bool,
    /// The row starts a branch: `├─ `/`└─ `.
    connector: bool,
    /// The last of its siblings.
    last: bool,
    /// Levels with a vertical line: (level, whether the branch there continues below).
    gutters: Vec<(usize, bool)>,
}

/// A row of the visible tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub id: String,
    /// pi's gutter before the row: `│  ` for each open branch above, then `├─ `/`└─ ` where the
    /// row starts a branch (`⊟`/`⊞` for the dash when it folds / is folded).
    pub gutter: String,
    /// The row starts a branch (its gutter ends in a connector); a folded row without one shows
    /// `⊞ ` after the gutter instead.
    pub connector: bool,
    pub text: String,
    pub label: Option<String>,
    pub label_ms: Option<i64>,
    pub on_path: bool,
    /// Has visible children and starts a branch (or is a root): can be folded.
    pub foldable: bool,
    pub folded: bool,
}

/// pi's one-line form: newlines and tabs become spaces, the ends trimmed.
fn one_line(s: &str) -> String {
    s.replace(['\n', '\t'], " ").trim().to_string()
}

/// At most `n` characters of `s` (pi cuts message text at 200 before showing it).
fn cut(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// pi's path form: the home directory as `~`.
fn short_path(p: &str) -> String {
    match std::env::var("HOME") {
        Ok(home) if !home.is_empty() && p.starts_with(&home) => format!("~{}", &p[home.len()..]),
        _ => p.to_string(),
    }
}

fn blocks_text(b: &[ContentBlock]) -> String {
    b.iter().filter_map(ContentBlock::as_text).collect()
}

fn tool_call_text(name: &str, args: &serde_json::Value) -> String {
    let s = |k: &str| match args.get(k) {
        Some(serde_json::Value::String(v)) => v.clone(),
        Some(serde_json::Value::Null) | None => String::new(),
        Some(v) => v.to_string(),
    };
    let path = |dflt: &str| {
        let p = [s("path"), s("file_path")]
            .into_iter()
            .find(|p| !p.is_empty())
            .unwrap_or_else(|| dflt.to_string());
        short_path(&p)
    };
    match name {
        "read" => {
            let (offset, limit) = (args.get("offset"), args.get("limit"));
            let mut shown = path("");
            if offset.is_some() || limit.is_some() {
                let start = offset.and_then(serde_json::Value::as_i64).unwrap_or(1);
                shown.push_str(&format!(":{start}"));
                if let Some(l) = limit.and_then(serde_json::Value::as_i64) {
                    shown.push_str(&format!("-{}", start + l - 1));
                }
            }
            format!("[read: {shown}]")
        }
        "write" | "edit" => format!("[{name}: {}]", path("")),
        "ls" => format!("[ls: {}]", short_path(&non_empty(s("path"), "."))),
        "bash" => {
            let raw = s("command");
            let more = if raw.chars().count() > 50 { "..." } else { "" };
            format!("[bash: {}{more}]", cut(&one_line(&raw), 50))
        }
        "grep" => format!(
            "[grep: /{}/ in {}]",
            s("pattern"),
            short_path(&non_empty(s("path"), "."))
        ),
        "find" => format!(
            "[find: {} in {}]",
            s("pattern"),
            short_path(&non_empty(s("path"), "."))
        ),
        _ => {
            let json = args.to_string();
            let more = if json.chars().count() > 40 { "..." } else { "" };
            format!("[{name}: {}{more}]", cut(&json, 40))
        }
    }
}

fn non_empty(s: String, dflt: &str) -> String {
    if s.is_empty() { dflt.to_string() } else { s }
}

fn node_of(e: &SessionEntry, calls: &HashMap<String, (String, serde_json::Value)>) -> Node {
    let (kind, text) = match &e.kind {
        EntryKind::Message(SessionMessage::Llm(Message::User(u))) => {
            let t = match &u.content {
                UserContent::Text(t) => t.clone(),
                UserContent::Blocks(b) => blocks_text(b),
            };
            (NodeKind::User, format!("user: {}", one_line(&cut(&t, 200))))
        }
        EntryKind::Message(SessionMessage::Llm(Message::Assistant(a))) => {
            let t = one_line(&cut(&a.text(), 200));
            if !t.is_empty() {
                (NodeKind::Assistant, format!("assistant: {t}"))
            } else if a.stop_reason == StopReason::Aborted {
                (NodeKind::Assistant, "assistant: (aborted)".into())
            } else if let Some(err) = &a.error_message {
                let err: String = one_line(err).chars().take(80).collect();
                (NodeKind::Assistant, format!("assistant: {err}"))
            } else {
                (NodeKind::ToolCallsOnly, "assistant: (no content)".into())
            }
        }
        EntryKind::Message(SessionMessage::Llm(Message::ToolResult(t))) => {
            let text = match calls.get(&t.tool_call_id) {
                Some((name, args)) => tool_call_text(name, args),
                None => format!("[{}]", t.tool_name),
            };
            (NodeKind::ToolResult, text)
        }
        EntryKind::Message(SessionMessage::BashExecution(b)) => {
            (NodeKind::Other, format!("[bash]: {}", one_line(&b.command)))
        }
        EntryKind::Message(_) => (NodeKind::Other, "[message]".into()),
        EntryKind::Compaction { tokens_before, .. } => (
            NodeKind::Other,
            format!("[compaction: {}k tokens]", (tokens_before + 500) / 1000),
        ),
        EntryKind::BranchSummary { summary, .. } => (
            NodeKind::Other,
            format!("[branch summary]: {}", one_line(summary)),
        ),
        EntryKind::CustomMessage { custom_type, .. } => {
            (NodeKind::Other, format!("[{custom_type}]"))
        }
        EntryKind::ModelChange { model_id, .. } => {
            (NodeKind::Setting, format!("[model: {model_id}]"))
        }
        EntryKind::ThinkingLevelChange { thinking_level } => {
            (NodeKind::Setting, format!("[thinking: {thinking_level}]"))
        }
        EntryKind::Custom { custom_type, .. } => {
            (NodeKind::Setting, format!("[custom: {custom_type}]"))
        }
        EntryKind::Label { label, .. } => (
            NodeKind::Setting,
            format!("[label: {}]", label.as_deref().unwrap_or("(cleared)")),
        ),
        EntryKind::SessionInfo { name } => (NodeKind::Setting, format!("[title: {name}]")),
        EntryKind::ContextEdit { target_id, .. } => {
            (NodeKind::Setting, format!("[context edit: {target_id}]"))
        }
        EntryKind::Unknown { .. } => (NodeKind::Setting, "[unknown entry]".into()),
    };
    Node {
        id: e.id.clone(),
        parent: e.parent_id.clone(),
        kind,
        text,
        label: None,
        label_ms: None,
    }
}

/// Siblings as pi orders them: oldest first, the one on the current path before the rest.
fn pi_order<'a>(mut v: Vec<&'a SessionEntry>, path: &HashSet<String>) -> Vec<&'a SessionEntry> {
    v.sort_by_key(|e| filo_session::ids::ms_from_iso(&e.timestamp).unwrap_or(i64::MIN));
    v.sort_by_key(|e| !path.contains(&e.id));
    v
}

/// The session's tree, with what the view adds: filter, search, folds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tree {
    /// Depth-first; siblings oldest first, the one on the current path first of all (as pi).
    pub nodes: Vec<Node>,
    pub leaf: Option<String>,
    path: HashSet<String>,
    pub filter: &'static str,
    pub query: String,
    pub folded: HashSet<String>,
}

impl Tree {
    /// Read the session's entries; `filter` is one of [`FILTERS`] (else `default`).
    pub fn from_session(m: &SessionManager, filter: &str) -> Tree {
        let path: HashSet<String> = m.branch_path(None).iter().map(|e| e.id.clone()).collect();
        let ordered = |v| pi_order(v, &path);
        let mut calls = HashMap::new();
        let mut all = Vec::new();
        let mut stack: Vec<&SessionEntry> = ordered(m.roots()).into_iter().rev().collect();
        while let Some(e) = stack.pop() {
            if let EntryKind::Message(SessionMessage::Llm(Message::Assistant(a))) = &e.kind {
                for c in a.tool_calls() {
                    calls.insert(c.id.clone(), (c.name.clone(), c.arguments.clone()));
                }
            }
            all.push(e);
            stack.extend(ordered(m.children(&e.id)).into_iter().rev());
        }
        // When each entry's label was last set (the newest label entry naming it).
        let mut label_ms: HashMap<&str, i64> = HashMap::new();
        for e in &all {
            if let EntryKind::Label { target_id, .. } = &e.kind
                && let Some(ms) = filo_session::ids::ms_from_iso(&e.timestamp)
            {
                let t = label_ms.entry(target_id.as_str()).or_insert(ms);
                *t = (*t).max(ms);
            }
        }
        let nodes = all
            .iter()
            .map(|e| {
                let mut n = node_of(e, &calls);
                n.label = m.label(&e.id).map(str::to_string);
                n.label_ms = n.label.as_ref().and(label_ms.get(e.id.as_str()).copied());
                n
            })
            .collect();
        Tree {
            nodes,
            leaf: m.leaf_id().map(str::to_string),
            path,
            filter: FILTERS
                .iter()
                .copied()
                .find(|f| *f == filter)
                .unwrap_or("default"),
            query: String::new(),
            folded: HashSet::new(),
        }
    }

    fn passes(&self, n: &Node) -> bool {
        let leaf = self.leaf.as_deref() == Some(n.id.as_str());
        if n.kind == NodeKind::ToolCallsOnly && !leaf {
            return false;
        }
        let ok = match self.filter {
            "user-only" => n.kind == NodeKind::User,
            "no-tools" => !matches!(n.kind, NodeKind::Setting | NodeKind::ToolResult),
            "labeled-only" => n.label.is_some(),
            "all" => true,
            _ => n.kind != NodeKind::Setting,
        };
        if !ok {
            return false;
        }
        let hay = format!("{} {}", n.label.as_deref().unwrap_or(""), n.text).to_lowercase();
        self.query
            .to_lowercase()
            .split_whitespace()
            .all(|w| hay.contains(w))
    }

    /// Each node's nearest visible ancestor (`None`: a visible root) and the visible children.
    fn visible_links(&self) -> Links<'_> {
        let shown: Vec<bool> = self.nodes.iter().map(|n| self.passes(n)).collect();
        let by_id: HashMap<&str, usize> = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.id.as_str(), i))
            .collect();
        let mut parent_of = HashMap::new();
        let mut children: HashMap<Option<&str>, Vec<&str>> = HashMap::new();
        for (i, n) in self.nodes.iter().enumerate() {
            if !shown[i] {
                continue;
            }
            let mut p = n.parent.as_deref();
            while let Some(id) = p {
                match by_id.get(id) {
                    Some(&j) if shown[j] => break,
                    Some(&j) => p = self.nodes[j].parent.as_deref(),
                    None => p = None,
                }
            }
            parent_of.insert(n.id.as_str(), p);
            children.entry(p).or_default().push(n.id.as_str());
        }
        (parent_of, children)
    }

    /// The rows shown: filtered, searched, folded branches closed, with pi's gutters. pi's
    /// layout: a chain of single children stays at its parent's indent; the children of a
    /// branch point go one level in, and so does the first row after a branch start; each level
    /// is three cells wide, `├─ `/`└─ ` where a branch starts and `│  ` down the levels whose
    /// branch has more siblings below. Several visible roots hang off an invisible common root.
    pub fn rows(&self) -> Vec<Row> {
        let (parent_of, children) = self.visible_links();
        let by_id: HashMap<&str, &Node> = self.nodes.iter().map(|n| (n.id.as_str(), n)).collect();
        let mut rows = Vec::new();
        let roots = children.get(&None).cloned().unwrap_or_default();
        let many_roots = roots.len() > 1;
        let mut stack: Vec<Layout<'_>> = roots
            .iter()
            .enumerate()
            .rev()
            .map(|(i, id)| Layout {
                id,
                indent: usize::from(many_roots),
                after_branch: many_roots,
                connector: false,
                last: i + 1 == roots.len(),
                gutters: Vec::new(),
            })
            .collect();
        while let Some(at) = stack.pop() {
            let id = at.id;
            let kids = children.get(&Some(id)).cloned().unwrap_or_default();
            let parent = parent_of.get(id).copied().flatten();
            let siblings = children.get(&parent).map_or(0, Vec::len);
            let foldable = !kids.is_empty() && (parent.is_none() || siblings > 1);
            let folded = self.folded.contains(id);
            let shown_indent = if many_roots {
                at.indent.saturating_sub(1)
            } else {
                at.indent
            };
            let mut gutter = String::new();
            for level in 0..shown_indent {
                if let Some(&(_, open)) = at.gutters.iter().find(|(l, _)| *l == level) {
                    gutter.push_str(if open { "│  " } else { "   " });
                } else if at.connector && level + 1 == shown_indent {
                    gutter.push(if at.last { '└' } else { '├' });
                    gutter.push(match (folded, foldable) {
                        (true, _) => '⊞',
                        (false, true) => '⊟',
                        _ => '─',
                    });
                    gutter.push(' ');
                } else {
                    gutter.push_str("   ");
                }
            }
            let n = by_id[id];
            rows.push(Row {
                id: id.to_string(),
                gutter,
                connector: at.connector,
                text: n.text.clone(),
                label: n.label.clone(),
                label_ms: n.label_ms,
                on_path: self.path.contains(id),
                foldable,
                folded,
            });
            if folded {
                continue;
            }
            let branches = kids.len() > 1;
            let indent = if branches || (at.after_branch && at.indent > 0) {
                at.indent + 1
            } else {
                at.indent
            };
            let mut gutters = at.gutters.clone();
            if at.connector {
                gutters.push((shown_indent.saturating_sub(1), !at.last));
            }
            for (i, k) in kids.iter().enumerate().rev() {
                stack.push(Layout {
                    id: k,
                    indent,
                    after_branch: branches,
                    connector: branches,
                    last: i + 1 == kids.len(),
                    gutters: gutters.clone(),
                });
            }
        }
        rows
    }

    /// Where a branch-wise move from row `at` lands (pi's Ctrl+←/→ when nothing folds).
    pub fn branch_move(&self, rows: &[Row], at: usize, up: bool) -> usize {
        let (parent_of, children) = self.visible_links();
        let index: HashMap<&str, usize> = rows
            .iter()
            .enumerate()
            .map(|(i, r)| (r.id.as_str(), i))
            .collect();
        let Some(mut cur) = rows.get(at).map(|r| r.id.as_str()) else {
            return at;
        };
        loop {
            if up {
                let Some(p) = parent_of.get(cur).copied().flatten() else {
                    return index.get(cur).copied().unwrap_or(at);
                };
                if children.get(&Some(p)).map_or(0, Vec::len) > 1
                    && let Some(&i) = index.get(cur)
                    && i < at
                {
                    return i;
                }
                cur = p;
            } else {
                match children.get(&Some(cur)).map(Vec::as_slice) {
                    None | Some([]) => return index.get(cur).copied().unwrap_or(at),
                    Some([only]) => cur = only,
                    Some([first, ..]) => return index.get(first).copied().unwrap_or(at),
                }
            }
        }
    }

    /// Set (or clear) a node's label as the session now has it, set at `now_ms`.
    pub fn set_label(&mut self, id: &str, label: Option<String>, now_ms: i64) {
        if let Some(n) = self.nodes.iter_mut().find(|n| n.id == id) {
            n.label_ms = label.as_ref().map(|_| now_ms);
            n.label = label;
        }
    }
}

/// pi's label time: `14:05` today, `3/7 14:05` this year, `25/3/7 14:05` before, in `tz`.
pub fn label_time<Tz: chrono::TimeZone>(ms: i64, now_ms: i64, tz: &Tz) -> String {
    use chrono::{Datelike, Timelike};
    let (Some(at), Some(now)) = (
        tz.timestamp_millis_opt(ms).single(),
        tz.timestamp_millis_opt(now_ms).single(),
    ) else {
        return String::new();
    };
    let time = format!("{:02}:{:02}", at.hour(), at.minute());
    if at.date_naive() == now.date_naive() {
        time
    } else if at.year() == now.year() {
        format!("{}/{} {time}", at.month(), at.day())
    } else {
        format!("{:02}/{}/{} {time}", at.year() % 100, at.month(), at.day())
    }
}

#[cfg(test)]
#[path = "tree_tests.rs"]
mod tests;
