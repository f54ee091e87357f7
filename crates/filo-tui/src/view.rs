//! Drawing a frame from the state: history (committed cells from their caches, plus the live
//! cell), the status and queue lines, the completion popup, the editor and the footer, and any
//! overlay on top. Pure: reads the state (and fills render caches), never the session.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use unicode_width::UnicodeWidthChar;

use crate::cells::Cell;
use crate::state::{AppState, FooterInfo, Queued};
use crate::text::{truncate, width};
use crate::theme::Theme;

const SPINNER: &[&str] = &["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
/// Most rows the editor grows to.
const EDITOR_MAX_ROWS: usize = 10;

/// Editor text split into screen rows (character wrap) and the cursor's row and column.
fn editor_rows(text: &str, cursor: usize, w: usize) -> (Vec<String>, (usize, usize)) {
    let w = w.max(1);
    let mut rows = vec![String::new()];
    let mut col = 0usize;
    let mut cur = (0, 0);
    for (i, ch) in text.char_indices() {
        if i == cursor {
            cur = (rows.len() - 1, col);
        }
        if ch == '\n' {
            rows.push(String::new());
            col = 0;
            continue;
        }
        let cw = ch.width().unwrap_or(0);
        if col + cw > w {
            rows.push(String::new());
            col = 0;
        }
        if let Some(r) = rows.last_mut() {
            r.push(ch);
        }
        col += cw;
    }
    if cursor >= text.len() {
        cur = (rows.len() - 1, col);
        if col >= w {
            rows.push(String::new());
            cur = (rows.len() - 1, 0);
        }
    }
    (rows, cur)
}

fn human(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=999_999 => format!("{:.1}k", n as f64 / 1_000.0),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

/// The two footer lines.
pub fn footer_lines(f: &FooterInfo, theme: &Theme, w: usize) -> Vec<Line<'static>> {
    let mut top = f.cwd.clone();
    if let Some(n) = &f.session_name {
        top.push_str(&format!(" • {n}"));
    }
    if let Some(m) = &f.sandbox {
        top.push_str(&format!(" • sandbox: {m}"));
    }
    let mut stats = Vec::new();
    if f.input > 0 || f.output > 0 {
        stats.push(format!("↑{} ↓{}", human(f.input), human(f.output)));
    }
    if f.cache_read > 0 {
        stats.push(format!("R{}", human(f.cache_read)));
    }
    if f.cache_write > 0 {
        stats.push(format!("W{}", human(f.cache_write)));
    }
    if f.cost > 0.0 {
        stats.push(format!("${:.3}", f.cost));
    }
    if f.context_window > 0 {
        let pct = f.context_tokens as f64 * 100.0 / f.context_window as f64;
        stats.push(format!("{pct:.1}%/{}", human(f.context_window)));
    }
    let left = stats.join(" ");
    let right = match &f.model {
        Some(m) if f.reasoning => format!("{m} • {}", f.thinking),
        Some(m) => m.clone(),
        None => "no model".to_string(),
    };
    let gap = w.saturating_sub(width(&left) + width(&right)).max(1);
    let mut lines = vec![
        Line::from(Span::styled(truncate(&top, w), theme.fg("dim"))),
        Line::from(vec![
            Span::styled(left, theme.fg("dim")),
            Span::raw(" ".repeat(gap)),
            Span::styled(right, theme.fg("dim")),
        ]),
    ];
    if let Some(u) = &f.unsaved {
        // Stays until the file holds the session again.
        lines.push(Line::from(Span::styled(
            truncate(&format!("Not saved: {u}"), w),
            theme.fg("error"),
        )));
    }
    lines
}

/// The history lines that fit in `height`, bottom-anchored and scrolled up by `state.scroll`.
fn history_lines(state: &mut AppState, w: usize, height: usize) -> Vec<Line<'static>> {
    let want = height + state.scroll;
    let mut tail: Vec<Line<'static>> = Vec::new();
    let opts = state.opts;
    let mut tools: Vec<Line<'static>> = Vec::new();
    for t in &state.live_tools {
        tools.extend(Cell::Tool(t.clone()).render(&state.theme, w, opts));
    }
    tail.extend(tools.into_iter().rev());
    if let Some(c) = &state.live {
        let need = want.saturating_sub(tail.len());
        let lines = crate::live::render_tail(c, &state.theme, w, opts, &mut state.live_cache, need);
        tail.extend(lines.into_iter().rev());
    }
    let theme = state.theme.clone();
    for c in state.cells.iter_mut().rev() {
        if tail.len() >= want {
            break;
        }
        tail.extend(c.lines(&theme, w, opts).iter().rev().cloned());
    }
    // Scrolled past the top: clamp.
    let max_scroll = tail.len().saturating_sub(height);
    if state.scroll > max_scroll {
        state.scroll = max_scroll;
    }
    let skip = state.scroll;
    let mut shown: Vec<Line<'static>> = tail.into_iter().skip(skip).take(height).collect();
    shown.reverse();
    shown
}

fn status_line(state: &AppState, theme: &Theme) -> Option<Line<'static>> {
    if state.quit_armed.is_some() {
        return Some(Line::from(Span::styled(
            "Press ctrl+c again to exit",
            theme.fg("warning"),
        )));
    }
    if !state.running && state.status.is_none() {
        return None;
    }
    let spin = SPINNER[state.tick % SPINNER.len()];
    let text = state
        .status
        .clone()
        .unwrap_or_else(|| "Working… (esc to interrupt)".to_string());
    Some(Line::from(vec![
        Span::styled(format!("{spin} "), theme.fg("accent")),
        Span::styled(text, theme.fg("muted")),
    ]))
}

/// Draw one frame.
pub fn draw(frame: &mut Frame<'_>, state: &mut AppState) {
    let area = frame.area();
    let w = usize::from(area.width);
    let theme = state.theme.clone();
    // pi's editor: `editorPaddingX` blank columns each side (at most half the width); without
    // padding one column stays free for the cursor at the end of a line.
    let pad = usize::from(state.prefs.editor_padding).min(w.saturating_sub(1) / 2);
    let content_w = w.saturating_sub(2 * pad).max(1);
    let layout_w = content_w.saturating_sub(usize::from(pad == 0)).max(1);
    let (rows, cursor) = editor_rows(&state.editor.text, state.editor.cursor, layout_w);
    let editor_h = rows.len().clamp(1, EDITOR_MAX_ROWS);
    let mut above: Vec<Line<'static>> = Vec::new();
    for q in &state.queued {
        let (label, text) = match q {
            Queued::Steer(t) => ("Steer: ", t),
            Queued::FollowUp(t) => ("Follow-up: ", t),
        };
        above.push(Line::from(vec![
            Span::styled(label, theme.fg("muted")),
            Span::styled(
                truncate(text.lines().next().unwrap_or(""), w.saturating_sub(12)),
                theme.fg("dim"),
            ),
        ]));
    }
    if let Some(s) = status_line(state, &theme) {
        above.push(s);
    }
    if let Some(c) = &state.editor.completion {
        // pi's list: `autocompleteMaxVisible` rows, the selection kept in the middle, and where
        // rows are hidden a `(i/n)` line.
        let max = state.prefs.autocomplete_max.max(1);
        let start = c
            .selected
            .saturating_sub(max / 2)
            .min(c.items.len().saturating_sub(max));
        for (i, (label, detail)) in c.items.iter().enumerate().skip(start).take(max) {
            let line = Line::from(vec![
                Span::styled(
                    format!("  {label}"),
                    if i == c.selected {
                        theme.fg("accent").add_modifier(Modifier::BOLD)
                    } else {
                        theme.fg("text")
                    },
                ),
                Span::styled(
                    format!("  {}", truncate(detail, w.saturating_sub(width(label) + 6))),
                    theme.fg("muted"),
                ),
            ]);
            above.push(if i == c.selected {
                line.style(theme.selected())
            } else {
                line
            });
        }
        if start > 0 || start + max < c.items.len() {
            above.push(Line::from(Span::styled(
                format!("  ({}/{})", c.selected + 1, c.items.len()),
                theme.fg("muted"),
            )));
        }
    }
    let above_h = u16::try_from(above.len()).unwrap_or(u16::MAX);
    let editor_total = u16::try_from(editor_h + 2).unwrap_or(u16::MAX);
    let footer_h = if state.footer.unsaved.is_some() { 3 } else { 2 };
    let [hist, above_area, editor_area, footer_area] = Layout::vertical([
        Constraint::Min(1),
        Constraint::Length(above_h),
        Constraint::Length(editor_total),
        Constraint::Length(footer_h),
    ])
    .areas(area);
    state.page_rows = usize::from(hist.height);
    let lines = history_lines(state, w, usize::from(hist.height));
    frame.render_widget(Paragraph::new(lines), hist);
    frame.render_widget(Paragraph::new(above), above_area);
    let first = (cursor.0 + 1).saturating_sub(editor_h);
    let shown: Vec<Line<'static>> = rows
        .iter()
        .skip(first)
        .take(editor_h)
        .map(|r| Line::from(r.clone()))
        .collect();
    let border = if state.running {
        theme.fg("accent")
    } else {
        theme.fg("border")
    };
    let block = Block::default()
        .borders(Borders::TOP | Borders::BOTTOM)
        .border_style(border);
    let editor_inner = block.inner(editor_area);
    frame.render_widget(block, editor_area);
    let pad16 = u16::try_from(pad).unwrap_or(0);
    let text_area = Rect {
        x: editor_inner.x + pad16,
        width: editor_inner.width.saturating_sub(2 * pad16),
        ..editor_inner
    };
    frame.render_widget(Paragraph::new(shown), text_area);
    let footer = footer_lines(&state.footer, &theme, w);
    frame.render_widget(Paragraph::new(footer), footer_area);
    state.cursor_at = None;
    match &state.overlay {
        Some(o) => {
            let (x_pad, y_pad) = match o {
                crate::overlay::Overlay::Select(_) => (area.width / 10, 1),
                _ => (0, 0),
            };
            let ov = Rect {
                x: area.x + x_pad,
                y: area.y + y_pad,
                width: area.width.saturating_sub(2 * x_pad),
                height: hist.height.saturating_sub(y_pad) + above_h,
            };
            crate::overlay::draw(frame, ov, o, &theme);
        }
        None => {
            // The editor draws its cursor (a reversed cell, as pi's); the terminal's own is
            // shown there only with `showHardwareCursor`, else the loop keeps it hidden but
            // placed there (for input methods).
            let x = text_area.x + u16::try_from(cursor.1).unwrap_or(0);
            let y = text_area.y + u16::try_from(cursor.0 - first).unwrap_or(0);
            let at = Position { x, y };
            if frame.area().contains(at) {
                let cell = &mut frame.buffer_mut()[at];
                cell.set_style(cell.style().add_modifier(Modifier::REVERSED));
            }
            state.cursor_at = Some(at);
            if state.prefs.hardware_cursor {
                frame.set_cursor_position(at);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editor_rows_wrap_and_place_the_cursor() {
        let (rows, cur) = editor_rows("abcdef\nxy", 9, 4);
        assert_eq!(rows, vec!["abcd", "ef", "xy"]);
        assert_eq!(cur, (2, 2));
        let (rows, cur) = editor_rows("abcd", 4, 4);
        assert_eq!(rows, vec!["abcd", ""]);
        assert_eq!(cur, (1, 0));
        let (_, cur) = editor_rows("abcdef", 1, 4);
        assert_eq!(cur, (0, 1));
    }

    #[test]
    fn human_numbers() {
        assert_eq!(human(999), "999");
        assert_eq!(human(12_345), "12.3k");
        assert_eq!(human(2_000_000), "2.0M");
    }
}
