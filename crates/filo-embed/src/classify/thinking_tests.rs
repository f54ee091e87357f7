//! Vectors of design §3 C13 / spec §7.7 (OpenClaw `thinking.test.ts`) and more cases.

use filo_ai::ThinkingLevel;

use super::*;

#[test]
fn thinking_fallback_vectors() {
    use ThinkingLevel::*;
    let base = UnsupportedWithoutList::NoFallback;
    let later = UnsupportedWithoutList::TryOff;
    let supported = r#"Supported values are: "high", "medium""#;
    assert_eq!(
        pick_fallback_thinking_level(Some(supported), &[], base),
        Some(High)
    );
    assert_eq!(
        pick_fallback_thinking_level(Some(supported), &[High], base),
        Some(Medium)
    );
    assert_eq!(
        pick_fallback_thinking_level(Some(supported), &[High, Medium], base),
        None
    );
    let unsupported = r#"400 think value "low" is not supported for this model"#;
    assert_eq!(
        pick_fallback_thinking_level(Some(unsupported), &[], later),
        Some(Off)
    );
    assert_eq!(
        pick_fallback_thinking_level(Some(unsupported), &[], base),
        None
    );
    let provider = "thinking level not supported by this provider";
    assert_eq!(
        pick_fallback_thinking_level(Some(provider), &[], later),
        Some(Off)
    );
    assert_eq!(
        pick_fallback_thinking_level(Some(provider), &[Off], later),
        None
    );
    let rate = "rate limit exceeded, please retry after 30 seconds";
    assert_eq!(pick_fallback_thinking_level(Some(rate), &[], later), None);
    assert_eq!(pick_fallback_thinking_level(Some(""), &[], later), None);
    assert_eq!(pick_fallback_thinking_level(None, &[], later), None);
    // unquoted lists split on commas and "and"
    let plain = "Unsupported effort. Supported values: minimal, low and high.";
    assert_eq!(
        pick_fallback_thinking_level(Some(plain), &[], base),
        Some(Minimal)
    );
    assert_eq!(
        pick_fallback_thinking_level(Some(plain), &[Minimal], base),
        Some(Low)
    );
    assert_eq!(
        pick_fallback_thinking_level(Some(plain), &[Minimal, Low], base),
        Some(High)
    );
    // unknown words in the list are skipped
    let odd = "supported values are: 'none', 'auto', 'low'";
    assert_eq!(
        pick_fallback_thinking_level(Some(odd), &[], base),
        Some(Low)
    );
}

#[test]
fn normalize_think_level_vectors() {
    use ThinkingLevel::*;
    let cases: &[(&str, Option<ThinkingLevel>)] = &[
        ("off", Some(Off)),
        ("on", Some(Low)),
        ("enable", Some(Low)),
        ("enabled", Some(Low)),
        ("min", Some(Minimal)),
        ("minimal", Some(Minimal)),
        ("low", Some(Low)),
        ("thinkhard", Some(Low)),
        ("think-hard", Some(Low)),
        ("think_hard", Some(Low)),
        ("mid", Some(Medium)),
        ("med", Some(Medium)),
        ("medium", Some(Medium)),
        ("thinkharder", Some(Medium)),
        ("think-harder", Some(Medium)),
        ("harder", Some(Medium)),
        ("high", Some(High)),
        ("ultra", Some(High)),
        ("ultrathink", Some(High)),
        ("thinkhardest", Some(High)),
        ("highest", Some(High)),
        ("think", Some(Minimal)),
        ("xhigh", Some(Xhigh)),
        ("x-high", Some(Xhigh)),
        ("extra high", Some(Xhigh)),
        ("EXTRAHIGH", Some(Xhigh)),
        (" High ", Some(High)),
        ("none", None),
        ("", None),
    ];
    for (raw, want) in cases {
        assert_eq!(normalize_think_level(raw), *want, "{raw:?}");
    }
}

#[test]
fn zai_thinking_is_binary() {
    use ThinkingLevel::*;
    assert_eq!(clamp_for_binary_provider(High, "zai"), Low);
    assert_eq!(clamp_for_binary_provider(Minimal, "ZAI"), Low);
    assert_eq!(clamp_for_binary_provider(Off, "zai"), Off);
    assert_eq!(clamp_for_binary_provider(High, "anthropic"), High);
}

#[test]
fn non_ascii_lists_do_not_split_inside_chars() {
    let odd = "Supported values: \u{212a}and \u{130}, low";
    assert_eq!(
        pick_fallback_thinking_level(Some(odd), &[], UnsupportedWithoutList::NoFallback),
        Some(ThinkingLevel::Low)
    );
}

#[test]
fn the_levels_are_read_from_a_raw_provider_error_body_too() {
    let raw = r#"400 {"error":{"message":"Supported values are: \"high\", \"medium\""}}"#;
    assert_eq!(
        pick_fallback_thinking_level(Some(raw), &[], UnsupportedWithoutList::NoFallback),
        Some(ThinkingLevel::High)
    );
}
