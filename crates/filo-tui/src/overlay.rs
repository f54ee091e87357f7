//! Overlays drawn over the conversation: selectors with search (model, thinking level, session,
//! fork point), text pages (hotkeys, session info, trace) and the `/life` view.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use crate::keybindings::Keybindings;
use crate::life::{LifeMode, LifeView, RowKind, role_label};
use crate::text::{truncate, wrap_lines};
use crate::theme::Theme;

/// What a selector chooses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SelectKind {
    Model,
    Thinking,
    Session,
    Fork,
    /// An entry of the session tree to move to.
    Tree,
    /// Whether to summarize the branch left: value `"<0|1>:<entry id>"`.
    TreeSummary,
    /// A setting to change (`/settings`).
    Setting,
    /// A theme by name (`/settings` → theme).
    Theme,
    /// `/import`'s question: value the path, empty for "No".
    Import,
    /// `/trust`'s choices: value the option's index.
    Trust,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectItem {
    pub label: String,
    pub detail: String,
    /// What choosing it means (model key, level, session path, entry id).
    pub value: String,
    /// More text the search matches but the list does not show (a session's messages).
    pub search: String,
}

/// A list with a search box.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectList {
    pub kind: SelectKind,
    pub title: String,
    pub items: Vec<SelectItem>,
    pub filter: String,
    pub selected: usize,
}

impl SelectList {
    pub fn new(kind: SelectKind, title: &str, items: Vec<SelectItem>, selected: usize) -> Self {
        SelectList {
            kind,
            title: title.into(),
            items,
            filter: String::new(),
            selected,
        }
    }

    /// Indices of the items matching every word of the search.
    pub fn visible(&self) -> Vec<usize> {
        let words: Vec<String> = self
            .filter
            .to_lowercase()
            .split_whitespace()
            .map(str::to_string)
            .collect();
        self.items
            .iter()
            .enumerate()
            .filter(|(_, it)| {
                let hay = format!("{} {} {}", it.label, it.detail, it.search).to_lowercase();
                words.iter().all(|w| hay.contains(w.as_str()))
            })
            .map(|(i, _)| i)
            .collect()
    }
}

/// A scrollable page of text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextPage {
    pub title: String,
    pub lines: Vec<String>,
    pub scroll: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Overlay {
    Select(SelectList),
    Text(TextPage),
    Life(LifeView),
    /// `/resume`'s session picker.
    Sessions(Box<crate::session_picker::SessionPicker>),
    /// `/scoped-models`' checklist.
    ScopedModels(crate::scoped_models::ScopedModels),
    /// `/tree`'s selector.
    Tree(Box<crate::tree_view::TreeView>),
}

/// What a key in an overlay asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OverlayAction {
    None,
    Close,
    Chosen(SelectKind, String),
    /// Show the selected life node.
    Recall,
    /// Jump to a node with a carryover note.
    Jump {
        node_id: String,
        note: String,
    },
    /// Open this session file (`/resume`).
    OpenSession(std::path::PathBuf),
    /// Name the open session (renamed in the session picker).
    RenameCurrent(String),
    /// A key of `/scoped-models`.
    Scope(crate::scoped_models::ScopeAction),
    /// Set (`Some`) or clear (`None`) the label of a session entry (`/tree`, Shift+L).
    SetLabel {
        id: String,
        label: Option<String>,
    },
}

fn step(cur: usize, len: usize, delta: isize) -> usize {
    if len == 0 {
        return 0;
    }
    let max = len as isize - 1;
    (cur as isize + delta).clamp(0, max) as usize
}

impl Overlay {
    /// A key in the overlay; selectors take pi's `tui.select.*` keys from `keys`.
    pub fn handle_key(&mut self, key: KeyEvent, page: usize, keys: &Keybindings) -> OverlayAction {
        let page = page.max(1) as isize;
        let is = |action: &str| keys.matches(&key, action);
        match self {
            Overlay::Select(s) => {
                let vis = s.visible();
                let pos = vis.iter().position(|i| *i == s.selected).unwrap_or(0);
                let mv = |d: isize| vis.get(step(pos, vis.len(), d)).copied().unwrap_or(0);
                if is("tui.select.cancel") {
                    return OverlayAction::Close;
                } else if is("tui.select.confirm") {
                    return match vis.contains(&s.selected) {
                        true => OverlayAction::Chosen(s.kind, s.items[s.selected].value.clone()),
                        false => OverlayAction::None,
                    };
                } else if is("tui.select.up") {
                    s.selected = mv(-1);
                    return OverlayAction::None;
                } else if is("tui.select.down") {
                    s.selected = mv(1);
                    return OverlayAction::None;
                } else if is("tui.select.pageUp") {
                    s.selected = mv(-page);
                    return OverlayAction::None;
                } else if is("tui.select.pageDown") {
                    s.selected = mv(page);
                    return OverlayAction::None;
                }
                match key.code {
                    KeyCode::Backspace => {
                        s.filter.pop();
                        s.selected = s.visible().first().copied().unwrap_or(0);
                    }
                    KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                        s.filter.push(c);
                        s.selected = s.visible().first().copied().unwrap_or(0);
                    }
                    _ => {}
                }
                OverlayAction::None
            }
            Overlay::Text(t) => {
                if is("tui.select.cancel") || is("tui.select.confirm") {
                    return OverlayAction::Close;
                }
                match key.code {
                    KeyCode::Char('q') => return OverlayAction::Close,
                    KeyCode::Up | KeyCode::Char('k') => t.scroll = t.scroll.saturating_sub(1),
                    KeyCode::Down | KeyCode::Char('j') => {
                        t.scroll = step(t.scroll, t.lines.len(), 1)
                    }
                    KeyCode::PageUp => t.scroll = step(t.scroll, t.lines.len(), -page),
                    KeyCode::PageDown | KeyCode::Char(' ') => {
                        t.scroll = step(t.scroll, t.lines.len(), page)
                    }
                    _ => {}
                }
                OverlayAction::None
            }
            Overlay::Life(l) => life_key(l, key, page),
            Overlay::ScopedModels(m) => OverlayAction::Scope(m.handle_key(key)),
            Overlay::Tree(t) => t.handle_key(key, page as usize),
            Overlay::Sessions(p) => {
                use crate::session_picker::PickerAction;
                match p.handle_key(key) {
                    PickerAction::None => OverlayAction::None,
                    PickerAction::Cancel => OverlayAction::Close,
                    PickerAction::Open(path) => OverlayAction::OpenSession(path),
                    PickerAction::RenameCurrent(name) => OverlayAction::RenameCurrent(name),
                }
            }
        }
    }
}

fn life_key(l: &mut LifeView, key: KeyEvent, page: isize) -> OverlayAction {
    match &mut l.mode {
        LifeMode::List => match key.code {
            KeyCode::Esc | KeyCode::Char('q') => OverlayAction::Close,
            KeyCode::Up | KeyCode::Char('k') => {
                l.selected = step(l.selected, l.rows.len(), -1);
                OverlayAction::None
            }
            KeyCode::Down | KeyCode::Char('j') => {
                l.selected = step(l.selected, l.rows.len(), 1);
                OverlayAction::None
            }
            KeyCode::PageUp => {
                l.selected = step(l.selected, l.rows.len(), -page);
                OverlayAction::None
            }
            KeyCode::PageDown => {
                l.selected = step(l.selected, l.rows.len(), page);
                OverlayAction::None
            }
            KeyCode::Enter => OverlayAction::Recall,
            KeyCode::Char('t') if !l.rows.is_empty() => {
                l.mode = LifeMode::Note(String::new());
                OverlayAction::None
            }
            _ => OverlayAction::None,
        },
        LifeMode::Recall { lines, scroll } => {
            match key.code {
                KeyCode::Esc | KeyCode::Char('q') | KeyCode::Enter => l.mode = LifeMode::List,
                KeyCode::Up | KeyCode::Char('k') => *scroll = scroll.saturating_sub(1),
                KeyCode::Down | KeyCode::Char('j') => *scroll = step(*scroll, lines.len(), 1),
                KeyCode::PageUp => *scroll = step(*scroll, lines.len(), -page),
                KeyCode::PageDown | KeyCode::Char(' ') => {
                    *scroll = step(*scroll, lines.len(), page)
                }
                _ => {}
            }
            OverlayAction::None
        }
        LifeMode::Note(note) => match key.code {
            KeyCode::Esc => {
                l.mode = LifeMode::List;
                OverlayAction::None
            }
            KeyCode::Enter if !note.trim().is_empty() => {
                let note = note.trim().to_string();
                let node_id = l
                    .rows
                    .get(l.selected)
                    .map(|r| r.node_id.clone())
                    .unwrap_or_default();
                l.mode = LifeMode::List;
                OverlayAction::Jump { node_id, note }
            }
            KeyCode::Backspace => {
                note.pop();
                OverlayAction::None
            }
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                note.push(c);
                OverlayAction::None
            }
            _ => OverlayAction::None,
        },
    }
}

fn frame_block<'a>(title: String, hint: &'a str, theme: &Theme) -> Block<'a> {
    Block::default()
        .borders(Borders::ALL)
        .border_style(theme.fg("border"))
        .title(Span::styled(
            title,
            theme.fg("accent").add_modifier(Modifier::BOLD),
        ))
        .title_bottom(Span::styled(hint, theme.fg("muted")))
}

/// Keep `selected` inside a window of `height` rows; returns the first row shown.
fn window_start(selected: usize, height: usize) -> usize {
    selected.saturating_sub(height.saturating_sub(1) / 2)
}

/// Draw the overlay over `area`.
pub fn draw(frame: &mut Frame<'_>, area: Rect, overlay: &Overlay, theme: &Theme) {
    frame.render_widget(Clear, area);
    match overlay {
        Overlay::Select(s) => draw_select(frame, area, s, theme),
        Overlay::Text(t) => {
            let block = frame_block(format!(" {} ", t.title), " ↑↓ scroll · esc close ", theme);
            let inner = block.inner(area);
            let lines: Vec<Line<'static>> = t.lines.iter().map(|l| Line::from(l.clone())).collect();
            let wrapped = wrap_lines(&lines, usize::from(inner.width));
            let shown: Vec<Line<'static>> = wrapped
                .into_iter()
                .skip(t.scroll)
                .take(usize::from(inner.height))
                .collect();
            frame.render_widget(Paragraph::new(shown).block(block), area);
        }
        Overlay::Life(l) => draw_life(frame, area, l, theme),
        Overlay::Sessions(p) => crate::picker_view::draw(frame, area, p, theme),
        Overlay::ScopedModels(m) => crate::scoped_models::draw(frame, area, m, theme),
        Overlay::Tree(t) => crate::tree_view::draw(frame, area, t, theme),
    }
}

fn draw_select(frame: &mut Frame<'_>, area: Rect, s: &SelectList, theme: &Theme) {
    let block = frame_block(
        format!(" {} ", s.title),
        " type to search · ↑↓ · enter select · esc cancel ",
        theme,
    );
    let inner = block.inner(area);
    let width = usize::from(inner.width);
    let vis = s.visible();
    let mut lines = vec![Line::from(vec![
        Span::styled("search: ", theme.fg("muted")),
        Span::raw(s.filter.clone()),
        Span::styled("▏", theme.fg("accent")),
    ])];
    let height = usize::from(inner.height).saturating_sub(1);
    let pos = vis.iter().position(|i| *i == s.selected).unwrap_or(0);
    let start = window_start(pos, height).min(vis.len().saturating_sub(height));
    if vis.is_empty() {
        lines.push(Line::from(Span::styled("  no matches", theme.fg("muted"))));
    }
    for i in vis.iter().skip(start).take(height) {
        let it = &s.items[*i];
        let sel = *i == s.selected;
        let marker = if sel { "› " } else { "  " };
        let label = truncate(&it.label, width.saturating_sub(4));
        let room = width.saturating_sub(label.chars().count() + 4);
        let mut spans = vec![
            Span::styled(marker, theme.fg("accent")),
            Span::styled(
                label,
                if sel {
                    theme.fg("accent").add_modifier(Modifier::BOLD)
                } else {
                    theme.fg("text")
                },
            ),
        ];
        if room > 3 && !it.detail.is_empty() {
            spans.push(Span::styled(
                format!("  {}", truncate(&it.detail, room - 2)),
                theme.fg("muted"),
            ));
        }
        let line = Line::from(spans);
        lines.push(if sel {
            line.style(theme.selected())
        } else {
            line
        });
    }
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

fn draw_life(frame: &mut Frame<'_>, area: Rect, l: &LifeView, theme: &Theme) {
    if let LifeMode::Recall { lines, scroll } = &l.mode {
        let block = frame_block(" recall ".into(), " ↑↓ scroll · esc back ", theme);
        let inner = block.inner(area);
        let ls: Vec<Line<'static>> = lines.iter().map(|s| Line::from(s.clone())).collect();
        let wrapped: Vec<Line<'static>> = wrap_lines(&ls, usize::from(inner.width))
            .into_iter()
            .skip(*scroll)
            .take(usize::from(inner.height))
            .collect();
        frame.render_widget(Paragraph::new(wrapped).block(block), area);
        return;
    }
    let hint = " ↑↓ move · enter recall · t travel here · esc close ";
    let title = format!(" life · {} · {} nodes ", l.head_ref, l.rows.len());
    let block = frame_block(title, hint, theme);
    let inner = block.inner(area);
    let width = usize::from(inner.width);
    let mut height = usize::from(inner.height);
    let mut lines = Vec::new();
    if let LifeMode::Note(note) = &l.mode {
        height = height.saturating_sub(2);
        let target = l
            .rows
            .get(l.selected)
            .map_or("", |r| filo_dag::short_id(&r.node_id));
        lines.push(Line::from(vec![
            Span::styled(
                format!("travel to {target} — carryover note: "),
                theme.fg("warning"),
            ),
            Span::raw(note.clone()),
            Span::styled("▏", theme.fg("accent")),
        ]));
        lines.push(Line::from(Span::styled(
            "enter to jump · esc to cancel",
            theme.fg("muted"),
        )));
    }
    if l.rows.is_empty() {
        lines.push(Line::from(Span::styled(
            "No memory yet: the graph grows as you talk to the agent.",
            theme.fg("muted"),
        )));
    }
    let start = window_start(l.selected, height).min(l.rows.len().saturating_sub(height));
    for (i, r) in l.rows.iter().enumerate().skip(start).take(height) {
        let (glyph, extra, key) = match &r.kind {
            RowKind::Head => ("◉ ", " HEAD".to_string(), "accent"),
            RowKind::Ancestor => ("│ ", String::new(), "text"),
            RowKind::Branch { descendants } => ("├─", format!(" +{descendants}"), "warning"),
            RowKind::OtherHead(name) => ("◆ ", format!(" {name}"), "success"),
        };
        let refs = if r.refs.is_empty() {
            String::new()
        } else {
            format!(" ← {}", r.refs.join(", "))
        };
        let head = format!(
            "{glyph} {} {} {:>8}{extra}{refs} ",
            filo_dag::short_id(&r.node_id),
            role_label(&r.role),
            r.age
        );
        let room = width.saturating_sub(head.chars().count());
        let muted = r.role == filo_dag::role::PI_INTERNAL;
        let line = Line::from(vec![
            Span::styled(head, theme.fg(key)),
            Span::styled(
                truncate(&r.preview, room),
                if muted {
                    theme.fg("dim")
                } else {
                    theme.fg("text")
                },
            ),
        ]);
        lines.push(if i == l.selected {
            line.style(theme.selected())
        } else {
            line
        });
    }
    frame.render_widget(Paragraph::new(lines).block(block), area);
}
