//! Markdown to styled lines (pulldown-cmark), re-parsed on every frame while a message streams —
//! an unclosed construct simply renders as far as it goes. Code blocks get a small keyword /
//! string / comment highlighter (no grammar engine: cheap and good enough for a transcript).

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use crate::theme::Theme;

const KEYWORDS: &[&str] = &[
    "fn",
    "let",
    "mut",
    "pub",
    "use",
    "mod",
    "impl",
    "struct",
    "enum",
    "trait",
    "match",
    "if",
    "else",
    "for",
    "while",
    "loop",
    "return",
    "async",
    "await",
    "const",
    "static",
    "type",
    "def",
    "class",
    "import",
    "from",
    "function",
    "var",
    "export",
    "true",
    "false",
    "null",
    "None",
    "self",
    "Self",
    "in",
    "do",
    "done",
    "then",
    "fi",
    "case",
    "esac",
    "echo",
    "package",
    "func",
    "interface",
    "new",
    "try",
    "catch",
    "throw",
    "with",
    "as",
    "where",
    "break",
    "continue",
];

struct Builder<'t> {
    theme: &'t Theme,
    lines: Vec<Line<'static>>,
    cur: Vec<Span<'static>>,
    styles: Vec<Style>,
    /// Open lists: the next number for ordered ones.
    lists: Vec<Option<u64>>,
    quote: usize,
    in_code: Option<String>,
    link: Option<String>,
}

impl<'t> Builder<'t> {
    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn prefix(&self) -> Vec<Span<'static>> {
        let mut p = Vec::new();
        if self.quote > 0 {
            p.push(Span::styled(
                "│ ".repeat(self.quote),
                self.theme.fg("mdQuote"),
            ));
        }
        if !self.lists.is_empty() {
            p.push(Span::raw("  ".repeat(self.lists.len().saturating_sub(1))));
        }
        p
    }

    fn flush(&mut self) {
        if !self.cur.is_empty() {
            let mut spans = self.prefix();
            spans.append(&mut self.cur);
            self.lines.push(Line::from(spans));
        }
    }

    fn blank(&mut self) {
        self.flush();
        if self.lines.last().is_some_and(|l| !l.spans.is_empty()) {
            self.lines.push(Line::default());
        }
    }

    fn text(&mut self, t: &str) {
        let style = self.style();
        self.cur.push(Span::styled(t.to_string(), style));
    }

    fn code_block(&mut self, text: &str) {
        for raw in text.lines() {
            let mut spans = self.prefix();
            spans.push(Span::styled(
                self.theme.code_block_indent.clone(),
                Style::default(),
            ));
            spans.extend(highlight(raw, self.theme));
            self.lines.push(Line::from(spans));
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        let t = self.theme;
        match tag {
            Tag::Paragraph => {}
            Tag::Heading { level, .. } => {
                self.blank();
                let hashes = match level {
                    HeadingLevel::H1 => "# ",
                    HeadingLevel::H2 => "## ",
                    _ => "### ",
                };
                let st = t.fg("mdHeading").add_modifier(Modifier::BOLD);
                self.cur.push(Span::styled(hashes, st));
                self.styles.push(st);
            }
            Tag::BlockQuote(_) => {
                self.flush();
                self.quote += 1;
            }
            Tag::CodeBlock(kind) => {
                self.blank();
                let lang = match kind {
                    CodeBlockKind::Fenced(l) => l.to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.lines.push(Line::from(Span::styled(
                    format!("```{lang}"),
                    t.fg("muted"),
                )));
                self.in_code = Some(String::new());
            }
            Tag::List(start) => {
                self.flush();
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let bullet = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let b = format!("{n}. ");
                        *n += 1;
                        b
                    }
                    _ => "- ".to_string(),
                };
                self.cur.push(Span::styled(bullet, t.fg("mdListBullet")));
            }
            Tag::Emphasis => self
                .styles
                .push(self.style().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.styles.push(self.style().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self
                .styles
                .push(self.style().add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { dest_url, .. } => {
                self.link = Some(dest_url.to_string());
                self.styles
                    .push(t.fg("mdLink").add_modifier(Modifier::UNDERLINED));
            }
            Tag::Image { dest_url, .. } => {
                self.text(&format!("[image: {dest_url}] "));
                self.styles.push(self.style());
            }
            Tag::Table(_) | Tag::TableHead | Tag::TableRow => self.flush(),
            Tag::TableCell if !self.cur.is_empty() => {
                self.cur.push(Span::styled(" │ ", t.fg("muted")));
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => self.blank(),
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.blank();
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.quote = self.quote.saturating_sub(1);
                self.blank();
            }
            TagEnd::CodeBlock => {
                if let Some(code) = self.in_code.take() {
                    self.code_block(&code);
                }
                self.lines
                    .push(Line::from(Span::styled("```", self.theme.fg("muted"))));
                self.blank();
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                if self.lists.is_empty() {
                    self.blank();
                }
            }
            TagEnd::Item => self.flush(),
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough | TagEnd::Image => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                if let Some(url) = self.link.take() {
                    let shown: String = self.cur.iter().map(|s| s.content.as_ref()).collect();
                    if !shown.ends_with(&url) && !url.is_empty() {
                        self.cur
                            .push(Span::styled(format!(" ({url})"), self.theme.fg("muted")));
                    }
                }
            }
            TagEnd::TableHead | TagEnd::TableRow => self.flush(),
            TagEnd::Table => self.blank(),
            _ => {}
        }
    }
}

/// Render markdown to unwrapped lines (no trailing blank line).
pub fn render(md: &str, theme: &Theme) -> Vec<Line<'static>> {
    let mut b = Builder {
        theme,
        lines: Vec::new(),
        cur: Vec::new(),
        styles: vec![theme.fg("text")],
        lists: Vec::new(),
        quote: 0,
        in_code: None,
        link: None,
    };
    let opts = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS;
    for ev in Parser::new_ext(md, opts) {
        match ev {
            Event::Start(tag) => b.start(tag),
            Event::End(tag) => b.end(tag),
            Event::Text(t) => match b.in_code.as_mut() {
                Some(code) => code.push_str(&t),
                None => {
                    let mut parts = t.split('\n').peekable();
                    while let Some(p) = parts.next() {
                        b.text(p);
                        if parts.peek().is_some() {
                            b.flush();
                        }
                    }
                }
            },
            Event::Code(c) => b.cur.push(Span::styled(c.to_string(), theme.fg("mdCode"))),
            Event::SoftBreak => b.text(" "),
            Event::HardBreak => b.flush(),
            Event::Rule => {
                b.blank();
                b.lines
                    .push(Line::from(Span::styled("───", theme.fg("muted"))));
                b.blank();
            }
            Event::TaskListMarker(done) => b.text(if done { "[x] " } else { "[ ] " }),
            Event::Html(h) | Event::InlineHtml(h) => b.text(h.trim_end_matches('\n')),
            Event::FootnoteReference(f) => b.text(&format!("[{f}]")),
            Event::InlineMath(m) | Event::DisplayMath(m) => b.text(&m),
        }
    }
    if let Some(code) = b.in_code.take() {
        b.code_block(&code);
    }
    b.flush();
    while b.lines.last().is_some_and(|l| l.spans.is_empty()) {
        b.lines.pop();
    }
    b.lines
}

/// One line of code: keywords, string literals and line comments coloured.
pub fn highlight(line: &str, theme: &Theme) -> Vec<Span<'static>> {
    let base = theme.fg("mdCodeBlock");
    let trimmed = line.trim_start();
    if trimmed.starts_with("//") || trimmed.starts_with('#') && !trimmed.starts_with("#[") {
        return vec![Span::styled(line.to_string(), theme.fg("syntaxComment"))];
    }
    let mut spans = Vec::new();
    let mut word = String::new();
    let mut chars = line.chars().peekable();
    let flush_word = |word: &mut String, spans: &mut Vec<Span<'static>>| {
        if word.is_empty() {
            return;
        }
        let st = if KEYWORDS.contains(&word.as_str()) {
            theme.fg("syntaxKeyword")
        } else {
            base
        };
        spans.push(Span::styled(std::mem::take(word), st));
    };
    while let Some(c) = chars.next() {
        if c == '"' || c == '\'' || c == '`' {
            flush_word(&mut word, &mut spans);
            let mut s = c.to_string();
            for n in chars.by_ref() {
                s.push(n);
                if n == c {
                    break;
                }
            }
            spans.push(Span::styled(s, theme.fg("syntaxString")));
        } else if c.is_alphanumeric() || c == '_' {
            word.push(c);
        } else {
            flush_word(&mut word, &mut spans);
            spans.push(Span::styled(c.to_string(), base));
        }
    }
    flush_word(&mut word, &mut spans);
    spans
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::theme::ColorDepth;

    fn plain(md: &str) -> Vec<String> {
        let t = Theme::builtin("dark", ColorDepth::None).unwrap();
        render(md, &t).iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn blocks_render_as_lines() {
        let out = plain(
            "# Title\n\nSome *text* and `code`.\n\n- one\n- two\n\n1. a\n2. b\n\n> quoted\n\n```rust\nfn main() {}\n```\n",
        );
        assert_eq!(
            out,
            vec![
                "# Title",
                "",
                "Some text and code.",
                "",
                "- one",
                "- two",
                "",
                "1. a",
                "2. b",
                "",
                "│ quoted",
                "",
                "```rust",
                "  fn main() {}",
                "```",
            ]
        );
    }

    #[test]
    fn unclosed_code_block_while_streaming() {
        assert_eq!(
            plain("text\n\n```\nlet x"),
            vec!["text", "", "```", "  let x", "```"]
        );
    }

    #[test]
    fn keywords_and_strings_are_separate_spans() {
        let t = Theme::builtin("dark", ColorDepth::TrueColor).unwrap();
        let spans = highlight("let s = \"fn\";", &t);
        assert_eq!(spans[0].content, "let");
        assert_eq!(spans[0].style, t.fg("syntaxKeyword"));
        assert!(
            spans
                .iter()
                .any(|s| s.content == "\"fn\"" && s.style == t.fg("syntaxString"))
        );
    }
}
