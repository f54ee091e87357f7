//! One `<section>` per visible entry of the exported page: messages with markdown, thinking and
//! tool calls as collapsible blocks (each call with its result), images inline, compactions and
//! branch summaries as cards. Every piece of session text goes through [`escape_html`] or the
//! markdown writer.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use filo_ai::{
    AssistantMessage, ContentBlock, Message, StopReason, ToolResultMessage, UserContent,
};
use filo_session::{BashExecution, EntryKind, SessionEntry, SessionMessage};
use serde_json::Value;

use super::tree::Tree;
use super::{escape_html, markdown, select_href};

/// What rendering one entry needs to know about the others.
pub(super) struct Context<'a> {
    /// The latest label of each labelled entry.
    pub labels: HashMap<&'a str, &'a str>,
    /// Tool results shown under their call: (assistant position, tool call id) → result entry.
    results: HashMap<(usize, &'a str), (&'a str, &'a ToolResultMessage)>,
    /// Result entries shown under a call (they get no section of their own).
    attached: HashSet<usize>,
}

impl<'a> Context<'a> {
    pub fn new(tree: &Tree<'a>) -> Self {
        let mut labels = HashMap::new();
        let mut results = HashMap::new();
        let mut attached = HashSet::new();
        for (i, e) in tree.entries.iter().enumerate() {
            match &e.kind {
                EntryKind::Label { target_id, label } => match label.as_deref() {
                    Some(l) if !l.trim().is_empty() => {
                        labels.insert(target_id.as_str(), l);
                    }
                    _ => {
                        labels.remove(target_id.as_str());
                    }
                },
                EntryKind::Message(SessionMessage::Llm(Message::ToolResult(r))) => {
                    // The results of one turn follow its assistant message, one after another.
                    let mut up = tree.parent[i];
                    while let Some(p) = up {
                        match tree.entries[p].message() {
                            Some(SessionMessage::Llm(Message::ToolResult(_))) => {
                                up = tree.parent[p]
                            }
                            Some(SessionMessage::Llm(Message::Assistant(a)))
                                if calls(a).any(|c| c.id == r.tool_call_id) =>
                            {
                                let key = (p, r.tool_call_id.as_str());
                                if let std::collections::hash_map::Entry::Vacant(v) =
                                    results.entry(key)
                                {
                                    v.insert((e.id.as_str(), r));
                                    attached.insert(i);
                                }
                                break;
                            }
                            _ => break,
                        }
                    }
                }
                _ => {}
            }
        }
        Context {
            labels,
            results,
            attached,
        }
    }
}

fn calls(a: &AssistantMessage) -> impl Iterator<Item = &filo_ai::ToolCall> {
    a.content.iter().filter_map(|b| match b {
        ContentBlock::ToolCall(c) => Some(c),
        _ => None,
    })
}

/// Characters cut to `max`, with an ellipsis when something was cut.
pub(super) fn clip(s: &str, max: usize) -> String {
    let mut out: String = s.chars().take(max).collect();
    if s.chars().nth(max).is_some() {
        out.push('…');
    }
    out
}

fn md(out: &mut String, class: &str, text: &str) {
    let _ = write!(
        out,
        "<div class=\"md {class}\">{}</div>",
        markdown::render(text)
    );
}

fn pre(out: &mut String, class: &str, text: &str) {
    let _ = write!(out, "<pre class=\"{class}\">{}</pre>", escape_html(text));
}

fn image(out: &mut String, mime: &str, data: &str) {
    let mime_ok = mime.strip_prefix("image/").is_some_and(|t| {
        !t.is_empty()
            && t.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
    });
    let data_ok = data
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"+/=\r\n".contains(&b));
    if mime_ok && data_ok {
        let _ = write!(
            out,
            "<img class=\"image\" alt=\"image\" src=\"data:{};base64,{}\">",
            escape_html(mime),
            data.replace(['\r', '\n'], "")
        );
    } else {
        let _ = write!(
            out,
            "<div class=\"note\">[an image that cannot be shown: {}]</div>",
            escape_html(&clip(mime, 40))
        );
    }
}

/// Text blocks as markdown (or preformatted, for tool output), images inline.
fn blocks(out: &mut String, content: &[ContentBlock], preformatted: bool) {
    for b in content {
        match b {
            ContentBlock::Text(t) if preformatted => pre(out, "output", &t.text),
            ContentBlock::Text(t) => md(out, "", &t.text),
            ContentBlock::Image(i) => image(out, &i.mime_type, &i.data),
            ContentBlock::Thinking(t) => thinking(out, &t.thinking, t.redacted == Some(true)),
            ContentBlock::ToolCall(c) => {
                let args = serde_json::to_string_pretty(&c.arguments).unwrap_or_default();
                pre(out, "args", &format!("{}({args})", c.name));
            }
        }
    }
}

fn thinking(out: &mut String, text: &str, redacted: bool) {
    if redacted {
        out.push_str("<div class=\"note\">[thinking redacted by the provider]</div>");
        return;
    }
    if text.trim().is_empty() {
        return;
    }
    out.push_str("<details class=\"thinking\"><summary>Thinking</summary>");
    md(out, "", text);
    out.push_str("</details>");
}

fn str_arg<'v>(args: &'v Value, keys: &[&str]) -> Option<&'v str> {
    keys.iter()
        .find_map(|k| args.get(*k).and_then(Value::as_str))
}

/// The one-line gist of a tool call for its summary line.
pub(super) fn call_gist(name: &str, args: &Value) -> String {
    let path = str_arg(args, &["path", "file_path"]);
    let gist = match name {
        "bash" => str_arg(args, &["command"]).map(|c| format!("$ {c}")),
        "read" | "write" | "edit" | "ls" => path.map(str::to_string),
        "grep" | "find" => str_arg(args, &["pattern"]).map(|p| match path {
            Some(dir) => format!("{p}  in {dir}"),
            None => p.to_string(),
        }),
        _ => None,
    };
    let gist = gist.unwrap_or_else(|| serde_json::to_string(args).unwrap_or_default());
    clip(gist.lines().next().unwrap_or(""), 160)
}

/// An edit's replacements as a diff: each old text's lines with `-`, the new text's with `+`.
fn edit_pairs(args: &Value) -> Vec<(&str, &str)> {
    fn pair(v: &Value) -> Option<(&str, &str)> {
        Some((
            str_arg(v, &["oldText", "old_string"])?,
            str_arg(v, &["newText", "new_string"])?,
        ))
    }
    match args.get("edits").and_then(Value::as_array) {
        Some(edits) => edits.iter().filter_map(pair).collect(),
        None => pair(args).into_iter().collect(),
    }
}

fn diff(out: &mut String, text: &str) {
    out.push_str("<pre class=\"diff\">");
    for line in text.lines() {
        let class = match line.as_bytes().first() {
            Some(b'+') => "add",
            Some(b'-') => "del",
            _ => "ctx",
        };
        let _ = write!(out, "<span class=\"{class}\">{}</span>", escape_html(line));
    }
    out.push_str("</pre>");
}

fn call_arguments(out: &mut String, name: &str, args: &Value, result: Option<&ToolResultMessage>) {
    let result_diff = result
        .and_then(|r| r.details.as_ref())
        .and_then(|d| d.get("diff"))
        .and_then(Value::as_str);
    match (name, result_diff) {
        ("bash", _) if str_arg(args, &["command"]).is_some() => {
            pre(out, "args", str_arg(args, &["command"]).unwrap_or(""));
        }
        ("edit", Some(d)) => diff(out, d),
        ("edit", None) if !edit_pairs(args).is_empty() => {
            let mut text = String::new();
            for (old, new) in edit_pairs(args) {
                old.lines().for_each(|l| text.extend(["-", l, "\n"]));
                new.lines().for_each(|l| text.extend(["+", l, "\n"]));
            }
            diff(out, &text);
        }
        ("write", _) if str_arg(args, &["content"]).is_some() => {
            pre(out, "args", str_arg(args, &["content"]).unwrap_or(""));
        }
        _ => pre(
            out,
            "args",
            &serde_json::to_string_pretty(args).unwrap_or_default(),
        ),
    }
}

fn tool_call(
    out: &mut String,
    call: &filo_ai::ToolCall,
    result: Option<(&str, &ToolResultMessage)>,
) {
    let (state, status) = match result {
        Some((_, r)) if r.is_error => ("err", "error".to_string()),
        Some((_, r)) => {
            let lines: usize = r
                .content
                .iter()
                .map(|b| match b {
                    ContentBlock::Text(t) => t.text.lines().count(),
                    _ => 0,
                })
                .sum();
            (
                "ok",
                format!("{lines} line{}", if lines == 1 { "" } else { "s" }),
            )
        }
        None => ("none", "no result".to_string()),
    };
    let rid = result.map_or(String::new(), |(id, _)| {
        format!(" data-result-id=\"{}\"", escape_html(id))
    });
    let _ = write!(
        out,
        "<details class=\"tool {state}\"{rid}><summary><span class=\"tool-name\">{}</span> <code class=\"gist\">{}</code> <span class=\"status\">{}</span></summary><div class=\"tool-body\">",
        escape_html(&call.name),
        escape_html(&call_gist(&call.name, &call.arguments)),
        escape_html(&status)
    );
    call_arguments(out, &call.name, &call.arguments, result.map(|(_, r)| r));
    if let Some((_, r)) = result {
        blocks(out, &r.content, true);
    }
    out.push_str("</div></details>");
}

fn assistant(out: &mut String, ctx: &Context<'_>, at: usize, a: &AssistantMessage) {
    for b in &a.content {
        match b {
            ContentBlock::ToolCall(c) => {
                let result = ctx.results.get(&(at, c.id.as_str())).copied();
                tool_call(out, c, result);
            }
            other => blocks(out, std::slice::from_ref(other), false),
        }
    }
    match a.stop_reason {
        StopReason::Aborted => out.push_str("<div class=\"error\">Aborted</div>"),
        StopReason::Error => {
            let msg = a.error_message.as_deref().unwrap_or("unknown error");
            let _ = write!(
                out,
                "<div class=\"error\">Error: {}</div>",
                escape_html(msg)
            );
        }
        _ => {}
    }
}

fn bash_execution(out: &mut String, b: &BashExecution) {
    let (state, status) = match (b.cancelled, b.exit_code) {
        (true, _) => ("err", "cancelled".to_string()),
        (false, Some(0)) | (false, None) => ("ok", "exit 0".to_string()),
        (false, Some(c)) => ("err", format!("exit {c}")),
    };
    let status = if b.truncated {
        format!("{status}, truncated")
    } else {
        status
    };
    let _ = write!(
        out,
        "<details class=\"tool {state}\" open><summary><code class=\"gist\">$ {}</code> <span class=\"status\">{}</span></summary><div class=\"tool-body\">",
        escape_html(&clip(b.command.lines().next().unwrap_or(""), 160)),
        escape_html(&status)
    );
    pre(out, "output", &format!("$ {}\n{}", b.command, b.output));
    out.push_str("</div></details>");
}

fn user_content(out: &mut String, c: &UserContent) {
    match c {
        UserContent::Text(t) => md(out, "", t),
        UserContent::Blocks(b) => blocks(out, b, false),
    }
}

/// The section's class, its heading and its body, or `None` for an entry shown only in the tree.
fn body(ctx: &Context<'_>, at: usize, e: &SessionEntry) -> Option<(&'static str, String, String)> {
    let mut out = String::new();
    let (class, who) = match &e.kind {
        EntryKind::Message(m) => match m {
            SessionMessage::Llm(Message::User(u)) => {
                user_content(&mut out, &u.content);
                ("user", "User".to_string())
            }
            SessionMessage::Llm(Message::Assistant(a)) => {
                assistant(&mut out, ctx, at, a);
                (
                    "assistant",
                    format!("Assistant · {}/{}", a.provider, a.model),
                )
            }
            SessionMessage::Llm(Message::ToolResult(_)) if ctx.attached.contains(&at) => {
                return None;
            }
            SessionMessage::Llm(Message::ToolResult(r)) => {
                blocks(&mut out, &r.content, true);
                ("tool-result", format!("Tool result · {}", r.tool_name))
            }
            SessionMessage::BashExecution(b) => {
                bash_execution(&mut out, b);
                ("bash", "User shell command".to_string())
            }
            SessionMessage::Custom(c) => {
                user_content(&mut out, &c.content);
                ("custom", format!("[{}]", c.custom_type))
            }
            SessionMessage::BranchSummary {
                summary, from_id, ..
            } => {
                branch_summary(&mut out, summary, from_id);
                ("branch-summary", "Branch summary".to_string())
            }
            SessionMessage::CompactionSummary {
                summary,
                tokens_before,
                ..
            } => {
                md(&mut out, "", summary);
                (
                    "compaction",
                    format!("Compaction · {} tokens before", thousands(*tokens_before)),
                )
            }
            SessionMessage::System(_) => return None,
        },
        EntryKind::Compaction {
            summary,
            tokens_before,
            ..
        } => {
            out.push_str("<details class=\"summary\" open><summary>Summary of the earlier conversation</summary>");
            md(&mut out, "", summary);
            out.push_str("</details>");
            (
                "compaction",
                format!("Compaction · {} tokens before", thousands(*tokens_before)),
            )
        }
        EntryKind::BranchSummary {
            from_id, summary, ..
        } => {
            branch_summary(&mut out, summary, from_id);
            ("branch-summary", "Branch summary".to_string())
        }
        EntryKind::CustomMessage {
            custom_type,
            content,
            display: true,
            ..
        } => {
            user_content(&mut out, content);
            ("custom", format!("[{custom_type}]"))
        }
        EntryKind::ModelChange { provider, model_id } => {
            ("setting", format!("Model: {provider}/{model_id}"))
        }
        EntryKind::ThinkingLevelChange { thinking_level } => {
            ("setting", format!("Thinking level: {thinking_level}"))
        }
        EntryKind::CustomMessage { .. }
        | EntryKind::Custom { .. }
        | EntryKind::Label { .. }
        | EntryKind::SessionInfo { .. }
        | EntryKind::ContextEdit { .. }
        | EntryKind::Unknown { .. } => return None,
    };
    Some((class, who, out))
}

fn branch_summary(out: &mut String, summary: &str, from_id: &str) {
    if !from_id.is_empty() {
        let _ = write!(
            out,
            "<div class=\"note\">Summary of the branch that ended at <a href=\"{}\">{}</a>:</div>",
            escape_html(&select_href(from_id)),
            escape_html(from_id)
        );
    }
    md(out, "", summary);
}

/// `1234567` → `1,234,567`.
pub(super) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The section of the entry at `at`, hidden unless it is on the shown path. Nothing for an
/// entry that only the tree lists.
pub(super) fn section(
    out: &mut String,
    ctx: &Context<'_>,
    at: usize,
    e: &SessionEntry,
    shown: bool,
) {
    let Some((class, who, inner)) = body(ctx, at, e) else {
        return;
    };
    let label = ctx.labels.get(e.id.as_str()).map_or(String::new(), |l| {
        format!("<span class=\"label\">{}</span>", escape_html(l))
    });
    let time = e.timestamp.get(11..19).unwrap_or(&e.timestamp);
    let _ = write!(
        out,
        "<section class=\"msg {class}\" data-id=\"{id}\"{hidden}><div class=\"msg-head\"><span class=\"who\">{who}</span>{label}<a class=\"stamp\" href=\"{href}\" title=\"{ts} (link to this entry)\">{time}</a></div>{inner}</section>",
        id = escape_html(&e.id),
        hidden = if shown { "" } else { " hidden" },
        who = escape_html(&who),
        href = escape_html(&select_href(&e.id)),
        ts = escape_html(&e.timestamp),
        time = escape_html(time),
    );
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_call_gists_name_what_was_touched() {
        assert_eq!(
            call_gist("bash", &json!({"command": "ls -la\nrm x"})),
            "$ ls -la"
        );
        assert_eq!(
            call_gist("read", &json!({"path": "src/a.rs", "offset": 3})),
            "src/a.rs"
        );
        assert_eq!(
            call_gist("grep", &json!({"pattern": "fn main", "path": "src"})),
            "fn main  in src"
        );
        assert_eq!(call_gist("mine", &json!({"x": 1})), "{\"x\":1}");
    }

    #[test]
    fn numbers_get_thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1234567), "1,234,567");
    }

    #[test]
    fn images_need_an_image_type_and_base64_data() {
        let mut out = String::new();
        image(&mut out, "image/png", "iVBORw0KGgo=");
        assert_eq!(
            out,
            "<img class=\"image\" alt=\"image\" src=\"data:image/png;base64,iVBORw0KGgo=\">"
        );
        let mut bad = String::new();
        image(&mut bad, "text/html", "PHNjcmlwdD4=");
        image(&mut bad, "image/png\" onerror=\"x", "AA");
        image(&mut bad, "image/png", "AA\" onerror=\"x");
        assert!(!bad.contains("<img"), "{bad}");
        assert!(!bad.contains("onerror=\""), "{bad}");
    }
}
