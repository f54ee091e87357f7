//! Markdown to HTML for the exported page: pulldown-cmark parses, this module writes the HTML
//! itself so that nothing from the session reaches the page unescaped.
//!
//! - Raw HTML in a message is shown as text (as the terminal UI shows it), never interpreted.
//! - Links keep only `http`, `https`, `mailto` and in-page `#` targets; any other target (a
//!   `javascript:` URL, a relative path that means nothing in a sent file) becomes plain text.
//! - Markdown images are never fetched: they become a link to the image (the page loads nothing
//!   from elsewhere).
//! - Line breaks inside a paragraph are kept, as the terminal shows them.

use pulldown_cmark::{Alignment, CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

use super::escape_html;

/// A link target the page may point at, or `None`.
fn safe_href(url: &str) -> Option<&str> {
    let u = url.trim();
    let lower = u.to_ascii_lowercase();
    let ok = lower.starts_with("http://")
        || lower.starts_with("https://")
        || lower.starts_with("mailto:")
        || (u.starts_with('#') && u.len() > 1);
    ok.then_some(u)
}

/// How an open link or image closes.
enum Open {
    /// Its target was refused: shown as a `<span>`.
    Span,
    /// A link (or an image shown as a link): an `<a>`.
    Anchor,
}

struct Writer {
    out: String,
    /// Column alignments of the table being written, and the index of the next cell.
    table: Vec<Alignment>,
    cell: usize,
    in_head: bool,
    /// Per open link/image: how it closes.
    links: Vec<Open>,
}

impl Writer {
    fn start(&mut self, tag: Tag<'_>) {
        let out = &mut self.out;
        match tag {
            Tag::Paragraph => out.push_str("<p>"),
            Tag::Heading { level, .. } => {
                out.push('<');
                out.push_str(&level.to_string());
                out.push('>');
            }
            Tag::BlockQuote(_) => out.push_str("<blockquote>"),
            Tag::CodeBlock(kind) => {
                let lang = match &kind {
                    CodeBlockKind::Fenced(info) => info.split_whitespace().next().unwrap_or(""),
                    CodeBlockKind::Indented => "",
                };
                if lang.is_empty() {
                    out.push_str("<pre><code>");
                } else {
                    out.push_str("<pre><code class=\"language-");
                    out.push_str(&escape_html(lang));
                    out.push_str("\">");
                }
            }
            Tag::HtmlBlock => out.push_str("<pre class=\"raw\">"),
            Tag::List(Some(1)) => out.push_str("<ol>\n"),
            Tag::List(Some(n)) => {
                out.push_str("<ol start=\"");
                out.push_str(&n.to_string());
                out.push_str("\">\n");
            }
            Tag::List(None) => out.push_str("<ul>\n"),
            Tag::Item => out.push_str("<li>"),
            Tag::Table(align) => {
                self.table = align;
                out.push_str("<div class=\"table\"><table>");
            }
            Tag::TableHead => {
                self.in_head = true;
                self.cell = 0;
                out.push_str("<thead><tr>");
            }
            Tag::TableRow => {
                self.cell = 0;
                out.push_str("<tr>");
            }
            Tag::TableCell => {
                let name = if self.in_head { "th" } else { "td" };
                let align = match self.table.get(self.cell) {
                    Some(Alignment::Left) => " style=\"text-align:left\"",
                    Some(Alignment::Center) => " style=\"text-align:center\"",
                    Some(Alignment::Right) => " style=\"text-align:right\"",
                    Some(Alignment::None) | None => "",
                };
                out.push('<');
                out.push_str(name);
                out.push_str(align);
                out.push('>');
            }
            Tag::Emphasis => out.push_str("<em>"),
            Tag::Strong => out.push_str("<strong>"),
            Tag::Strikethrough => out.push_str("<del>"),
            Tag::Link {
                dest_url, title, ..
            } => match safe_href(&dest_url) {
                Some(href) => {
                    out.push_str("<a href=\"");
                    out.push_str(&escape_html(href));
                    out.push('"');
                    if !title.is_empty() {
                        out.push_str(" title=\"");
                        out.push_str(&escape_html(&title));
                        out.push('"');
                    }
                    out.push_str(" rel=\"noopener noreferrer\">");
                    self.links.push(Open::Anchor);
                }
                None => {
                    out.push_str("<span class=\"link\" title=\"");
                    out.push_str(&escape_html(&dest_url));
                    out.push_str("\">");
                    self.links.push(Open::Span);
                }
            },
            Tag::Image { dest_url, .. } => {
                match safe_href(&dest_url).filter(|h| !h.starts_with('#')) {
                    Some(href) => {
                        out.push_str("<a class=\"md-image\" href=\"");
                        out.push_str(&escape_html(href));
                        out.push_str("\" rel=\"noopener noreferrer\">image: ");
                        self.links.push(Open::Anchor);
                    }
                    None => {
                        out.push_str("<span class=\"md-image\">image: ");
                        self.links.push(Open::Span);
                    }
                }
            }
            // Not enabled in the parser options; their text still comes through escaped.
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        let out = &mut self.out;
        match tag {
            TagEnd::Paragraph => out.push_str("</p>\n"),
            TagEnd::Heading(level) => {
                out.push_str("</");
                out.push_str(&level.to_string());
                out.push_str(">\n");
            }
            TagEnd::BlockQuote(_) => out.push_str("</blockquote>\n"),
            TagEnd::CodeBlock => out.push_str("</code></pre>\n"),
            TagEnd::HtmlBlock => out.push_str("</pre>\n"),
            TagEnd::List(true) => out.push_str("</ol>\n"),
            TagEnd::List(false) => out.push_str("</ul>\n"),
            TagEnd::Item => out.push_str("</li>\n"),
            TagEnd::Table => out.push_str("</tbody></table></div>\n"),
            TagEnd::TableHead => {
                self.in_head = false;
                out.push_str("</tr></thead><tbody>\n");
            }
            TagEnd::TableRow => out.push_str("</tr>\n"),
            TagEnd::TableCell => {
                out.push_str(if self.in_head { "</th>" } else { "</td>" });
                self.cell += 1;
            }
            TagEnd::Emphasis => out.push_str("</em>"),
            TagEnd::Strong => out.push_str("</strong>"),
            TagEnd::Strikethrough => out.push_str("</del>"),
            TagEnd::Link | TagEnd::Image => match self.links.pop() {
                Some(Open::Anchor) => out.push_str("</a>"),
                Some(Open::Span) => out.push_str("</span>"),
                None => {}
            },
            _ => {}
        }
    }
}

/// `text` as markdown, rendered to HTML that is safe to place inside an element.
pub fn render(text: &str) -> String {
    let opts = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut w = Writer {
        out: String::with_capacity(text.len() + text.len() / 4 + 16),
        table: Vec::new(),
        cell: 0,
        in_head: false,
        links: Vec::new(),
    };
    for event in Parser::new_ext(text, opts) {
        match event {
            Event::Start(tag) => w.start(tag),
            Event::End(tag) => w.end(tag),
            Event::Text(t) | Event::Html(t) | Event::InlineHtml(t) => {
                w.out.push_str(&escape_html(&t));
            }
            Event::Code(t) => {
                w.out.push_str("<code>");
                w.out.push_str(&escape_html(&t));
                w.out.push_str("</code>");
            }
            Event::SoftBreak | Event::HardBreak => w.out.push_str("<br>\n"),
            Event::Rule => w.out.push_str("<hr>\n"),
            Event::TaskListMarker(done) => w.out.push_str(if done {
                "<input type=\"checkbox\" disabled checked> "
            } else {
                "<input type=\"checkbox\" disabled> "
            }),
            Event::InlineMath(t) | Event::DisplayMath(t) | Event::FootnoteReference(t) => {
                w.out.push_str(&escape_html(&t));
            }
        }
    }
    w.out
}

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn common_markdown_becomes_html() {
        assert_eq!(
            render("# Title\n\nSome *em* and **strong** and `a<b`."),
            "<h1>Title</h1>\n<p>Some <em>em</em> and <strong>strong</strong> and <code>a&lt;b</code>.</p>\n"
        );
        assert_eq!(
            render("```rust\nfn main() { a < b }\n```"),
            "<pre><code class=\"language-rust\">fn main() { a &lt; b }\n</code></pre>\n"
        );
        assert_eq!(
            render("- one\n- [x] two\n\n3. three"),
            "<ul>\n<li>one</li>\n<li><input type=\"checkbox\" disabled checked> two</li>\n</ul>\n<ol start=\"3\">\n<li>three</li>\n</ol>\n"
        );
        assert_eq!(render("a\nb"), "<p>a<br>\nb</p>\n");
    }

    #[test]
    fn tables_keep_their_alignment() {
        let html = render("| a | b |\n|:--|--:|\n| 1 | 2 |");
        assert_eq!(
            html,
            "<div class=\"table\"><table><thead><tr><th style=\"text-align:left\">a</th><th style=\"text-align:right\">b</th></tr></thead><tbody>\n<tr><td style=\"text-align:left\">1</td><td style=\"text-align:right\">2</td></tr>\n</tbody></table></div>\n"
        );
    }

    #[test]
    fn raw_html_is_shown_as_text() {
        let html = render("</script><img src=x onerror=alert(1)>\n\nhi <b>x</b>");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("<b>"), "{html}");
        assert!(!html.contains("</script>"), "{html}");
        assert!(html.contains("&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"));
        assert!(html.contains("hi &lt;b&gt;x&lt;/b&gt;"));
    }

    #[test]
    fn only_safe_link_targets_become_links() {
        assert_eq!(
            render("[x](https://e.org/?a=\"b\" \"t<\")"),
            "<p><a href=\"https://e.org/?a=&quot;b&quot;\" title=\"t&lt;\" rel=\"noopener noreferrer\">x</a></p>\n"
        );
        let js = render("[click](javascript:alert(1)) [rel](src/main.rs)");
        assert!(!js.contains("<a "), "{js}");
        assert!(js.contains("<span class=\"link\" title=\"javascript:alert(1)\">click</span>"));
        let data = render("[d](DATA:text/html,x)");
        assert!(!data.contains("<a "), "{data}");
    }

    #[test]
    fn markdown_images_are_never_loaded() {
        let html = render("![a cat](https://e.org/cat.png) ![x](data:image/png;base64,AA)");
        assert!(!html.contains("<img"), "{html}");
        assert!(html.contains(
            "<a class=\"md-image\" href=\"https://e.org/cat.png\" rel=\"noopener noreferrer\">image: a cat</a>"
        ));
        assert!(html.contains("<span class=\"md-image\">image: x</span>"));
    }
}
