//! The exported page's header (title, facts and totals, the system prompt and tools when the
//! export comes from a live session) and its sidebar (one link per entry of the tree).

use std::collections::BTreeSet;
use std::fmt::Write as _;

use filo_ai::{ContentBlock, Message, StopReason, UserContent};
use filo_session::{EntryKind, SessionEntry, SessionHeader, SessionMessage};

use super::entries::{Context, call_gist, clip, thousands};
use super::tree::{Joint, Tree};
use super::{ExportExtras, escape_html, select_href};

/// The sidebar kind of an entry (what the filters select on) and its one-line preview.
fn node_text(e: &SessionEntry) -> (&'static str, String) {
    let first_line = |s: &str| clip(plain_line(s), 100);
    let text_of = |c: &UserContent| match c {
        UserContent::Text(t) => first_line(t),
        UserContent::Blocks(b) => {
            let text = b.iter().find_map(|b| match b {
                ContentBlock::Text(t) if !t.text.trim().is_empty() => Some(first_line(&t.text)),
                _ => None,
            });
            let images = b
                .iter()
                .filter(|b| matches!(b, ContentBlock::Image(_)))
                .count();
            match (text, images) {
                (Some(t), 0) => t,
                (Some(t), n) => format!("{t} [{}]", counted(n, "image", "images")),
                (None, n) => format!("[{}]", counted(n, "image", "images")),
            }
        }
    };
    match &e.kind {
        EntryKind::Message(m) => match m {
            SessionMessage::Llm(Message::User(u)) => ("user", text_of(&u.content)),
            SessionMessage::Llm(Message::Assistant(a)) => ("assistant", assistant_text(a)),
            SessionMessage::Llm(Message::ToolResult(r)) => {
                let out = r.content.iter().find_map(|b| match b {
                    ContentBlock::Text(t) => Some(first_line(&t.text)),
                    _ => None,
                });
                let mark = if r.is_error { "✗" } else { "↳" };
                (
                    "tool",
                    format!("{mark} {}: {}", r.tool_name, out.unwrap_or_default()),
                )
            }
            SessionMessage::BashExecution(b) => ("bash", format!("$ {}", first_line(&b.command))),
            SessionMessage::Custom(c) => (
                "custom",
                format!("[{}] {}", c.custom_type, text_of(&c.content)),
            ),
            SessionMessage::BranchSummary { summary, .. } => {
                ("branch", format!("branch summary: {}", first_line(summary)))
            }
            SessionMessage::CompactionSummary { tokens_before, .. } => (
                "compaction",
                format!("compaction ({} tokens)", thousands(*tokens_before)),
            ),
            SessionMessage::System(_) => ("setting", "system prompt and tools".to_string()),
        },
        EntryKind::Compaction { tokens_before, .. } => (
            "compaction",
            format!("compaction ({} tokens)", thousands(*tokens_before)),
        ),
        EntryKind::BranchSummary { summary, .. } => {
            ("branch", format!("branch summary: {}", first_line(summary)))
        }
        EntryKind::CustomMessage {
            custom_type,
            content,
            ..
        } => ("custom", format!("[{custom_type}] {}", text_of(content))),
        EntryKind::ModelChange { provider, model_id } => {
            ("setting", format!("model: {provider}/{model_id}"))
        }
        EntryKind::ThinkingLevelChange { thinking_level } => {
            ("setting", format!("thinking: {thinking_level}"))
        }
        EntryKind::Label { target_id, label } => (
            "setting",
            format!(
                "label {}: {}",
                target_id,
                label.as_deref().unwrap_or("(cleared)")
            ),
        ),
        EntryKind::SessionInfo { name } => ("setting", format!("name: {}", first_line(name))),
        EntryKind::Custom { custom_type, .. } => ("setting", format!("custom: {custom_type}")),
        EntryKind::ContextEdit {
            target_id,
            replacement,
        } => (
            "setting",
            match replacement {
                None => format!("context edit: {target_id} omitted"),
                Some(_) => format!("context edit: {target_id} replaced"),
            },
        ),
        EntryKind::Unknown { entry_type, .. } => ("setting", entry_type.clone()),
    }
}

/// The first line of a text, without a markdown heading's or quote's marks.
fn plain_line(s: &str) -> &str {
    let line = s.trim().lines().next().unwrap_or("");
    line.trim_start_matches(['#', '>']).trim_start()
}

/// `n` and the noun, plural unless `n` is 1.
fn counted(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn assistant_text(a: &filo_ai::AssistantMessage) -> String {
    let text = a.content.iter().find_map(|b| match b {
        ContentBlock::Text(t) if !t.text.trim().is_empty() => Some(clip(plain_line(&t.text), 100)),
        _ => None,
    });
    let tools: Vec<String> = a
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolCall(c) => Some(format!(
                "{} {}",
                c.name,
                clip(&call_gist(&c.name, &c.arguments), 40)
            )),
            _ => None,
        })
        .collect();
    let mut s = match (text, tools.is_empty()) {
        (Some(t), true) => t,
        (Some(t), false) => format!("{t} → {}", tools.join(", ")),
        (None, false) => format!("→ {}", tools.join(", ")),
        (None, true) if matches!(a.stop_reason, StopReason::Error | StopReason::Aborted) => {
            String::new()
        }
        (None, true) => "(thinking)".to_string(),
    };
    match a.stop_reason {
        StopReason::Error => s.insert_str(0, "error "),
        StopReason::Aborted => s.insert_str(0, "aborted "),
        _ => {}
    }
    s
}

/// The sidebar's links, one per entry; those on the shown path are marked.
pub(super) fn sidebar(out: &mut String, tree: &Tree<'_>, ctx: &Context<'_>, path: &[usize]) {
    let mut on_path = vec![false; tree.entries.len()];
    for &i in path {
        on_path[i] = true;
    }
    for row in tree.rows() {
        let e = tree.entries[row.at];
        let (kind, text) = node_text(e);
        let joint = match row.joint {
            Joint::Straight => "",
            Joint::Branch => "├─ ",
            Joint::Last => "└─ ",
        };
        let parent = tree.parent[row.at].map_or("", |p| tree.entries[p].id.as_str());
        let label = ctx.labels.get(e.id.as_str());
        let _ = write!(
            out,
            "<a class=\"node k-{kind}{cur}\" href=\"{href}\" data-id=\"{id}\" data-parent=\"{parent}\" data-kind=\"{kind}\"{labeled} style=\"--d:{depth}\"><span class=\"joint\">{joint}</span><span class=\"text\">{text}</span>{label}</a>",
            cur = if on_path[row.at] { " on-path" } else { "" },
            href = escape_html(&select_href(&e.id)),
            id = escape_html(&e.id),
            parent = escape_html(parent),
            labeled = if label.is_some() {
                " data-labeled=\"\""
            } else {
                ""
            },
            depth = row.depth.min(40),
            text = escape_html(if text.is_empty() {
                e.kind.type_name()
            } else {
                &text
            }),
            label = label.map_or(String::new(), |l| format!(
                "<span class=\"label\">{}</span>",
                escape_html(l)
            )),
        );
        out.push('\n');
    }
}

#[derive(Default)]
struct Totals {
    user: usize,
    assistant: usize,
    tool_results: usize,
    tool_calls: usize,
    compactions: usize,
    branch_summaries: usize,
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
    cost: f64,
    models: BTreeSet<String>,
}

fn totals(tree: &Tree<'_>) -> Totals {
    let mut t = Totals::default();
    for e in &tree.entries {
        match &e.kind {
            EntryKind::Message(SessionMessage::Llm(Message::User(_))) => t.user += 1,
            EntryKind::Message(SessionMessage::Llm(Message::Assistant(a))) => {
                t.assistant += 1;
                t.tool_calls += a
                    .content
                    .iter()
                    .filter(|b| matches!(b, ContentBlock::ToolCall(_)))
                    .count();
                t.input += a.usage.input;
                t.output += a.usage.output;
                t.cache_read += a.usage.cache_read;
                t.cache_write += a.usage.cache_write;
                t.cost += a.usage.cost.total;
                t.models.insert(format!("{}/{}", a.provider, a.model));
            }
            EntryKind::Message(SessionMessage::Llm(Message::ToolResult(_))) => t.tool_results += 1,
            EntryKind::Compaction { .. } => t.compactions += 1,
            EntryKind::BranchSummary { .. } => t.branch_summaries += 1,
            _ => {}
        }
    }
    t
}

fn fact(out: &mut String, name: &str, value: &str) {
    if !value.is_empty() {
        let _ = write!(
            out,
            "<div><dt>{}</dt><dd>{}</dd></div>",
            escape_html(name),
            escape_html(value)
        );
    }
}

/// The page header: title, facts about the session, totals over every branch, and what a live
/// session adds (system prompt, tools).
pub(super) fn header(
    out: &mut String,
    title: &str,
    head: &SessionHeader,
    tree: &Tree<'_>,
    extras: &ExportExtras,
) {
    let t = totals(tree);
    let count = |n: usize, one: &str, many: &str| (n > 0).then(|| counted(n, one, many));
    let messages: Vec<String> = [
        count(t.user, "user", "user"),
        count(t.assistant, "assistant", "assistant"),
        count(t.tool_results, "tool result", "tool results"),
        count(t.compactions, "compaction", "compactions"),
        count(t.branch_summaries, "branch summary", "branch summaries"),
    ]
    .into_iter()
    .flatten()
    .collect();
    let tokens: Vec<String> = [
        ("in ", t.input),
        ("out ", t.output),
        ("cache read ", t.cache_read),
        ("cache write ", t.cache_write),
    ]
    .into_iter()
    .filter(|(_, n)| *n > 0)
    .map(|(w, n)| format!("{w}{}", thousands(n)))
    .collect();
    let _ = write!(
        out,
        "<header id=\"top\"><h1>{}</h1><dl class=\"facts\">",
        escape_html(title)
    );
    fact(out, "Started", &head.timestamp.replace('T', " "));
    fact(out, "Directory", &head.cwd);
    fact(out, "Session", &head.id);
    fact(
        out,
        "Forked from",
        head.parent_session.as_deref().unwrap_or(""),
    );
    fact(
        out,
        "Models",
        &t.models.iter().cloned().collect::<Vec<_>>().join(", "),
    );
    fact(out, "Messages", &messages.join(", "));
    fact(out, "Tool calls", &t.tool_calls.to_string());
    fact(out, "Branches", &tree.leaf_count().to_string());
    fact(out, "Tokens", &tokens.join(" · "));
    if t.cost > 0.0 {
        fact(out, "Cost", &format!("${:.3}", t.cost));
    }
    out.push_str("</dl><div class=\"toolbar\"><button type=\"button\" data-toggle=\"thinking\" title=\"Open or close every thinking block (t)\">Thinking</button><button type=\"button\" data-toggle=\"tool\" title=\"Open or close every tool call (o)\">Tool calls</button><span class=\"keys\">↑/↓ or j/k move in the tree · / search · t thinking · o tools</span></div>");
    if let Some(prompt) = &extras.system_prompt {
        let _ = write!(
            out,
            "<details class=\"system\"><summary>System prompt</summary><pre>{}</pre></details>",
            escape_html(prompt)
        );
    }
    if !extras.tools.is_empty() {
        out.push_str("<details class=\"system\"><summary>Tools</summary><ul class=\"tools\">");
        for (name, description) in &extras.tools {
            let _ = write!(
                out,
                "<li><code>{}</code> {}</li>",
                escape_html(name),
                escape_html(&clip(description, 400))
            );
        }
        out.push_str("</ul></details>");
    }
    out.push_str("</header>\n");
}
