//! Word wrapping of styled lines to a width, by display width (wide characters count two).

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// Display width of a string.
pub fn width(s: &str) -> usize {
    UnicodeWidthStr::width(s)
}

/// Text safe to put on the screen: ANSI escape sequences (CSI, OSC, two-byte ESC) removed and
/// other control characters dropped, tabs kept as spaces and newlines kept. Tool output and model
/// text are untrusted; a raw escape would move the cursor or recolour the terminal.
pub fn sanitize(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(|c| c.is_control() && c != '\n') {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => match chars.next() {
                // CSI: parameters and intermediates up to a final byte in @..~.
                Some('[') => {
                    for n in chars.by_ref() {
                        if ('@'..='~').contains(&n) {
                            break;
                        }
                    }
                }
                // OSC: up to BEL or ESC \.
                Some(']') => {
                    while let Some(n) = chars.next() {
                        if n == '\x07' || (n == '\x1b' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\t' => out.push_str("    "),
            '\n' => out.push('\n'),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A line broken into words and runs of spaces, each with its style.
fn tokens(line: &Line<'_>) -> Vec<(String, Style, bool)> {
    let mut out: Vec<(String, Style, bool)> = Vec::new();
    for span in &line.spans {
        let style = line.style.patch(span.style);
        for ch in sanitize(&span.content).chars() {
            let ch = if ch == '\t' { ' ' } else { ch };
            let space = ch == ' ';
            match out.last_mut() {
                Some((t, s, sp)) if *sp == space && *s == style => t.push(ch),
                _ => out.push((ch.to_string(), style, space)),
            }
        }
    }
    out
}

/// Wrap one line to `width` columns, breaking at spaces; a word longer than the width is split.
/// An empty line stays one empty line. Continuation lines start with `indent` spaces.
pub fn wrap_line(line: &Line<'_>, width: usize, indent: usize) -> Vec<Line<'static>> {
    let width = width.max(1);
    let indent = indent.min(width.saturating_sub(1));
    let mut lines: Vec<Vec<Span<'static>>> = vec![Vec::new()];
    let mut used = 0usize;
    let push = |lines: &mut Vec<Vec<Span<'static>>>, text: String, style: Style| {
        if let Some(cur) = lines.last_mut() {
            match cur.last_mut() {
                Some(last) if last.style == style => last.content.to_mut().push_str(&text),
                _ => cur.push(Span::styled(text, style)),
            }
        }
    };
    let new_line = |lines: &mut Vec<Vec<Span<'static>>>| -> usize {
        lines.push(if indent > 0 {
            vec![Span::raw(" ".repeat(indent))]
        } else {
            Vec::new()
        });
        indent
    };
    for (tok, style, space) in tokens(line) {
        let w = width_of(&tok);
        if used + w <= width {
            push(&mut lines, tok, style);
            used += w;
            continue;
        }
        if space {
            used = new_line(&mut lines);
            continue;
        }
        if w <= width - indent && used > indent {
            used = new_line(&mut lines);
            push(&mut lines, tok, style);
            used += w;
            continue;
        }
        for ch in tok.chars() {
            let cw = ch.width().unwrap_or(0);
            if used + cw > width && used > indent {
                used = new_line(&mut lines);
            }
            push(&mut lines, ch.to_string(), style);
            used += cw;
        }
    }
    let n = lines.len();
    lines
        .into_iter()
        .enumerate()
        .map(|(i, mut spans)| {
            if i + 1 < n {
                trim_end(&mut spans);
            }
            Line::from(spans).style(line.style)
        })
        .collect()
}

/// Drop the spaces a break left at the end of a line.
fn trim_end(spans: &mut Vec<Span<'static>>) {
    while let Some(last) = spans.last_mut() {
        let t = last.content.trim_end_matches(' ').len();
        if t == 0 {
            spans.pop();
        } else {
            last.content.to_mut().truncate(t);
            break;
        }
    }
}

fn width_of(s: &str) -> usize {
    width(s)
}

/// Wrap every line.
pub fn wrap_lines(lines: &[Line<'_>], width: usize) -> Vec<Line<'static>> {
    lines.iter().flat_map(|l| wrap_line(l, width, 0)).collect()
}

/// Cut a string to one line of at most `max` columns, with `…` when cut (sanitized).
pub fn truncate(s: &str, max: usize) -> String {
    truncate_with(s, max, "…")
}

/// [`truncate`] ending a cut line with `tail` (which may be empty, as some of pi's lines are).
pub fn truncate_with(s: &str, max: usize, tail: &str) -> String {
    let clean = sanitize(s);
    let s: &str = &clean.replace('\n', " ");
    if width(s) <= max {
        return s.to_string();
    }
    let room = max.saturating_sub(width(tail));
    let mut out = String::new();
    let mut used = 0;
    for ch in s.chars() {
        let w = ch.width().unwrap_or(0);
        if used + w > room {
            break;
        }
        out.push(ch);
        used += w;
    }
    out.push_str(tail);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn wraps_at_spaces_and_splits_long_words() {
        let l = Line::from("hello wide world abcdefghijkl");
        assert_eq!(
            plain(&wrap_line(&l, 10, 0)),
            vec!["hello wide", "world abcd", "efghijkl"]
        );
        assert_eq!(
            plain(&wrap_line(&Line::from("one two three"), 8, 0)),
            vec!["one two", "three"]
        );
        assert_eq!(plain(&wrap_line(&Line::from(""), 10, 0)), vec![""]);
        assert_eq!(
            plain(&wrap_line(&l, 12, 2)),
            vec!["hello wide", "  world abcd", "  efghijkl"]
        );
    }

    #[test]
    fn escapes_and_controls_never_reach_the_screen() {
        assert_eq!(sanitize("plain"), "plain");
        assert_eq!(sanitize("\x1b[31mred\x1b[0m ok"), "red ok");
        assert_eq!(sanitize("a\x1b]0;title\x07b\x1b]52;c;xx\x1b\\c"), "abc");
        assert_eq!(sanitize("bell\x07\r\x08 x\ty\nz"), "bell x    y\nz");
        let l = Line::from("\x1b[2Jcleared?");
        assert_eq!(wrap_line(&l, 20, 0)[0].to_string(), "cleared?");
    }

    #[test]
    fn wide_characters_count_two() {
        let l = Line::from("日本語の文章");
        assert_eq!(plain(&wrap_line(&l, 5, 0)), vec!["日本", "語の", "文章"]);
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abc", 4), "abc");
    }
}
