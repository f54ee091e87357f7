//! The ordered tool-policy steps of an attempt (C24; OpenClaw `tool-policy-pipeline.ts` and
//! `resolveEffectiveToolPolicy`): profile → provider profile → global → global by-provider →
//! agent → agent by-provider → group, then whatever the caller appends (sandbox, sub-agent).
//! Each step filters the output of the previous one.

use super::policy::{
    PolicyMatcher, ToolPolicy, ToolPolicyConfig, expand_tool_groups, normalize_tool_name,
    pick_tool_policy, profile_policy, provider_tool_policy, tool_group,
};

/// A tool offered to the pipeline; `plugin_id` is set for embedder (plugin) tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolEntry<'a> {
    pub name: &'a str,
    pub plugin_id: Option<&'a str>,
}

/// One filtering step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyStep {
    pub policy: Option<ToolPolicy>,
    pub label: String,
    /// Ignore an allow list that names no core tool (so a plugin-only list cannot hide the core
    /// tools by accident).
    pub strip_plugin_only_allowlist: bool,
}

/// The policies config sets for one agent and model.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EffectiveToolPolicy {
    pub agent_id: Option<String>,
    pub profile: Option<String>,
    pub provider_profile: Option<String>,
    pub profile_also_allow: Option<Vec<String>>,
    pub provider_profile_also_allow: Option<Vec<String>>,
    pub global_policy: Option<ToolPolicy>,
    pub global_provider_policy: Option<ToolPolicy>,
    pub agent_policy: Option<ToolPolicy>,
    pub agent_provider_policy: Option<ToolPolicy>,
}

impl EffectiveToolPolicy {
    /// Resolves global `tools` and the agent's `tools` for a provider and model. The agent's
    /// profile and `alsoAllow` win over the global ones.
    pub fn resolve(
        global: Option<&ToolPolicyConfig>,
        agent: Option<&ToolPolicyConfig>,
        agent_id: Option<&str>,
        provider: Option<&str>,
        model_id: Option<&str>,
    ) -> Self {
        let global_provider =
            global.and_then(|c| provider_tool_policy(&c.by_provider, provider, model_id));
        let agent_provider =
            agent.and_then(|c| provider_tool_policy(&c.by_provider, provider, model_id));
        let also = |a: Option<&ToolPolicyConfig>, b: Option<&ToolPolicyConfig>| {
            a.and_then(|c| c.also_allow.clone())
                .or_else(|| b.and_then(|c| c.also_allow.clone()))
        };
        Self {
            agent_id: agent_id.map(str::to_owned),
            profile: agent
                .and_then(|c| c.profile.clone())
                .or_else(|| global.and_then(|c| c.profile.clone())),
            provider_profile: agent_provider
                .and_then(|c| c.profile.clone())
                .or_else(|| global_provider.and_then(|c| c.profile.clone())),
            profile_also_allow: also(agent, global),
            provider_profile_also_allow: also(agent_provider, global_provider),
            global_policy: pick_tool_policy(global),
            global_provider_policy: pick_tool_policy(global_provider),
            agent_policy: pick_tool_policy(agent),
            agent_provider_policy: pick_tool_policy(agent_provider),
        }
    }

    /// The default steps, with an optional group policy last.
    pub fn steps(&self, group_policy: Option<ToolPolicy>) -> Vec<PolicyStep> {
        let profile = self
            .profile
            .as_deref()
            .map(str::trim)
            .filter(|p| !p.is_empty());
        let provider_profile = self
            .provider_profile
            .as_deref()
            .map(str::trim)
            .filter(|p| !p.is_empty());
        let labelled = |base: &str, name: Option<&str>| {
            name.map_or_else(|| base.to_owned(), |n| format!("{base} ({n})"))
        };
        let agent_label = |suffix: &str| match &self.agent_id {
            Some(id) => format!("agents.{id}.tools.{suffix}"),
            None => format!("agent tools.{suffix}"),
        };
        let step = |policy: Option<ToolPolicy>, label: String| PolicyStep {
            policy,
            label,
            strip_plugin_only_allowlist: true,
        };
        vec![
            step(
                merge_also_allow(
                    profile.and_then(profile_policy),
                    self.profile_also_allow.as_ref(),
                ),
                labelled("tools.profile", profile),
            ),
            step(
                merge_also_allow(
                    provider_profile.and_then(profile_policy),
                    self.provider_profile_also_allow.as_ref(),
                ),
                labelled("tools.byProvider.profile", provider_profile),
            ),
            step(self.global_policy.clone(), "tools.allow".into()),
            step(
                self.global_provider_policy.clone(),
                "tools.byProvider.allow".into(),
            ),
            step(self.agent_policy.clone(), agent_label("allow")),
            step(
                self.agent_provider_policy.clone(),
                agent_label("byProvider.allow"),
            ),
            step(group_policy, "group tools.allow".into()),
        ]
    }
}

/// A profile's allow list widened by `alsoAllow` (no profile policy: unchanged).
fn merge_also_allow(
    policy: Option<ToolPolicy>,
    also_allow: Option<&Vec<String>>,
) -> Option<ToolPolicy> {
    let mut policy = policy?;
    if let (Some(allow), Some(extra)) = (policy.allow.as_mut(), also_allow) {
        for e in extra {
            if !allow.contains(e) {
                allow.push(e.clone());
            }
        }
    }
    Some(policy)
}

/// Whether `name` is a tool filo or OpenClaw ships (any built-in group member or a base tool).
fn is_known_core_tool(name: &str) -> bool {
    const BASE: &[&str] = &[
        "read",
        "write",
        "edit",
        "apply_patch",
        "exec",
        "process",
        "grep",
        "find",
        "ls",
        "image",
    ];
    BASE.contains(&name)
        || [
            "group:fs",
            "group:runtime",
            "group:sessions",
            "group:memory",
            "group:openclaw",
        ]
        .iter()
        .filter_map(|g| tool_group(g))
        .any(|tools| tools.contains(&name))
}

struct PluginGroups<'a> {
    all: Vec<&'a str>,
    by_plugin: Vec<(&'a str, Vec<&'a str>)>,
}

impl<'a> PluginGroups<'a> {
    fn new(tools: &[ToolEntry<'a>]) -> Self {
        let mut groups = Self {
            all: Vec::new(),
            by_plugin: Vec::new(),
        };
        for t in tools {
            let Some(plugin) = t.plugin_id else { continue };
            groups.all.push(t.name);
            match groups.by_plugin.iter_mut().find(|(p, _)| *p == plugin) {
                Some((_, names)) => names.push(t.name),
                None => groups.by_plugin.push((plugin, vec![t.name])),
            }
        }
        groups
    }

    fn plugin(&self, id: &str) -> Option<&Vec<&'a str>> {
        self.by_plugin
            .iter()
            .find(|(p, _)| *p == id)
            .map(|(_, names)| names)
    }

    /// `group:plugins` and plugin ids expanded to their tools.
    fn expand(&self, list: Option<&Vec<String>>) -> Option<Vec<String>> {
        let list = list?;
        let mut out: Vec<String> = Vec::new();
        let mut push = |s: String| {
            if !out.contains(&s) {
                out.push(s);
            }
        };
        for entry in list {
            let n = normalize_tool_name(entry);
            let expanded: Option<Vec<&str>> = if n == "group:plugins" && !self.all.is_empty() {
                Some(self.all.clone())
            } else {
                self.plugin(&n).cloned()
            };
            match expanded {
                Some(names) => names.into_iter().for_each(|t| push(normalize_tool_name(t))),
                None => push(n),
            }
        }
        Some(out)
    }
}

/// The unknown entries of an allow list, and whether the list was dropped because it names no
/// core tool.
fn strip_plugin_only_allowlist(
    policy: &ToolPolicy,
    groups: &PluginGroups<'_>,
    core: &[String],
) -> (ToolPolicy, Vec<String>, bool) {
    let entries: Vec<String> = policy
        .allow
        .iter()
        .flatten()
        .map(|e| normalize_tool_name(e))
        .filter(|e| !e.is_empty())
        .collect();
    if entries.is_empty() {
        return (policy.clone(), Vec::new(), false);
    }
    let mut unknown: Vec<String> = Vec::new();
    let mut has_core = false;
    for entry in entries {
        if entry == "*" {
            has_core = true;
            continue;
        }
        let is_plugin = entry == "group:plugins"
            || groups.plugin(&entry).is_some()
            || groups.all.contains(&entry.as_str());
        let is_core = expand_tool_groups(&[entry.as_str()])
            .iter()
            .any(|t| core.contains(t));
        has_core |= is_core;
        if !is_core && !is_plugin && !unknown.contains(&entry) {
            unknown.push(entry);
        }
    }
    let stripped = !has_core;
    let policy = if stripped {
        ToolPolicy {
            allow: None,
            deny: policy.deny.clone(),
        }
    } else {
        policy.clone()
    };
    (policy, unknown, stripped)
}

fn unknown_allowlist_warning(label: &str, unknown: &[String], stripped: bool) -> String {
    let gated = unknown.iter().any(|e| is_known_core_tool(e));
    let other = unknown.iter().any(|e| !is_known_core_tool(e));
    let detail = match (gated, other) {
        (true, true) => {
            "Some entries are shipped core tools but unavailable in the current runtime/provider/model/config; other entries won't match any tool unless the plugin is enabled."
        }
        (true, false) => {
            "These entries are shipped core tools but unavailable in the current runtime/provider/model/config."
        }
        _ => "These entries won't match any tool unless the plugin is enabled.",
    };
    let suffix = if stripped {
        format!("Ignoring allowlist so core tools remain available. {detail}")
    } else {
        detail.to_owned()
    };
    format!(
        "tools: {label} allowlist contains unknown entries ({}). {suffix}",
        unknown.join(", ")
    )
}

/// Runs `tools` through `steps` and returns the names kept, in the input order. `warn` receives
/// one message per step whose allow list has unknown entries.
pub fn apply_tool_policy_pipeline(
    tools: &[ToolEntry<'_>],
    steps: &[PolicyStep],
    warn: &mut dyn FnMut(String),
) -> Vec<String> {
    let core: Vec<String> = tools
        .iter()
        .filter(|t| t.plugin_id.is_none())
        .map(|t| normalize_tool_name(t.name))
        .filter(|n| !n.is_empty())
        .collect();
    let groups = PluginGroups::new(tools);
    let mut kept: Vec<&str> = tools.iter().map(|t| t.name).collect();
    for step in steps {
        let Some(mut policy) = step.policy.clone() else {
            continue;
        };
        if step.strip_plugin_only_allowlist {
            let (resolved, unknown, stripped) =
                strip_plugin_only_allowlist(&policy, &groups, &core);
            if !unknown.is_empty() {
                warn(unknown_allowlist_warning(&step.label, &unknown, stripped));
            }
            policy = resolved;
        }
        let expanded = ToolPolicy {
            allow: groups.expand(policy.allow.as_ref()),
            deny: groups.expand(policy.deny.as_ref()),
        };
        let matcher = PolicyMatcher::new(&expanded);
        kept.retain(|name| matcher.allows(name));
    }
    kept.into_iter().map(str::to_owned).collect()
}

#[cfg(test)]
#[path = "policy_steps_tests.rs"]
mod tests;
