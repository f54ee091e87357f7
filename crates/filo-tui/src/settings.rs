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
    /// The rows of `/settings`: key, value, what it does (pi 0.73's items that apply to filo).
    fn settings_rows(&self) -> Vec<(&'static str, String, &'static str)> {
        use filo_core::ui_settings as ui;
        let s = &self.session;
        let settings = s.settings().clone();
        let tf = |b: bool| b.to_string();
        vec![
            (
                "theme",
                self.state.theme.name.clone(),
                "Color theme for the interface",
            ),
            (
                "autoCompaction",
                on_off(s.auto_compaction_enabled()).to_string(),
                "Automatically compact context when it gets too large",
            ),
            (
                "autoRetry",
                on_off(s.auto_retry_enabled()).to_string(),
                "Retry failed turns",
            ),
            (
                "steeringMode",
                s.steering_mode().to_string(),
                "Enter while streaming: deliver one steering message at a time, or all",
            ),
            (
                "followUpMode",
                s.follow_up_mode().to_string(),
                "Alt+Enter while streaming: deliver one follow-up at a time, or all",
            ),
            (
                "thinking",
                s.thinking_level().as_str().to_string(),
                "Reasoning depth for thinking-capable models",
            ),
            (
                "hideThinkingBlock",
                tf(!self.state.opts.show_thinking),
                "Hide thinking blocks in assistant responses",
            ),
            (
                "quietStartup",
                tf(ui::quiet_startup(&settings)),
                "No start-up banner",
            ),
            (
                "doubleEscapeAction",
                ui::double_escape_action(&settings).to_string(),
                "Action when pressing Escape twice with an empty editor",
            ),
            (
                "enableSkillCommands",
                tf(ui::enable_skill_commands(&settings)),
                "Offer skills as /skill:name commands",
            ),
            (
                "images.autoResize",
                tf(ui::images_auto_resize(&settings)),
                "Resize large images to 2000x2000 max (from the next start)",
            ),
            (
                "images.blockImages",
                tf(s.block_images()),
                "Prevent images from being sent to LLM providers",
            ),
            (
                "showHardwareCursor",
                tf(self.state.prefs.hardware_cursor),
                "Show the terminal cursor while still positioning it for IME support",
            ),
            (
                "editorPaddingX",
                self.state.prefs.editor_padding.to_string(),
                "Horizontal padding for input editor (0-3)",
            ),
            (
                "autocompleteMaxVisible",
                self.state.prefs.autocomplete_max.to_string(),
                "Max visible items in autocomplete dropdown (3-20)",
            ),
            (
                "terminal.clearOnShrink",
                tf(self.state.prefs.clear_on_shrink),
                "Clear empty rows when content shrinks (may cause flicker)",
            ),
            (
                "terminal.showTerminalProgress",
                tf(self.state.prefs.progress),
                "Show OSC 9;4 progress indicators in the terminal tab bar",
            ),
        ]
    }

    /// Open the settings list, the cursor on `selected`.
    pub(crate) fn settings_selector(&mut self, selected: usize) {
        let items = self
            .settings_rows()
            .into_iter()
            .map(|(k, v, d)| SelectItem {
                label: format!("{k:<20} {v}"),
                detail: d.to_string(),
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

    /// Save a UI setting (`settings.json`), saying so when it cannot be written.
    fn save_setting(&mut self, change: impl FnOnce(&mut filo_core::Settings)) {
        let mut settings = self.session.settings();
        change(&mut settings);
        let saved = settings.save();
        drop(settings);
        if let Err(e) = saved {
            self.state.push(Cell::Error(format!(
                "Settings not saved: {}",
                filo_core::error_chain(&e)
            )));
        }
    }

    /// Apply the settings the UI itself follows (at start, after `/reload`).
    pub(crate) fn apply_ui_settings(&mut self) {
        // Unset: filo's default (collapsed until ctrl+t) stays.
        let hidden = filo_core::ui_settings::hide_thinking_block(&self.session.settings());
        if let Some(h) = hidden {
            self.state.opts.show_thinking = !h;
        }
        // `terminal.showImages` (on when unset) and `terminal.imageWidthCells`, where the
        // terminal has an image protocol.
        let settings = self.session.settings();
        let v = settings.values();
        let show = v.terminal.show_images.unwrap_or(true);
        let width = u16::try_from(v.image_width_cells()).unwrap_or(u16::MAX);
        let prefs = crate::state::TermPrefs {
            editor_padding: u16::try_from(v.editor_padding_x()).unwrap_or(0),
            autocomplete_max: usize::try_from(v.autocomplete_max_visible()).unwrap_or(5),
            hardware_cursor: v.show_hardware_cursor.unwrap_or(false),
            clear_on_shrink: v.terminal.clear_on_shrink.unwrap_or(false),
            progress: v.terminal.show_terminal_progress.unwrap_or(false),
        };
        self.state.prefs = prefs;
        self.state.set_code_block_indent(v.code_block_indent());
        self.state.opts.images =
            self.options
                .term
                .images
                .filter(|_| show)
                .map(|protocol| crate::images::ImageDisplay {
                    protocol,
                    width_cells: width,
                });
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
        use filo_core::ui_settings as ui;
        let s = self.session.clone();
        let current = s.settings().clone();
        let cycle = |all: &[&'static str], cur: &str| -> &'static str {
            let i = all.iter().position(|a| *a == cur).unwrap_or(0);
            all[(i + 1) % all.len()]
        };
        match key {
            "theme" => return self.theme_selector(),
            "autoCompaction" => s.set_auto_compaction_enabled(!s.auto_compaction_enabled()),
            "autoRetry" => s.set_auto_retry_enabled(!s.auto_retry_enabled()),
            "steeringMode" => s.set_steering_mode(next_mode(s.steering_mode())),
            "followUpMode" => s.set_follow_up_mode(next_mode(s.follow_up_mode())),
            "thinking" => {
                s.cycle_thinking_level();
                self.refresh_footer();
            }
            "hideThinkingBlock" => {
                let hide = self.state.opts.show_thinking;
                self.state.opts.show_thinking = !hide;
                self.save_setting(|st| st.set("hideThinkingBlock", hide.into()));
            }
            "quietStartup" => {
                let on = !ui::quiet_startup(&current);
                self.save_setting(|st| st.set("quietStartup", on.into()));
            }
            "doubleEscapeAction" => {
                let next = cycle(
                    ui::DOUBLE_ESCAPE_ACTIONS,
                    ui::double_escape_action(&current),
                );
                self.save_setting(|st| st.set("doubleEscapeAction", next.into()));
            }
            "enableSkillCommands" => {
                let on = !ui::enable_skill_commands(&current);
                self.save_setting(|st| st.set("enableSkillCommands", on.into()));
            }
            "images.autoResize" => {
                let on = !ui::images_auto_resize(&current);
                self.save_setting(|st| st.set_nested("images", "autoResize", on.into()));
            }
            "images.blockImages" => s.set_block_images(!s.block_images()),
            "showHardwareCursor" => {
                let on = !self.state.prefs.hardware_cursor;
                self.save_setting(|st| st.set("showHardwareCursor", on.into()));
            }
            "editorPaddingX" => {
                let next = (self.state.prefs.editor_padding + 1) % 4;
                self.save_setting(|st| st.set("editorPaddingX", next.into()));
            }
            "autocompleteMaxVisible" => {
                let all = [3, 5, 7, 10, 15, 20];
                let cur = self.state.prefs.autocomplete_max;
                let i = all.iter().position(|n| *n == cur).map_or(0, |i| i + 1);
                let next = all[i % all.len()];
                self.save_setting(|st| st.set("autocompleteMaxVisible", next.into()));
            }
            "terminal.clearOnShrink" => {
                let on = !self.state.prefs.clear_on_shrink;
                self.save_setting(|st| st.set_nested("terminal", "clearOnShrink", on.into()));
            }
            "terminal.showTerminalProgress" => {
                let on = !self.state.prefs.progress;
                self.save_setting(|st| {
                    st.set_nested("terminal", "showTerminalProgress", on.into());
                });
            }
            _ => {}
        }
        self.apply_ui_settings();
        let row = self
            .settings_rows()
            .iter()
            .position(|(k, _, _)| *k == key)
            .unwrap_or(0);
        self.settings_selector(row);
    }
}
