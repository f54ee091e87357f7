//! The compaction safeguard (C15, spec §5.2–§5.4, OpenClaw `compaction-safeguard.ts`): an
//! [`Extension`] that takes over a prepared compaction (`before_compact`, G5) when
//! `agents.defaults.compaction.mode` is `safeguard`.
//!
//! What it adds to pi's own summary: a budget that adapts to the size of the messages (oldest
//! chunks are summarised on their own when the new content alone would overfill the history
//! share), staged summaries merged into one, a `## Tool Failures` section, bounded file lists, a
//! total size cap that keeps those sections, a boundary compaction instead of a cancel when there
//! is nothing real to summarise (no cancel/re-trigger loop), and a cancel — history kept — when
//! summarising fails. OpenClaw's later additions (preserved recent turns, the quality guard,
//! identifier policies, AGENTS.md rules) are not part of this baseline.

use std::collections::{BTreeSet, HashSet};

use filo_ai::{ContentBlock, Message, ToolResultMessage, UserContent, UserMessage};
use filo_core::Extension;
use filo_core::compaction::{
    CompactionPreparation, SummaryError, estimate_tokens, generate_summary,
};
use filo_core::extension::{CompactionContext, CompactionDecision};
use filo_session::SessionMessage;
use futures::future::BoxFuture;
use serde_json::json;

pub const BASE_CHUNK_RATIO: f64 = 0.4;
pub const MIN_CHUNK_RATIO: f64 = 0.15;
pub const SAFETY_MARGIN: f64 = 1.2;
pub const DEFAULT_PARTS: usize = 2;
pub const SUMMARIZATION_OVERHEAD_TOKENS: u64 = 4096;
pub const MAX_SUMMARY_CHARS: usize = 16_000;
pub const MAX_FILE_OPS_SECTION_CHARS: usize = 2_000;
pub const MAX_FILE_OPS_LIST_CHARS: usize = 900;
pub const TRUNCATED_MARKER: &str = "\n\n[Compaction summary truncated to fit budget]";
const MAX_TOOL_FAILURES: usize = 8;
const MAX_TOOL_FAILURE_CHARS: usize = 240;
const MERGE_INSTRUCTIONS: &str = "Merge these partial summaries into a single cohesive summary. Preserve decisions, TODOs, open questions, and any constraints.";
const TURN_PREFIX_INSTRUCTIONS: &str = "This summary covers the prefix of a split turn. Focus on the original request, early progress, and any details needed to understand the retained suffix.";

fn tokens(messages: &[SessionMessage]) -> u64 {
    messages.iter().map(estimate_tokens).sum()
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

fn prefix(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// `computeAdaptiveChunkRatio`: smaller chunks when messages are large against the window.
pub fn compute_adaptive_chunk_ratio(messages: &[SessionMessage], context_window: u64) -> f64 {
    if messages.is_empty() || context_window == 0 {
        return BASE_CHUNK_RATIO;
    }
    let avg =
        tokens(messages) as f64 / messages.len() as f64 * SAFETY_MARGIN / context_window as f64;
    if avg > 0.1 {
        MIN_CHUNK_RATIO.max(BASE_CHUNK_RATIO - (avg * 2.0).min(0.25))
    } else {
        BASE_CHUNK_RATIO
    }
}

/// `splitMessagesByTokenShare`: at most `parts` chunks of about equal tokens, in order.
pub fn split_by_token_share(messages: &[SessionMessage], parts: usize) -> Vec<Vec<SessionMessage>> {
    let parts = parts.clamp(1, messages.len().max(1));
    let target = tokens(messages) as f64 / parts as f64;
    let mut chunks: Vec<Vec<SessionMessage>> = Vec::new();
    let mut current: Vec<SessionMessage> = Vec::new();
    let mut current_tokens = 0u64;
    for m in messages {
        let t = estimate_tokens(m);
        if !current.is_empty() && chunks.len() < parts - 1 && (current_tokens + t) as f64 > target {
            chunks.push(std::mem::take(&mut current));
            current_tokens = 0;
        }
        current.push(m.clone());
        current_tokens += t;
    }
    if !current.is_empty() {
        chunks.push(current);
    }
    chunks
}

/// What [`prune_history_for_context_share`] kept and dropped.
#[derive(Debug, Clone, Default)]
pub struct PrunedHistory {
    pub messages: Vec<SessionMessage>,
    pub dropped: Vec<SessionMessage>,
    pub dropped_chunks: usize,
}

/// `pruneHistoryForContextShare`: drop the oldest chunk until the rest fits
/// `context × share`; tool results whose call was dropped go with it.
pub fn prune_history_for_context_share(
    messages: &[SessionMessage],
    context_window: u64,
    share: f64,
    parts: usize,
) -> PrunedHistory {
    let budget = ((context_window as f64 * share).floor() as u64).max(1);
    let mut out = PrunedHistory {
        messages: messages.to_vec(),
        ..PrunedHistory::default()
    };
    while tokens(&out.messages) > budget {
        let mut chunks = split_by_token_share(&out.messages, parts);
        if chunks.len() <= 1 {
            break;
        }
        let first = chunks.remove(0);
        out.dropped.extend(first);
        out.dropped_chunks += 1;
        let rest: Vec<SessionMessage> = chunks.into_iter().flatten().collect();
        let calls: HashSet<String> = rest
            .iter()
            .filter_map(|m| match m {
                SessionMessage::Llm(Message::Assistant(a)) => {
                    Some(a.tool_calls().map(|c| c.id.clone()).collect::<Vec<_>>())
                }
                _ => None,
            })
            .flatten()
            .collect();
        let (kept, orphans): (Vec<_>, Vec<_>) = rest.into_iter().partition(|m| match m {
            SessionMessage::Llm(Message::ToolResult(t)) => calls.contains(&t.tool_call_id),
            _ => true,
        });
        out.dropped.extend(orphans);
        out.messages = kept;
    }
    out
}

/// A failed tool call for the summary's `## Tool Failures` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolFailure {
    pub tool_name: String,
    pub summary: String,
    pub meta: Option<String>,
}

fn failure_meta(t: &ToolResultMessage) -> Option<String> {
    let d = t.details.as_ref()?;
    let mut parts = Vec::new();
    if let Some(s) = d.get("status").and_then(|s| s.as_str()) {
        parts.push(format!("status={s}"));
    }
    match d.get("exitCode") {
        Some(c) if c.is_i64() || c.is_u64() => parts.push(format!("exitCode={c}")),
        Some(c) if c.as_f64().is_some_and(f64::is_finite) => parts.push(format!("exitCode={c}")),
        _ => {}
    }
    (!parts.is_empty()).then(|| parts.join(" "))
}

/// `collectToolFailures`: error results, once per call id.
pub fn collect_tool_failures(messages: &[SessionMessage]) -> Vec<ToolFailure> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for m in messages {
        let SessionMessage::Llm(Message::ToolResult(t)) = m else {
            continue;
        };
        if !t.is_error || t.tool_call_id.is_empty() || !seen.insert(t.tool_call_id.clone()) {
            continue;
        }
        let text: Vec<&str> = t
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text(x) => Some(x.text.as_str()),
                _ => None,
            })
            .collect();
        let normalized = text
            .join("\n")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let meta = failure_meta(t);
        let summary = if normalized.is_empty() {
            if meta.is_some() {
                "failed"
            } else {
                "failed (no output)"
            }
            .to_owned()
        } else {
            normalized
        };
        let summary = if chars(&summary) > MAX_TOOL_FAILURE_CHARS {
            format!("{}...", prefix(&summary, MAX_TOOL_FAILURE_CHARS - 3))
        } else {
            summary
        };
        let name = if t.tool_name.trim().is_empty() {
            "tool"
        } else {
            &t.tool_name
        };
        out.push(ToolFailure {
            tool_name: name.to_owned(),
            summary,
            meta,
        });
    }
    out
}

/// `\n\n## Tool Failures\n- <tool>[ (<meta>)]: <summary>` for the first 8, then `...and n more`.
pub fn format_tool_failures(failures: &[ToolFailure]) -> String {
    if failures.is_empty() {
        return String::new();
    }
    let mut lines: Vec<String> = failures
        .iter()
        .take(MAX_TOOL_FAILURES)
        .map(|f| {
            let meta = f
                .meta
                .as_ref()
                .map(|m| format!(" ({m})"))
                .unwrap_or_default();
            format!("- {}{meta}: {}", f.tool_name, f.summary)
        })
        .collect();
    if failures.len() > MAX_TOOL_FAILURES {
        lines.push(format!(
            "- ...and {} more",
            failures.len() - MAX_TOOL_FAILURES
        ));
    }
    format!("\n\n## Tool Failures\n{}", lines.join("\n"))
}

fn bounded_list(tag: &str, files: &[&String], max: usize) -> String {
    if files.is_empty() || max == 0 {
        return String::new();
    }
    let (open, close) = (format!("<{tag}>\n"), format!("\n</{tag}>"));
    let mut used = chars(&open) + chars(&close);
    let mut lines = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let line = format!("{f}\n");
        let remaining = files.len() - i - 1;
        let overflow = if remaining > 0 {
            format!("...and {remaining} more\n")
        } else {
            String::new()
        };
        if used + chars(&line) + chars(&overflow) > max {
            let overflow = format!("...and {} more\n", files.len() - i);
            if used + chars(&overflow) <= max {
                lines.push(overflow);
            }
            break;
        }
        used += chars(&line);
        lines.push(line);
    }
    if lines.is_empty() {
        return String::new();
    }
    format!("{open}{}{close}", lines.concat())
}

/// `formatFileOperations`: read files (not modified) and modified files, each list bounded to
/// 900 chars, the section to 2 000.
pub fn format_file_operations(read: &BTreeSet<String>, modified: &BTreeSet<String>) -> String {
    let read: Vec<&String> = read.iter().filter(|f| !modified.contains(*f)).collect();
    let modified: Vec<&String> = modified.iter().collect();
    let sections: Vec<String> = [
        bounded_list("read-files", &read, MAX_FILE_OPS_LIST_CHARS),
        bounded_list("modified-files", &modified, MAX_FILE_OPS_LIST_CHARS),
    ]
    .into_iter()
    .filter(|s| !s.is_empty())
    .collect();
    if sections.is_empty() {
        return String::new();
    }
    cap_summary(
        &format!("\n\n{}", sections.join("\n\n")),
        MAX_FILE_OPS_SECTION_CHARS,
    )
}

/// `capCompactionSummary`: at most `max` chars, ending with the marker when it fits.
pub fn cap_summary(summary: &str, max: usize) -> String {
    if max == 0 || chars(summary) <= max {
        return summary.to_owned();
    }
    let budget = max.saturating_sub(chars(TRUNCATED_MARKER));
    if budget == 0 {
        return prefix(summary, max);
    }
    format!("{}{TRUNCATED_MARKER}", prefix(summary, budget))
}

/// `capCompactionSummaryPreservingSuffix`: the suffix (tool failures, file lists) survives; the
/// body gives way.
pub fn cap_summary_keeping_suffix(body: &str, suffix: &str, max: usize) -> String {
    if suffix.is_empty() {
        return cap_summary(body, max);
    }
    if max == 0 {
        return cap_summary(&format!("{body}{suffix}"), max);
    }
    let n = chars(suffix);
    if n >= max {
        return suffix.chars().skip(n - max).collect();
    }
    format!("{}{suffix}", cap_summary(body, max - n))
}

/// The summary of a boundary compaction when there is nothing real to summarise.
pub fn structured_fallback_summary(previous: Option<&str>) -> String {
    let previous = previous.map(str::trim).filter(|p| !p.is_empty());
    let sections = [
        "## Decisions",
        "## Open TODOs",
        "## Constraints/Rules",
        "## Pending user asks",
        "## Exact identifiers",
    ];
    if let Some(p) = previous {
        let lines: Vec<&str> = p.lines().map(str::trim).collect();
        let mut from = 0;
        let complete = sections
            .iter()
            .all(|s| match lines[from..].iter().position(|l| l == s) {
                Some(i) => {
                    from += i + 1;
                    true
                }
                None => false,
            });
        if complete {
            return p.to_owned();
        }
    }
    [
        "## Decisions",
        previous.unwrap_or("No prior history."),
        "",
        "## Open TODOs",
        "None.",
        "",
        "## Constraints/Rules",
        "None.",
        "",
        "## Pending user asks",
        "None.",
        "",
        "## Exact identifiers",
        "None captured.",
    ]
    .join("\n")
}

fn is_real(m: &SessionMessage) -> bool {
    matches!(m, SessionMessage::Llm(_))
}

fn preparation(messages: Vec<SessionMessage>, previous: Option<String>) -> CompactionPreparation {
    CompactionPreparation {
        first_kept_entry_id: String::new(),
        messages_to_summarize: messages,
        turn_prefix_messages: Vec::new(),
        is_split_turn: false,
        tokens_before: 0,
        previous_summary: previous,
        read_files: BTreeSet::new(),
        modified_files: BTreeSet::new(),
    }
}

/// One summary of `messages` through the session's model (pi's summarisation prompt).
async fn summarize(
    ctx: &CompactionContext,
    messages: Vec<SessionMessage>,
    previous: Option<String>,
    custom: Option<&str>,
) -> Result<String, SummaryError> {
    let prep = preparation(messages, previous);
    let key = ctx.api_key.clone();
    generate_summary(
        ctx.client.as_ref(),
        &ctx.model,
        key,
        &prep,
        ctx.reserve_tokens,
        custom,
        ctx.cancel.clone(),
    )
    .await
}

/// `summarizeInStages`: one pass when it fits, else a summary per token-share part merged into
/// one.
pub(crate) async fn summarize_in_stages(
    ctx: &CompactionContext,
    messages: &[SessionMessage],
    max_chunk_tokens: u64,
    previous: Option<String>,
    custom: Option<&str>,
) -> Result<String, SummaryError> {
    if messages.len() < 4 || tokens(messages) <= max_chunk_tokens {
        return summarize(ctx, messages.to_vec(), previous, custom).await;
    }
    let mut partials = Vec::new();
    for chunk in split_by_token_share(messages, DEFAULT_PARTS) {
        partials.push(summarize(ctx, chunk, None, custom).await?);
    }
    let as_messages: Vec<SessionMessage> = partials
        .into_iter()
        .map(|p| {
            SessionMessage::Llm(Message::User(UserMessage {
                content: UserContent::Text(p),
                timestamp: 0,
            }))
        })
        .collect();
    let merge = match custom {
        Some(c) if !c.trim().is_empty() => format!("{MERGE_INSTRUCTIONS}\n\n{c}"),
        _ => MERGE_INSTRUCTIONS.to_owned(),
    };
    summarize(ctx, as_messages, previous, Some(&merge)).await
}

/// The safeguard for one session (`compaction.mode = "safeguard"`).
pub struct Safeguard {
    /// `compaction.maxHistoryShare` (default 0.5).
    pub max_history_share: f64,
    /// The run's context window (`contextTokens` cap applied).
    pub context_window: u64,
}

impl Extension for Safeguard {
    fn name(&self) -> &str {
        "compaction-safeguard"
    }

    fn before_compact<'a>(
        &'a self,
        prep: &'a CompactionPreparation,
        ctx: &'a CompactionContext,
    ) -> BoxFuture<'a, Option<CompactionDecision>> {
        Box::pin(async move { Some(self.decide(prep, ctx).await) })
    }
}

impl Safeguard {
    async fn decide(
        &self,
        prep: &CompactionPreparation,
        ctx: &CompactionContext,
    ) -> CompactionDecision {
        let replace = |summary: String, details| CompactionDecision::Replace {
            summary: cap_summary(&summary, MAX_SUMMARY_CHARS),
            first_kept_entry_id: prep.first_kept_entry_id.clone(),
            tokens_before: prep.tokens_before,
            details,
        };
        let real = prep.messages_to_summarize.iter().any(is_real)
            || prep.turn_prefix_messages.iter().any(is_real);
        if !real {
            // A boundary, not a cancel: a cancel would be re-triggered after every answer.
            return replace(
                structured_fallback_summary(prep.previous_summary.as_deref()),
                None,
            );
        }
        match self.summarize(prep, ctx).await {
            Ok(summary) => {
                let read: Vec<&String> = prep
                    .read_files
                    .iter()
                    .filter(|f| !prep.modified_files.contains(*f))
                    .collect();
                let details = json!({"readFiles": read, "modifiedFiles": prep.modified_files});
                replace(summary, Some(details))
            }
            // The history stays as it is: better too long than lost.
            Err(e) => CompactionDecision::Cancel {
                reason: e.to_string(),
            },
        }
    }

    async fn summarize(
        &self,
        prep: &CompactionPreparation,
        ctx: &CompactionContext,
    ) -> Result<String, SummaryError> {
        let window = self.context_window.max(1);
        let custom = ctx.custom_instructions.as_deref();
        let mut to_summarize = prep.messages_to_summarize.clone();
        let prefix = &prep.turn_prefix_messages;
        let mut previous = prep.previous_summary.clone();
        // Adaptive budget: when the new content alone overfills the history share, the oldest
        // chunks are summarised on their own and become the previous summary.
        let new_tokens = prep
            .tokens_before
            .saturating_sub(tokens(&to_summarize) + tokens(prefix));
        let max_history = (window as f64 * self.max_history_share * SAFETY_MARGIN).floor() as u64;
        if new_tokens > max_history {
            let pruned = prune_history_for_context_share(
                &to_summarize,
                window,
                self.max_history_share,
                DEFAULT_PARTS,
            );
            if pruned.dropped_chunks > 0 {
                to_summarize = pruned.messages;
                if !pruned.dropped.is_empty() {
                    let ratio = compute_adaptive_chunk_ratio(&pruned.dropped, window);
                    let max_chunk = chunk_budget(window, ratio);
                    // Losing the dropped part's summary is not fatal: the rest is summarised.
                    if let Ok(s) = summarize_in_stages(
                        ctx,
                        &pruned.dropped,
                        max_chunk,
                        previous.clone(),
                        custom,
                    )
                    .await
                    {
                        previous = Some(s);
                    }
                }
            }
        }
        let all: Vec<SessionMessage> = to_summarize.iter().chain(prefix).cloned().collect();
        let max_chunk = chunk_budget(window, compute_adaptive_chunk_ratio(&all, window));
        let mut body = if to_summarize.is_empty() {
            structured_fallback_summary(previous.as_deref())
        } else {
            summarize_in_stages(ctx, &to_summarize, max_chunk, previous, custom).await?
        };
        if prep.is_split_turn && !prefix.is_empty() {
            let instructions = match custom {
                Some(c) if !c.trim().is_empty() => format!("{TURN_PREFIX_INSTRUCTIONS}\n\n{c}"),
                _ => TURN_PREFIX_INSTRUCTIONS.to_owned(),
            };
            let p = summarize_in_stages(ctx, prefix, max_chunk, None, Some(&instructions)).await?;
            let section = format!("**Turn Context (split turn):**\n\n{p}");
            body = if body.trim().is_empty() {
                section
            } else {
                format!("{body}\n\n---\n\n{section}")
            };
        }
        let failures = collect_tool_failures(&all);
        let suffix = format!(
            "{}{}",
            format_tool_failures(&failures),
            format_file_operations(&prep.read_files, &prep.modified_files)
        );
        Ok(cap_summary_keeping_suffix(
            &body,
            &suffix,
            MAX_SUMMARY_CHARS,
        ))
    }
}

fn chunk_budget(window: u64, ratio: f64) -> u64 {
    ((window as f64 * ratio).floor() as u64)
        .saturating_sub(SUMMARIZATION_OVERHEAD_TOKENS)
        .max(1)
}

#[cfg(test)]
#[path = "safeguard_tests.rs"]
mod tests;
