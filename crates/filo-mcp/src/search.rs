//! `tool_search` (pi 1.6): BM25 over the tools that are not declared yet (`deferred` and
//! `codemode` exposure), declaring the matches for the next model call.
//!
//! The ranking is pi's `Bm25Ranker`: the description (with schema descriptions and property names)
//! is BM25-scored and length-normalised; a query term in the name counts 3 times its IDF, in the
//! server's name, description or instructions 0.5 times; tools matching more query terms rank
//! first; a tool whose whole local name is in the query gets one more IDF sum; a query that is
//! exactly a tool's name ranks it first.
//!
//! What was loaded is the `tool_search` result's `details.loaded` in the transcript, so a resumed
//! or forked branch declares the same tools again ([`loaded_on_branch`]).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use filo_agent::{AgentMessage, AgentTool, ToolCallContext, ToolError, ToolOutput};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use unicode_normalization::UnicodeNormalization;

use crate::tools::{Loaded, lock};

pub const TOOL_SEARCH: &str = "tool_search";
pub const DEFAULT_LIMIT: usize = 8;

const STOP_WORDS: [&str; 21] = [
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "is", "it", "of", "on",
    "or", "that", "the", "this", "to", "with",
];

/// A naive singular, so `issues` matches `issue`.
fn stem(t: &str) -> String {
    if t.len() > 4 && t.ends_with("ies") {
        return format!("{}y", &t[..t.len() - 3]);
    }
    if t.len() > 4
        && ["ches", "shes", "sses", "xes", "zes"]
            .iter()
            .any(|e| t.ends_with(e))
    {
        return t[..t.len() - 2].to_string();
    }
    if t.len() > 3 && t.ends_with('s') && !t.ends_with("ss") {
        return t[..t.len() - 1].to_string();
    }
    t.to_string()
}

/// Words of a text: identifier boundaries split (`readFile` → `read file`), lowercased, stop
/// words dropped, ASCII words singular.
pub fn tokenize(text: &str) -> Vec<String> {
    let text: String = text.nfc().collect();
    let chars: Vec<char> = text.chars().collect();
    let mut split = String::with_capacity(text.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        if i > 0 && c.is_uppercase() {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            if prev.is_lowercase() || prev.is_ascii_digit() || (prev.is_uppercase() && next_lower) {
                split.push(' ');
            }
        }
        split.push(c);
    }
    split
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && !STOP_WORDS.contains(w))
        .map(|w| {
            if w.chars().all(|c| c.is_ascii_alphanumeric()) {
                stem(w)
            } else {
                w.to_string()
            }
        })
        .collect()
}

/// What a tool is searched by.
#[derive(Debug, Clone)]
pub struct SearchDoc {
    pub name: String,
    /// The description, schema descriptions and property names.
    pub text: String,
    /// The server's name, description and instructions.
    pub namespace: String,
}

/// The description and the schema's descriptions and property names (local `$ref`s followed once).
pub fn schema_text(
    schema: &Value,
    root: &Value,
    parts: &mut Vec<String>,
    seen: &mut HashSet<String>,
) {
    let Some(obj) = schema.as_object() else {
        return;
    };
    if let Some(r) = obj.get("$ref").and_then(Value::as_str)
        && let Some(ptr) = r.strip_prefix('#')
        && seen.insert(r.to_string())
        && let Some(target) = root.pointer(ptr)
    {
        schema_text(target, root, parts, seen);
    }
    if let Some(d) = obj.get("description").and_then(Value::as_str) {
        parts.push(d.to_string());
    }
    if let Some(props) = obj.get("properties").and_then(Value::as_object) {
        for (name, p) in props {
            parts.push(name.clone());
            schema_text(p, root, parts, seen);
        }
    }
    if let Some(items) = obj.get("items") {
        schema_text(items, root, parts, seen);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(vs) = obj.get(key).and_then(Value::as_array) {
            for v in vs {
                schema_text(v, root, parts, seen);
            }
        }
    }
}

fn normalize_name(name: &str) -> String {
    name.trim()
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '$' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

const NAME_WEIGHT: f64 = 3.0;
const NAMESPACE_WEIGHT: f64 = 0.5;
const K1: f64 = 1.2;
const B: f64 = 0.75;

struct Indexed<'a> {
    name: &'a str,
    name_terms: HashSet<String>,
    local_terms: Vec<String>,
    counts: HashMap<String, usize>,
    length: usize,
    namespace_terms: HashSet<String>,
}

/// Rank `docs` for `query`; the best `limit` names with their scores, best first.
pub fn rank(query: &str, docs: &[SearchDoc], limit: usize) -> Vec<(String, f64)> {
    let mut terms: Vec<String> = Vec::new();
    for t in tokenize(query) {
        if !terms.contains(&t) {
            terms.push(t);
        }
    }
    if terms.is_empty() || docs.is_empty() || limit == 0 {
        return Vec::new();
    }
    let indexed: Vec<Indexed<'_>> = docs
        .iter()
        .map(|d| {
            let mut counts = HashMap::new();
            for t in tokenize(&d.text) {
                *counts.entry(t).or_insert(0usize) += 1;
            }
            let local = d.name.rsplit("__").next().unwrap_or(&d.name);
            let mut local_terms: Vec<String> = Vec::new();
            for t in tokenize(local) {
                if !local_terms.contains(&t) {
                    local_terms.push(t);
                }
            }
            Indexed {
                name: &d.name,
                name_terms: tokenize(&d.name).into_iter().collect(),
                local_terms,
                length: counts.values().sum(),
                counts,
                namespace_terms: tokenize(&d.namespace).into_iter().collect(),
            }
        })
        .collect();
    #[allow(clippy::cast_precision_loss)]
    let n = indexed.len() as f64;
    #[allow(clippy::cast_precision_loss)]
    let avg = {
        let a = indexed.iter().map(|d| d.length).sum::<usize>() as f64 / n;
        if a == 0.0 { 1.0 } else { a }
    };
    let idf: Vec<f64> = terms
        .iter()
        .map(|t| {
            #[allow(clippy::cast_precision_loss)]
            let f = indexed
                .iter()
                .filter(|d| {
                    d.name_terms.contains(t)
                        || d.counts.contains_key(t)
                        || d.namespace_terms.contains(t)
                })
                .count() as f64;
            (1.0 + (n - f + 0.5) / (f + 0.5)).ln()
        })
        .collect();
    let full_name_bonus: f64 = idf.iter().sum();
    let exact_query = normalize_name(query);
    let mut matches: Vec<(usize, f64, usize, bool)> = Vec::new();
    for (i, d) in indexed.iter().enumerate() {
        #[allow(clippy::cast_precision_loss)]
        let norm = K1 * (1.0 - B + B * d.length as f64 / avg);
        let mut score = 0.0;
        let mut covered = 0;
        for (t, w_idf) in terms.iter().zip(&idf) {
            #[allow(clippy::cast_precision_loss)]
            let count = *d.counts.get(t).unwrap_or(&0) as f64;
            let weight = if d.name_terms.contains(t) {
                NAME_WEIGHT
            } else {
                0.0
            } + if d.namespace_terms.contains(t) {
                NAMESPACE_WEIGHT
            } else {
                0.0
            } + count * (K1 + 1.0) / (count + norm);
            if weight > 0.0 {
                covered += 1;
            }
            score += w_idf * weight;
        }
        if score == 0.0 {
            continue;
        }
        if !d.local_terms.is_empty() && d.local_terms.iter().all(|t| terms.contains(t)) {
            score += full_name_bonus;
        }
        let normalized = normalize_name(d.name);
        let exact = normalized == exact_query || normalized.ends_with(&format!("__{exact_query}"));
        matches.push((i, score, covered, exact));
    }
    // Stable: ties keep document order.
    matches.sort_by(|a, b| {
        b.3.cmp(&a.3)
            .then(b.2.cmp(&a.2))
            .then(b.1.partial_cmp(&a.1).unwrap_or(std::cmp::Ordering::Equal))
    });
    matches
        .into_iter()
        .take(limit)
        .map(|(i, s, _, _)| (indexed[i].name.to_string(), s))
        .collect()
}

/// The `tool_search` tool.
pub struct ToolSearch {
    /// Every searchable tool with its search document.
    pub candidates: Vec<(Arc<dyn AgentTool>, SearchDoc)>,
    pub loaded: Loaded,
}

/// pi's description: it names no tool, so it stays the same while servers connect.
pub const DESCRIPTION: &str = "# Tool discovery\n\nSearches over deferred tool metadata with BM25 and exposes matching tools for the next model call.\n\nSome of the tools, such as tools of MCP servers, may not have been provided to you upfront, and you should use this tool (`tool_search`) to search for the required tools. For MCP tool discovery, always use `tool_search`.";

impl AgentTool for ToolSearch {
    fn name(&self) -> &str {
        TOOL_SEARCH
    }
    fn label(&self) -> &str {
        TOOL_SEARCH
    }
    fn description(&self) -> &str {
        DESCRIPTION
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Search query for deferred tools."},
                "limit": {"type": "number", "description": format!("Maximum number of tools to return. Defaults to {DEFAULT_LIMIT}.")}
            },
            "required": ["query"]
        })
    }
    fn execute(&self, ctx: ToolCallContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let query = ctx.args.get("query").and_then(Value::as_str).unwrap_or("");
            if query.trim().is_empty() {
                return Err(ToolError::failed("query must not be empty"));
            }
            let limit = match ctx.args.get("limit") {
                None | Some(Value::Null) => DEFAULT_LIMIT,
                Some(v) => match v.as_f64() {
                    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                    Some(f) if f.fract() == 0.0 && f > 0.0 => f.min(1000.0) as usize,
                    _ => return Err(ToolError::failed("limit must be a positive integer")),
                },
            };
            let mut loaded = lock(&self.loaded);
            let docs: Vec<SearchDoc> = self
                .candidates
                .iter()
                .filter(|(t, _)| !loaded.contains(t.name()))
                .map(|(_, d)| d.clone())
                .collect();
            let found = rank(query, &docs, limit);
            let mut lines = Vec::new();
            for (name, _) in &found {
                loaded.insert(name.clone());
                let description = self
                    .candidates
                    .iter()
                    .find(|(t, _)| t.name() == name)
                    .map(|(t, _)| {
                        t.description()
                            .trim()
                            .lines()
                            .next()
                            .unwrap_or("")
                            .to_string()
                    })
                    .unwrap_or_default();
                lines.push(format!("- {name}: {description}"));
            }
            let text = if found.is_empty() {
                "No matching tools found.".to_string()
            } else {
                format!(
                    "Loaded {} tool{}. They are available from your next call:\n{}",
                    found.len(),
                    if found.len() == 1 { "" } else { "s" },
                    lines.join("\n")
                )
            };
            let names: Vec<&String> = found.iter().map(|(n, _)| n).collect();
            Ok(ToolOutput::text(text).with_details(json!({"loaded": names})))
        })
    }
}

/// The tools `tool_search` loaded on this branch: every successful `tool_search` result's
/// `details.loaded`.
pub fn loaded_on_branch(messages: &[AgentMessage]) -> HashSet<String> {
    let mut out = HashSet::new();
    for m in messages {
        let Some(r) = m.as_tool_result() else {
            continue;
        };
        if r.tool_name != TOOL_SEARCH || r.is_error {
            continue;
        }
        if let Some(list) = r
            .details
            .as_ref()
            .and_then(|d| d.get("loaded"))
            .and_then(Value::as_array)
        {
            out.extend(list.iter().filter_map(Value::as_str).map(str::to_string));
        }
    }
    out
}
