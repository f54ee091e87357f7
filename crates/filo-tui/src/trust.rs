//! Project trust in the terminal (pi 1.6): the prompt shown at start when a folder with
//! protected resources has no decision and `defaultProjectTrust` is `ask`, and `/trust`, which
//! saves a decision for later runs (the current one keeps what it loaded).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crossterm::event::{Event, EventStream, KeyCode, KeyEventKind, KeyModifiers};
use crossterm::terminal::{EnterAlternateScreen, enable_raw_mode};
use filo_core::trust::{SavedDecision, TrustOption, TrustStore, prompt_title, trust_options};
use futures::StreamExt;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

use crate::TuiError;
use crate::cells::Cell;
use crate::keybindings::Keybindings;
use crate::overlay::{Overlay, SelectItem, SelectKind, SelectList};
use crate::theme::Theme;

/// What `/trust` needs: where decisions are saved, and whether this run trusted the folder.
#[derive(Debug, Clone)]
pub struct ProjectTrust {
    pub store: TrustStore,
    pub trusted: bool,
}

/// Ask whether to trust `cwd` before anything of it is loaded. `None` when the user cancels
/// (Escape or Ctrl+C): the folder is then not trusted, and nothing is saved.
pub async fn ask_project_trust(
    cwd: &Path,
    theme: Theme,
    keys: Arc<Keybindings>,
) -> Result<Option<TrustOption>, TuiError> {
    enable_raw_mode()?;
    let result = match crossterm::execute!(std::io::stdout(), EnterAlternateScreen) {
        Ok(()) => prompt_loop(cwd, &theme, &keys).await,
        Err(e) => Err(TuiError::Io(e)),
    };
    crate::restore_terminal();
    result
}

async fn prompt_loop(
    cwd: &Path,
    theme: &Theme,
    keys: &Keybindings,
) -> Result<Option<TrustOption>, TuiError> {
    let mut terminal = Terminal::new(CrosstermBackend::new(crate::frame_writer()))?;
    let options = trust_options(cwd, true);
    let mut selected = 0usize;
    let mut input = EventStream::new();
    loop {
        terminal.draw(|f| {
            let mut lines: Vec<Line> = prompt_title(cwd)
                .lines()
                .enumerate()
                .map(|(i, l)| {
                    let style = if i == 0 {
                        theme.fg("accent")
                    } else {
                        theme.fg("muted")
                    };
                    Line::styled(l.to_string(), style)
                })
                .collect();
            lines.push(Line::raw(""));
            for (i, o) in options.iter().enumerate() {
                let (prefix, style) = if i == selected {
                    ("→ ", theme.fg("accent"))
                } else {
                    ("  ", theme.fg("text"))
                };
                lines.push(Line::styled(format!("{prefix}{}", o.label), style));
            }
            lines.push(Line::raw(""));
            lines.push(Line::styled(
                "↑↓ navigate  enter select  esc do not trust (this session only)",
                theme.fg("dim"),
            ));
            let block = Block::default()
                .borders(Borders::ALL)
                .title(" Project trust ");
            f.render_widget(
                Paragraph::new(lines)
                    .block(block)
                    .wrap(Wrap { trim: false }),
                f.area(),
            );
        })?;
        let key = match input.next().await {
            Some(Ok(Event::Key(k))) if k.kind != KeyEventKind::Release => k,
            Some(Ok(_)) => continue,
            Some(Err(e)) => return Err(TuiError::Io(e)),
            None => return Ok(None),
        };
        if key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL) {
            return Ok(None);
        }
        if keys.matches(&key, "tui.select.up") || key.code == KeyCode::Char('k') {
            selected = selected.saturating_sub(1);
        } else if keys.matches(&key, "tui.select.down") || key.code == KeyCode::Char('j') {
            selected = (selected + 1).min(options.len() - 1);
        } else if keys.matches(&key, "tui.select.confirm") || key.code == KeyCode::Enter {
            return Ok(options.get(selected).cloned());
        } else if keys.matches(&key, "tui.select.cancel") || key.code == KeyCode::Esc {
            return Ok(None);
        }
    }
}

/// How `/trust` shows a saved decision (pi's words).
fn describe(here: &Path, saved: Option<&SavedDecision>) -> String {
    match saved {
        None => "none".into(),
        Some(s) => {
            let label = if s.trusted { "trusted" } else { "untrusted" };
            let from = if s.from_pi { ", pi's trust.json" } else { "" };
            if s.path == here {
                format!("{label} ({}{from})", s.path.display())
            } else {
                format!("{label} (inherited from {}{from})", s.path.display())
            }
        }
    }
}

impl crate::app::App {
    /// `/trust`: choose the decision saved for this folder (pi's options, without the
    /// session-only ones: this run has already loaded what it loaded).
    pub(crate) fn trust_command(&mut self) {
        let Some(trust) = &self.options.project_trust else {
            self.state.push(Cell::Error(
                "/trust: this session has no trust store (embedded run)".into(),
            ));
            return;
        };
        let here: PathBuf = filo_core::trust::canonical(&self.options.cwd);
        let saved = match trust.store.get(&here) {
            Ok(s) => s,
            Err(e) => {
                self.state.push(Cell::Error(format!(
                    "/trust: {}",
                    filo_core::error_chain(&e)
                )));
                return;
            }
        };
        let options = trust_options(&here, false);
        let current = options.iter().position(|o| {
            saved.as_ref().is_some_and(|s| {
                !s.from_pi && o.saved_path.as_ref() == Some(&s.path) && o.trusted == s.trusted
            })
        });
        let items = options
            .iter()
            .enumerate()
            .map(|(i, o)| SelectItem {
                label: o.label.clone(),
                detail: if Some(i) == current {
                    "✓ saved".into()
                } else {
                    String::new()
                },
                value: i.to_string(),
                search: String::new(),
            })
            .collect();
        let title = format!(
            "Project trust · current session: {} · saved decision: {}",
            if trust.trusted {
                "trusted"
            } else {
                "untrusted"
            },
            describe(&here, saved.as_ref()),
        );
        let list = SelectList::new(SelectKind::Trust, &title, items, current.unwrap_or(0));
        self.state.overlay = Some(Overlay::Select(list));
    }

    /// The option chosen in `/trust` (its index): saved, and said so.
    pub(crate) fn trust_chosen(&mut self, value: &str) {
        let Some(trust) = &self.options.project_trust else {
            return;
        };
        let here = filo_core::trust::canonical(&self.options.cwd);
        let options = trust_options(&here, false);
        let Some(choice) = value.parse::<usize>().ok().and_then(|i| options.get(i)) else {
            return;
        };
        let cell = match trust.store.set_many(&choice.updates) {
            Ok(()) => Cell::Info(format!(
                "Saved trust decision: {}. Restart filo for this to take effect.",
                if choice.trusted {
                    "trusted"
                } else {
                    "untrusted"
                }
            )),
            Err(e) => Cell::Error(format!(
                "The trust decision was not saved: {}",
                filo_core::error_chain(&e)
            )),
        };
        self.state.push(cell);
    }
}
