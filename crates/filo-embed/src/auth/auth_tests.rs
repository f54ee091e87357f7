use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::clock::ManualClock;

const NOW: i64 = 1_700_000_000_000;

fn store(profiles: serde_json::Value) -> AuthProfiles {
    let text = json!({"version": 1, "profiles": profiles}).to_string();
    AuthProfiles::parse(&text, std::path::Path::new("t.json")).unwrap()
}

fn config(v: serde_json::Value) -> AuthConfig {
    serde_json::from_value(v).unwrap()
}

fn anthropic_pair() -> AuthProfiles {
    store(json!({
        "anthropic:default": {"type": "api_key", "provider": "anthropic", "key": "sk-default"},
        "anthropic:work": {"type": "api_key", "provider": "anthropic", "key": "sk-work"}
    }))
}

fn order(
    cfg: &AuthConfig,
    s: &AuthProfiles,
    provider: &str,
    preferred: Option<&str>,
) -> Vec<String> {
    resolve_auth_profile_order(cfg, s, provider, preferred, NOW)
}

#[test]
fn order_vectors_from_openclaw_tests() {
    let none = AuthConfig::default();
    // [OC-test] store-only profiles, no config
    assert_eq!(
        order(&none, &anthropic_pair(), "anthropic", None),
        ["anthropic:default", "anthropic:work"]
    );
    // [OC-test] preferred profile first
    assert_eq!(
        order(
            &none,
            &anthropic_pair(),
            "anthropic",
            Some("anthropic:work")
        ),
        ["anthropic:work", "anthropic:default"]
    );
    // [OC-test] config order lists a profile that is not stored
    let minimax =
        store(json!({"minimax:prod": {"type": "api_key", "provider": "minimax", "key": "sk"}}));
    let cfg = config(json!({"order": {"minimax": ["minimax:default", "minimax:prod"]}}));
    assert_eq!(order(&cfg, &minimax, "minimax", None), ["minimax:prod"]);
    // [OC-test] an order entry of another provider is dropped
    let cfg = config(json!({"order": {"minimax": ["openai:default", "minimax:prod"]}}));
    let mut both = minimax.clone();
    both.upsert_profile("openai:default", Credential::api_key("openai", "sk-o"));
    assert_eq!(order(&cfg, &both, "minimax", None), ["minimax:prod"]);
    // [OC-test] oauth with an empty access token but a refresh token is kept
    let oauth = store(
        json!({"anthropic:o": {"type": "oauth", "provider": "anthropic", "access": "", "refresh": "r", "expires": 1}}),
    );
    assert_eq!(order(&none, &oauth, "anthropic", None), ["anthropic:o"]);
}

#[test]
fn invalid_credentials_are_dropped() {
    // [OC-test] blank token, expired token, `expires: 0` → []
    let cases = [
        json!({"type": "token", "provider": "anthropic", "token": "   "}),
        json!({"type": "token", "provider": "anthropic", "token": "t", "expires": NOW - 1}),
        json!({"type": "token", "provider": "anthropic", "token": "t", "expires": NOW}),
        json!({"type": "token", "provider": "anthropic", "token": "t", "expires": 0}),
        json!({"type": "api_key", "provider": "anthropic", "key": " "}),
        json!({"type": "api_key", "provider": "anthropic"}),
        json!({"type": "oauth", "provider": "anthropic", "access": " ", "refresh": ""}),
        json!({"type": "keychain", "provider": "anthropic", "key": "k"}),
    ];
    for cred in cases {
        let s = store(json!({"anthropic:x": cred.clone()}));
        assert!(
            order(&AuthConfig::default(), &s, "anthropic", None).is_empty(),
            "{cred}"
        );
    }
    let live = store(
        json!({"anthropic:x": {"type": "token", "provider": "anthropic", "token": "t", "expires": NOW + 1}}),
    );
    assert_eq!(
        order(&AuthConfig::default(), &live, "anthropic", None),
        ["anthropic:x"]
    );
}

#[test]
fn round_robin_sorts_by_type_then_least_recently_used_then_cooldown() {
    let mut s = store(json!({
        "p:key-new": {"type": "api_key", "provider": "p", "key": "k"},
        "p:key-old": {"type": "api_key", "provider": "p", "key": "k"},
        "p:tok": {"type": "token", "provider": "p", "token": "t"},
        "p:oauth": {"type": "oauth", "provider": "p", "access": "a", "refresh": "r", "expires": 1},
        "p:cool-late": {"type": "oauth", "provider": "p", "access": "a", "refresh": "r", "expires": 1},
        "p:cool-soon": {"type": "api_key", "provider": "p", "key": "k"}
    }));
    let st =
        |last_used: Option<i64>, cooldown: Option<i64>, disabled: Option<i64>| ProfileUsageStats {
            last_used,
            cooldown_until: cooldown,
            disabled_until: disabled,
            ..Default::default()
        };
    s.usage_stats
        .insert("p:key-new".into(), st(Some(NOW - 10), None, None));
    s.usage_stats.insert(
        "p:key-old".into(),
        st(Some(NOW - 1000), Some(NOW - 1), None),
    );
    s.usage_stats.insert(
        "p:cool-late".into(),
        st(None, Some(NOW + 50), Some(NOW + 500)),
    );
    s.usage_stats
        .insert("p:cool-soon".into(), st(None, Some(NOW + 100), None));
    assert_eq!(
        order(&AuthConfig::default(), &s, "P", None),
        [
            "p:oauth",
            "p:tok",
            "p:key-old",
            "p:key-new",
            "p:cool-soon",
            "p:cool-late"
        ]
    );
    // lastGood plays no part in ordering
    s.last_good.insert("p".into(), "p:key-new".into());
    assert_eq!(order(&AuthConfig::default(), &s, "p", None)[0], "p:oauth");
    // a preferred profile in cooldown still goes first
    assert_eq!(
        order(&AuthConfig::default(), &s, "p", Some("p:cool-late"))[0],
        "p:cool-late"
    );
}

#[test]
fn explicit_order_is_kept_with_cooling_profiles_last() {
    let mut s = anthropic_pair();
    s.upsert_profile(
        "anthropic:third",
        Credential::oauth("anthropic", "a", "r", 1),
    );
    let cfg = config(
        json!({"order": {"anthropic": ["anthropic:work", "anthropic:default", "anthropic:work", "anthropic:third"]}}),
    );
    assert_eq!(
        order(&cfg, &s, "anthropic", None),
        ["anthropic:work", "anthropic:default", "anthropic:third"]
    );
    s.usage_stats.insert(
        "anthropic:work".into(),
        ProfileUsageStats {
            cooldown_until: Some(NOW + 5),
            ..Default::default()
        },
    );
    assert_eq!(
        order(&cfg, &s, "anthropic", None),
        ["anthropic:default", "anthropic:third", "anthropic:work"]
    );
    // The store's own order wins over config, keys compared normalised.
    s.order
        .push(("Anthropic".into(), vec!["anthropic:third".into()]));
    assert_eq!(order(&cfg, &s, "anthropic", None), ["anthropic:third"]);
    // An empty explicit order yields nothing.
    s.order = vec![("anthropic".into(), vec![])];
    assert!(order(&cfg, &s, "anthropic", None).is_empty());
}

#[test]
fn config_profiles_filter_by_provider_and_mode() {
    let s = store(json!({
        "anthropic:default": {"type": "api_key", "provider": "anthropic", "key": "k"},
        "anthropic:tok": {"type": "token", "provider": "anthropic", "token": "t"},
        "anthropic:other": {"type": "api_key", "provider": "anthropic", "key": "k"}
    }));
    // declared ids are the base list (undeclared stored profiles are not used)
    let cfg = config(json!({"profiles": {
        "anthropic:tok": {"provider": "anthropic", "mode": "oauth"},
        "anthropic:default": {"provider": "anthropic", "mode": "api_key"}
    }}));
    assert_eq!(
        order(&cfg, &s, "anthropic", None),
        ["anthropic:tok", "anthropic:default"]
    );
    // mode mismatch drops the profile (oauth accepts token, not the reverse)
    let cfg = config(json!({"profiles": {
        "anthropic:tok": {"provider": "anthropic", "mode": "api_key"},
        "anthropic:default": {"provider": "anthropic", "mode": "token"}
    }}));
    assert!(order(&cfg, &s, "anthropic", None).is_empty());
    // provider aliases normalise: z.ai == zai
    let z = store(json!({"zai:k": {"type": "api_key", "provider": "z-ai", "key": "k"}}));
    assert_eq!(order(&AuthConfig::default(), &z, "Z.AI", None), ["zai:k"]);
}

#[test]
fn provider_aliases() {
    for (input, want) in [
        (" Z.AI ", "zai"),
        ("z-ai", "zai"),
        ("OpenCode-Zen", "opencode"),
        ("qwen", "qwen-portal"),
        ("kimi-code", "kimi-coding"),
        ("Anthropic", "anthropic"),
    ] {
        assert_eq!(normalize_provider_id(input), want);
    }
}

#[test]
fn shared_store_rotates_with_a_manual_clock_and_persists() {
    let dir = tempfile::tempdir().unwrap();
    let file = AuthProfileFile::in_agent_dir(dir.path());
    file.update(|s| *s = anthropic_pair()).unwrap();
    let clock = ManualClock::new(NOW);
    let store = AuthProfileStore::open(
        file.clone(),
        Arc::new(clock.clone()),
        Arc::new(AuthConfig::default()),
    )
    .unwrap();
    assert_eq!(store.order("anthropic", None)[0], "anthropic:default");
    store
        .mark_failure("anthropic:default", FailureReason::RateLimit, None)
        .unwrap();
    assert!(store.is_in_cooldown("anthropic:default", None));
    assert_eq!(
        store.order("anthropic", None),
        ["anthropic:work", "anthropic:default"]
    );
    // persisted, readable by another handle
    let other = AuthProfileStore::open(
        file.clone(),
        Arc::new(clock.clone()),
        Arc::new(AuthConfig::default()),
    )
    .unwrap();
    assert!(other.is_in_cooldown("anthropic:default", None));
    store.mark_used("anthropic:work", None).unwrap();
    store.mark_good("anthropic:work").unwrap();
    clock.advance(60_000);
    assert!(!store.is_in_cooldown("anthropic:default", None));
    // default (last_used 0) is older than work (used at NOW) → default first again
    assert_eq!(
        store.order("anthropic", None),
        ["anthropic:default", "anthropic:work"]
    );
    // `other` sees the latest state after it writes (re-read under the lock)
    other
        .mark_failure("anthropic:work", FailureReason::Auth, None)
        .unwrap();
    let disk = file.load().unwrap();
    assert_eq!(disk.last_good["anthropic"], "anthropic:work");
    assert_eq!(disk.usage_stats["anthropic:work"].error_count, Some(1));
    assert_eq!(store.reload().unwrap(), disk);
}

#[test]
fn opening_a_malformed_store_fails_with_the_file_name() {
    let dir = tempfile::tempdir().unwrap();
    let file = AuthProfileFile::in_agent_dir(dir.path());
    std::fs::write(
        file.path(),
        "{\"usageStats\": {\"a\": {\"lastUsed\": \"x\"}}}",
    )
    .unwrap();
    let err = AuthProfileStore::open(file.clone(), Arc::new(ManualClock::new(0)), Arc::default())
        .err()
        .unwrap();
    let msg = err.to_string();
    assert!(
        msg.contains("auth-profiles.json") && msg.contains("usageStats.a"),
        "{msg}"
    );
}

#[test]
fn auth_config_parses_openclaw_keys() {
    let cfg = config(json!({
        "order": {"anthropic": ["anthropic:a"]},
        "profiles": {"b:1": {"provider": "b", "mode": "api_key"}, "a:1": {"provider": "a", "mode": "oauth"}},
        "cooldowns": {"billingBackoffHours": 2, "billingBackoffHoursByProvider": {"x": 1}, "billingMaxHours": 4, "failureWindowHours": 6}
    }));
    assert_eq!(
        cfg.profiles
            .iter()
            .map(|(k, _)| k.as_str())
            .collect::<Vec<_>>(),
        ["b:1", "a:1"]
    );
    let r = cfg.cooldowns.resolve("y");
    assert_eq!(
        (r.billing_backoff_ms, r.billing_max_ms, r.failure_window_ms),
        (2.0 * 3.6e6, 4.0 * 3.6e6, 6.0 * 3.6e6)
    );
    assert_eq!(cfg.cooldowns.resolve("X").billing_backoff_ms, 3.6e6);
}
