use filo_ai::{StopReason, ThinkingContent};

use super::*;
use crate::history::fixtures::*;

#[test]
fn policy_vectors_from_the_transcript_policy_test() {
    // (provider, model, api) → (ids sanitized, id mode)
    let cases = [
        (
            "anthropic",
            "claude-opus-4-5",
            "anthropic-messages",
            true,
            Some(ToolCallIdMode::Strict),
        ),
        (
            "google",
            "gemini-2.0-flash",
            "google-generative-ai",
            true,
            Some(ToolCallIdMode::Strict),
        ),
        (
            "mistral",
            "mistral-large-latest",
            "openai-completions",
            true,
            Some(ToolCallIdMode::Strict9),
        ),
        ("openai", "gpt-4o", "openai", false, None),
        (
            "openrouter",
            "minimax/minimax-m2.5",
            "openai-completions",
            true,
            Some(ToolCallIdMode::Strict),
        ),
        (
            "minimax",
            "abab6.5",
            "anthropic-messages",
            true,
            Some(ToolCallIdMode::Strict),
        ),
        (
            "minimax-cn",
            "abab6.5",
            "openai-completions",
            true,
            Some(ToolCallIdMode::Strict),
        ),
    ];
    for (provider, model, api, sanitized, mode) in cases {
        let p = resolve_transcript_policy(api, provider, model);
        assert_eq!(p.sanitize_tool_call_ids, sanitized, "{provider}/{model}");
        assert_eq!(p.tool_call_id_mode, mode, "{provider}/{model}");
        assert!(p.repair_tool_use_result_pairing);
    }
    let google = resolve_transcript_policy("google-generative-ai", "google", "gemini-2.0-flash");
    assert_eq!(
        google.sanitize_thought_signatures,
        Some(ThoughtSignaturePolicy {
            allow_base64_only: true,
            include_camel_case: true
        })
    );
    assert!(google.apply_google_turn_ordering && google.validate_gemini_turns);
    let openai = resolve_transcript_policy("openai", "openai", "gpt-4o");
    assert_eq!(openai.sanitize_mode, SanitizeMode::ImagesOnly);
    assert!(!openai.allow_synthetic_tool_results);
    assert!(
        resolve_transcript_policy("openai-completions", "moonshot", "kimi-k2.5")
            .validate_anthropic_turns
    );
    let bedrock = resolve_transcript_policy(
        "bedrock-converse-stream",
        "amazon-bedrock",
        "us.anthropic.claude-3-7-sonnet",
    );
    assert!(bedrock.repair_tool_use_result_pairing);
    assert!(bedrock.validate_anthropic_turns);
    assert!(bedrock.allow_synthetic_tool_results);
    assert!(bedrock.sanitize_tool_call_ids);
    assert_eq!(bedrock.sanitize_mode, SanitizeMode::Full);
    assert!(
        !resolve_transcript_policy("openai-completions", "openrouter", "openai/gpt-4.1")
            .validate_anthropic_turns
    );
    assert!(
        resolve_transcript_policy("openai-completions", "github-copilot", "claude-sonnet-4")
            .drop_thinking_blocks
    );
    assert_eq!(
        resolve_transcript_policy("openai-completions", "openrouter", "google/gemini-2.5-pro")
            .sanitize_mode,
        SanitizeMode::Full
    );
}

#[test]
fn turn_validation_vectors() {
    let merged = merge_consecutive_user_turns(vec![user("p1"), user("p2"), text("a")]);
    assert_eq!(roles(&merged), ["user", "assistant"]);
    let AgentMessage::Llm(Message::User(u)) = &merged[0] else {
        panic!("user first");
    };
    assert_eq!(u.content.to_blocks().len(), 2, "both texts kept");

    let merged = merge_consecutive_assistant_turns(vec![user("u"), text("part1"), text("part2")]);
    assert_eq!(roles(&merged), ["user", "assistant"]);
    let AgentMessage::Llm(Message::Assistant(a)) = &merged[1] else {
        panic!("assistant second");
    };
    assert_eq!(a.text(), "part1part2");

    let tool = || result("c", "read", "x");
    let cases: Vec<(Vec<AgentMessage>, usize, Option<usize>)> = vec![
        (vec![calls(&[("c", "read")]), tool(), user("u")], 4, Some(2)),
        (
            vec![calls(&[("c", "read")]), tool(), tool(), user("u")],
            5,
            Some(3),
        ),
        (vec![calls(&[("c", "read")]), tool(), text("a")], 3, None),
        (
            vec![
                user("u"),
                calls(&[("c", "read")]),
                tool(),
                user("u2"),
                calls(&[("d", "read")]),
                tool(),
                user("u3"),
            ],
            9,
            Some(3),
        ),
    ];
    for (input, len, bridge_at) in cases {
        let out = bridge_tool_to_user_turns(input);
        assert_eq!(out.len(), len, "{:?}", roles(&out));
        if let Some(i) = bridge_at {
            let AgentMessage::Llm(Message::Assistant(b)) = &out[i] else {
                panic!("bridge at {i}: {:?}", roles(&out));
            };
            assert_eq!(b.text(), MISTRAL_BRIDGE_TEXT);
        }
    }
}

#[test]
fn two_tool_to_user_transitions_give_eight_messages() {
    let out = bridge_tool_to_user_turns(vec![
        calls(&[("c", "read")]),
        result("c", "read", "x"),
        user("u1"),
        calls(&[("d", "read")]),
        result("d", "read", "y"),
        user("u2"),
    ]);
    assert_eq!(out.len(), 8);
}

#[test]
fn google_ordering_is_idempotent() {
    let mut msgs = vec![text("hello"), user("hi")];
    assert!(apply_google_turn_ordering(&mut msgs));
    assert_eq!(roles(&msgs), ["user", "assistant", "user"]);
    assert!(!apply_google_turn_ordering(&mut msgs));
    assert_eq!(msgs.len(), 3);
}

#[test]
fn thinking_blocks_are_dropped_for_copilot_claude() {
    let thinking = ContentBlock::Thinking(ThinkingContent {
        thinking: "hmm".into(),
        thinking_signature: None,
        redacted: None,
    });
    let only_thinking = AgentMessage::Llm(Message::Assistant(assistant_blocks(
        vec![thinking.clone()],
        StopReason::Stop,
    )));
    let mixed = AgentMessage::Llm(Message::Assistant(assistant_blocks(
        vec![thinking, ContentBlock::text("answer")],
        StopReason::Stop,
    )));
    let out = drop_thinking_blocks(vec![user("u"), only_thinking, mixed]);
    assert_eq!(roles(&out), ["user", "assistant"]);
}

#[test]
fn the_pipeline_repairs_a_crashed_anthropic_transcript() {
    let policy = resolve_transcript_policy("anthropic-messages", "anthropic", "claude");
    let out = sanitize_session_history(
        vec![
            user("go"),
            calls(&[("a", "read")]),
            user("are you there?"),
            user("hello?"),
        ],
        &policy,
        None,
        0,
    );
    assert_eq!(
        roles(&out.messages),
        ["user", "assistant", "toolResult", "user"]
    );
    assert!(!out.google_bootstrap_added);

    let google = resolve_transcript_policy("google-generative-ai", "google", "gemini-2.0-flash");
    let out = sanitize_session_history(vec![text("a"), text("b")], &google, None, 0);
    assert_eq!(roles(&out.messages), ["user", "assistant"]);
    assert!(out.google_bootstrap_added);
}

#[test]
fn usage_before_the_latest_compaction_is_zeroed() {
    use filo_agent::message::CustomMessage;

    let with_usage = |input: u64| {
        let mut a = assistant_blocks(vec![ContentBlock::text("x")], StopReason::Stop);
        a.usage.input = input;
        AgentMessage::Llm(Message::Assistant(a))
    };
    let summary = AgentMessage::Custom(CustomMessage::new(
        COMPACTION_SUMMARY_ROLE,
        serde_json::Map::new(),
    ));
    let usage = |m: &AgentMessage| match m {
        AgentMessage::Llm(Message::Assistant(a)) => a.usage.input,
        _ => u64::MAX,
    };
    let out = zero_usage_before_compaction(vec![
        with_usage(10),
        summary.clone(),
        with_usage(20),
        summary,
        with_usage(30),
    ]);
    let inputs: Vec<u64> = [0, 2, 4].iter().map(|&i| usage(&out[i])).collect();
    assert_eq!(inputs, [0, 0, 30]);
    let untouched = zero_usage_before_compaction(vec![with_usage(5)]);
    assert_eq!(usage(&untouched[0]), 5);
}
