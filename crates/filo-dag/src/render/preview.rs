//! What the tools show of one node: life's one-line preview and recall's full text (spec §7).

use std::collections::HashMap;
use std::hash::BuildHasher;

use serde_json::Value;

use crate::canon;
use crate::model::{Blob, Node, blob_type, role};
use crate::text::{truncate, utf16_len, utf16_prefix};

/// Which nodes a filter mode shows (life and recall).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FilterMode {
    /// Hides `pi_internal` entries.
    #[default]
    Default,
    /// Also hides tool results.
    NoTools,
    /// Only user messages.
    UserOnly,
    /// Everything.
    All,
}

impl FilterMode {
    /// Parses the tool parameter; anything unknown behaves like `default`, as in the reference.
    pub fn parse(s: &str) -> Self {
        match s {
            "no-tools" => Self::NoTools,
            "user-only" => Self::UserOnly,
            "all" => Self::All,
            _ => Self::Default,
        }
    }

    /// Whether a node of this role passes the filter.
    pub fn shows(self, node_role: &str) -> bool {
        match self {
            Self::UserOnly => node_role == role::USER,
            Self::NoTools => node_role != role::TOOL_RESULT,
            Self::All => true,
            Self::Default => node_role != role::PI_INTERNAL,
        }
    }
}

/// The parsed blobs of a node in part order. Missing blobs and content that does not parse are
/// skipped, as the reference's `try { JSON.parse(…) } catch {}` does.
pub(crate) fn parts<'a, S: BuildHasher>(
    node: &Node,
    blobs: &'a HashMap<String, Blob, S>,
) -> Vec<(&'a str, Value)> {
    node.parts
        .iter()
        .filter_map(|h| blobs.get(h))
        .filter_map(|b| Some((b.blob_type.as_str(), b.value()?)))
        .collect()
}

fn str_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// JavaScript truthiness of a JSON value.
pub(crate) fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// `String(x)` for the values the previews interpolate.
fn js_string(v: Option<&Value>) -> String {
    match v {
        None => "undefined".into(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => canon::js_json(other),
    }
}

/// The text parts of a tool result's `content` array.
fn result_texts(v: &Value) -> Vec<&str> {
    v.get("content")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter(|p| str_field(p, "type") == Some("text"))
                .filter_map(|p| str_field(p, "text"))
                .collect()
        })
        .unwrap_or_default()
}

/// The first text part of a legacy `pi_entry`'s `message.content`.
fn entry_text(v: &Value) -> Option<&str> {
    v.get("message")?
        .get("content")?
        .as_array()?
        .iter()
        .find(|p| str_field(p, "type") == Some("text"))
        .and_then(|p| str_field(p, "text"))
}

fn arguments_json(v: &Value) -> String {
    match v.get("arguments") {
        Some(args) if !args.is_null() => canon::js_json(args),
        _ => "{}".into(),
    }
}

/// Whether an assistant node carries a tool call (life hides its hash).
pub(crate) fn has_tool_call<S: BuildHasher>(node: &Node, blobs: &HashMap<String, Blob, S>) -> bool {
    node.role == role::ASSISTANT
        && node
            .parts
            .iter()
            .filter_map(|h| blobs.get(h))
            .any(|b| b.blob_type == blob_type::TOOL_CALL)
}

/// life's preview text of a node.
pub(crate) fn preview<S: BuildHasher>(node: &Node, blobs: &HashMap<String, Blob, S>) -> String {
    let mut texts: Vec<String> = Vec::new();
    let mut calls: Vec<String> = Vec::new();
    let mut tool_name: Option<String> = None;
    let mut result: Option<String> = None;
    let mut meta_type: Option<String> = None;
    for (kind, v) in parts(node, blobs) {
        match kind {
            // `(data as string).replace(…)` throws on a non-string: the part is skipped.
            blob_type::TEXT => {
                if let Some(t) = v.as_str() {
                    texts.push(truncate(&t.replace('\n', " "), 60));
                }
            }
            blob_type::TOOL_CALL => {
                let name = js_string(v.get("name"));
                calls.push(format!("[{name}: {}]", truncate(&arguments_json(&v), 40)));
            }
            blob_type::TOOL_RESULT => {
                tool_name = str_field(&v, "toolName")
                    .filter(|s| !s.is_empty())
                    .map(Into::into);
                let joined = result_texts(&v).join(" ").replace('\n', " ");
                result = Some(truncate(&joined, 40));
            }
            blob_type::PI_META => {
                if let Some(t) = v.get("type").filter(|t| truthy(t)) {
                    meta_type = Some(js_string(Some(t)));
                }
            }
            blob_type::PI_ENTRY => {
                if let Some(t) = entry_text(&v) {
                    texts.push(truncate(&t.replace('\n', " "), 60));
                }
            }
            _ => {}
        }
    }
    if let Some(t) = meta_type {
        return format!("[{t}]");
    }
    let joined = texts.join(" ");
    match node.role.as_str() {
        role::USER if texts.is_empty() => "user: \"(no text)\"".into(),
        role::USER => format!("user: \"{joined}\""),
        role::ASSISTANT if !texts.is_empty() => format!("assistant: \"{joined}\""),
        role::ASSISTANT if !calls.is_empty() => format!("assistant: {}", calls.join(", ")),
        role::ASSISTANT => "assistant: (no content)".into(),
        role::TOOL_RESULT => {
            let name = tool_name.unwrap_or_else(|| "tool".into());
            let out = result
                .filter(|r| !r.is_empty())
                .unwrap_or_else(|| "(no output)".into());
            format!("[{name}]: \"{out}\"")
        }
        other if texts.is_empty() => format!("({other})"),
        other => format!("{other}: \"{joined}\""),
    }
}

/// recall's full text of a node: the contributions of its blobs joined with `\n`.
pub(crate) fn full_text<S: BuildHasher>(node: &Node, blobs: &HashMap<String, Blob, S>) -> String {
    let mut out: Vec<String> = Vec::new();
    for (kind, v) in parts(node, blobs) {
        match kind {
            blob_type::TEXT | blob_type::THINKING => out.push(js_string(Some(&v))),
            blob_type::TOOL_CALL => {
                let name = js_string(v.get("name"));
                out.push(format!("[tool_call: {name}({})]", arguments_json(&v)));
            }
            blob_type::TOOL_RESULT => {
                let name = js_string(v.get("toolName"));
                let joined = result_texts(&v).join("\n");
                let cut = utf16_prefix(&joined, 200);
                let more = if utf16_len(&joined) > 200 { "..." } else { "" };
                out.push(format!("[tool_result: {name} → {cut}{more}]"));
            }
            blob_type::PI_ENTRY => {
                if let Some(t) = entry_text(&v) {
                    out.push(t.to_owned());
                }
            }
            blob_type::PI_META => {
                let t = v.get("type").filter(|t| truthy(t));
                out.push(format!(
                    "[{}]",
                    t.map_or_else(|| "meta".into(), |t| js_string(Some(t)))
                ));
            }
            blob_type::INLINE_DATA => out.push("[inline_data]".into()),
            _ => {}
        }
    }
    out.join("\n")
}
