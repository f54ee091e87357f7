use std::sync::Arc;

use filo_agent::AgentMessage;
use filo_ai::{
    AssistantMessage, ContentBlock, Message, StopReason, TextContent, ToolCall, ToolResultMessage,
    Usage, UserContent, UserMessage,
};
use serde_json::json;

use super::*;
use crate::clock::ManualClock;

fn user(text: &str) -> AgentMessage {
    AgentMessage::Llm(Message::User(UserMessage {
        content: UserContent::Text(text.into()),
        timestamp: 0,
    }))
}

fn assistant(text: &str, call: Option<&str>) -> AgentMessage {
    let mut content = vec![ContentBlock::Text(TextContent {
        text: text.into(),
        text_signature: None,
    })];
    if let Some(id) = call {
        content.push(ContentBlock::ToolCall(ToolCall {
            id: id.into(),
            name: "exec".into(),
            arguments: json!({}),
            thought_signature: None,
        }));
    }
    AgentMessage::Llm(Message::Assistant(AssistantMessage {
        content,
        api: "anthropic-messages".into(),
        provider: "anthropic".into(),
        model: "m".into(),
        usage: Usage::default(),
        stop_reason: StopReason::Stop,
        timestamp: 0,
        error_message: None,
        error_status: None,
        response_id: None,
    }))
}

fn result(id: &str, tool: &str, parts: &[&str]) -> AgentMessage {
    AgentMessage::Llm(Message::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: tool.into(),
        content: parts
            .iter()
            .map(|t| {
                ContentBlock::Text(TextContent {
                    text: (*t).into(),
                    text_signature: None,
                })
            })
            .collect(),
        details: None,
        is_error: false,
        timestamp: 0,
    }))
}

fn text_of(m: &AgentMessage) -> String {
    match m {
        AgentMessage::Llm(Message::ToolResult(t)) => t
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text(t) => Some(t.text.clone()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// OpenClaw's test settings: keep 3, soft 0, hard 0, min 0, placeholder "[cleared]",
/// soft trim {10, 3, 3}.
fn aggressive() -> PruningSettings {
    PruningSettings {
        keep_last_assistants: 3,
        soft_trim_ratio: 0.0,
        hard_clear_ratio: 0.0,
        min_prunable_tool_chars: 0,
        hard_clear_placeholder: "[cleared]".into(),
        soft_trim_max_chars: 10,
        soft_trim_head_chars: 3,
        soft_trim_tail_chars: 3,
        ..PruningSettings::default()
    }
}

fn four_exchanges() -> Vec<AgentMessage> {
    let big = "x".repeat(20_000);
    let mut m = Vec::new();
    for i in 1..=4 {
        let id = format!("t{i}");
        m.push(user(&format!("u{i}")));
        m.push(assistant(&format!("a{i}"), Some(&id)));
        m.push(result(&id, "exec", &[&big]));
    }
    m
}

#[test]
fn only_results_older_than_the_protected_tail_are_cleared() {
    let messages = four_exchanges();
    let out = prune_context_messages(&messages, &aggressive(), 1000).expect("pruned");
    assert_eq!(text_of(&out[2]), "[cleared]");
    for i in [5, 8, 11] {
        assert_eq!(out[i], messages[i], "t{} intact", i / 3 + 1);
    }
}

#[test]
fn results_before_the_first_user_message_are_never_pruned() {
    let big = "x".repeat(20_000);
    let mut messages = vec![result("t0", "read", &[&big])];
    messages.extend(four_exchanges());
    let out = prune_context_messages(&messages, &aggressive(), 1000).expect("pruned");
    assert_eq!(out[0], messages[0]);
    assert_eq!(text_of(&out[3]), "[cleared]");
}

#[test]
fn deny_wins_and_a_non_empty_allow_list_limits_the_tools() {
    let big = "x".repeat(20_000);
    let mut messages = vec![
        user("u0"),
        assistant("a0", Some("b0")),
        result("b0", "Browser", &[&big]),
    ];
    messages.extend(four_exchanges());
    let s = PruningSettings {
        tools_allow: vec!["ex*".into()],
        tools_deny: vec!["exec".into()],
        ..aggressive()
    };
    assert!(!is_tool_prunable(&s, "exec") && !is_tool_prunable(&s, "Browser"));
    assert!(is_tool_prunable(&s, "EXTRA"));
    assert!(
        prune_context_messages(&messages, &s, 1000).is_none(),
        "nothing prunable"
    );
}

#[test]
fn soft_trim_keeps_head_and_tail_across_blocks() {
    let messages = vec![
        user("u"),
        assistant("a", Some("t1")),
        result("t1", "exec", &["AAAAA", "BBBBB"]),
        assistant("b", None),
        assistant("c", None),
        assistant("d", None),
    ];
    let s = PruningSettings {
        soft_trim_max_chars: 5,
        soft_trim_head_chars: 7,
        soft_trim_tail_chars: 3,
        hard_clear_enabled: false,
        ..aggressive()
    };
    let out = prune_context_messages(&messages, &s, 1000).expect("trimmed");
    let t = text_of(&out[2]);
    assert!(t.contains("AAAAA\nB"), "{t}");
    assert!(t.contains("BBB"), "{t}");
    assert!(
        t.ends_with("[Tool result trimmed: kept first 7 chars and last 3 chars of 11 chars.]"),
        "{t}"
    );
}

#[test]
fn small_contexts_and_short_histories_are_left_alone() {
    let messages = vec![user("hello"), assistant("hi", None)];
    let s = PruningSettings {
        keep_last_assistants: 2,
        ..PruningSettings::default()
    };
    assert!(prune_context_messages(&messages, &s, 100_000).is_none());
    // Fewer assistants than the protected tail: no cutoff, nothing pruned.
    assert!(
        prune_context_messages(
            &four_exchanges(),
            &PruningSettings {
                keep_last_assistants: 9,
                ..aggressive()
            },
            1000
        )
        .is_none()
    );
}

#[test]
fn soft_trim_then_hard_clear_bring_the_ratio_down() {
    let big = "x".repeat(3000);
    let messages = vec![
        user("hello"),
        assistant("a", Some("tc1")),
        result("tc1", "read", &[&big]),
        assistant("b", Some("tc2")),
        result("tc2", "read", &[&big]),
        assistant("c", Some("tc3")),
        result("tc3", "read", &[&big]),
        assistant("final answer", None),
    ];
    let s = PruningSettings {
        keep_last_assistants: 2,
        soft_trim_ratio: 0.3,
        hard_clear_ratio: 0.6,
        min_prunable_tool_chars: 0,
        soft_trim_max_chars: 200,
        soft_trim_head_chars: 50,
        soft_trim_tail_chars: 50,
        hard_clear_placeholder: "[Pruned]".into(),
        ..PruningSettings::default()
    };
    let before: usize = messages.iter().map(message_chars).sum();
    let out = prune_context_messages(&messages, &s, 500).expect("pruned");
    let after: usize = out.iter().map(message_chars).sum();
    assert!(after < before);
    // Trimmed first, then still over the hard ratio (tc3 is protected): cleared oldest first.
    assert_eq!(text_of(&out[2]), "[Pruned]");
    assert_eq!(text_of(&out[4]), "[Pruned]");
    assert_eq!(out[6], messages[6], "the protected tail keeps tc3");
    // With a higher hard ratio the soft trim alone is enough.
    let s = PruningSettings {
        hard_clear_ratio: 0.95,
        ..s
    };
    let out = prune_context_messages(&messages, &s, 1000).expect("trimmed");
    assert!(
        text_of(&out[2]).contains(
            "[Tool result trimmed: kept first 50 chars and last 50 chars of 3000 chars.]"
        )
    );
}

#[test]
fn settings_need_cache_ttl_mode_and_clamp_their_values() {
    assert!(pruning_settings(&json!({"mode": "off"})).is_none());
    assert!(pruning_settings(&json!({})).is_none());
    assert_eq!(
        pruning_settings(&json!({"mode": "cache-ttl"})),
        Some(PruningSettings::default())
    );
    let s = pruning_settings(
        &json!({"mode": "cache-ttl", "ttl": "90s", "keepLastAssistants": -2,
        "softTrimRatio": 3, "hardClearRatio": -1, "hardClear": {"placeholder": "  "},
        "softTrim": {"maxChars": 12.7}, "tools": {"deny": ["exec"]}}),
    )
    .unwrap();
    assert_eq!(s.ttl_ms, 90_000);
    assert_eq!(s.keep_last_assistants, 0);
    assert_eq!((s.soft_trim_ratio, s.hard_clear_ratio), (1.0, 0.0));
    assert_eq!(
        s.hard_clear_placeholder,
        "[Old tool result content cleared]"
    );
    assert_eq!(s.soft_trim_max_chars, 12);
    assert_eq!(s.tools_deny, vec!["exec".to_owned()]);
    // A ttl that does not parse keeps the default.
    assert_eq!(
        pruning_settings(&json!({"mode": "cache-ttl", "ttl": "soon"}))
            .unwrap()
            .ttl_ms,
        300_000
    );
}

#[test]
fn durations() {
    for (raw, ms) in [
        ("5", 300_000),
        ("5m", 300_000),
        ("90s", 90_000),
        ("1h30m", 5_400_000),
        ("250ms", 250),
        ("1.5h", 5_400_000),
    ] {
        assert_eq!(parse_duration_ms(raw), Some(ms), "{raw}");
    }
    for raw in ["", "soon", "5 minutes", "-3"] {
        assert_eq!(parse_duration_ms(raw), None, "{raw}");
    }
}

#[test]
fn eligible_providers() {
    assert!(is_cache_ttl_eligible(
        "anthropic",
        "anthropic-messages",
        "claude"
    ));
    assert!(is_cache_ttl_eligible(
        "openrouter",
        "openai-completions",
        "Anthropic/claude-sonnet"
    ));
    assert!(!is_cache_ttl_eligible(
        "openrouter",
        "openai-completions",
        "openai/gpt-5"
    ));
    assert!(!is_cache_ttl_eligible(
        "openai",
        "openai-responses",
        "gpt-5"
    ));
}

#[test]
fn the_pruner_waits_for_the_ttl_and_then_counts_its_pass_as_a_touch() {
    let clock = Arc::new(ManualClock::new(1_000_000));
    let s = PruningSettings {
        ttl_ms: 60_000,
        ..aggressive()
    };
    // Never touched: nothing to expire.
    let fresh = Pruner::new(s.clone(), 1000, None, clock.clone());
    assert_eq!(fresh.apply(four_exchanges()), four_exchanges());
    let pruner = Pruner::new(s, 1000, Some(1_000_000), clock.clone());
    clock.advance(59_999);
    assert_eq!(
        pruner.apply(four_exchanges()),
        four_exchanges(),
        "the cache is still warm"
    );
    clock.advance(1);
    let pruned = pruner.apply(four_exchanges());
    assert_eq!(text_of(&pruned[2]), "[cleared]");
    // Right after a prune the cache counts as touched: the next call is left alone.
    assert_eq!(pruner.apply(four_exchanges()), four_exchanges());
}

#[test]
fn the_last_touch_is_read_from_the_session() {
    let mut sm = filo_session::SessionManager::in_memory("/w");
    assert_eq!(last_cache_touch(sm.entries()), None);
    sm.append_custom_entry(
        CACHE_TTL_CUSTOM_TYPE,
        Some(json!({"timestamp": 5, "provider": "anthropic", "modelId": "m"})),
    )
    .unwrap();
    sm.append_custom_entry("other", Some(json!({"timestamp": 9})))
        .unwrap();
    sm.append_custom_entry(CACHE_TTL_CUSTOM_TYPE, Some(json!({"timestamp": 7})))
        .unwrap();
    assert_eq!(last_cache_touch(sm.entries()), Some(7));
}
