//! What the subscriber remembers about a run's tool calls (C19, spec §8.2): the tool metas, the
//! last tool error and whether a later success clears it.
//!
//! A failed mutating call (a write, an edit, a command, a message send, …) stays the "last tool
//! error" until the same action (same fingerprint) succeeds: a successful read afterwards must
//! not hide that a write failed. Mutation detection and fingerprints follow OpenClaw's
//! `tool-mutation.ts`.

use serde_json::Value;

use crate::subscriber::tool_events::{first_error_line, normalize_tool_name};

const MUTATING_ALWAYS: [&str; 6] = [
    "write",
    "edit",
    "apply_patch",
    "exec",
    "bash",
    "sessions_send",
];
const READ_ONLY_ACTIONS: [&str; 14] = [
    "get", "list", "read", "status", "show", "fetch", "search", "query", "view", "poll", "log",
    "inspect", "check", "probe",
];
const PROCESS_MUTATING_ACTIONS: [&str; 5] = ["write", "send_keys", "submit", "paste", "kill"];
const MESSAGE_MUTATING_ACTIONS: [&str; 9] = [
    "send",
    "reply",
    "thread_reply",
    "threadreply",
    "edit",
    "delete",
    "react",
    "pin",
    "unpin",
];
/// (label, argument keys) of the stable targets a fingerprint names, in order.
const FINGERPRINT_TARGETS: [(&str, &[&str]); 9] = [
    (
        "path",
        &["path", "file_path", "filePath", "filepath", "file"],
    ),
    ("oldpath", &["oldPath", "old_path"]),
    ("newpath", &["newPath", "new_path"]),
    ("to", &["to", "target"]),
    ("messageid", &["messageId", "message_id"]),
    ("sessionkey", &["sessionKey", "session_key"]),
    ("jobid", &["jobId", "job_id"]),
    ("id", &["id"]),
    ("model", &["model"]),
];

fn action_of(args: &Value) -> Option<String> {
    let raw = args.get("action")?.as_str()?.trim().to_lowercase();
    let normalized: String = raw
        .split(|c: char| c.is_whitespace() || c == '-')
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("_");
    (!normalized.is_empty()).then_some(normalized)
}

/// Whether a call changes something outside the conversation.
pub fn is_mutating_tool_call(tool_name: &str, args: &Value) -> bool {
    let name = tool_name.trim().to_lowercase();
    let action = action_of(args);
    let read_only =
        |a: &Option<String>| a.as_deref().is_some_and(|a| READ_ONLY_ACTIONS.contains(&a));
    if MUTATING_ALWAYS.contains(&name.as_str()) {
        return true;
    }
    match name.as_str() {
        "process" => action.is_some_and(|a| PROCESS_MUTATING_ACTIONS.contains(&a.as_str())),
        "message" => {
            action.is_some_and(|a| MESSAGE_MUTATING_ACTIONS.contains(&a.as_str()))
                || args.get("content").is_some_and(Value::is_string)
                || args.get("message").is_some_and(Value::is_string)
        }
        "session_status" => args
            .get("model")
            .and_then(Value::as_str)
            .is_some_and(|m| !m.trim().is_empty()),
        "cron" | "gateway" | "canvas" => !read_only(&action),
        "nodes" => action.as_deref() != Some("list"),
        n if n.ends_with("_actions") => !read_only(&action),
        n => n.starts_with("message_") || n.contains("send"),
    }
}

fn fingerprint_value(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.trim().to_lowercase()).filter(|s| !s.is_empty()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A stable identity of a mutating call (`tool=write|path=/a`), None for read-only calls.
pub fn tool_action_fingerprint(
    tool_name: &str,
    args: &Value,
    meta: Option<&str>,
) -> Option<String> {
    if !is_mutating_tool_call(tool_name, args) {
        return None;
    }
    let mut parts = vec![format!("tool={}", tool_name.trim().to_lowercase())];
    if let Some(action) = action_of(args) {
        parts.push(format!("action={action}"));
    }
    let mut stable = false;
    for (label, keys) in FINGERPRINT_TARGETS {
        if let Some(v) = keys
            .iter()
            .find_map(|k| args.get(*k).and_then(fingerprint_value))
        {
            parts.push(format!("{label}={v}"));
            stable = true;
        }
    }
    let meta = meta
        .map(|m| {
            m.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase()
        })
        .filter(|m| !m.is_empty());
    if let (Some(m), false) = (meta, stable) {
        parts.push(format!("meta={m}"));
    }
    Some(parts.join("|"))
}

/// The last failed tool call of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastToolError {
    pub tool_name: String,
    pub meta: Option<String>,
    /// First line of the error text, at most 400 chars.
    pub error: Option<String>,
    pub mutating_action: bool,
    pub action_fingerprint: Option<String>,
}

impl LastToolError {
    fn same_action(&self, tool_name: &str, meta: Option<&str>, fingerprint: Option<&str>) -> bool {
        if self.action_fingerprint.is_some() || fingerprint.is_some() {
            // Fail closed for mutating calls: only an identical fingerprint is the same action.
            return self.action_fingerprint.as_deref().is_some()
                && self.action_fingerprint.as_deref() == fingerprint;
        }
        self.tool_name == tool_name && self.meta.as_deref().unwrap_or("") == meta.unwrap_or("")
    }
}

/// A finished call as the tracker sees it.
#[derive(Debug, Clone, Copy)]
pub struct FinishedCall<'a> {
    pub tool_name: &'a str,
    pub args: &'a Value,
    pub meta: Option<&'a str>,
    pub is_error: bool,
    /// The result text (for the error line).
    pub output_text: &'a str,
}

/// Tool metas and the last tool error of one run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolTracker {
    /// (normalised tool name, meta) per finished call, in order.
    pub tool_metas: Vec<(String, Option<String>)>,
    pub last_tool_error: Option<LastToolError>,
    /// Successful `cron` calls with `action: "add"`.
    pub successful_cron_adds: u32,
}

impl ToolTracker {
    /// Records a finished call.
    pub fn finish(&mut self, call: FinishedCall<'_>) {
        let name = normalize_tool_name(call.tool_name);
        self.tool_metas
            .push((name.clone(), call.meta.map(str::to_owned)));
        let fingerprint = tool_action_fingerprint(&name, call.args, call.meta);
        if call.is_error {
            self.last_tool_error = Some(LastToolError {
                tool_name: name,
                meta: call.meta.map(str::to_owned),
                error: first_error_line(call.output_text),
                mutating_action: fingerprint.is_some(),
                action_fingerprint: fingerprint,
            });
            return;
        }
        if name == "cron" && action_of(call.args).as_deref() == Some("add") {
            self.successful_cron_adds += 1;
        }
        let keep = self.last_tool_error.as_ref().is_some_and(|last| {
            last.mutating_action && !last.same_action(&name, call.meta, fingerprint.as_deref())
        });
        if !keep {
            self.last_tool_error = None;
        }
    }

    /// Forgets everything (the turn is re-run after a compaction retry).
    pub fn reset(&mut self) {
        *self = Self::default();
    }
}

#[cfg(test)]
#[path = "tool_state_tests.rs"]
mod tests;
