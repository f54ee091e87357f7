use serde_json::json;

use super::*;

fn pol(allow: Option<&[&str]>, deny: Option<&[&str]>) -> ToolPolicy {
    let v = |l: &[&str]| l.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    ToolPolicy {
        allow: allow.map(v),
        deny: deny.map(v),
    }
}

fn cfg(v: serde_json::Value) -> ToolPolicyConfig {
    serde_json::from_value(v).unwrap()
}

#[test]
fn matcher_table() {
    // [OC-test] pi-tools.policy.test.ts / tool-policy.test.ts, then rule cases.
    let cases: Vec<(ToolPolicy, &str, bool)> = vec![
        (pol(Some(&["*"]), None), "read", true),
        (pol(Some(&["*"]), None), "exec", true),
        (pol(None, Some(&["*"])), "read", false),
        (pol(None, Some(&["*"])), "exec", false),
        (pol(Some(&["web_*"]), None), "web_fetch", true),
        (pol(None, Some(&["web_*"])), "web_search", false),
        (pol(Some(&["exec"]), None), "apply_patch", true),
        // further rule cases
        (pol(Some(&["web_*"]), None), "read", false),
        (pol(Some(&["web_*"]), None), "xweb_fetch", false),
        (pol(Some(&["*_get"]), None), "memory_get", true),
        (pol(Some(&["a.b*"]), None), "axb", false),
        (pol(Some(&["a.b*"]), None), "a.bc", true),
        (pol(Some(&["bash"]), None), "exec", true),
        (pol(Some(&["exec"]), None), "BASH", true),
        (pol(Some(&[" Read "]), None), "read", true),
        (pol(Some(&["group:fs"]), None), "apply_patch", true),
        (pol(Some(&["group:fs"]), None), "exec", false),
        (
            pol(Some(&["exec"]), Some(&["apply_patch"])),
            "apply_patch",
            false,
        ),
        (pol(Some(&["*"]), Some(&["exec"])), "exec", false),
        (pol(Some(&[]), None), "anything", true),
        (pol(Some(&[""]), None), "anything", true),
        (pol(None, None), "anything", true),
        (pol(Some(&["group:filo"]), None), "gateway", true),
        (pol(Some(&["group:openclaw"]), None), "read", false),
        (pol(Some(&["group:plugins"]), None), "read", false),
    ];
    for (policy, name, want) in cases {
        assert_eq!(
            is_tool_allowed(name, Some(&policy)),
            want,
            "{policy:?} {name}"
        );
    }
    assert!(is_tool_allowed("x", None));
    let all = [
        Some(&pol(Some(&["read", "exec"]), None)),
        None,
        Some(&pol(None, Some(&["exec"]))),
    ];
    assert!(is_tool_allowed_by_all("read", &all));
    assert!(!is_tool_allowed_by_all("exec", &all));
}

#[test]
fn groups_and_names() {
    // [OC-test] expandToolGroups
    let got = expand_tool_groups(&["group:runtime", "BASH", "apply-patch", "group:fs"]);
    for t in ["exec", "process", "apply_patch", "read", "write", "edit"] {
        assert!(got.contains(&t.to_owned()), "{t} in {got:?}");
    }
    assert!(!got.contains(&"bash".to_owned()));
    assert_eq!(
        got.iter().filter(|t| *t == "exec").count(),
        1,
        "deduplicated"
    );
    assert_eq!(expand_tool_groups(&["group:nope"]), ["group:nope"]);
    for (group, n) in [
        ("group:memory", 2),
        ("group:web", 2),
        ("group:sessions", 5),
        ("group:ui", 2),
        ("group:automation", 2),
        ("group:messaging", 1),
        ("group:nodes", 1),
        ("group:openclaw", 17),
    ] {
        assert_eq!(tool_group(group).map(<[_]>::len), Some(n), "{group}");
    }
    assert_eq!(tool_group("group:filo"), tool_group("group:openclaw"));
    for (raw, want) in [
        (" Bash ", "exec"),
        ("apply-patch", "apply_patch"),
        ("Read", "read"),
        ("exec", "exec"),
    ] {
        assert_eq!(normalize_tool_name(raw), want);
    }
}

#[test]
fn profiles() {
    // [OC-test] resolveToolProfilePolicy
    assert!(
        profile_policy("coding")
            .unwrap()
            .allow
            .unwrap()
            .contains(&"group:fs".to_owned())
    );
    assert_eq!(profile_policy("nope"), None);
    assert_eq!(profile_policy("full"), None);
    assert_eq!(
        profile_policy("minimal").unwrap().allow.unwrap(),
        ["session_status"]
    );
    let messaging = profile_policy("messaging").unwrap();
    for (tool, ok) in [
        ("message", true),
        ("sessions_send", true),
        ("exec", false),
        ("read", false),
    ] {
        assert_eq!(is_tool_allowed(tool, Some(&messaging)), ok, "{tool}");
    }
    let coding = profile_policy("Coding").unwrap();
    for (tool, ok) in [
        ("read", true),
        ("exec", true),
        ("apply_patch", true),
        ("memory_get", true),
        ("image", true),
        ("browser", false),
        ("message", false),
    ] {
        assert_eq!(is_tool_allowed(tool, Some(&coding)), ok, "{tool}");
    }
}

#[test]
fn pick_policy_and_also_allow() {
    // [OC-test] alsoAllow without allow is additive; with allow it is a union; deny wins.
    let p = pick_tool_policy(Some(&cfg(json!({"alsoAllow": ["sessions_send"]})))).unwrap();
    assert_eq!(
        p.allow.as_deref(),
        Some(&["*".to_owned(), "sessions_send".to_owned()][..])
    );
    let p = pick_tool_policy(Some(&cfg(
        json!({"allow": ["sessions_spawn"], "alsoAllow": ["sessions_send"]}),
    )))
    .unwrap();
    assert_eq!(p.allow.unwrap(), ["sessions_spawn", "sessions_send"]);
    let p = pick_tool_policy(Some(&cfg(
        json!({"allow": ["a"], "alsoAllow": ["a", "b"], "deny": ["b"]}),
    )))
    .unwrap();
    assert_eq!(p.allow.clone().unwrap(), ["a", "b"]);
    assert!(!is_tool_allowed("b", Some(&p)));
    assert_eq!(
        pick_tool_policy(Some(&cfg(json!({"profile": "coding"})))),
        None
    );
    assert_eq!(pick_tool_policy(Some(&cfg(json!({"alsoAllow": []})))), None);
    assert_eq!(pick_tool_policy(None), None);
    let p = pick_tool_policy(Some(&cfg(json!({"allow": [], "alsoAllow": ["x"]})))).unwrap();
    assert_eq!(p.allow.unwrap(), ["*", "x"]);
}

#[test]
fn by_provider_lookup() {
    let c = cfg(json!({"byProvider": {
        " OpenAI ": {"deny": ["exec"]},
        "openai/gpt-5": {"deny": ["read"]},
        "openrouter/x-ai/grok": {"deny": ["write"]}
    }}));
    let deny = |p: Option<&str>, m: Option<&str>| {
        provider_tool_policy(&c.by_provider, p, m).and_then(|c| c.deny.clone())
    };
    assert_eq!(
        deny(Some("openai"), Some("GPT-5")),
        Some(vec!["read".to_owned()])
    );
    assert_eq!(
        deny(Some("OpenAI"), Some("gpt-4o")),
        Some(vec!["exec".to_owned()])
    );
    assert_eq!(deny(Some("openai"), None), Some(vec!["exec".to_owned()]));
    assert_eq!(
        deny(Some("openrouter"), Some("openrouter/x-ai/grok")),
        Some(vec!["write".to_owned()])
    );
    assert_eq!(deny(Some("anthropic"), Some("claude")), None);
    assert_eq!(deny(None, Some("gpt-5")), None);
    assert_eq!(deny(Some("  "), Some("gpt-5")), None);
}

#[test]
fn subagent_and_sandbox_defaults() {
    let p = subagent_tool_policy(None);
    for (tool, ok) in [
        ("sessions_spawn", false),
        ("gateway", false),
        ("cron", false),
        ("memory_search", false),
        ("memory_store", false),
        ("read", true),
        ("exec", true),
    ] {
        assert_eq!(is_tool_allowed(tool, Some(&p)), ok, "{tool}");
    }
    let p = subagent_tool_policy(Some(&cfg(json!({"allow": ["read"], "deny": ["write"]}))));
    assert_eq!(p.allow.clone().unwrap(), ["read"]);
    assert!(p.deny.clone().unwrap().contains(&"write".to_owned()));
    assert!(!is_tool_allowed("exec", Some(&p)));
    let s = sandbox_default_policy(&["telegram", "WhatsApp"]);
    for (tool, ok) in [
        ("exec", true),
        ("read", true),
        ("sessions_send", true),
        ("browser", false),
        ("gateway", false),
        ("telegram", false),
        ("whatsapp", false),
        ("web_fetch", false),
    ] {
        assert_eq!(is_tool_allowed(tool, Some(&s)), ok, "{tool}");
    }
}
