//! Drawing the session picker ([`crate::session_picker`]): a header with the scope, name filter and
//! sort, two lines of key hints (or a confirmation, or a status), the search box and one line per
//! session with its message count and age on the right.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use crate::session_picker::{MAX_VISIBLE, Mode, Scope, SessionPicker};
use crate::text::{truncate, truncate_with, width};
use crate::theme::Theme;

fn hint<'a>(key: &'a str, what: &'a str, theme: &Theme) -> Vec<Span<'a>> {
    vec![
        Span::styled(key, theme.fg("dim")),
        Span::styled(format!(" {what}"), theme.fg("muted")),
    ]
}

fn joined<'a>(parts: Vec<Vec<Span<'a>>>, theme: &Theme) -> Line<'a> {
    let mut spans = Vec::new();
    for (i, p) in parts.into_iter().enumerate() {
        if i > 0 {
            spans.push(Span::styled(" · ", theme.fg("muted")));
        }
        spans.extend(p);
    }
    Line::from(spans)
}

fn header(p: &SessionPicker, w: usize, theme: &Theme) -> Line<'static> {
    let title = match p.scope {
        Scope::Current => "Resume Session (Current Folder)",
        Scope::All => "Resume Session (All)",
    };
    let (cur, all) = match p.scope {
        Scope::Current => ("◉ Current Folder", " | ○ All"),
        Scope::All => ("○ Current Folder | ", "◉ All"),
    };
    let name = if p.named_only { "Named" } else { "All" };
    let mut right = vec![
        Span::styled(
            cur,
            if p.scope == Scope::Current {
                theme.fg("accent")
            } else {
                theme.fg("muted")
            },
        ),
        Span::styled(
            all,
            if p.scope == Scope::All {
                theme.fg("accent")
            } else {
                theme.fg("muted")
            },
        ),
        Span::styled("  Name: ", theme.fg("muted")),
        Span::styled(name, theme.fg("accent")),
        Span::styled("  Sort: ", theme.fg("muted")),
        Span::styled(p.sort.label(), theme.fg("accent")),
    ];
    let right_w: usize = right.iter().map(|s| width(&s.content)).sum();
    // pi cuts the title without an ellipsis.
    let left = truncate_with(title, w.saturating_sub(right_w + 1), "");
    let gap = w.saturating_sub(width(&left) + right_w);
    let mut spans = vec![
        Span::styled(left, Style::default().add_modifier(Modifier::BOLD)),
        Span::raw(" ".repeat(gap)),
    ];
    spans.append(&mut right);
    Line::from(spans)
}

fn hints(p: &SessionPicker, theme: &Theme) -> [Line<'static>; 2] {
    if matches!(p.mode, Mode::ConfirmDelete(_)) {
        return [
            Line::from(Span::styled(
                "Delete session? enter confirm · esc cancel",
                theme.fg("error"),
            )),
            Line::default(),
        ];
    }
    if let Some(s) = &p.status {
        let key = if s.error { "error" } else { "accent" };
        return [
            Line::from(Span::styled(s.text.clone(), theme.fg(key))),
            Line::default(),
        ];
    }
    let path = if p.show_path {
        "path (on)"
    } else {
        "path (off)"
    };
    let mut second = vec![
        hint("ctrl+s", "sort", theme),
        hint("ctrl+n", "named", theme),
        hint("ctrl+d", "delete", theme),
        hint("ctrl+p", path, theme),
    ];
    if p.source.can_rename {
        second.push(hint("ctrl+r", "rename", theme));
    }
    let first = joined(
        vec![
            hint("tab", "scope", theme),
            vec![Span::styled(
                "re:<pattern> regex · \"phrase\" exact",
                theme.fg("muted"),
            )],
        ],
        theme,
    );
    [owned(first), owned(joined(second, theme))]
}

fn owned(l: Line<'_>) -> Line<'static> {
    Line::from(
        l.spans
            .into_iter()
            .map(|s| Span::styled(s.content.into_owned(), s.style))
            .collect::<Vec<_>>(),
    )
}

fn empty_message(p: &SessionPicker) -> &'static str {
    match (p.named_only, p.scope) {
        (true, Scope::All) => "  No named sessions found. Press ctrl+n to show all.",
        (true, Scope::Current) => {
            "  No named sessions in current folder. Press ctrl+n to show all, or Tab to view all."
        }
        (false, Scope::All) => "  No sessions found",
        (false, Scope::Current) => "  No sessions in current folder. Press Tab to view all.",
    }
}

fn session_lines(p: &SessionPicker, w: usize, theme: &Theme) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    if p.rows.is_empty() {
        lines.push(Line::from(Span::styled(
            truncate(empty_message(p), w),
            theme.fg("muted"),
        )));
        return lines;
    }
    let n = p.rows.len();
    let start = p
        .selected
        .saturating_sub(MAX_VISIBLE / 2)
        .min(n.saturating_sub(MAX_VISIBLE));
    let end = (start + MAX_VISIBLE).min(n);
    let deleting = match &p.mode {
        Mode::ConfirmDelete(path) => Some(path.clone()),
        _ => None,
    };
    for i in start..end {
        let row = &p.rows[i];
        let Some(s) = p.sessions().get(row.session) else {
            continue;
        };
        let selected = i == p.selected;
        let confirming = deleting.as_ref() == Some(&s.path);
        let text: String = s
            .name
            .clone()
            .unwrap_or_else(|| s.first_message.clone())
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect::<String>()
            .trim()
            .to_string();
        let mut right = format!(
            "{} {}",
            s.message_count,
            crate::session_picker::short_age(p.now, s.modified)
        );
        if p.scope == Scope::All && !s.cwd.is_empty() {
            right = format!("{} {right}", p.shorten(&s.cwd));
        }
        if p.show_path {
            right = format!("{} {right}", p.shorten(&s.path.to_string_lossy()));
        }
        let room = w
            .saturating_sub(2 + width(&row.prefix) + width(&right) + 2)
            .max(10);
        let text = truncate(&text, room);
        let mut style = if confirming {
            theme.fg("error")
        } else if p.is_current(s) {
            theme.fg("accent")
        } else if s.name.is_some() {
            theme.fg("warning")
        } else {
            theme.fg("text")
        };
        if selected {
            style = style.add_modifier(Modifier::BOLD);
        }
        let left_w = 2 + width(&row.prefix) + width(&text);
        let gap = w.saturating_sub(left_w + width(&right)).max(1);
        let line = Line::from(vec![
            Span::styled(if selected { "› " } else { "  " }, theme.fg("accent")),
            Span::styled(row.prefix.clone(), theme.fg("dim")),
            Span::styled(text, style),
            Span::raw(" ".repeat(gap)),
            Span::styled(
                right,
                if confirming {
                    theme.fg("error")
                } else {
                    theme.fg("dim")
                },
            ),
        ]);
        lines.push(if selected {
            line.style(theme.selected())
        } else {
            line
        });
    }
    if start > 0 || end < n {
        lines.push(Line::from(Span::styled(
            format!("  ({}/{n})", p.selected + 1),
            theme.fg("muted"),
        )));
    }
    lines
}

/// The cursor of a one-line input as pi's inputs draw it: the cell under it in reverse video.
fn input_cursor() -> Span<'static> {
    Span::styled(" ", Style::default().add_modifier(Modifier::REVERSED))
}

/// Draw the picker over `area` as pi's session selector lays itself out: a blank line, a rule,
/// a blank line, the header or the rename form, a blank line and a closing rule right under the
/// list (the rest of `area` stays empty).
pub fn draw(frame: &mut Frame<'_>, area: Rect, p: &SessionPicker, theme: &Theme) {
    frame.render_widget(Clear, area);
    let w = usize::from(area.width);
    let rule = || Line::from(Span::styled("─".repeat(w), theme.fg("accent")));
    let mut lines: Vec<Line<'static>> = vec![Line::default(), rule(), Line::default()];
    if let Mode::Rename { input, .. } = &p.mode {
        lines.push(Line::from(Span::styled(
            " Rename Session",
            Style::default().add_modifier(Modifier::BOLD),
        )));
        lines.push(Line::default());
        lines.push(Line::from(vec![
            Span::raw(" > "),
            Span::raw(input.clone()),
            input_cursor(),
        ]));
        lines.push(Line::default());
        lines.push(Line::from(Span::styled(
            " enter to save · esc to cancel",
            theme.fg("muted"),
        )));
    } else {
        lines.push(header(p, w, theme));
        lines.extend(hints(p, theme));
        lines.push(Line::default());
        lines.push(Line::from(vec![
            Span::raw("> "),
            Span::raw(p.query.clone()),
            input_cursor(),
        ]));
        lines.push(Line::default());
        lines.extend(session_lines(p, w, theme));
    }
    lines.push(Line::default());
    lines.push(rule());
    frame.render_widget(Paragraph::new(lines), area);
}
