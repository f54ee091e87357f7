//! Tool policy (C24, spec §12.2; OpenClaw `tool-policy.ts`, `pi-tools.policy.ts`,
//! `tool-policy-pipeline.ts`): which tools an attempt may offer.

use std::collections::BTreeMap;

use regex::Regex;
use serde::Deserialize;

/// An allow/deny pair. `allow: None` (or empty) allows everything not denied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolPolicy {
    pub allow: Option<Vec<String>>,
    pub deny: Option<Vec<String>>,
}

/// A config block with OpenClaw's keys: `tools`, `tools.byProvider.<key>`, `agents.list[].tools`,
/// group and sandbox `tools`, `tools.subagents.tools`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolPolicyConfig {
    pub allow: Option<Vec<String>>,
    pub also_allow: Option<Vec<String>>,
    pub deny: Option<Vec<String>>,
    pub profile: Option<String>,
    #[serde(default)]
    pub by_provider: BTreeMap<String, ToolPolicyConfig>,
}

const GROUPS: &[(&str, &[&str])] = &[
    ("group:memory", &["memory_search", "memory_get"]),
    ("group:web", &["web_search", "web_fetch"]),
    ("group:fs", &["read", "write", "edit", "apply_patch"]),
    ("group:runtime", &["exec", "process"]),
    (
        "group:sessions",
        &[
            "sessions_list",
            "sessions_history",
            "sessions_send",
            "sessions_spawn",
            "session_status",
        ],
    ),
    ("group:ui", &["browser", "canvas"]),
    ("group:automation", &["cron", "gateway"]),
    ("group:messaging", &["message"]),
    ("group:nodes", &["nodes"]),
    ("group:openclaw", OPENCLAW_TOOLS),
    // filo's own name for the same group.
    ("group:filo", OPENCLAW_TOOLS),
];

const OPENCLAW_TOOLS: &[&str] = &[
    "browser",
    "canvas",
    "nodes",
    "cron",
    "message",
    "gateway",
    "agents_list",
    "sessions_list",
    "sessions_history",
    "sessions_send",
    "sessions_spawn",
    "session_status",
    "memory_search",
    "memory_get",
    "web_search",
    "web_fetch",
    "image",
];

/// The tools of a built-in group (`group:fs`, …).
pub fn tool_group(name: &str) -> Option<&'static [&'static str]> {
    GROUPS
        .iter()
        .find(|(g, _)| *g == name)
        .map(|(_, tools)| *tools)
}

/// Trimmed, lower-cased, with aliases `bash → exec` and `apply-patch → apply_patch`.
pub fn normalize_tool_name(name: &str) -> String {
    let n = name.trim().to_lowercase();
    match n.as_str() {
        "bash" => "exec".into(),
        "apply-patch" => "apply_patch".into(),
        _ => n,
    }
}

fn push_unique(out: &mut Vec<String>, name: String) {
    if !out.contains(&name) {
        out.push(name);
    }
}

/// Names normalised and built-in groups expanded, first occurrence kept.
pub fn expand_tool_groups<S: AsRef<str>>(names: &[S]) -> Vec<String> {
    let mut out = Vec::new();
    for name in names {
        let n = normalize_tool_name(name.as_ref());
        match tool_group(&n) {
            Some(tools) => tools
                .iter()
                .for_each(|t| push_unique(&mut out, (*t).to_owned())),
            None => push_unique(&mut out, n),
        }
    }
    out
}

/// The policy of a tool profile: `minimal`, `coding`, `messaging` restrict; `full` and unknown
/// names do not (None).
pub fn profile_policy(profile: &str) -> Option<ToolPolicy> {
    let allow: &[&str] = match profile.trim().to_lowercase().as_str() {
        "minimal" => &["session_status"],
        "coding" => &[
            "group:fs",
            "group:runtime",
            "group:sessions",
            "group:memory",
            "image",
        ],
        "messaging" => &[
            "group:messaging",
            "sessions_list",
            "sessions_history",
            "sessions_send",
            "session_status",
        ],
        _ => return None,
    };
    Some(ToolPolicy {
        allow: Some(allow.iter().map(|s| (*s).to_owned()).collect()),
        deny: None,
    })
}

fn union_allow(base: Option<&Vec<String>>, extra: Option<&Vec<String>>) -> Option<Vec<String>> {
    let extra = match extra {
        Some(e) if !e.is_empty() => e,
        _ => return base.cloned(),
    };
    let mut out = match base {
        Some(b) if !b.is_empty() => b.clone(),
        // alsoAllow without an allow list is additive on top of "everything".
        _ => vec!["*".to_owned()],
    };
    for e in extra {
        push_unique(&mut out, e.clone());
    }
    dedupe(&mut out);
    Some(out)
}

fn dedupe(v: &mut Vec<String>) {
    let mut seen = Vec::with_capacity(v.len());
    v.retain(|s| {
        let fresh = !seen.contains(s);
        if fresh {
            seen.push(s.clone());
        }
        fresh
    });
}

/// The policy a config block imposes (`allow` ∪ `alsoAllow`, `deny`); None when it sets neither.
pub fn pick_tool_policy(config: Option<&ToolPolicyConfig>) -> Option<ToolPolicy> {
    let config = config?;
    let allow = match (&config.allow, &config.also_allow) {
        (Some(a), extra) => union_allow(Some(a), extra.as_ref()),
        (None, Some(extra)) if !extra.is_empty() => union_allow(None, Some(extra)),
        _ => None,
    };
    let deny = config.deny.clone();
    if allow.is_none() && deny.is_none() {
        return None;
    }
    Some(ToolPolicy { allow, deny })
}

/// The `byProvider` entry for a model: `<provider>/<model>` (or the model id itself when it
/// already has a `/`), then `<provider>`; keys compared trimmed and lower-cased.
pub fn provider_tool_policy<'a>(
    by_provider: &'a BTreeMap<String, ToolPolicyConfig>,
    provider: Option<&str>,
    model_id: Option<&str>,
) -> Option<&'a ToolPolicyConfig> {
    let provider = provider
        .map(|p| p.trim().to_lowercase())
        .filter(|p| !p.is_empty())?;
    let model = model_id
        .map(|m| m.trim().to_lowercase())
        .filter(|m| !m.is_empty());
    let full = model.map(|m| {
        if m.contains('/') {
            m
        } else {
            format!("{provider}/{m}")
        }
    });
    let lookup = |key: &str| {
        by_provider
            .iter()
            .find(|(k, _)| k.trim().to_lowercase() == key)
            .map(|(_, v)| v)
    };
    full.as_deref()
        .and_then(lookup)
        .or_else(|| lookup(&provider))
}

/// Tools a sub-agent never gets unless config allows them. OpenClaw's source denies more memory
/// tools than the spec lists (`memory_store`, `memory_recall`, `memory_index_status`,
/// `memory_audit`); the source wins.
pub const DEFAULT_SUBAGENT_TOOL_DENY: &[&str] = &[
    "sessions_list",
    "sessions_history",
    "sessions_send",
    "sessions_spawn",
    "gateway",
    "agents_list",
    "whatsapp_login",
    "session_status",
    "cron",
    "memory_search",
    "memory_get",
    "memory_store",
    "memory_recall",
    "memory_index_status",
    "memory_audit",
];

/// The sub-agent policy: default deny plus config deny; config allow (if any) is the allow list.
pub fn subagent_tool_policy(config: Option<&ToolPolicyConfig>) -> ToolPolicy {
    let mut deny: Vec<String> = DEFAULT_SUBAGENT_TOOL_DENY
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    deny.extend(config.and_then(|c| c.deny.clone()).unwrap_or_default());
    ToolPolicy {
        allow: config.and_then(|c| c.allow.clone()),
        deny: Some(deny),
    }
}

/// The default sandbox policy; `channel_ids` (every chat channel's id) are denied as well.
pub fn sandbox_default_policy(channel_ids: &[&str]) -> ToolPolicy {
    let allow = [
        "exec",
        "process",
        "read",
        "write",
        "edit",
        "apply_patch",
        "image",
        "sessions_list",
        "sessions_history",
        "sessions_send",
        "sessions_spawn",
        "session_status",
    ];
    let mut deny: Vec<String> = ["browser", "canvas", "nodes", "cron", "gateway"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    deny.extend(channel_ids.iter().map(|c| normalize_tool_name(c)));
    ToolPolicy {
        allow: Some(allow.iter().map(|s| (*s).to_owned()).collect()),
        deny: Some(deny),
    }
}

#[derive(Debug, Clone)]
enum Pattern {
    All,
    Exact(String),
    Glob(Regex),
}

impl Pattern {
    fn compile(raw: &str) -> Option<Self> {
        let n = normalize_tool_name(raw);
        if n.is_empty() {
            return None;
        }
        if n == "*" {
            return Some(Self::All);
        }
        if !n.contains('*') {
            return Some(Self::Exact(n));
        }
        let body: Vec<String> = n.split('*').map(regex::escape).collect();
        // Escaped literals joined by `.*` always form a valid pattern.
        Regex::new(&format!("^{}$", body.join(".*")))
            .ok()
            .map(Self::Glob)
    }

    fn matches(&self, name: &str) -> bool {
        match self {
            Self::All => true,
            Self::Exact(v) => v == name,
            Self::Glob(re) => re.is_match(name),
        }
    }
}

/// A policy compiled once and matched against many names.
#[derive(Debug, Clone)]
pub struct PolicyMatcher {
    allow: Vec<Pattern>,
    deny: Vec<Pattern>,
}

fn compile_list(list: Option<&Vec<String>>) -> Vec<Pattern> {
    list.map(|l| {
        expand_tool_groups(l)
            .iter()
            .filter_map(|p| Pattern::compile(p))
            .collect()
    })
    .unwrap_or_default()
}

impl PolicyMatcher {
    pub fn new(policy: &ToolPolicy) -> Self {
        Self {
            allow: compile_list(policy.allow.as_ref()),
            deny: compile_list(policy.deny.as_ref()),
        }
    }

    /// Deny wins; an empty allow list allows; `apply_patch` is allowed whenever `exec` is.
    pub fn allows(&self, name: &str) -> bool {
        let n = normalize_tool_name(name);
        let any = |list: &[Pattern], name: &str| list.iter().any(|p| p.matches(name));
        if any(&self.deny, &n) {
            return false;
        }
        self.allow.is_empty()
            || any(&self.allow, &n)
            || (n == "apply_patch" && any(&self.allow, "exec"))
    }
}

/// Whether `name` passes `policy` (no policy allows everything).
pub fn is_tool_allowed(name: &str, policy: Option<&ToolPolicy>) -> bool {
    policy.is_none_or(|p| PolicyMatcher::new(p).allows(name))
}

/// Whether `name` passes every policy.
pub fn is_tool_allowed_by_all(name: &str, policies: &[Option<&ToolPolicy>]) -> bool {
    policies.iter().all(|p| is_tool_allowed(name, *p))
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
