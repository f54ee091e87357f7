//! C21 — the final-text safety net (spec §8.3 `stripReasoningTagsFromText`, §8.4
//! `extractAssistantText`): whatever reasoning markup survived streaming is removed from the text
//! of a finished assistant message before it becomes an answer.

use filo_ai::{AssistantMessage, ContentBlock};

use super::fences::{code_regions, is_inside};
use crate::pattern::Pattern;

/// What to do with a thinking block that never closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnclosedMode {
    /// Drop everything after the opening tag.
    #[default]
    Strict,
    /// Keep it (only the tag goes).
    Preserve,
}

/// Which ends of the result to trim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Trim {
    #[default]
    Both,
    Start,
    None,
}

static QUICK: Pattern =
    Pattern::new(r"(?i)<\s*/?\s*(?:think(?:ing)?|thought|antthinking|final)(?-u:\b)");
static FINAL_TAG: Pattern = Pattern::new(r"(?i)<\s*/?\s*final(?-u:\b)[^<>]*>");
static THINKING_TAG: Pattern =
    Pattern::new(r"(?i)<\s*(/?)\s*(?:think(?:ing)?|thought|antthinking)(?-u:\b)[^<>]*>");
static SELF_CLOSING: Pattern = Pattern::new(r"/\s*>$");

/// Remove reasoning tags (with attributes) and their content from a finished text. Only fenced
/// blocks and *closed* inline code spans protect a tag.
///
/// A stray closing tag followed by more text means the model leaked reasoning without an opening
/// tag: the text since the previous thinking block (or the start) is dropped. With nothing after
/// it the text before it is kept. (Spec §8.3 infers this from newer OpenClaw tests; the source
/// read only removed the tag. The "since the previous block" bound comes from OpenClaw's test
/// `Before<think>x</think></think>After` → `BeforeAfter`.) A self-closing tag (`<thinking/>`)
/// opens nothing.
pub fn strip_reasoning_tags_from_text(text: &str, mode: UnclosedMode, trim: Trim) -> String {
    if text.is_empty() || !QUICK.is_match(text) {
        return text.to_owned();
    }
    let cleaned = remove_final_tags(text);
    let regions = code_regions(&cleaned);
    let Some(re) = THINKING_TAG.get() else {
        return text.to_owned();
    };
    let mut result = String::with_capacity(cleaned.len());
    let mut last = 0;
    let mut in_thinking = false;
    let mut kept_since = 0;
    for caps in re.captures_iter(&cleaned) {
        let Some(tag) = caps.get(0) else { continue };
        if is_inside(&regions, tag.start()) {
            continue;
        }
        let closing = caps.get(1).is_some_and(|m| m.as_str() == "/");
        let self_closing = !closing && SELF_CLOSING.is_match(tag.as_str());
        if !in_thinking {
            result.push_str(&cleaned[last..tag.start()]);
            if closing {
                let more_after = !cleaned[tag.end()..].trim().is_empty();
                if more_after {
                    result.truncate(kept_since);
                }
            } else if !self_closing {
                in_thinking = true;
            }
        } else if closing {
            in_thinking = false;
            kept_since = result.len();
        }
        last = tag.end();
    }
    if !in_thinking || mode == UnclosedMode::Preserve {
        result.push_str(&cleaned[last..]);
    }
    match trim {
        Trim::Both => result.trim().to_owned(),
        Trim::Start => result.trim_start().to_owned(),
        Trim::None => result,
    }
}

fn remove_final_tags(text: &str) -> String {
    let Some(re) = FINAL_TAG.get() else {
        return text.to_owned();
    };
    let regions = code_regions(text);
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for m in re.find_iter(text) {
        if is_inside(&regions, m.start()) {
            continue;
        }
        out.push_str(&text[last..m.start()]);
        last = m.end();
    }
    out.push_str(&text[last..]);
    out
}

static MINIMAX_INVOKE: Pattern = Pattern::new(r"(?is)<invoke(?-u:\b)[^>]*>.*?</invoke>");
static MINIMAX_TOOL_CALL: Pattern = Pattern::new(r"(?i)</?minimax:tool_call>");
static SPECIAL_TOKEN: Pattern = Pattern::new(r"<[|｜][^|｜]*[|｜]>");

/// `extractAssistantText`: the answer text of an assistant message — its text blocks joined by
/// `\n`, each cleaned of MiniMax tool-call XML, model special tokens, downgraded tool-call text
/// and reasoning tags.
pub fn extract_assistant_text(message: &AssistantMessage) -> String {
    let parts: Vec<String> = message
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(t) => Some(clean_text_block(&t.text)),
            ContentBlock::Thinking(_) | ContentBlock::ToolCall(_) | ContentBlock::Image(_) => None,
        })
        .collect();
    parts.join("\n")
}

/// The cleaning [`extract_assistant_text`] applies to one text block.
pub fn clean_text_block(text: &str) -> String {
    let mut text = text.to_owned();
    for pattern in [&MINIMAX_INVOKE, &MINIMAX_TOOL_CALL] {
        if let Some(re) = pattern.get() {
            text = re.replace_all(&text, "").into_owned();
        }
    }
    if let Some(re) = SPECIAL_TOKEN.get()
        && re.is_match(&text)
    {
        text = re.replace_all(&text, " ").into_owned();
        while text.contains("  ") {
            text = text.replace("  ", " ");
        }
    }
    let text = strip_downgraded_tool_call_text(&text);
    strip_reasoning_tags_from_text(&text, UnclosedMode::Strict, Trim::Both)
}

/// `stripDowngradedToolCallText`: tool calls that a provider switch turned into text —
/// `[Tool Call: …]` markers with an optional `Arguments:` JSON value after them,
/// `[Tool Result for ID …]` blocks up to the next `[Tool ` or the end, and
/// `[Historical context: …]` markers. The result is trimmed.
pub fn strip_downgraded_tool_call_text(text: &str) -> String {
    if !(text.contains("[Tool Call")
        || text.contains("[Tool Result")
        || text.contains("[Historical context"))
    {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let next = [
            rest.find("[Tool Call:"),
            rest.find("[Tool Result for ID"),
            rest.find("[Historical context:"),
        ]
        .into_iter()
        .flatten()
        .min();
        let Some(at) = next else {
            out.push_str(rest);
            break;
        };
        out.push_str(&rest[..at]);
        let marker = &rest[at..];
        let Some(close) = marker.find(']') else {
            out.push_str(marker);
            break;
        };
        let after = &marker[close + 1..];
        rest = if marker.starts_with("[Tool Call:") {
            skip_arguments(after)
        } else if marker.starts_with("[Tool Result for ID") {
            after.find("[Tool ").map_or("", |n| &after[n..])
        } else {
            after
        };
    }
    out.trim().to_owned()
}

/// After a downgraded tool-call marker: skip `Arguments:` and the JSON value that follows.
fn skip_arguments(text: &str) -> &str {
    let trimmed = text.trim_start();
    let Some(args) = trimmed.strip_prefix("Arguments:") else {
        return text;
    };
    let value = args.trim_start();
    let mut stream = serde_json::Deserializer::from_str(value).into_iter::<serde_json::Value>();
    match stream.next() {
        Some(Ok(_)) => &value[stream.byte_offset()..],
        Some(Err(_)) | None => value,
    }
}

#[cfg(test)]
pub(crate) fn all_patterns() -> Vec<&'static Pattern> {
    vec![
        &QUICK,
        &FINAL_TAG,
        &THINKING_TAG,
        &SELF_CLOSING,
        &MINIMAX_INVOKE,
        &MINIMAX_TOOL_CALL,
        &SPECIAL_TOKEN,
    ]
}

#[cfg(test)]
#[path = "reasoning_tests.rs"]
mod reasoning_tests;
