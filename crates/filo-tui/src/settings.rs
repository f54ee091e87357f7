//! `/settings`: the settings the UI can change, as a list; choosing one flips or cycles it and
//! saves it to `settings.json` through the session.

use filo_agent::QueueMode;

use crate::app::App;
use crate::cells::Cell;
use crate::overlay::{Overlay, SelectItem, SelectKind, SelectList};
use crate::theme::Theme;

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

    /// Change one setting, then show the list again.
    pub(crate) fn change_setting(&mut self, key: &str) {
        let s = self.session.clone();
        let row = match key {
            "theme" => {
                let next = if self.state.theme.name == "dark" {
                    "light"
                } else {
                    "dark"
                };
                match Theme::builtin(next, self.state.theme.depth()) {
                    Some(t) => {
                        self.state.set_theme(t);
                        let mut settings = s.settings();
                        settings.set("theme", next.into());
                        if let Err(e) = settings.save() {
                            self.state.push(Cell::Error(format!(
                                "Settings not saved: {}",
                                filo_core::error_chain(&e)
                            )));
                        }
                    }
                    None => self.state.push(Cell::Error(format!("no theme {next}"))),
                }
                0
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
