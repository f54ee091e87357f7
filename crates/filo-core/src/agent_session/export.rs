//! Exporting a session as one self-contained HTML file (pi's `exportToHtml`): the current branch,
//! entry by entry, with inline CSS and images as data URLs. Every piece of session text is
//! HTML-escaped; nothing is loaded from elsewhere.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use filo_ai::{AssistantMessage, ContentBlock, Message, StopReason, UserContent};
use filo_session::{EntryKind, SessionEntry, SessionManager, SessionMessage};

use super::{AgentSession, lock};
use crate::CoreError;

const STYLE: &str = "body{font-family:ui-sans-serif,system-ui,sans-serif;max-width:960px;margin:2em auto;padding:0 1em;background:#fafafa;color:#222}\
header{border-bottom:1px solid #ccc;margin-bottom:1em}\
.entry{border-radius:6px;padding:.6em .9em;margin:.7em 0;background:#fff;border:1px solid #e3e3e3}\
.role{font-size:.75em;text-transform:uppercase;letter-spacing:.05em;color:#777;margin-bottom:.3em}\
.user{border-left:4px solid #3b82f6}.assistant{border-left:4px solid #10b981}\
.toolResult{border-left:4px solid #a3a3a3}.error{border-left:4px solid #ef4444}\
.bash{border-left:4px solid #f59e0b}.summary{border-left:4px solid #8b5cf6}\
.meta{color:#888;font-size:.8em;margin:.3em 0}\
pre{white-space:pre-wrap;word-break:break-word;background:#f4f4f4;padding:.5em;border-radius:4px;margin:.3em 0}\
.text{white-space:pre-wrap}details{color:#555}img{max-width:100%}";

/// Escape text for HTML element content and attribute values.
pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn block(out: &mut String, class: &str, role: &str, body: &str) {
    let _ = writeln!(
        out,
        "<div class=\"entry {}\"><div class=\"role\">{}</div>{body}</div>",
        escape_html(class),
        escape_html(role)
    );
}

fn text_div(s: &str) -> String {
    format!("<div class=\"text\">{}</div>", escape_html(s))
}

fn pre(s: &str) -> String {
    format!("<pre>{}</pre>", escape_html(s))
}

fn render_blocks(blocks: &[ContentBlock]) -> String {
    let mut body = String::new();
    for b in blocks {
        match b {
            ContentBlock::Text(t) => body.push_str(&text_div(&t.text)),
            ContentBlock::Thinking(t) => {
                let _ = write!(
                    body,
                    "<details><summary>thinking</summary>{}</details>",
                    text_div(&t.thinking)
                );
            }
            ContentBlock::Image(i) => {
                let _ = write!(
                    body,
                    "<img alt=\"image\" src=\"data:{};base64,{}\">",
                    escape_html(&i.mime_type),
                    escape_html(&i.data)
                );
            }
            ContentBlock::ToolCall(c) => {
                let args = serde_json::to_string_pretty(&c.arguments).unwrap_or_default();
                let _ = write!(
                    body,
                    "<div class=\"meta\">tool call {} ({})</div>{}",
                    escape_html(&c.name),
                    escape_html(&c.id),
                    pre(&args)
                );
            }
        }
    }
    body
}

fn user_content(c: &UserContent) -> String {
    match c {
        UserContent::Text(t) => text_div(t),
        UserContent::Blocks(b) => render_blocks(b),
    }
}

fn render_assistant(out: &mut String, a: &AssistantMessage) {
    let mut body = render_blocks(&a.content);
    let failed = matches!(a.stop_reason, StopReason::Error | StopReason::Aborted);
    if failed {
        let reason = match a.stop_reason {
            StopReason::Aborted => "aborted",
            _ => "error",
        };
        let msg = a.error_message.clone().unwrap_or_default();
        let _ = write!(
            body,
            "<div class=\"meta\">{}: {}</div>",
            reason,
            escape_html(&msg)
        );
    }
    let role = format!("assistant · {}/{}", a.provider, a.model);
    block(
        out,
        if failed {
            "assistant error"
        } else {
            "assistant"
        },
        &role,
        &body,
    );
}

fn render_message(out: &mut String, m: &SessionMessage) {
    match m {
        SessionMessage::Llm(Message::User(u)) => {
            block(out, "user", "user", &user_content(&u.content))
        }
        SessionMessage::Llm(Message::Assistant(a)) => render_assistant(out, a),
        SessionMessage::Llm(Message::ToolResult(t)) => {
            let class = if t.is_error {
                "toolResult error"
            } else {
                "toolResult"
            };
            let role = format!("tool result · {}", t.tool_name);
            let body: String = t
                .content
                .iter()
                .map(|b| match b {
                    ContentBlock::Text(x) => pre(&x.text),
                    other => render_blocks(std::slice::from_ref(other)),
                })
                .collect();
            block(out, class, &role, &body);
        }
        SessionMessage::BashExecution(b) => {
            let mut body = pre(&format!("$ {}\n{}", b.command, b.output));
            let status = match (b.cancelled, b.exit_code) {
                (true, _) => "cancelled".to_string(),
                (false, Some(c)) => format!("exit code {c}"),
                (false, None) => String::new(),
            };
            if !status.is_empty() {
                let _ = write!(body, "<div class=\"meta\">{}</div>", escape_html(&status));
            }
            block(out, "bash", "user bash", &body);
        }
        other => {
            let v = other.to_value();
            let summary = v.get("summary").and_then(|s| s.as_str());
            match summary {
                Some(s) => block(out, "summary", other.role(), &text_div(s)),
                None => {
                    let text = serde_json::to_string_pretty(&v).unwrap_or_default();
                    block(out, "custom", other.role(), &pre(&text));
                }
            }
        }
    }
}

fn render_entry(out: &mut String, e: &SessionEntry) {
    match &e.kind {
        EntryKind::Message(m) => render_message(out, m),
        EntryKind::ModelChange { provider, model_id } => {
            let _ = writeln!(
                out,
                "<div class=\"meta\">model: {}/{}</div>",
                escape_html(provider),
                escape_html(model_id)
            );
        }
        EntryKind::ThinkingLevelChange { thinking_level } => {
            let _ = writeln!(
                out,
                "<div class=\"meta\">thinking: {}</div>",
                escape_html(thinking_level)
            );
        }
        EntryKind::Compaction {
            summary,
            tokens_before,
            ..
        } => {
            let role = format!("compaction · {tokens_before} tokens before");
            block(out, "summary", &role, &text_div(summary));
        }
        EntryKind::BranchSummary { summary, .. } => {
            block(out, "summary", "branch summary", &text_div(summary));
        }
        EntryKind::CustomMessage {
            custom_type,
            content,
            display: true,
            ..
        } => block(out, "custom", custom_type, &user_content(content)),
        EntryKind::CustomMessage { .. }
        | EntryKind::Custom { .. }
        | EntryKind::Label { .. }
        | EntryKind::SessionInfo { .. }
        | EntryKind::Unknown { .. } => {}
    }
}

/// The current branch of a session as one self-contained HTML page (everything escaped, images
/// inline). Refuses a session with no message yet.
pub fn render_session_html(store: &SessionManager) -> Result<String, CoreError> {
    let path = store.branch_path(None);
    if !path.iter().any(|e| matches!(e.kind, EntryKind::Message(_))) {
        return Err(CoreError::Refused(
            "Nothing to export yet - start a conversation first".into(),
        ));
    }
    let header = store.header();
    let title = store
        .session_name()
        .map_or_else(|| format!("Session {}", header.id), str::to_string);
    let mut html = String::new();
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>\n<header><h1>{}</h1><div class=\"meta\">id {} · started {} · cwd {}</div></header>\n",
        escape_html(&title),
        escape_html(&title),
        escape_html(&header.id),
        escape_html(&header.timestamp),
        escape_html(&header.cwd)
    );
    for e in &path {
        render_entry(&mut html, e);
    }
    html.push_str("</body></html>\n");
    Ok(html)
}

/// Write `html` to `target`, creating its directory.
pub fn write_html(target: &Path, html: &str) -> Result<(), CoreError> {
    if let Some(dir) = target.parent() {
        std::fs::create_dir_all(dir).map_err(|e| CoreError::io(dir, e))?;
    }
    std::fs::write(target, html).map_err(|e| CoreError::io(target, e))
}

impl AgentSession {
    /// Write the current branch of the session as a self-contained HTML file. The default path
    /// is `filo-session-<session file name>.html` in the working directory; a relative path is
    /// taken from there too. Returns the path written.
    pub fn export_to_html(&self, output_path: Option<&Path>) -> Result<PathBuf, CoreError> {
        let (html, stem) = {
            let store = lock(&self.inner.store);
            let file = store.session_file().ok_or_else(|| {
                CoreError::Refused("Cannot export in-memory session to HTML".into())
            })?;
            let stem = file
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            (render_session_html(&store)?, stem)
        };
        let target = match output_path {
            Some(p) => self.inner.cwd.join(p),
            None => self.inner.cwd.join(format!("filo-session-{stem}.html")),
        };
        write_html(&target, &html)?;
        Ok(target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_every_special_character() {
        assert_eq!(
            escape_html("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }

    #[test]
    fn a_user_message_with_markup_is_escaped() {
        let mut out = String::new();
        let m = SessionMessage::Llm(Message::User(filo_ai::UserMessage {
            content: UserContent::Text("<script>alert(1)</script>".into()),
            timestamp: 0,
        }));
        render_message(&mut out, &m);
        assert!(out.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(!out.contains("<script>"));
    }
}
