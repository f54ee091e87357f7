use serde_json::json;

use super::*;

fn cfg(v: serde_json::Value) -> ToolPolicyConfig {
    serde_json::from_value(v).unwrap()
}

const CORE: &[&str] = &[
    "read",
    "write",
    "edit",
    "exec",
    "process",
    "sessions_send",
    "session_status",
    "memory_get",
    "message",
];

fn entries<'a>(plugins: &'a [(&'a str, &'a str)]) -> Vec<ToolEntry<'a>> {
    let mut v: Vec<ToolEntry<'a>> = CORE
        .iter()
        .map(|n| ToolEntry {
            name: n,
            plugin_id: None,
        })
        .collect();
    v.extend(plugins.iter().map(|(name, plugin)| ToolEntry {
        name,
        plugin_id: Some(plugin),
    }));
    v
}

fn run(
    global: serde_json::Value,
    agent: Option<serde_json::Value>,
    provider: &str,
    model: &str,
) -> (Vec<String>, Vec<String>) {
    let global = cfg(global);
    let agent = agent.map(cfg);
    let eff = EffectiveToolPolicy::resolve(
        Some(&global),
        agent.as_ref(),
        Some("main"),
        Some(provider),
        Some(model),
    );
    let plugins = [
        ("voice_call", "voice"),
        ("voice_hangup", "voice"),
        ("crm_lookup", "crm"),
    ];
    let mut warnings = Vec::new();
    let kept = apply_tool_policy_pipeline(&entries(&plugins), &eff.steps(None), &mut |w| {
        warnings.push(w)
    });
    (kept, warnings)
}

#[test]
fn pipeline_table() {
    let cases: Vec<(
        serde_json::Value,
        Option<serde_json::Value>,
        &str,
        Vec<&str>,
    )> = vec![
        // no config: everything
        (
            json!({}),
            None,
            "openai",
            vec![
                "read",
                "write",
                "edit",
                "exec",
                "process",
                "sessions_send",
                "session_status",
                "memory_get",
                "message",
                "voice_call",
                "voice_hangup",
                "crm_lookup",
            ],
        ),
        // coding profile: fs, runtime, sessions, memory; plugins filtered out
        (
            json!({"profile": "coding"}),
            None,
            "openai",
            vec![
                "read",
                "write",
                "edit",
                "exec",
                "process",
                "sessions_send",
                "session_status",
                "memory_get",
            ],
        ),
        // profile alsoAllow widens the profile (agent's alsoAllow wins over global)
        (
            json!({"profile": "minimal", "alsoAllow": ["read"]}),
            Some(json!({"alsoAllow": ["crm"]})),
            "openai",
            vec!["session_status", "crm_lookup"],
        ),
        // global deny, then agent allow narrows
        (
            json!({"deny": ["group:runtime"]}),
            Some(json!({"allow": ["group:fs", "exec"]})),
            "openai",
            vec!["read", "write", "edit"],
        ),
        // byProvider profile and policy
        (
            json!({"byProvider": {"anthropic": {"profile": "messaging", "deny": ["message"]}}}),
            None,
            "anthropic",
            vec!["sessions_send", "session_status"],
        ),
        (
            json!({"byProvider": {"anthropic": {"profile": "messaging"}}}),
            None,
            "openai",
            vec![
                "read",
                "write",
                "edit",
                "exec",
                "process",
                "sessions_send",
                "session_status",
                "memory_get",
                "message",
                "voice_call",
                "voice_hangup",
                "crm_lookup",
            ],
        ),
        // a plugin-only allow list is ignored (core stays), deny still applies
        (
            json!({"allow": ["voice"], "deny": ["exec"]}),
            None,
            "openai",
            vec![
                "read",
                "write",
                "edit",
                "process",
                "sessions_send",
                "session_status",
                "memory_get",
                "message",
                "voice_call",
                "voice_hangup",
                "crm_lookup",
            ],
        ),
        // a plugin id next to a core tool is expanded to the plugin's tools
        (
            json!({"allow": ["read", "voice"]}),
            None,
            "openai",
            vec!["read", "voice_call", "voice_hangup"],
        ),
        (
            json!({"allow": ["read", "group:plugins"]}),
            None,
            "openai",
            vec!["read", "voice_call", "voice_hangup", "crm_lookup"],
        ),
    ];
    for (global, agent, provider, want) in cases {
        let (kept, _) = run(global.clone(), agent.clone(), provider, "m1");
        assert_eq!(kept, want, "{global} {agent:?} {provider}");
    }
}

#[test]
fn unknown_allowlist_entries_warn() {
    let (kept, warnings) = run(
        json!({"allow": ["browser", "nonsense"]}),
        None,
        "openai",
        "m",
    );
    assert_eq!(kept.len(), CORE.len() + 3, "stripped: nothing filtered");
    assert_eq!(
        warnings,
        [
            "tools: tools.allow allowlist contains unknown entries (browser, nonsense). Ignoring allowlist so core tools remain available. Some entries are shipped core tools but unavailable in the current runtime/provider/model/config; other entries won't match any tool unless the plugin is enabled."
        ]
    );
    let (kept, warnings) = run(
        json!({}),
        Some(json!({"allow": ["read", "nonsense"]})),
        "openai",
        "m",
    );
    assert_eq!(kept, ["read"]);
    assert_eq!(
        warnings,
        [
            "tools: agents.main.tools.allow allowlist contains unknown entries (nonsense). These entries won't match any tool unless the plugin is enabled."
        ]
    );
    let (_, warnings) = run(json!({"allow": ["read", "browser"]}), None, "openai", "m");
    assert_eq!(
        warnings,
        [
            "tools: tools.allow allowlist contains unknown entries (browser). These entries are shipped core tools but unavailable in the current runtime/provider/model/config."
        ]
    );
}

#[test]
fn appended_steps_are_not_stripped() {
    // Sub-agent and sandbox steps come after the default ones and apply as written.
    let tools = entries(&[("voice_call", "voice")]);
    let mut steps = EffectiveToolPolicy::default().steps(None);
    steps.push(PolicyStep {
        policy: Some(super::super::policy::subagent_tool_policy(None)),
        label: "subagent".into(),
        strip_plugin_only_allowlist: false,
    });
    steps.push(PolicyStep {
        policy: Some(ToolPolicy {
            allow: Some(vec!["voice".into(), "read".into()]),
            deny: None,
        }),
        label: "sandbox".into(),
        strip_plugin_only_allowlist: false,
    });
    let kept =
        apply_tool_policy_pipeline(&tools, &steps, &mut |w| panic!("unexpected warning {w}"));
    assert_eq!(kept, ["read", "voice_call"]);
}

#[test]
fn step_labels() {
    let eff = EffectiveToolPolicy {
        profile: Some("coding".into()),
        agent_id: None,
        ..Default::default()
    };
    let labels: Vec<String> = eff.steps(None).into_iter().map(|s| s.label).collect();
    assert_eq!(
        labels,
        [
            "tools.profile (coding)",
            "tools.byProvider.profile",
            "tools.allow",
            "tools.byProvider.allow",
            "agent tools.allow",
            "agent tools.byProvider.allow",
            "group tools.allow"
        ]
    );
}
