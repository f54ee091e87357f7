//! `/tree` as pi 0.73's tree selector: move, page, fold and unfold branches (Ctrl/Alt+←→),
//! filters (Ctrl+D/T/U/L/A, Ctrl+O and Shift+Ctrl+O to cycle), type to search, Shift+L to set or
//! clear the selected entry's label. Keys come from the keybindings.

use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use crate::keybindings::Keybindings;
use crate::overlay::{OverlayAction, SelectKind};
use crate::text::truncate;
use crate::theme::Theme;
use crate::tree::{FILTERS, Row, Tree};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeView {
    pub tree: Tree,
    /// The selected row's entry id.
    pub selected: Option<String>,
    /// Editing the label of this entry: (id, text so far).
    pub label_input: Option<(String, String)>,
    /// Shift+T: label times shown.
    pub label_times: bool,
    pub keys: Arc<Keybindings>,
}

impl TreeView {
    /// The view with the current leaf selected.
    pub fn new(tree: Tree, keys: Arc<Keybindings>) -> TreeView {
        let rows = tree.rows();
        let selected = tree
            .leaf
            .as_ref()
            .filter(|l| rows.iter().any(|r| &r.id == *l))
            .cloned()
            .or_else(|| rows.iter().rev().find(|r| r.on_path).map(|r| r.id.clone()))
            .or_else(|| rows.last().map(|r| r.id.clone()));
        TreeView {
            tree,
            selected,
            label_input: None,
            label_times: false,
            keys,
        }
    }

    fn index(&self, rows: &[Row]) -> usize {
        self.selected
            .as_ref()
            .and_then(|s| rows.iter().position(|r| &r.id == s))
            .unwrap_or(rows.len().saturating_sub(1))
    }

    /// After the rows changed (filter, search, fold): keep the selection, or the nearest row.
    fn refresh(&mut self, old_index: usize) {
        let rows = self.tree.rows();
        if self
            .selected
            .as_ref()
            .is_some_and(|s| rows.iter().any(|r| &r.id == s))
        {
            return;
        }
        self.selected = rows
            .get(old_index.min(rows.len().saturating_sub(1)))
            .map(|r| r.id.clone());
    }

    fn set_filter(&mut self, f: &'static str) {
        let at = self.index(&self.tree.rows());
        self.tree.filter = f;
        self.tree.folded.clear();
        self.refresh(at);
    }

    fn toggle_filter(&mut self, f: &'static str) {
        self.set_filter(if self.tree.filter == f { "default" } else { f });
    }

    fn cycle_filter(&mut self, forward: bool) {
        let i = FILTERS
            .iter()
            .position(|f| *f == self.tree.filter)
            .unwrap_or(0);
        let n = FILTERS.len();
        let next = if forward {
            (i + 1) % n
        } else {
            (i + n - 1) % n
        };
        self.set_filter(FILTERS[next]);
    }

    pub fn handle_key(&mut self, key: KeyEvent, page: usize) -> OverlayAction {
        let keys = self.keys.clone();
        let is = |action: &str| keys.matches(&key, action);
        if let Some((id, text)) = &mut self.label_input {
            if is("tui.select.confirm") {
                let label = text.trim().to_string();
                let id = id.clone();
                self.label_input = None;
                let label = (!label.is_empty()).then_some(label);
                self.tree
                    .set_label(&id, label.clone(), filo_session::ids::now_ms());
                return OverlayAction::SetLabel { id, label };
            } else if is("tui.select.cancel") {
                self.label_input = None;
            } else if key.code == KeyCode::Backspace {
                text.pop();
            } else if let KeyCode::Char(c) = key.code
                && !key
                    .modifiers
                    .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
            {
                text.push(c);
            }
            return OverlayAction::None;
        }
        let rows = self.tree.rows();
        let at = self.index(&rows);
        let n = rows.len();
        let select = |i: usize| rows.get(i).map(|r| r.id.clone());
        if is("tui.select.up") && n > 0 {
            self.selected = select(if at == 0 { n - 1 } else { at - 1 });
        } else if is("tui.select.down") && n > 0 {
            self.selected = select(if at + 1 >= n { 0 } else { at + 1 });
        } else if is("app.tree.foldOrUp") {
            match rows.get(at) {
                Some(r) if r.foldable && !r.folded => {
                    self.tree.folded.insert(r.id.clone());
                }
                _ => self.selected = select(self.tree.branch_move(&rows, at, true)),
            }
        } else if is("app.tree.unfoldOrDown") {
            match rows.get(at) {
                Some(r) if r.folded => {
                    self.tree.folded.remove(&r.id);
                }
                _ => self.selected = select(self.tree.branch_move(&rows, at, false)),
            }
        } else if is("tui.editor.cursorLeft") || is("tui.select.pageUp") {
            self.selected = select(at.saturating_sub(page));
        } else if is("tui.editor.cursorRight") || is("tui.select.pageDown") {
            self.selected = select((at + page).min(n.saturating_sub(1)));
        } else if is("tui.select.confirm") {
            if let Some(r) = rows.get(at) {
                return OverlayAction::Chosen(SelectKind::Tree, r.id.clone());
            }
        } else if is("tui.select.cancel") {
            if self.tree.query.is_empty() {
                return OverlayAction::Close;
            }
            self.tree.query.clear();
            self.tree.folded.clear();
            self.refresh(at);
        } else if is("app.tree.filter.default") {
            self.set_filter("default");
        } else if is("app.tree.filter.noTools") {
            self.toggle_filter("no-tools");
        } else if is("app.tree.filter.userOnly") {
            self.toggle_filter("user-only");
        } else if is("app.tree.filter.labeledOnly") {
            self.toggle_filter("labeled-only");
        } else if is("app.tree.filter.all") {
            self.toggle_filter("all");
        } else if is("app.tree.filter.cycleBackward") {
            self.cycle_filter(false);
        } else if is("app.tree.filter.cycleForward") {
            self.cycle_filter(true);
        } else if is("tui.editor.deleteCharBackward") {
            if self.tree.query.pop().is_some() {
                self.tree.folded.clear();
                self.refresh(at);
            }
        } else if is("app.tree.toggleLabelTimestamp") {
            self.label_times = !self.label_times;
        } else if is("app.tree.editLabel") {
            if let Some(r) = rows.get(at) {
                self.label_input = Some((r.id.clone(), r.label.clone().unwrap_or_default()));
            }
        } else if let KeyCode::Char(c) = key.code
            && !key
                .modifiers
                .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
        {
            self.tree.query.push(c);
            self.tree.folded.clear();
            self.refresh(at);
        }
        OverlayAction::None
    }

    /// pi's status after the count: the filter (unless default).
    fn status(&self) -> String {
        let filter = match self.tree.filter {
            "no-tools" => " [no-tools]",
            "user-only" => " [user]",
            "labeled-only" => " [labeled]",
            "all" => " [all]",
            _ => "",
        };
        let times = if self.label_times {
            " [+label time]"
        } else {
            ""
        };
        format!("{filter}{times}")
    }

    /// The help line, from the keybindings (as pi's).
    fn help(&self) -> String {
        let k = |a: &str| self.keys.hint(a);
        let filters = [
            "app.tree.filter.default",
            "app.tree.filter.noTools",
            "app.tree.filter.userOnly",
            "app.tree.filter.labeledOnly",
            "app.tree.filter.all",
        ]
        .map(k)
        .join("/");
        format!(
            "↑/↓: move. ←/→: page. ^←/^→ or Alt+←/Alt+→: fold/branch. {}: label. {filters}: filters ({}/{} cycle). {}: label time",
            k("app.tree.editLabel"),
            k("app.tree.filter.cycleForward"),
            k("app.tree.filter.cycleBackward"),
            k("app.tree.toggleLabelTimestamp"),
        )
    }
}

/// `s` cut to `max` cells as pi cuts tree rows: the end replaced by `...`.
fn truncate_dots(s: &str, max: usize) -> String {
    use unicode_width::UnicodeWidthChar;
    if crate::text::width(s) <= max {
        return s.to_string();
    }
    let room = max.saturating_sub(3);
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
    out.push_str(&"...".chars().take(max).collect::<String>());
    out
}

/// Draw the tree over `area`.
pub fn draw(frame: &mut Frame<'_>, area: Rect, v: &TreeView, theme: &Theme) {
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.fg("border"))
        .title(Span::styled(
            " Session Tree ",
            theme.fg("accent").add_modifier(Modifier::BOLD),
        ));
    let inner = block.inner(area);
    let width = usize::from(inner.width);
    let mut lines = vec![Line::from(Span::styled(
        truncate(&v.help(), width),
        theme.fg("muted"),
    ))];
    let mut search = vec![Span::styled("Type to search:", theme.fg("muted"))];
    if !v.tree.query.is_empty() {
        search.push(Span::styled(
            format!(" {}", v.tree.query),
            theme.fg("accent"),
        ));
    }
    lines.push(Line::from(search));
    lines.push(Line::from(""));
    if let Some((_, text)) = &v.label_input {
        lines.push(Line::from(Span::styled(
            "Label (empty to remove):",
            theme.fg("muted"),
        )));
        lines.push(Line::from(vec![
            Span::raw(format!("> {text}")),
            Span::styled("▏", theme.fg("accent")),
        ]));
        lines.push(Line::from(Span::styled(
            format!(
                "{} save  {} cancel",
                v.keys.hint("tui.select.confirm"),
                v.keys.hint("tui.select.cancel")
            ),
            theme.fg("muted"),
        )));
        frame.render_widget(Paragraph::new(lines).block(block), area);
        return;
    }
    let rows = v.tree.rows();
    if rows.is_empty() {
        lines.push(Line::from(Span::styled(
            "  No entries found",
            theme.fg("muted"),
        )));
        lines.push(Line::from(Span::styled(
            format!("  (0/0){}", v.status()),
            theme.fg("muted"),
        )));
        frame.render_widget(Paragraph::new(lines).block(block), area);
        return;
    }
    let at = v.index(&rows);
    let height = usize::from(inner.height)
        .saturating_sub(lines.len() + 1)
        .max(1);
    let start = at
        .saturating_sub(height / 2)
        .min(rows.len().saturating_sub(height));
    for (i, r) in rows.iter().enumerate().skip(start).take(height) {
        let sel = i == at;
        let mut spans = vec![
            Span::styled(if sel { "› " } else { "  " }, theme.fg("accent")),
            Span::styled(r.gutter.clone(), theme.fg("dim")),
        ];
        if r.folded && !r.connector {
            spans.push(Span::styled("⊞ ", theme.fg("accent")));
        }
        if r.on_path {
            spans.push(Span::styled("• ", theme.fg("accent")));
        }
        let mut used: usize = spans.iter().map(|s| s.content.chars().count()).sum();
        if let Some(l) = &r.label {
            let tag = format!("[{l}] ");
            used += tag.chars().count();
            spans.push(Span::styled(tag, theme.fg("warning")));
            if let Some(ms) = r.label_ms.filter(|_| v.label_times) {
                let at = format!(
                    "{} ",
                    crate::tree::label_time(ms, filo_session::ids::now_ms(), &chrono::Local)
                );
                used += at.chars().count();
                spans.push(Span::styled(at, theme.fg("muted")));
            }
        }
        spans.push(Span::styled(
            truncate_dots(&r.text, width.saturating_sub(used)),
            theme.fg("text"),
        ));
        let line = Line::from(spans);
        lines.push(if sel {
            line.style(theme.selected())
        } else {
            line
        });
    }
    lines.push(Line::from(Span::styled(
        format!("  ({}/{}){}", at + 1, rows.len(), v.status()),
        theme.fg("muted"),
    )));
    frame.render_widget(Paragraph::new(lines).block(block), area);
}
