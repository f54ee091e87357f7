//! `/life`: the Playfilo graph around HEAD as a navigable list — HEAD and its ancestors (newest
//! first), the branches leaving each of them (earlier futures abandoned by `tobe` jumps, forks)
//! with their descendant counts, and other agents' heads. Read through the TUI's own read
//! connection to the shared database (SQLite WAL), never through the agent's writer.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use filo_dag::{Blob, Node, Store, blob_type, role};
use serde_json::Value;

use crate::text::truncate;

/// Jumps to a node (target, carryover note).
pub type TravelFn = std::sync::Arc<
    dyn Fn(&str, &str) -> Result<(), filo_core::playfilo::TravelError> + Send + Sync,
>;

/// Where the memory is, which ref is this session's HEAD now (it changes with `/new`), and how to
/// wait for the memory's queued commits.
#[derive(Clone)]
pub struct LifeSource {
    pub db_path: PathBuf,
    pub head_ref: std::sync::Arc<dyn Fn() -> String + Send + Sync>,
    pub flush: std::sync::Arc<dyn Fn() + Send + Sync>,
    /// Travel to a node with a carryover note (the `tobe` flow, done by the memory itself).
    pub travel: TravelFn,
}

/// What a row stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowKind {
    Head,
    Ancestor,
    /// A child of an ancestor off the current line, with how many nodes descend from it.
    Branch {
        descendants: u64,
    },
    /// Another ref's head outside the lines shown.
    OtherHead(String),
}

/// One row of the life view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LifeRow {
    pub node_id: String,
    pub role: String,
    pub preview: String,
    pub age: String,
    pub kind: RowKind,
    /// Refs pointing here (other than this session's head ref).
    pub refs: Vec<String>,
}

/// Ancestors shown.
const MAX_ANCESTORS: usize = 80;

fn blob_text(b: &Blob) -> Option<String> {
    let v = b.value()?;
    match b.blob_type.as_str() {
        blob_type::TEXT | blob_type::THINKING => v.as_str().map(str::to_string),
        blob_type::TOOL_CALL => {
            let name = v.get("name").and_then(Value::as_str).unwrap_or("?");
            let args = v.get("arguments").map(Value::to_string).unwrap_or_default();
            Some(format!("→ {name}({args})"))
        }
        blob_type::TOOL_RESULT => {
            let name = v.get("toolName").and_then(Value::as_str).unwrap_or("?");
            let text = v
                .get("content")
                .and_then(Value::as_array)
                .and_then(|a| a.iter().find_map(|c| c.get("text").and_then(Value::as_str)))
                .unwrap_or("");
            Some(format!("← {name}: {text}"))
        }
        blob_type::PI_META => v
            .get("type")
            .and_then(Value::as_str)
            .map(|t| format!("[{t}]")),
        _ => None,
    }
}

/// A one-line preview of a node.
pub fn preview(store: &Store, node: &Node) -> String {
    let blobs = store.blobs(node.parts.iter()).unwrap_or_default();
    let text: Vec<String> = node
        .parts
        .iter()
        .filter_map(|h| blobs.get(h))
        .filter(|b| b.blob_type != blob_type::THINKING || node.parts.len() == 1)
        .filter_map(blob_text)
        .collect();
    let joined = text
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    truncate(&joined, 200)
}

fn row(store: &Store, node: &Node, kind: RowKind, now_ms: i64) -> LifeRow {
    LifeRow {
        node_id: node.id.clone(),
        role: node.role.clone(),
        preview: preview(store, node),
        age: filo_dag::render::age(now_ms, node.timestamp),
        kind,
        refs: Vec::new(),
    }
}

/// Build the rows around the head ref's node.
pub fn load_rows(
    store: &Store,
    head_ref: &str,
    now_ms: i64,
) -> Result<Vec<LifeRow>, filo_dag::DagError> {
    let Some(head) = store.get_ref(head_ref)? else {
        return Ok(Vec::new());
    };
    let lineage = store.lineage(&head, Some(MAX_ANCESTORS))?;
    let mut rows = Vec::new();
    let mut prev: Option<&str> = None;
    for (i, node) in lineage.iter().enumerate() {
        let kind = if i == 0 {
            RowKind::Head
        } else {
            RowKind::Ancestor
        };
        rows.push(row(store, node, kind, now_ms));
        let counts = store.descendant_counts(&node.id)?;
        for child in store.children(&node.id)? {
            if Some(child.id.as_str()) == prev {
                continue;
            }
            let descendants = counts.get(&child.id).copied().unwrap_or(0);
            rows.push(row(store, &child, RowKind::Branch { descendants }, now_ms));
        }
        prev = Some(node.id.as_str());
    }
    let mut by_id: HashMap<String, usize> = HashMap::new();
    for (i, r) in rows.iter().enumerate() {
        by_id.entry(r.node_id.clone()).or_insert(i);
    }
    for (name, node_id) in store.refs()? {
        if name == head_ref {
            continue;
        }
        match by_id.get(&node_id) {
            Some(i) => rows[*i].refs.push(name),
            None => {
                if let Some(node) = store.node(&node_id)? {
                    rows.push(row(store, &node, RowKind::OtherHead(name), now_ms));
                }
            }
        }
    }
    Ok(rows)
}

/// What the life view is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LifeMode {
    List,
    /// Showing one node (recall output).
    Recall {
        lines: Vec<String>,
        scroll: usize,
    },
    /// Typing the carryover note for a jump to the selected node.
    Note(String),
}

/// The `/life` overlay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LifeView {
    pub rows: Vec<LifeRow>,
    pub selected: usize,
    pub mode: LifeMode,
    pub head_ref: String,
    pub db_path: PathBuf,
}

impl LifeView {
    pub fn open(
        db_path: &Path,
        head_ref: &str,
        now_ms: i64,
    ) -> Result<LifeView, filo_dag::DagError> {
        let store = Store::open_location(&db_path.to_string_lossy(), filo_dag::Create::Never)?;
        let rows = load_rows(&store, head_ref, now_ms)?;
        Ok(LifeView {
            rows,
            selected: 0,
            mode: LifeMode::List,
            head_ref: head_ref.to_string(),
            db_path: db_path.to_path_buf(),
        })
    }

    /// The recall text of the selected node.
    pub fn recall_selected(&self) -> Result<String, filo_dag::DagError> {
        let Some(r) = self.rows.get(self.selected) else {
            return Ok(String::new());
        };
        let store = Store::open_location(&self.db_path.to_string_lossy(), filo_dag::Create::Never)?;
        let mut opts = filo_dag::render::RecallOptions::new(r.node_id.clone());
        opts.ref_name.clone_from(&self.head_ref);
        opts.budget = 20_000;
        filo_dag::render::recall(&store, &opts)
    }
}

/// The navigation log (`/trace`) of this session's head, in local time.
pub fn trace_text(db_path: &Path, head_ref: &str) -> Result<String, filo_dag::DagError> {
    let store = Store::open_location(&db_path.to_string_lossy(), filo_dag::Create::Never)?;
    let opts = filo_dag::render::TraceOptions {
        ref_name: head_ref.to_string(),
        limit: 50,
        mode: filo_dag::render::TraceMode::Default,
    };
    filo_dag::render::trace(&store, &opts, &filo_core::playfilo::SystemZone)
}

/// The role's short label.
pub fn role_label(r: &str) -> &'static str {
    match r {
        role::USER => "user",
        role::ASSISTANT => "asst",
        role::TOOL_RESULT => "tool",
        role::PI_INTERNAL => "meta",
        _ => "node",
    }
}
