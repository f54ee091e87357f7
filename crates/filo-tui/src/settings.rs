//! `/settings`: the settings the UI can change, as a list; choosing one flips or cycles it and
//! saves it to `settings.json` through the session.

use filo_agent::QueueMode;

use crate::app::App;
use crate::cells::Cell;
use crate::overlay::{Overlay, SelectItem, SelectKind, SelectList};

fn on_off(b: bool) -> &'static str {
    if b { "on" } else { "off" }
}

fn next_mode(current: &str) -> QueueMode {
    match current {
        "all" => QueueMode::OneAtATime,
        _ => QueueMode::All,
    }
}

impl App {
    /// Open the settings list, the cursor on `selected`.
    pub(crate) fn settings_selector(&mut self, selected: usize) {
        let s = &self.session;
        let rows = [
            ("theme", self.state.theme.name.clone()),
            (
                "autoCompaction",
                on_off(s.auto_compaction_enabled()).to_string(),
            ),
            ("autoRetry", on_off(s.auto_retry_enabled()).to_string()),
            ("steeringMode", s.steering_mode().to_string()),
            ("followUpMode", s.follow_up_mode().to_string()),
            ("thinking", s.thinking_level().as_str().to_string()),
        ];
        let items = rows
            .into_iter()
            .map(|(k, v)| SelectItem {
                label: format!("{k:<16} {v}"),
                detail: String::new(),
                value: k.to_string(),
                search: String::new(),
            })
            .collect();
        let list = SelectList::new(
            SelectKind::Setting,
            "settings (enter changes)",
            items,
            selected,
        );
        self.state.overlay = Some(Overlay::Select(list));
    }

    /// Apply the settings the UI itself follows (at start, after `/reload`).
    pub(crate) fn apply_ui_settings(&mut self) {
        // Unset: filo's default (collapsed until ctrl+t) stays.
        let hidden = filo_core::ui_settings::hide_thinking_block(&self.session.settings());
        if let Some(h) = hidden {
            self.state.opts.show_thinking = !h;
        }
    }

    /// The theme list: every theme of the run (built-ins, theme directories, `--theme` files).
    fn theme_selector(&mut self) {
        let names = self.options.themes.names();
        let current = self.state.theme.name.clone();
        let sel = names.iter().position(|n| *n == current).unwrap_or(0);
        let items = names
            .into_iter()
            .map(|n| SelectItem {
                detail: if n == current {
                    "current".into()
                } else {
                    String::new()
                },
                label: n.clone(),
                value: n,
                search: String::new(),
            })
            .collect();
        let list = SelectList::new(SelectKind::Theme, "theme", items, sel);
        self.state.overlay = Some(Overlay::Select(list));
    }

    /// Use the theme `name` and save it as the `theme` setting.
    pub(crate) fn choose_theme(&mut self, name: &str) {
        match self.options.themes.get(name) {
            Ok(t) => {
                self.state.set_theme(t);
                let mut settings = self.session.settings();
                settings.set("theme", name.into());
                if let Err(e) = settings.save() {
                    drop(settings);
                    self.state.push(Cell::Error(format!(
                        "Settings not saved: {}",
                        filo_core::error_chain(&e)
                    )));
                }
            }
            Err(e) => self
                .state
                .push(Cell::Error(format!("Failed to load theme \"{name}\": {e}"))),
        }
        self.settings_selector(0);
    }

    /// Change one setting, then show the list again.
    pub(crate) fn change_setting(&mut self, key: &str) {
        let s = self.session.clone();
        let row = match key {
            "theme" => {
                self.theme_selector();
                return;
            }
            "autoCompaction" => {
                s.set_auto_compaction_enabled(!s.auto_compaction_enabled());
                1
            }
            "autoRetry" => {
                s.set_auto_retry_enabled(!s.auto_retry_enabled());
                2
            }
            "steeringMode" => {
                s.set_steering_mode(next_mode(s.steering_mode()));
                3
            }
            "followUpMode" => {
                s.set_follow_up_mode(next_mode(s.follow_up_mode()));
                4
            }
            "thinking" => {
                s.cycle_thinking_level();
                self.refresh_footer();
                5
            }
            _ => 0,
        };
        self.settings_selector(row);
    }
}
