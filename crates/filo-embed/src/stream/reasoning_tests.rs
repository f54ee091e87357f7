//! Vectors of design §3 C21 / spec §8.3–§8.4 for the final-text safety net (OpenClaw
//! `reasoning-tags.test.ts`) and `extractAssistantText`.

use filo_ai::{AssistantMessage, ContentBlock, StopReason, TextContent, ThinkingContent};

use super::*;

fn strict(text: &str) -> String {
    strip_reasoning_tags_from_text(text, UnclosedMode::Strict, Trim::Both)
}

#[test]
fn every_pattern_compiles() {
    for p in all_patterns() {
        assert!(p.compiles());
    }
}

#[test]
fn spec_vectors() {
    let cases: &[(&str, &str)] = &[
        (
            "Hello <think>internal reasoning</think> world!",
            "Hello  world!",
        ),
        (
            "Before <thinking>some thought</thinking> after",
            "Before  after",
        ),
        ("A <thought>hmm</thought> B", "A  B"),
        ("<think>first</think>A<think>second</think>B", "AB"),
        (
            "The `<think>` tag is used for reasoning. Don't forget the closing `</think>` tag.",
            "The `<think>` tag is used for reasoning. Don't forget the closing `</think>` tag.",
        ),
        (
            "<think>hidden</think>Visible text with `<think>` example.",
            "Visible text with `<think>` example.",
        ),
        ("Internal reasoning </think> final answer", "final answer"),
        (
            "You can start with <think and then close with </think>",
            "You can start with <think and then close with",
        ),
        ("A < think >content< /think > B", "A  B"),
        (
            "Use ``code`` with <think>hidden</think> text",
            "Use ``code`` with  text",
        ),
        (
            "Start `unclosed <think>hidden</think> end",
            "Start `unclosed  end",
        ),
        (
            "<think>outer <think>inner</think> still outer</think>visible",
            "visible",
        ),
        ("A<final>1</final>B<final>2</final>C", "A1B2C"),
        ("A <think id='test' class=\"foo\">hidden</think> B", "A  B"),
        (
            "A <THINK>hidden</THINK> <Thinking>also hidden</Thinking> B",
            "A   B",
        ),
        ("Before <think>unclosed content after", "Before"),
        ("  <think>x</think>  result  <think>y</think>  ", "result"),
    ];
    for (text, want) in cases {
        assert_eq!(strict(text), *want, "{text:?}");
    }
    assert_eq!(
        strip_reasoning_tags_from_text(
            "Before <think>unclosed content after",
            UnclosedMode::Preserve,
            Trim::Both
        ),
        "Before unclosed content after"
    );
    let padded = "  <think>x</think>  result  ";
    assert_eq!(
        strip_reasoning_tags_from_text(padded, UnclosedMode::Strict, Trim::None),
        "    result  "
    );
    assert_eq!(
        strip_reasoning_tags_from_text(padded, UnclosedMode::Strict, Trim::Start),
        "result  "
    );
}

#[test]
fn more_cases_from_openclaw_tests() {
    let cases: &[(&str, &str)] = &[
        (
            "Hello, this is a normal message.",
            "Hello, this is a normal message.",
        ),
        ("<think\u{a0}>hidden</think>After", "After"),
        ("X <antthinking>internal</antthinking> Y", "X  Y"),
        (
            "Use the tag like this:\n```\n<think>reasoning</think>\n```\nThat's it!",
            "Use the tag like this:\n```\n<think>reasoning</think>\n```\nThat's it!",
        ),
        (
            "```\n<think>code</think>\n```\n<think>real hidden</think>visible",
            "```\n<think>code</think>\n```\nvisible",
        ),
        (
            "Here is how to use <think tags in your code",
            "Here is how to use <think tags in your code",
        ),
        (
            "Example:\n~~~\n<think>reasoning</think>\n~~~\nDone!",
            "Example:\n~~~\n<think>reasoning</think>\n~~~\nDone!",
        ),
        (
            "Before\n```\ncode\n```\nAfter with <think>hidden</think>",
            "Before\n```\ncode\n```\nAfter with",
        ),
        (
            "`<final>` in code, <final>visible</final> outside",
            "`<final>` in code, visible outside",
        ),
        ("A <FINAL data-x='1'>visible</Final> B", "A visible B"),
        ("你好 <think>思考 🤔</think> 世界", "你好  世界"),
        ("A <THINKING hidden='1'>secret</THINKING> B", "A  B"),
        ("Before<think>x</think></think>After", "BeforeAfter"),
        ("<think>hidden reasoning only</think>", ""),
        ("A <final>1</final> B", "A 1 B"),
        ("", ""),
    ];
    for (text, want) in cases {
        assert_eq!(strict(text), *want, "{text:?}");
    }
    assert_eq!(
        strip_reasoning_tags_from_text("Before<thinking/>After", UnclosedMode::Strict, Trim::None),
        "BeforeAfter"
    );
    let long = format!("<think>{}</think>visible", "x".repeat(10_000));
    assert_eq!(strict(&long), "visible");
}

fn assistant(blocks: Vec<ContentBlock>) -> AssistantMessage {
    AssistantMessage {
        content: blocks,
        api: "anthropic-messages".into(),
        provider: "anthropic".into(),
        model: "m".into(),
        usage: Default::default(),
        stop_reason: StopReason::Stop,
        timestamp: 0,
        error_message: None,
        error_status: None,
        response_id: None,
    }
}

fn text(t: &str) -> ContentBlock {
    ContentBlock::Text(TextContent {
        text: t.into(),
        text_signature: None,
    })
}

#[test]
fn extract_assistant_text_cleans_each_text_block() {
    let msg = assistant(vec![
        ContentBlock::Thinking(ThinkingContent {
            thinking: "private".into(),
            thinking_signature: None,
            redacted: None,
        }),
        text("<think>why</think>Answer"),
        text("Second<|im_end|>part"),
        text("Run it <invoke name=\"bash\"><parameter>ls</parameter></invoke>now"),
    ]);
    assert_eq!(
        extract_assistant_text(&msg),
        "Answer\nSecond part\nRun it now"
    );
}

#[test]
fn downgraded_tool_call_text_is_removed() {
    let cases: &[(&str, &str)] = &[
        (
            "Let me check. [Tool Call: read (ID: toolu_1)] Arguments: {\"path\": \"a.txt\"} Done.",
            "Let me check.  Done.",
        ),
        (
            "Before [Tool Result for ID toolu_1] file contents here [Tool Call: ls] after",
            "Before  after",
        ),
        ("[Historical context: earlier turn] Answer", "Answer"),
        ("No markers here", "No markers here"),
    ];
    for (input, want) in cases {
        assert_eq!(strip_downgraded_tool_call_text(input), *want, "{input:?}");
    }
}
