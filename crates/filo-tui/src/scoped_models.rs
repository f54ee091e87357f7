//! `/scoped-models` (pi 0.73's model configuration): a checklist of the available models that
//! ctrl+p cycles through. Enter toggles one, ctrl+a enables all (of the search, if any), ctrl+x
//! clears, ctrl+p toggles the selected model's provider, alt+↑/↓ reorders the enabled ones. Changes
//! apply to this session at once; ctrl+s saves them as the `enabledModels` setting.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use crate::theme::Theme;

/// Rows shown at once (pi's).
const MAX_VISIBLE: usize = 8;

/// A model of the list: `provider/id` and its display name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelRow {
    pub key: String,
    pub provider: String,
    pub id: String,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopedModels {
    pub models: Vec<ModelRow>,
    /// `None`: every model (no scope); else the enabled keys, in cycling order.
    pub enabled: Option<Vec<String>>,
    pub query: String,
    pub selected: usize,
    /// Changed since the last save.
    pub dirty: bool,
    /// The keys of pi's `app.models.*` and `tui.select.*` actions.
    pub keys: std::sync::Arc<crate::keybindings::Keybindings>,
}

/// What a key asks of the app.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScopeAction {
    None,
    Close,
    /// The enabled set changed: apply it to the session.
    Changed(Option<Vec<String>>),
    /// Save it as the `enabledModels` setting.
    Save(Option<Vec<String>>),
}

impl ScopedModels {
    pub fn new(models: Vec<ModelRow>, enabled: Option<Vec<String>>) -> ScopedModels {
        ScopedModels {
            models,
            enabled,
            query: String::new(),
            selected: 0,
            dirty: false,
            keys: Default::default(),
        }
    }

    fn is_enabled(&self, key: &str) -> bool {
        self.enabled
            .as_ref()
            .is_none_or(|e| e.iter().any(|k| k == key))
    }

    /// The rows shown: enabled ones first in their order, then the rest; filtered by the search.
    pub fn rows(&self) -> Vec<&ModelRow> {
        let mut order: Vec<&ModelRow> = match &self.enabled {
            None => self.models.iter().collect(),
            Some(e) => e
                .iter()
                .filter_map(|k| self.models.iter().find(|m| &m.key == k))
                .chain(self.models.iter().filter(|m| !e.contains(&m.key)))
                .collect(),
        };
        let words: Vec<String> = self
            .query
            .to_lowercase()
            .split_whitespace()
            .map(str::to_string)
            .collect();
        order.retain(|m| {
            let hay = format!("{} {}", m.id, m.provider).to_lowercase();
            words.iter().all(|w| hay.contains(w.as_str()))
        });
        order
    }

    fn all_keys(&self) -> Vec<String> {
        self.models.iter().map(|m| m.key.clone()).collect()
    }

    /// All enabled is "no scope".
    fn normalize(&mut self) {
        if let Some(e) = &self.enabled
            && e.len() == self.models.len()
        {
            self.enabled = None;
        }
    }

    fn enable(&mut self, targets: &[String]) {
        let Some(e) = &mut self.enabled else {
            return;
        };
        for t in targets {
            if !e.contains(t) {
                e.push(t.clone());
            }
        }
        self.normalize();
    }

    fn clear(&mut self, targets: &[String]) {
        let all = self.all_keys();
        let e = self.enabled.get_or_insert(all);
        e.retain(|k| !targets.contains(k));
    }

    fn searched_keys(&self) -> Option<Vec<String>> {
        (!self.query.is_empty()).then(|| self.rows().iter().map(|m| m.key.clone()).collect())
    }

    fn changed(&mut self) -> ScopeAction {
        self.dirty = true;
        let n = self.rows().len();
        self.selected = self.selected.min(n.saturating_sub(1));
        ScopeAction::Changed(self.enabled.clone())
    }

    /// Alt+Up / Alt+Down: move the selected enabled model in the order.
    fn reorder(&mut self, current: Option<String>, up: bool) -> ScopeAction {
        let (Some(cur), Some(e)) = (current, self.enabled.as_mut()) else {
            return ScopeAction::None;
        };
        let Some(i) = e.iter().position(|k| *k == cur) else {
            return ScopeAction::None;
        };
        let j = if up {
            i.checked_sub(1)
        } else {
            Some(i + 1).filter(|j| *j < e.len())
        };
        let Some(j) = j else {
            return ScopeAction::None;
        };
        e.swap(i, j);
        self.selected = if j < i {
            self.selected.saturating_sub(1)
        } else {
            self.selected + 1
        };
        self.changed()
    }

    pub fn handle_key(&mut self, key: KeyEvent) -> ScopeAction {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let rows: Vec<String> = self.rows().iter().map(|m| m.key.clone()).collect();
        let current = rows.get(self.selected).cloned();
        let keys = self.keys.clone();
        let is = |action: &str| keys.matches(&key, action);
        if is("app.models.reorderUp") || is("app.models.reorderDown") {
            return self.reorder(current, is("app.models.reorderUp"));
        }
        let clears_query = ctrl && key.code == KeyCode::Char('c') && !self.query.is_empty();
        let act = if clears_query {
            Act::ClearQuery
        } else if is("tui.select.cancel") {
            return ScopeAction::Close;
        } else if is("tui.select.up") {
            Act::Up
        } else if is("tui.select.down") {
            Act::Down
        } else if is("tui.select.confirm") {
            Act::Toggle
        } else if is("app.models.enableAll") {
            Act::EnableAll
        } else if is("app.models.clearAll") {
            Act::ClearAll
        } else if is("app.models.toggleProvider") {
            Act::Provider
        } else if is("app.models.save") {
            Act::Save
        } else {
            match key.code {
                KeyCode::Backspace => Act::Back,
                KeyCode::Char(c) if !ctrl && !alt => Act::Type(c),
                _ => Act::Nothing,
            }
        };
        match act {
            Act::ClearQuery => {
                self.query.clear();
                ScopeAction::None
            }
            Act::Up if !rows.is_empty() => {
                self.selected = self.selected.checked_sub(1).unwrap_or(rows.len() - 1);
                ScopeAction::None
            }
            Act::Down if !rows.is_empty() => {
                self.selected = (self.selected + 1) % rows.len();
                ScopeAction::None
            }
            Act::Toggle => {
                let Some(cur) = current else {
                    return ScopeAction::None;
                };
                match &mut self.enabled {
                    None => self.enabled = Some(vec![cur]),
                    Some(e) => match e.iter().position(|k| *k == cur) {
                        Some(i) => {
                            e.remove(i);
                        }
                        None => e.push(cur),
                    },
                }
                self.normalize();
                self.changed()
            }
            Act::EnableAll => {
                let targets = self.searched_keys().unwrap_or_else(|| self.all_keys());
                self.enable(&targets);
                self.changed()
            }
            Act::ClearAll => {
                let targets = self.searched_keys().unwrap_or_else(|| self.all_keys());
                self.clear(&targets);
                self.changed()
            }
            Act::Provider => {
                let Some(cur) = current else {
                    return ScopeAction::None;
                };
                let provider = cur.split('/').next().unwrap_or_default().to_string();
                let of_provider: Vec<String> = self
                    .models
                    .iter()
                    .filter(|m| m.provider == provider)
                    .map(|m| m.key.clone())
                    .collect();
                if of_provider.iter().all(|k| self.is_enabled(k)) {
                    self.clear(&of_provider);
                } else {
                    self.enable(&of_provider);
                }
                self.changed()
            }
            Act::Save => {
                self.dirty = false;
                ScopeAction::Save(self.enabled.clone())
            }
            Act::Back => {
                self.query.pop();
                self.selected = 0;
                ScopeAction::None
            }
            Act::Type(c) => {
                self.query.push(c);
                self.selected = 0;
                ScopeAction::None
            }
            Act::Up | Act::Down | Act::Nothing => ScopeAction::None,
        }
    }
}

/// What a key means in the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Act {
    Up,
    Down,
    Toggle,
    EnableAll,
    ClearAll,
    Provider,
    Save,
    ClearQuery,
    Back,
    Type(char),
    Nothing,
}

/// Draw the checklist over `area`.
pub fn draw(frame: &mut Frame<'_>, area: Rect, s: &ScopedModels, theme: &Theme) {
    frame.render_widget(Clear, area);
    let block = Block::default()
        .borders(Borders::TOP | Borders::BOTTOM)
        .border_style(theme.fg("border"));
    let mut lines = vec![
        Line::default(),
        Line::from(Span::styled(
            "Model Configuration",
            theme.fg("accent").add_modifier(Modifier::BOLD),
        )),
        Line::from(Span::styled(
            "Session-only. ctrl+s to save to settings.",
            theme.fg("muted"),
        )),
        Line::default(),
        Line::from(vec![
            Span::raw("> "),
            Span::raw(s.query.clone()),
            Span::styled("▏", theme.fg("accent")),
        ]),
        Line::default(),
    ];
    let rows = s.rows();
    if rows.is_empty() {
        lines.push(Line::from(Span::styled(
            "  No matching models",
            theme.fg("muted"),
        )));
    }
    let start = s
        .selected
        .saturating_sub(MAX_VISIBLE / 2)
        .min(rows.len().saturating_sub(MAX_VISIBLE));
    let end = (start + MAX_VISIBLE).min(rows.len());
    for (i, m) in rows.iter().enumerate().take(end).skip(start) {
        let sel = i == s.selected;
        let mut spans = vec![
            Span::styled(if sel { "→ " } else { "  " }, theme.fg("accent")),
            Span::styled(
                m.id.clone(),
                if sel {
                    theme.fg("accent")
                } else {
                    theme.fg("text")
                },
            ),
            Span::styled(format!(" [{}]", m.provider), theme.fg("muted")),
        ];
        if s.enabled.is_some() {
            spans.push(if s.is_enabled(&m.key) {
                Span::styled(" ✓", theme.fg("success"))
            } else {
                Span::styled(" ✗", theme.fg("dim"))
            });
        }
        lines.push(Line::from(spans));
    }
    if start > 0 || end < rows.len() {
        lines.push(Line::from(Span::styled(
            format!("  ({}/{})", s.selected + 1, rows.len()),
            theme.fg("muted"),
        )));
    }
    if let Some(m) = rows.get(s.selected) {
        lines.push(Line::default());
        lines.push(Line::from(Span::styled(
            format!("  Model Name: {}", m.name),
            theme.fg("muted"),
        )));
    }
    lines.push(Line::default());
    let count = match &s.enabled {
        None => "all enabled".to_string(),
        Some(e) => format!("{}/{} enabled", e.len(), s.models.len()),
    };
    let mut footer = vec![Span::styled(
        format!(
            "  enter toggle · ctrl+a all · ctrl+x clear · ctrl+p provider · alt+up/alt+down reorder · ctrl+s save · {count}"
        ),
        theme.fg("dim"),
    )];
    if s.dirty {
        footer.push(Span::styled(" (unsaved)", theme.fg("warning")));
    }
    lines.push(Line::from(footer));
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(ratatui::widgets::Wrap { trim: false })
            .block(block),
        area,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows() -> Vec<ModelRow> {
        [("a", "one"), ("a", "two"), ("b", "three")]
            .iter()
            .map(|(p, id)| ModelRow {
                key: format!("{p}/{id}"),
                provider: (*p).into(),
                id: (*id).into(),
                name: id.to_uppercase(),
            })
            .collect()
    }

    fn k(code: KeyCode, m: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, m)
    }

    #[test]
    fn toggle_reorder_provider_and_save() {
        let mut s = ScopedModels::new(rows(), None);
        let none = KeyModifiers::NONE;
        // The first toggle from "all" keeps only that one.
        s.handle_key(k(KeyCode::Down, none));
        assert_eq!(
            s.handle_key(k(KeyCode::Enter, none)),
            ScopeAction::Changed(Some(vec!["a/two".into()]))
        );
        // Enabled ones come first.
        assert_eq!(s.rows()[0].key, "a/two");
        s.selected = 2;
        assert_eq!(s.rows()[2].key, "b/three");
        s.handle_key(k(KeyCode::Enter, none));
        assert_eq!(s.enabled, Some(vec!["a/two".into(), "b/three".into()]));
        // b/three is row 1 now; move it up.
        s.selected = 1;
        s.handle_key(k(KeyCode::Up, KeyModifiers::ALT));
        assert_eq!(s.enabled, Some(vec!["b/three".into(), "a/two".into()]));
        // ctrl+p on an "a" model: not all of a's are on, so all of them go on → everything.
        s.selected = 1;
        s.handle_key(k(KeyCode::Char('p'), KeyModifiers::CONTROL));
        assert_eq!(s.enabled, None);
        s.handle_key(k(KeyCode::Char('x'), KeyModifiers::CONTROL));
        assert_eq!(s.enabled, Some(Vec::new()));
        assert!(s.dirty);
        assert_eq!(
            s.handle_key(k(KeyCode::Char('s'), KeyModifiers::CONTROL)),
            ScopeAction::Save(Some(Vec::new()))
        );
        assert!(!s.dirty);
        // ctrl+a with a search enables only what it shows.
        s.handle_key(k(KeyCode::Char('t'), none));
        s.handle_key(k(KeyCode::Char('h'), none));
        s.handle_key(k(KeyCode::Char('r'), none));
        s.handle_key(k(KeyCode::Char('a'), KeyModifiers::CONTROL));
        assert_eq!(s.enabled, Some(vec!["b/three".into()]));
    }
}
