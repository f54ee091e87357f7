//! History cells: what one entry of the conversation looks like. A cell renders itself to wrapped
//! lines for a width; committed cells cache that rendering per width, the live cell re-renders.

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;

use crate::markdown;
use crate::text::{truncate, wrap_line, wrap_lines};
use crate::theme::Theme;

/// Lines of tool output shown while collapsed.
const COLLAPSED_OUTPUT: usize = 12;

/// A block of an assistant message.
#[derive(Debug, Clone, PartialEq)]
pub enum AssistantBlock {
    Text(String),
    Thinking(String),
}

/// A tool call and, once it ran, its result.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCell {
    pub id: String,
    pub name: String,
    pub args: Value,
    /// Output text so far (live for bash).
    pub output: String,
    pub details: Option<Value>,
    pub images: Vec<crate::images::ImageRef>,
    pub is_error: bool,
    pub done: bool,
}

/// One entry of the conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    User(String),
    Assistant {
        blocks: Vec<AssistantBlock>,
        /// Set for `error` / `aborted` stops.
        error: Option<String>,
        images: usize,
    },
    Tool(ToolCell),
    /// The images of a user message (after its text).
    Images(Vec<crate::images::ImageRef>),
    /// `!cmd` / `!!cmd` run by the user.
    Bash {
        command: String,
        output: String,
        exit_code: Option<i32>,
        excluded: bool,
        done: bool,
    },
    Info(String),
    Warning(String),
    Error(String),
}

/// How cells are drawn (toggled by keys).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RenderOpts {
    pub show_thinking: bool,
    pub expand_tools: bool,
    /// Images inline (`None`: a text line each).
    pub images: Option<crate::images::ImageDisplay>,
}

fn padded(text: &str, style: Style, width: usize) -> Vec<Line<'static>> {
    let line = Line::from(Span::raw(text.to_string())).style(style);
    wrap_line(&line, width, 0)
}

fn arg_str<'a>(args: &'a Value, key: &str) -> &'a str {
    args.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The one-line summary of a tool call's arguments.
pub fn tool_title(name: &str, args: &Value) -> String {
    match name {
        "bash" => format!("$ {}", arg_str(args, "command")),
        "read" | "write" | "edit" | "ls" => {
            let path = args
                .get("path")
                .or_else(|| args.get("file_path"))
                .and_then(Value::as_str)
                .unwrap_or("");
            let mut s = format!("{name} {path}");
            if let Some(o) = args.get("offset").and_then(Value::as_u64) {
                s.push_str(&format!(":{o}"));
                if let Some(l) = args.get("limit").and_then(Value::as_u64) {
                    s.push_str(&format!("-{}", o + l));
                }
            }
            s
        }
        "grep" | "find" => format!("{name} {}", arg_str(args, "pattern")),
        _ => {
            let compact = serde_json::to_string(args).unwrap_or_default();
            format!("{name} {compact}")
        }
    }
}

fn output_lines(text: &str, expand: bool) -> (Vec<&str>, usize) {
    let all: Vec<&str> = text.trim_end_matches('\n').lines().collect();
    if expand || all.len() <= COLLAPSED_OUTPUT {
        return (all, 0);
    }
    let hidden = all.len() - COLLAPSED_OUTPUT;
    (all[hidden..].to_vec(), hidden)
}

impl ToolCell {
    fn render(&self, theme: &Theme, width: usize, opts: RenderOpts) -> Vec<Line<'static>> {
        let bg = match (self.done, self.is_error) {
            (false, _) => "toolPendingBg",
            (true, false) => "toolSuccessBg",
            (true, true) => "toolErrorBg",
        };
        let panel = theme.bg(bg);
        let mark = match (self.done, self.is_error) {
            (false, _) => Span::styled("⋯ ", theme.fg("warning")),
            (true, false) => Span::styled("✓ ", theme.fg("success")),
            (true, true) => Span::styled("✗ ", theme.fg("error")),
        };
        let title = Line::from(vec![
            mark,
            Span::styled(
                tool_title(&self.name, &self.args),
                theme.fg("toolTitle").add_modifier(Modifier::BOLD),
            ),
        ])
        .style(panel);
        let mut out = wrap_line(&title, width, 2);
        let diff = self
            .details
            .as_ref()
            .and_then(|d| d.get("diff"))
            .and_then(Value::as_str)
            .filter(|_| !self.is_error);
        let mut body: Vec<Line<'static>> = Vec::new();
        if let Some(diff) = diff {
            for l in diff.lines() {
                let key = match l.chars().next() {
                    Some('+') => "toolDiffAdded",
                    Some('-') => "toolDiffRemoved",
                    _ => "toolDiffContext",
                };
                body.push(Line::from(Span::styled(l.to_string(), theme.fg(key))));
            }
        } else if self.name == "write" && !self.done {
            let content = arg_str(&self.args, "content");
            let (lines, hidden) = output_lines(content, opts.expand_tools);
            if hidden > 0 {
                body.push(Line::from(Span::styled(
                    format!("… {hidden} earlier lines"),
                    theme.fg("muted"),
                )));
            }
            body.extend(lines.into_iter().map(|l| Line::from(l.to_string())));
        } else {
            let (lines, hidden) = output_lines(&self.output, opts.expand_tools);
            if hidden > 0 {
                body.push(Line::from(Span::styled(
                    format!("… {hidden} earlier lines (ctrl+o to expand)"),
                    theme.fg("muted"),
                )));
            }
            let st = if self.is_error {
                theme.fg("error")
            } else {
                theme.fg("muted")
            };
            body.extend(
                lines
                    .into_iter()
                    .map(|l| Line::from(Span::styled(l.to_string(), st))),
            );
        }
        for r in &self.images {
            body.extend(crate::images::lines(
                r,
                opts.images,
                width.saturating_sub(2),
                theme.fg("muted"),
            ));
        }
        for l in body {
            let indented = Line::from(
                std::iter::once(Span::raw("  "))
                    .chain(l.spans)
                    .collect::<Vec<_>>(),
            )
            .style(panel);
            out.extend(wrap_line(&indented, width, 2));
        }
        out
    }
}

impl Cell {
    /// The cell as wrapped lines, followed by one blank separator line.
    pub fn render(&self, theme: &Theme, width: usize, opts: RenderOpts) -> Vec<Line<'static>> {
        let width = width.max(4);
        let mut out = match self {
            Cell::User(text) => {
                let st = theme.bg("userMessageBg");
                let lines: Vec<Line<'static>> = text
                    .lines()
                    .map(|l| Line::from(l.to_string()).style(st))
                    .collect();
                wrap_lines(&lines, width)
            }
            Cell::Assistant {
                blocks,
                error,
                images,
            } => render_assistant(blocks, error.as_deref(), *images, theme, width, opts),
            Cell::Tool(t) => t.render(theme, width, opts),
            Cell::Images(refs) => refs
                .iter()
                .flat_map(|r| crate::images::lines(r, opts.images, width, theme.fg("muted")))
                .collect(),
            Cell::Bash {
                command,
                output,
                exit_code,
                excluded,
                done,
            } => user_bash(
                command, output, *exit_code, *excluded, *done, theme, width, opts,
            ),
            Cell::Info(t) => padded(t, theme.fg("muted"), width),
            Cell::Warning(t) => padded(&format!("Warning: {t}"), theme.fg("warning"), width),
            Cell::Error(t) => padded(&format!("Error: {t}"), theme.fg("error"), width),
        };
        out.push(Line::default());
        out
    }
}

/// A `!cmd` run by the user, drawn as a bash panel marked `!` (or `!!`: kept out of the context).
#[allow(clippy::too_many_arguments)]
fn user_bash(
    command: &str,
    output: &str,
    exit_code: Option<i32>,
    excluded: bool,
    done: bool,
    theme: &Theme,
    width: usize,
    opts: RenderOpts,
) -> Vec<Line<'static>> {
    let mut cell = ToolCell {
        id: String::new(),
        name: "bash".into(),
        args: serde_json::json!({ "command": command }),
        output: output.to_string(),
        details: None,
        images: Vec::new(),
        is_error: exit_code.is_some_and(|c| c != 0),
        done,
    };
    if let Some(c) = exit_code.filter(|c| done && *c != 0) {
        cell.output.push_str(&format!("\n(exit {c})"));
    }
    let mut lines = cell.render(theme, width, opts);
    if let Some(first) = lines.first_mut() {
        let prefix = if excluded { "!!" } else { "!" };
        first
            .spans
            .insert(0, Span::styled(prefix, theme.fg("accent")));
    }
    lines
}

/// One block of an assistant message.
pub(crate) fn render_block(
    b: &AssistantBlock,
    theme: &Theme,
    width: usize,
    opts: RenderOpts,
    out: &mut Vec<Line<'static>>,
) {
    match b {
        AssistantBlock::Text(t) if !t.trim().is_empty() => {
            out.extend(wrap_lines(&markdown::render(t, theme), width));
        }
        AssistantBlock::Text(_) => {}
        AssistantBlock::Thinking(t) if opts.show_thinking => {
            let st = theme.fg("thinkingText").add_modifier(Modifier::ITALIC);
            for l in t.trim().lines() {
                out.extend(wrap_line(&Line::from(l.to_string()).style(st), width, 0));
            }
        }
        AssistantBlock::Thinking(t) => {
            let first = t.trim().lines().next().unwrap_or("");
            let note = format!(
                "Thinking… {} (ctrl+t to expand)",
                truncate(first, width.saturating_sub(30).max(8))
            );
            out.push(Line::from(Span::styled(
                note,
                theme.fg("thinkingText").add_modifier(Modifier::ITALIC),
            )));
        }
    }
}

fn render_assistant(
    blocks: &[AssistantBlock],
    error: Option<&str>,
    images: usize,
    theme: &Theme,
    width: usize,
    opts: RenderOpts,
) -> Vec<Line<'static>> {
    let mut out: Vec<Line<'static>> = Vec::new();
    for b in blocks {
        if out.last().is_some_and(|l| !l.spans.is_empty()) {
            out.push(Line::default());
        }
        render_block(b, theme, width, opts, &mut out);
    }
    if images > 0 {
        out.push(Line::from(Span::styled(
            format!("[{images} image(s)]"),
            theme.fg("muted"),
        )));
    }
    if let Some(e) = error {
        out.extend(padded(e, theme.fg("error"), width));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::theme::ColorDepth;

    #[test]
    fn titles_summarise_arguments() {
        let a = serde_json::json!({"path": "src/lib.rs", "offset": 10, "limit": 5});
        assert_eq!(tool_title("read", &a), "read src/lib.rs:10-15");
        assert_eq!(
            tool_title("bash", &serde_json::json!({"command": "ls"})),
            "$ ls"
        );
        assert_eq!(
            tool_title("life", &serde_json::json!({"ancestors": 3})),
            "life {\"ancestors\":3}"
        );
    }

    #[test]
    fn collapsed_output_keeps_the_tail() {
        let t = Theme::builtin("dark", ColorDepth::None).unwrap();
        let out: String = (1..=30).map(|i| format!("l{i}\n")).collect();
        let cell = Cell::Tool(ToolCell {
            id: "1".into(),
            name: "bash".into(),
            args: serde_json::json!({"command": "seq 30"}),
            output: out,
            details: None,
            images: Vec::new(),
            is_error: false,
            done: true,
        });
        let lines: Vec<String> = cell
            .render(&t, 40, RenderOpts::default())
            .iter()
            .map(|l| l.to_string())
            .collect();
        assert_eq!(lines[0], "✓ $ seq 30");
        assert_eq!(lines[1], "  … 18 earlier lines (ctrl+o to expand)");
        assert_eq!(lines[2], "  l19");
        assert_eq!(lines.len(), 2 + 12 + 1);
        let expanded = cell.render(
            &t,
            40,
            RenderOpts {
                expand_tools: true,
                show_thinking: false,
                images: None,
            },
        );
        assert_eq!(expanded.len(), 1 + 30 + 1);
    }
}
