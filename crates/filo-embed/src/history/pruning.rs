//! Cache-TTL context pruning (C16, spec §5.5, OpenClaw `pi-extensions/context-pruning`): once
//! the provider's prompt cache has expired, old tool results are trimmed or cleared before the
//! next model call, so the context that must be cached again is smaller.
//!
//! Only the context sent changes; the session file keeps every tool result. Where OpenClaw's
//! current source and the spec differ, the source wins: tool results with images are left alone
//! (counted, never trimmed), and `stripThinking` (off by default) drops old thinking blocks.

use std::sync::{Arc, Mutex, PoisonError};

use filo_agent::{AgentMessage, HookError, TransformContext};
use filo_ai::{ContentBlock, Message, TextContent, ToolResultMessage, UserContent};
use serde_json::Value;

use crate::clock::Clock;

/// The custom entry a run appends after each successful eligible attempt: the cache was touched.
pub const CACHE_TTL_CUSTOM_TYPE: &str = "filo.cache-ttl";

const CHARS_PER_TOKEN: f64 = 4.0;
const IMAGE_CHARS: usize = 8_000;
const OTHER_ROLE_CHARS: usize = 256;

/// `agents.defaults.contextPruning`, when its mode is `cache-ttl`.
#[derive(Debug, Clone, PartialEq)]
pub struct PruningSettings {
    pub ttl_ms: i64,
    pub keep_last_assistants: usize,
    pub strip_thinking: bool,
    pub soft_trim_ratio: f64,
    pub hard_clear_ratio: f64,
    pub min_prunable_tool_chars: usize,
    pub tools_allow: Vec<String>,
    pub tools_deny: Vec<String>,
    pub soft_trim_max_chars: usize,
    pub soft_trim_head_chars: usize,
    pub soft_trim_tail_chars: usize,
    pub hard_clear_enabled: bool,
    pub hard_clear_placeholder: String,
}

impl Default for PruningSettings {
    fn default() -> Self {
        Self {
            ttl_ms: 5 * 60 * 1000,
            keep_last_assistants: 3,
            strip_thinking: false,
            soft_trim_ratio: 0.3,
            hard_clear_ratio: 0.5,
            min_prunable_tool_chars: 50_000,
            tools_allow: Vec::new(),
            tools_deny: Vec::new(),
            soft_trim_max_chars: 4_000,
            soft_trim_head_chars: 1_500,
            soft_trim_tail_chars: 1_500,
            hard_clear_enabled: true,
            hard_clear_placeholder: "[Old tool result content cleared]".to_owned(),
        }
    }
}

fn count(v: Option<&Value>) -> Option<usize> {
    let n = v?.as_f64().filter(|n| n.is_finite())?;
    // Saturating float → int: negative counts are 0, huge ones the maximum.
    Some(n.max(0.0).floor().min(usize::MAX as f64) as usize)
}

fn ratio(v: Option<&Value>) -> Option<f64> {
    v?.as_f64()
        .filter(|n| n.is_finite())
        .map(|n| n.clamp(0.0, 1.0))
}

fn strings(v: Option<&Value>) -> Option<Vec<String>> {
    let list = v?.as_array()?;
    Some(
        list.iter()
            .filter_map(|s| s.as_str().map(str::to_owned))
            .collect(),
    )
}

/// The effective settings (`computeEffectiveSettings`); `None` unless the mode is `cache-ttl`.
pub fn pruning_settings(raw: &Value) -> Option<PruningSettings> {
    if raw.get("mode").and_then(Value::as_str) != Some("cache-ttl") {
        return None;
    }
    let mut s = PruningSettings::default();
    if let Some(ms) = raw
        .get("ttl")
        .and_then(Value::as_str)
        .and_then(parse_duration_ms)
    {
        s.ttl_ms = ms;
    }
    if let Some(n) = count(raw.get("keepLastAssistants")) {
        s.keep_last_assistants = n;
    }
    if let Some(b) = raw.get("stripThinking").and_then(Value::as_bool) {
        s.strip_thinking = b;
    }
    if let Some(r) = ratio(raw.get("softTrimRatio")) {
        s.soft_trim_ratio = r;
    }
    if let Some(r) = ratio(raw.get("hardClearRatio")) {
        s.hard_clear_ratio = r;
    }
    if let Some(n) = count(raw.get("minPrunableToolChars")) {
        s.min_prunable_tool_chars = n;
    }
    if let Some(tools) = raw.get("tools") {
        s.tools_allow = strings(tools.get("allow")).unwrap_or_default();
        s.tools_deny = strings(tools.get("deny")).unwrap_or_default();
    }
    if let Some(soft) = raw.get("softTrim") {
        s.soft_trim_max_chars = count(soft.get("maxChars")).unwrap_or(s.soft_trim_max_chars);
        s.soft_trim_head_chars = count(soft.get("headChars")).unwrap_or(s.soft_trim_head_chars);
        s.soft_trim_tail_chars = count(soft.get("tailChars")).unwrap_or(s.soft_trim_tail_chars);
    }
    if let Some(hard) = raw.get("hardClear") {
        if let Some(b) = hard.get("enabled").and_then(Value::as_bool) {
            s.hard_clear_enabled = b;
        }
        if let Some(p) = hard
            .get("placeholder")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            p.clone_into(&mut s.hard_clear_placeholder);
        }
    }
    Some(s)
}

/// A duration such as `5m`, `90s`, `1h30m`, `250ms` or a bare number of minutes.
pub fn parse_duration_ms(raw: &str) -> Option<i64> {
    let text = raw.trim().to_lowercase();
    if text.is_empty() {
        return None;
    }
    if let Ok(n) = text.parse::<f64>() {
        return (n.is_finite() && n >= 0.0).then(|| (n * 60_000.0).round() as i64);
    }
    let mut total = 0.0;
    let mut rest = text.as_str();
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..num_len].parse().ok()?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let factor = match rest[..unit_len].trim() {
            "ms" => 1.0,
            "s" => 1_000.0,
            "m" => 60_000.0,
            "h" => 3_600_000.0,
            "d" => 86_400_000.0,
            _ => return None,
        };
        total += number * factor;
        rest = &rest[unit_len..];
    }
    Some(total.round() as i64)
}

/// Whether pruning applies to this provider's prompt cache (Anthropic's, directly or through
/// OpenRouter).
pub fn is_cache_ttl_eligible(provider: &str, api: &str, model_id: &str) -> bool {
    let provider = provider.trim().to_lowercase();
    provider == "anthropic"
        || api == "anthropic-messages"
        || (provider == "openrouter" && model_id.trim().to_lowercase().starts_with("anthropic/"))
}

/// `*`-wildcard match, case-insensitive.
fn glob_match(pattern: &str, name: &str) -> bool {
    let (pattern, name) = (pattern.trim().to_lowercase(), name.trim().to_lowercase());
    let parts: Vec<&str> = pattern.split('*').collect();
    let [first, middle @ .., last] = parts.as_slice() else {
        return pattern == name;
    };
    if parts.len() == 1 {
        return pattern == name;
    }
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// Deny wins; an empty allow list allows every tool.
pub fn is_tool_prunable(settings: &PruningSettings, tool: &str) -> bool {
    if settings.tools_deny.iter().any(|p| glob_match(p, tool)) {
        return false;
    }
    settings.tools_allow.is_empty() || settings.tools_allow.iter().any(|p| glob_match(p, tool))
}

fn blocks_chars(blocks: &[ContentBlock]) -> usize {
    blocks
        .iter()
        .map(|b| match b {
            ContentBlock::Text(t) => t.text.chars().count(),
            ContentBlock::Image(_) => IMAGE_CHARS,
            ContentBlock::Thinking(_) | ContentBlock::ToolCall(_) => 0,
        })
        .sum()
}

fn message_chars(m: &AgentMessage) -> usize {
    match m {
        AgentMessage::Llm(Message::User(u)) => match &u.content {
            UserContent::Text(t) => t.chars().count(),
            UserContent::Blocks(b) => blocks_chars(b),
        },
        AgentMessage::Llm(Message::Assistant(a)) => a
            .content
            .iter()
            .map(|b| match b {
                ContentBlock::Text(t) => t.text.chars().count(),
                ContentBlock::Thinking(t) => t.thinking.chars().count(),
                ContentBlock::ToolCall(c) => c.arguments.to_string().chars().count(),
                ContentBlock::Image(_) => 0,
            })
            .sum(),
        AgentMessage::Llm(Message::ToolResult(t)) => blocks_chars(&t.content),
        AgentMessage::Custom(_) => OTHER_ROLE_CHARS,
    }
}

fn has_image(t: &ToolResultMessage) -> bool {
    t.content
        .iter()
        .any(|b| matches!(b, ContentBlock::Image(_)))
}

fn text_parts(t: &ToolResultMessage) -> Vec<&str> {
    t.content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            ContentBlock::Image(_) | ContentBlock::Thinking(_) | ContentBlock::ToolCall(_) => None,
        })
        .collect()
}

/// The first `max` chars of the parts joined with `\n`.
fn head_of(parts: &[&str], max: usize) -> String {
    let joined = parts.join("\n");
    joined.chars().take(max).collect()
}

/// The last `max` chars of the parts joined with `\n`.
fn tail_of(parts: &[&str], max: usize) -> String {
    let joined = parts.join("\n");
    let n = joined.chars().count();
    joined.chars().skip(n.saturating_sub(max)).collect()
}

fn with_text(t: &ToolResultMessage, text: String) -> AgentMessage {
    let mut t = t.clone();
    t.content = vec![ContentBlock::Text(TextContent {
        text,
        text_signature: None,
    })];
    AgentMessage::Llm(Message::ToolResult(t))
}

fn soft_trim(t: &ToolResultMessage, s: &PruningSettings) -> Option<AgentMessage> {
    if has_image(t) {
        return None;
    }
    let parts = text_parts(t);
    let raw_len =
        parts.iter().map(|p| p.chars().count()).sum::<usize>() + parts.len().saturating_sub(1);
    if raw_len <= s.soft_trim_max_chars {
        return None;
    }
    let (head_n, tail_n) = (s.soft_trim_head_chars, s.soft_trim_tail_chars);
    if head_n + tail_n >= raw_len {
        return None;
    }
    let text = format!(
        "{}\n...\n{}\n\n[Tool result trimmed: kept first {head_n} chars and last {tail_n} chars of {raw_len} chars.]",
        head_of(&parts, head_n),
        tail_of(&parts, tail_n)
    );
    Some(with_text(t, text))
}

/// The index of the `keep`-th assistant from the end (everything before it may be pruned);
/// `None` when there are not that many assistants.
fn cutoff_index(messages: &[AgentMessage], keep: usize) -> Option<usize> {
    if keep == 0 {
        return Some(messages.len());
    }
    messages
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, m)| m.role() == "assistant")
        .nth(keep - 1)
        .map(|(i, _)| i)
}

/// `pruneContextMessages`: `None` when nothing changed.
pub fn prune_context_messages(
    messages: &[AgentMessage],
    s: &PruningSettings,
    context_window_tokens: u64,
) -> Option<Vec<AgentMessage>> {
    if context_window_tokens == 0 {
        return None;
    }
    let char_window = context_window_tokens as f64 * CHARS_PER_TOKEN;
    let cutoff = cutoff_index(messages, s.keep_last_assistants)?;
    // Nothing before the first user message is pruned (bootstrap reads).
    let start = messages
        .iter()
        .position(|m| m.role() == "user")
        .unwrap_or(messages.len());
    let mut next: Option<Vec<AgentMessage>> = None;
    let mut total = messages.iter().map(message_chars).sum::<usize>() as f64;
    if s.strip_thinking {
        for i in start..cutoff {
            let AgentMessage::Llm(Message::Assistant(a)) = &messages[i] else {
                continue;
            };
            let removed: usize = a
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Thinking(t) => Some(t.thinking.chars().count()),
                    _ => None,
                })
                .sum();
            let had_thinking = a
                .content
                .iter()
                .any(|b| matches!(b, ContentBlock::Thinking(_)));
            if !had_thinking {
                continue;
            }
            let mut a = a.clone();
            a.content
                .retain(|b| !matches!(b, ContentBlock::Thinking(_)));
            if a.content.is_empty() {
                a.content.push(ContentBlock::Text(TextContent {
                    text: String::new(),
                    text_signature: None,
                }));
            }
            next.get_or_insert_with(|| messages.to_vec())[i] =
                AgentMessage::Llm(Message::Assistant(a));
            total = (total - removed as f64).max(0.0);
        }
    }
    if total / char_window < s.soft_trim_ratio {
        return next;
    }
    let mut prunable = Vec::new();
    for i in start..cutoff {
        let current = next.as_deref().unwrap_or(messages);
        let AgentMessage::Llm(Message::ToolResult(t)) = &current[i] else {
            continue;
        };
        if !is_tool_prunable(s, &t.tool_name) || has_image(t) {
            continue;
        }
        prunable.push(i);
        if let Some(trimmed) = soft_trim(t, s) {
            total += message_chars(&trimmed) as f64 - message_chars(&current[i]) as f64;
            next.get_or_insert_with(|| messages.to_vec())[i] = trimmed;
        }
    }
    if total / char_window < s.hard_clear_ratio || !s.hard_clear_enabled {
        return next;
    }
    let current = next.as_deref().unwrap_or(messages);
    let prunable_chars: usize = prunable.iter().map(|&i| message_chars(&current[i])).sum();
    if prunable_chars < s.min_prunable_tool_chars {
        return next;
    }
    for i in prunable {
        if total / char_window < s.hard_clear_ratio {
            break;
        }
        let out = next.get_or_insert_with(|| messages.to_vec());
        let AgentMessage::Llm(Message::ToolResult(t)) = &out[i] else {
            continue;
        };
        let cleared = with_text(t, s.hard_clear_placeholder.clone());
        total += message_chars(&cleared) as f64 - message_chars(&out[i]) as f64;
        out[i] = cleared;
    }
    next
}

/// The pruning state of one session: the settings, the model's window and when the provider's
/// cache was last touched (restored from the session's last [`CACHE_TTL_CUSTOM_TYPE`] entry).
pub struct Pruner {
    settings: PruningSettings,
    context_window: u64,
    last_touch: Mutex<Option<i64>>,
    clock: Arc<dyn Clock>,
}

impl Pruner {
    pub fn new(
        settings: PruningSettings,
        context_window: u64,
        last_touch: Option<i64>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            settings,
            context_window,
            last_touch: Mutex::new(last_touch),
            clock,
        }
    }

    /// The context for the next model call: pruned when the cache has expired (and then the
    /// cache counts as touched now), else as it is.
    pub fn apply(&self, messages: Vec<AgentMessage>) -> Vec<AgentMessage> {
        let now = self.clock.now_ms();
        let mut touch = self
            .last_touch
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let expired =
            touch.is_some_and(|t| self.settings.ttl_ms > 0 && now - t >= self.settings.ttl_ms);
        if !expired {
            return messages;
        }
        match prune_context_messages(&messages, &self.settings, self.context_window) {
            Some(pruned) => {
                *touch = Some(now);
                pruned
            }
            None => messages,
        }
    }

    /// As the agent's `transform_context` hook.
    pub fn transform(self: Arc<Self>) -> TransformContext {
        Arc::new(move |messages, _cancel| {
            let pruned = self.apply(messages);
            Box::pin(async move { Ok::<_, HookError>(pruned) })
        })
    }
}

/// The time of the session's last cache-touch entry.
pub fn last_cache_touch<'a>(
    entries: impl DoubleEndedIterator<Item = &'a filo_session::SessionEntry>,
) -> Option<i64> {
    entries.rev().find_map(|e| match &e.kind {
        filo_session::EntryKind::Custom { custom_type, data }
            if custom_type == CACHE_TTL_CUSTOM_TYPE =>
        {
            data.as_ref()?.get("timestamp")?.as_i64()
        }
        _ => None,
    })
}

#[cfg(test)]
#[path = "pruning_tests.rs"]
mod tests;
