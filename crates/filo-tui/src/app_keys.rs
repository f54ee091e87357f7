//! What a key does outside the editor: pi's `app.*` actions, looked up in the keybindings, then
//! completion, then the editor.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::app::{App, DOUBLE_ESCAPE};
use crate::cells::Cell;
use crate::completion;
use crate::state::Queued;
use crate::term::TermJob;

impl App {
    /// New keybindings (`/reload`): the app, the editor and an open picker use them.
    pub(crate) fn set_keybindings(&mut self, kb: crate::keybindings::Keybindings) {
        let kb = std::sync::Arc::new(kb);
        self.options.keybindings = kb.clone();
        self.state.editor.keys = kb.clone();
        match &mut self.state.overlay {
            Some(crate::overlay::Overlay::Sessions(p)) => p.keys = kb,
            Some(crate::overlay::Overlay::ScopedModels(m)) => m.keys = kb,
            Some(crate::overlay::Overlay::Tree(t)) => t.keys = kb,
            _ => {}
        }
    }

    pub(crate) fn on_key(&mut self, key: KeyEvent) {
        let keys = self.options.keybindings.clone();
        // Escape and a Ctrl key typed quickly arrive as one Alt+Ctrl key; unless that is bound,
        // it is the two keys.
        let alt_ctrl = KeyModifiers::ALT | KeyModifiers::CONTROL;
        if key.modifiers.contains(alt_ctrl) && !keys.is_bound(&key) {
            self.on_key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
            let mut rest = key;
            rest.modifiers -= KeyModifiers::ALT;
            self.on_key(rest);
            return;
        }
        let is = |action: &str| keys.matches(&key, action);
        if !is("app.clear") {
            self.state.quit_armed = None;
        }
        if let Some(mut ov) = self.state.overlay.take() {
            let action = ov.handle_key(key, self.page(), &keys);
            self.state.overlay = Some(ov);
            self.on_overlay_action(action);
            return;
        }
        // A pending jump-to-character takes the next key.
        if self.state.editor.jump.is_some() {
            self.editor_key(key);
            return;
        }
        if is("app.clear") {
            if !self.state.editor.is_empty() {
                self.state.editor.clear();
            } else if self.state.quit_armed.is_some() {
                self.state.should_quit = true;
            } else {
                if self.state.running {
                    self.abort();
                }
                self.state.quit_armed = Some(Instant::now());
            }
        } else if is("app.exit") && self.state.editor.is_empty() {
            self.state.should_quit = true;
        } else if is("app.suspend") {
            self.job = Some(TermJob::Suspend);
        } else if is("app.editor.external") {
            self.job = Some(TermJob::ExternalEditor);
        } else if is("app.thinking.toggle") {
            self.state.opts.show_thinking = !self.state.opts.show_thinking;
        } else if is("app.tools.expand") {
            self.state.opts.expand_tools = !self.state.opts.expand_tools;
        } else if is("app.model.select") {
            self.run_command("/model");
        } else if is("app.model.cycleBackward") {
            self.cycle_model_dir(false);
        } else if is("app.model.cycleForward") {
            self.cycle_model_dir(true);
        } else if is("app.thinking.cycle") {
            self.cycle_thinking();
        } else if is("app.message.dequeue") {
            self.dequeue();
        } else if is("app.clipboard.pasteImage") {
            self.paste_image();
        } else if is("app.session.new") {
            self.run_command("/new");
        } else if is("app.session.tree") {
            self.run_command("/tree");
        } else if is("app.session.fork") {
            self.run_command("/fork");
        } else if is("app.session.resume") {
            self.run_command("/resume");
        } else if is("tui.editor.pageUp") {
            self.state.scroll += self.page();
        } else if is("tui.editor.pageDown") {
            self.state.scroll = self.state.scroll.saturating_sub(self.page());
        } else if is("app.interrupt") {
            self.interrupt();
        } else if self.state.editor.completion.is_some()
            && completion::handle_key(&mut self.state.editor, key)
        {
        } else {
            self.editor_key(key);
        }
    }

    fn editor_key(&mut self, key: KeyEvent) {
        let action = self.state.editor.handle_key(key);
        match action {
            crate::editor::EditorAction::None => {}
            crate::editor::EditorAction::Submit(t) => self.submit(t, false),
            crate::editor::EditorAction::FollowUp(t) => self.submit(t, true),
        }
        let cmds = self.command_names();
        completion::update(&mut self.state.editor, &cmds, &mut self.files);
    }

    /// Escape: close completion, else interrupt, else (twice) pi's `doubleEscapeAction`.
    fn interrupt(&mut self) {
        if self.state.editor.completion.is_some() {
            self.state.editor.completion = None;
        } else if self.state.running || self.session.is_bash_running() {
            self.abort();
        } else if self.state.editor.is_empty() {
            if self
                .last_escape
                .take()
                .is_some_and(|t| t.elapsed() < DOUBLE_ESCAPE)
            {
                let action = filo_core::ui_settings::double_escape_action(&self.session.settings());
                match action {
                    "fork" => self.run_command("/fork"),
                    "none" => false,
                    _ => self.run_command("/tree"),
                };
            } else {
                self.last_escape = Some(Instant::now());
            }
        }
    }

    /// Alt+Up: every queued message back into the editor (before what is there), the queue
    /// emptied — pi's "restore queued messages".
    pub(crate) fn dequeue(&mut self) {
        if self.state.queued.is_empty() {
            self.state.status = None;
            self.state
                .push(Cell::Info("No queued messages to restore".into()));
            return;
        }
        let restored: Vec<String> = self
            .state
            .queued
            .drain(..)
            .map(|q| match q {
                Queued::Steer(t) | Queued::FollowUp(t) => t,
            })
            .collect();
        self.session.clear_queue();
        let current = self.state.editor.text.clone();
        let text = [restored.join("\n\n"), current]
            .into_iter()
            .filter(|t| !t.trim().is_empty())
            .collect::<Vec<_>>()
            .join("\n\n");
        self.state.editor.set_text(&text);
        self.refresh_footer();
    }

    /// Ctrl+V: an image from the clipboard, saved to a temporary file whose path goes into
    /// the editor (as pi does); a message says why when there is none.
    fn paste_image(&mut self) {
        match crate::term::clipboard_image(&self.options.term) {
            Ok(path) => {
                let p = path.to_string_lossy().into_owned();
                self.state.editor.type_text(&p);
            }
            Err(e) => self.state.push(Cell::Warning(e)),
        }
    }
}
