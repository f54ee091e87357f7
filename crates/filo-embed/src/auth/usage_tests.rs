use super::*;
use crate::auth::store::Credential;

const HOUR: i64 = 3_600_000;
const NOW: i64 = 1_700_000_000_000;

fn store_with(ids: &[(&str, &str)]) -> AuthProfiles {
    let mut s = AuthProfiles::default();
    for (id, provider) in ids {
        s.upsert_profile(id, Credential::api_key(provider, "sk-x"));
    }
    s
}

fn cfg(json: serde_json::Value) -> CooldownConfig {
    serde_json::from_value(json).unwrap()
}

#[test]
fn cooldown_ms_table() {
    // [OC-test] auth-profile-cooldowns: 1..4 and beyond.
    for (count, want) in [
        (0, 60_000),
        (1, 60_000),
        (2, 300_000),
        (3, 1_500_000),
        (4, 3_600_000),
        (9, 3_600_000),
    ] {
        assert_eq!(cooldown_ms(count), want, "error_count {count}");
    }
}

#[test]
fn cooldown_key_table() {
    for (model, want) in [
        (None, "openai:default"),
        (Some("   "), "openai:default"),
        (Some(""), "openai:default"),
        (Some("gpt-4"), "openai:default:gpt-4"),
        (Some(" gpt-4 "), "openai:default:gpt-4"),
    ] {
        assert_eq!(cooldown_key("openai:default", model), want, "{model:?}");
    }
}

#[test]
fn billing_backoff_windows() {
    // [OC-test] markauthprofilefailure: (config, provider, lower h, upper h)
    let cases = [
        (serde_json::json!({}), "anthropic", 4.5, 5.5),
        (
            serde_json::json!({"billingBackoffHoursByProvider": {"Anthropic": 1}, "billingMaxHours": 2}),
            "anthropic",
            0.8,
            1.2,
        ),
        // non-positive / non-finite values fall back to defaults
        (
            serde_json::json!({"billingBackoffHours": 0, "billingMaxHours": -3}),
            "openai",
            4.5,
            5.5,
        ),
        // by-provider key compared after normalisation (alias)
        (
            serde_json::json!({"billingBackoffHoursByProvider": {"Z.AI": 2}}),
            "zai",
            1.8,
            2.2,
        ),
    ];
    for (config, provider, lo, hi) in cases {
        let id = format!("{provider}:default");
        let mut s = store_with(&[(&id, provider)]);
        mark_failure(
            &mut s,
            &id,
            FailureReason::Billing,
            &cfg(config.clone()),
            None,
            NOW,
        );
        let stats = &s.usage_stats[&id];
        let hours = (stats.disabled_until.unwrap() - NOW) as f64 / HOUR as f64;
        assert!(hours > lo && hours < hi, "{config}: {hours} h");
        assert_eq!(stats.disabled_reason.as_deref(), Some("billing"));
        assert_eq!(stats.cooldown_until, None);
    }
}

#[test]
fn billing_backoff_doubles_and_caps() {
    let mut s = store_with(&[("a:1", "a")]);
    let c = cfg(serde_json::json!({"billingBackoffHours": 1, "billingMaxHours": 3}));
    let mut windows = Vec::new();
    for _ in 0..4 {
        mark_failure(&mut s, "a:1", FailureReason::Billing, &c, None, NOW);
        windows.push((s.usage_stats["a:1"].disabled_until.unwrap() - NOW) / HOUR);
    }
    assert_eq!(windows, [1, 2, 3, 3]);
}

#[test]
fn failure_window_resets_old_counts() {
    // [OC-test] errorCount 9, billing 3, last failure 48 h ago, window 24 h → reset first.
    let mut s = store_with(&[("anthropic:default", "anthropic")]);
    s.usage_stats.insert(
        "anthropic:default".into(),
        ProfileUsageStats {
            error_count: Some(9),
            failure_counts: Some([("billing".to_owned(), 3)].into()),
            last_failure_at: Some(NOW - 48 * HOUR),
            ..Default::default()
        },
    );
    let c = cfg(serde_json::json!({"failureWindowHours": 24}));
    mark_failure(
        &mut s,
        "anthropic:default",
        FailureReason::Billing,
        &c,
        None,
        NOW,
    );
    let stats = &s.usage_stats["anthropic:default"];
    assert_eq!(stats.error_count, Some(1));
    assert_eq!(stats.failure_counts.as_ref().unwrap()["billing"], 1);
    assert_eq!(stats.last_failure_at, Some(NOW));
}

#[test]
fn failures_inside_window_escalate_cooldown() {
    let mut s = store_with(&[("p:1", "p")]);
    let c = CooldownConfig::default();
    let mut got = Vec::new();
    for i in 0..5 {
        mark_failure(&mut s, "p:1", FailureReason::RateLimit, &c, None, NOW + i);
        got.push(s.usage_stats["p:1"].cooldown_until.unwrap() - (NOW + i));
    }
    assert_eq!(got, [60_000, 300_000, 1_500_000, 3_600_000, 3_600_000]);
    assert_eq!(
        s.usage_stats["p:1"].failure_counts.as_ref().unwrap()["rate_limit"],
        5
    );
}

#[test]
fn unknown_profile_is_a_no_op() {
    let mut s = store_with(&[("p:1", "p")]);
    let before = s.clone();
    mark_failure(
        &mut s,
        "p:2",
        FailureReason::Auth,
        &CooldownConfig::default(),
        None,
        NOW,
    );
    mark_used(&mut s, "p:2", None, NOW);
    mark_good(&mut s, "p:2");
    assert_eq!(s, before);
}

#[test]
fn per_model_failure_and_cooldown() {
    // [OC-test] failure rate_limit with model gpt-4 → per-model key, profile key untouched.
    let mut s = store_with(&[("openai:default", "openai")]);
    let c = CooldownConfig::default();
    mark_failure(
        &mut s,
        "openai:default",
        FailureReason::RateLimit,
        &c,
        Some("gpt-4"),
        NOW,
    );
    assert_eq!(s.usage_stats["openai:default:gpt-4"].error_count, Some(1));
    assert!(!s.usage_stats.contains_key("openai:default"));
    assert!(is_in_cooldown(&s, "openai:default", Some("gpt-4"), NOW + 1));
    assert!(!is_in_cooldown(
        &s,
        "openai:default",
        Some("gpt-4o"),
        NOW + 1
    ));
    assert!(!is_in_cooldown(&s, "openai:default", None, NOW + 1));
    // A profile-level cooldown blocks every model.
    mark_failure(
        &mut s,
        "openai:default",
        FailureReason::Timeout,
        &c,
        None,
        NOW,
    );
    for model in [None, Some("gpt-4"), Some("gpt-4o"), Some("  ")] {
        assert!(
            is_in_cooldown(&s, "openai:default", model, NOW + 1),
            "{model:?}"
        );
    }
    // Success with a model clears the profile and that model only.
    mark_failure(
        &mut s,
        "openai:default",
        FailureReason::RateLimit,
        &c,
        Some("o3"),
        NOW,
    );
    mark_used(&mut s, "openai:default", Some("gpt-4"), NOW + 5);
    assert!(!is_in_cooldown(
        &s,
        "openai:default",
        Some("gpt-4"),
        NOW + 6
    ));
    assert!(is_in_cooldown(&s, "openai:default", Some("o3"), NOW + 6));
    assert_eq!(s.usage_stats["openai:default"].last_used, Some(NOW + 5));
}

#[test]
fn cooldown_ends_exactly_at_until() {
    let mut s = store_with(&[("p:1", "p")]);
    mark_failure(
        &mut s,
        "p:1",
        FailureReason::Unknown,
        &CooldownConfig::default(),
        None,
        NOW,
    );
    assert!(is_in_cooldown(&s, "p:1", None, NOW + 59_999));
    assert!(!is_in_cooldown(&s, "p:1", None, NOW + 60_000));
    clear_expired_cooldowns(&mut s, NOW + 60_000);
    assert_eq!(s.usage_stats["p:1"].cooldown_until, None);
    assert_eq!(
        s.usage_stats["p:1"].error_count,
        Some(1),
        "only the window is cleared"
    );
}

#[test]
fn unusable_until_takes_the_later_positive_window() {
    let cases = [
        (None, None, None),
        (Some(10), None, Some(10)),
        (Some(10), Some(20), Some(20)),
        (Some(30), Some(20), Some(30)),
        (Some(0), Some(-5), None),
    ];
    for (cooldown, disabled, want) in cases {
        let st = ProfileUsageStats {
            cooldown_until: cooldown,
            disabled_until: disabled,
            ..Default::default()
        };
        assert_eq!(unusable_until(&st), want, "{cooldown:?} {disabled:?}");
    }
}

#[test]
fn used_and_cleared_and_good() {
    let mut s = store_with(&[("Z.AI:main", "Z.AI")]);
    let c = CooldownConfig::default();
    mark_failure(&mut s, "Z.AI:main", FailureReason::Billing, &c, None, NOW);
    mark_cooldown(&mut s, "Z.AI:main", &c, NOW);
    clear_cooldown(&mut s, "Z.AI:main", None);
    let st = &s.usage_stats["Z.AI:main"];
    assert_eq!((st.error_count, st.cooldown_until), (Some(0), None));
    assert!(
        st.disabled_until.is_some(),
        "clear_cooldown leaves the billing window"
    );
    mark_used(&mut s, "Z.AI:main", None, NOW + 1);
    let st = &s.usage_stats["Z.AI:main"];
    assert_eq!(
        (
            st.disabled_until,
            st.disabled_reason.clone(),
            st.failure_counts.clone()
        ),
        (None, None, None)
    );
    mark_good(&mut s, "Z.AI:main");
    assert_eq!(s.last_good["zai"], "Z.AI:main");
}

#[test]
fn unavailable_reason_scores() {
    let c = CooldownConfig::default();
    let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    // billing (disabled) outweighs many rate limits
    let mut s = store_with(&[("p:a", "p"), ("p:b", "p")]);
    mark_failure(&mut s, "p:a", FailureReason::Billing, &c, None, NOW);
    for _ in 0..3 {
        mark_failure(&mut s, "p:b", FailureReason::RateLimit, &c, None, NOW);
    }
    assert_eq!(
        resolve_profiles_unavailable_reason(&s, &ids(&["p:a", "p:b"]), NOW + 1),
        Some(FailureReason::Billing)
    );
    assert_eq!(
        resolve_profiles_unavailable_reason(&s, &ids(&["p:b"]), NOW + 1),
        Some(FailureReason::RateLimit)
    );
    // counts add up across profiles; tie broken by priority (auth before timeout)
    let mut s = store_with(&[("p:a", "p"), ("p:b", "p")]);
    mark_failure(&mut s, "p:a", FailureReason::Timeout, &c, None, NOW);
    mark_failure(&mut s, "p:b", FailureReason::Auth, &c, None, NOW);
    assert_eq!(
        resolve_profiles_unavailable_reason(&s, &ids(&["p:a", "p:b"]), NOW + 1),
        Some(FailureReason::Auth)
    );
    // a cooldown without counts counts as rate_limit; expired windows score nothing
    s.usage_stats.insert(
        "p:c".into(),
        ProfileUsageStats {
            cooldown_until: Some(NOW + 10),
            ..Default::default()
        },
    );
    assert_eq!(
        resolve_profiles_unavailable_reason(&s, &ids(&["p:c"]), NOW),
        Some(FailureReason::RateLimit)
    );
    assert_eq!(
        resolve_profiles_unavailable_reason(&s, &ids(&["p:c"]), NOW + 10),
        None
    );
    assert_eq!(
        resolve_profiles_unavailable_reason(&s, &ids(&["p:zz"]), NOW),
        None
    );
}

#[test]
fn reason_spelling_round_trips() {
    for r in FailureReason::ALL {
        assert_eq!(FailureReason::parse(r.as_str()), Some(r));
    }
    assert_eq!(FailureReason::parse("nope"), None);
}
