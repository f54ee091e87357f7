//! Built-in slash commands (pi spec §6.5, the ones that apply) plus `/life` and `/trace`. Work
//! that awaits (new session, resume, fork, compact) runs in a spawned task.

use filo_ai::ThinkingLevel;

use crate::app::{App, AppEvent, osc52_copy};
use crate::cells::Cell;
use crate::life::{LifeMode, LifeView};
use crate::overlay::{Overlay, SelectItem, SelectKind, SelectList, TextPage};

/// Built-in commands and what they do.
pub const BUILTINS: &[(&str, &str)] = &[
    ("model", "Select the model"),
    ("thinking", "Set the thinking level"),
    ("new", "Start a new session"),
    ("resume", "Resume another session"),
    ("fork", "Fork from an earlier message"),
    (
        "clone",
        "Duplicate the current session at the current position",
    ),
    ("tree", "Move to another point of the session tree"),
    ("compact", "Compact the context (optional instructions)"),
    ("name", "Name this session"),
    ("session", "Session info and stats"),
    ("import", "Import and resume a session from a JSONL file"),
    (
        "reload",
        "Reload keybindings, skills, prompts, themes, context files and settings",
    ),
    ("scoped-models", "Choose the models ctrl+p cycles through"),
    ("changelog", "Show changelog entries"),
    (
        "export",
        "Export session (HTML default, or specify path: .html/.jsonl)",
    ),
    ("copy", "Copy the last answer to the clipboard"),
    ("life", "The memory graph around HEAD"),
    ("trace", "The memory navigation log"),
    (
        "settings",
        "Theme, auto-compaction, auto-retry, queue modes",
    ),
    ("trust", "Save a project trust decision for this folder"),
    ("hotkeys", "Keyboard shortcuts"),
    ("quit", "Quit"),
];

fn text_page(title: &str, text: &str) -> Overlay {
    Overlay::Text(TextPage {
        title: title.into(),
        lines: text.lines().map(str::to_string).collect(),
        scroll: 0,
    })
}

impl App {
    /// Names for `/` completion: built-ins, then the session's templates, skills and extension
    /// commands.
    pub(crate) fn command_names(&self) -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = BUILTINS
            .iter()
            .map(|(n, d)| ((*n).to_string(), (*d).to_string()))
            .collect();
        // `enableSkillCommands` off: skills are not offered as `/skill:name` (pi's setting).
        let skills = filo_core::ui_settings::enable_skill_commands(&self.session.settings());
        v.extend(
            self.session
                .commands()
                .into_iter()
                .filter(|c| skills || c.source != "skill")
                .map(|c| (c.name, c.description.unwrap_or_default())),
        );
        v
    }

    pub(crate) fn spawn_task<F>(&self, fut: F)
    where
        F: std::future::Future<Output = AppEvent> + Send + 'static,
    {
        let tx = self.tx.clone();
        tokio::spawn(async move {
            let ev = fut.await;
            let _ = tx.send(ev);
        });
    }

    /// Run a built-in; `false` when the name is not one (the text goes to the agent, which
    /// expands templates and skills).
    pub(crate) fn run_command(&mut self, line: &str) -> bool {
        let body = line.trim_start_matches('/');
        let (name, arg) = match body.split_once(char::is_whitespace) {
            Some((n, a)) => (n, a.trim()),
            None => (body, ""),
        };
        let session = self.session.clone();
        match name {
            "model" => self.model_selector(arg),
            "thinking" => self.thinking(arg),
            "new" => self.spawn_task(async move {
                match session.new_session().await {
                    Ok(()) => AppEvent::Reload,
                    Err(e) => AppEvent::Error(filo_core::error_chain(&e)),
                }
            }),
            "resume" => self.session_picker(),
            "fork" => self.fork_selector(),
            "clone" => self.clone_command(),
            "import" => self.import_command(arg),
            "reload" => self.reload_command(),
            "scoped-models" => self.scoped_models_command(),
            "changelog" => self.changelog_command(),
            "tree" => {
                let filter = filo_core::ui_settings::tree_filter_mode(&self.session.settings());
                let tree = crate::tree::Tree::from_session(&self.session.session_manager(), filter);
                if tree.nodes.is_empty() {
                    self.state.push(Cell::Info("No entries in session".into()));
                } else {
                    let view =
                        crate::tree_view::TreeView::new(tree, self.options.keybindings.clone());
                    self.state.overlay = Some(Overlay::Tree(Box::new(view)));
                }
            }
            "compact" => {
                let instructions = (!arg.is_empty()).then(|| arg.to_string());
                self.state.status = Some("Compacting context…".into());
                self.spawn_task(async move {
                    match session.compact(instructions.as_deref()).await {
                        Ok(r) => AppEvent::Info(format!(
                            "Context compacted ({} tokens before).",
                            r.tokens_before
                        )),
                        Err(e) => AppEvent::Error(format!(
                            "Compaction failed: {}",
                            filo_core::error_chain(&e)
                        )),
                    }
                });
            }
            "name" if arg.is_empty() => {
                let current = self
                    .session
                    .session_name()
                    .unwrap_or_else(|| "(unnamed)".into());
                self.state.push(Cell::Info(format!(
                    "Session name: {current}. Usage: /name <name>"
                )));
            }
            "name" => {
                self.session.set_session_name(arg);
                self.refresh_footer();
                self.state
                    .push(Cell::Info(format!("Session named \"{arg}\".")));
            }
            "session" => self.state.overlay = Some(text_page("session", &self.session_info())),
            "export" => self.export(arg),
            "copy" => self.copy(),
            "hotkeys" => {
                let lines = crate::hotkeys::lines(&self.options.keybindings);
                self.state.overlay = Some(text_page("Keyboard Shortcuts", &lines.join("\n")));
            }
            "settings" => self.settings_selector(0),
            "trust" => self.trust_command(),
            "life" => self.open_life(),
            "trace" => self.trace(),
            "quit" | "exit" => self.state.should_quit = true,
            _ => return false,
        }
        true
    }

    fn thinking(&mut self, arg: &str) {
        if let Some(l) = ThinkingLevel::parse(arg) {
            self.session.set_thinking_level(l);
            self.refresh_footer();
            return;
        }
        let cur = self.session.thinking_level();
        let levels = self.session.available_thinking_levels();
        let items: Vec<SelectItem> = levels
            .iter()
            .map(|l| SelectItem {
                label: l.as_str().into(),
                detail: String::new(),
                value: l.as_str().into(),
                search: String::new(),
            })
            .collect();
        let sel = levels.iter().position(|l| *l == cur).unwrap_or(0);
        let list = SelectList::new(SelectKind::Thinking, "thinking level", items, sel);
        self.state.overlay = Some(Overlay::Select(list));
    }

    fn fork_selector(&mut self) {
        let items: Vec<SelectItem> = self
            .session
            .fork_messages()
            .into_iter()
            .rev()
            .map(|f| SelectItem {
                label: f.text.lines().next().unwrap_or("").to_string(),
                detail: String::new(),
                value: f.entry_id,
                search: f.text,
            })
            .collect();
        if items.is_empty() {
            self.state
                .push(Cell::Info("No messages to fork from.".into()));
            return;
        }
        let list = SelectList::new(SelectKind::Fork, "fork from message", items, 0);
        self.state.overlay = Some(Overlay::Select(list));
    }

    /// `/export [file]`: HTML (the whole tree) unless the path ends in `.jsonl`, which writes the
    /// current branch as a session file (as pi does).
    fn export(&mut self, arg: &str) {
        let path = (!arg.is_empty()).then(|| self.options.cwd.join(arg));
        let written = match &path {
            Some(p) if arg.ends_with(".jsonl") => self.session.export_to_jsonl(p),
            _ => self.session.export_to_html(path.as_deref()),
        };
        match written {
            Ok(p) => self
                .state
                .push(Cell::Info(format!("Session exported to: {}", p.display()))),
            Err(e) => self.state.push(Cell::Error(format!(
                "Failed to export session: {}",
                filo_core::error_chain(&e)
            ))),
        }
    }

    fn copy(&mut self) {
        let cell = match self.session.last_assistant_text() {
            Some(t) => match osc52_copy(&t) {
                Ok(()) => Cell::Info("Copied the last answer to the clipboard.".into()),
                Err(e) => Cell::Error(format!("Copy failed: {e}")),
            },
            None => Cell::Info("Nothing to copy yet.".into()),
        };
        self.state.push(cell);
    }

    fn trace(&mut self) {
        let Some(src) = &self.options.life else {
            self.state
                .push(Cell::Info("The memory is off (--no-dag).".into()));
            return;
        };
        match crate::life::trace_text(&src.db_path, &(src.head_ref)()) {
            Ok(t) => self.state.overlay = Some(text_page("trace", &t)),
            Err(e) => self.state.push(Cell::Error(format!("trace: {e}"))),
        }
    }

    fn session_info(&self) -> String {
        let s = self.session.stats();
        let f = &self.state.footer;
        format!(
            "file        {}\nid          {}\nname        {}\nmodel       {}\nthinking    {}\n\nmessages    {} ({} user, {} assistant)\ntool calls  {} ({} results)\n\ntokens      {} in, {} out, {} cache read, {} cache write ({} total)\ncost        ${:.4}\ncontext     {} of {}\nwrite errors {} session, {} memory",
            s.session_file.as_deref().unwrap_or("(in memory)"),
            s.session_id,
            self.session.session_name().unwrap_or_default(),
            f.model.as_deref().unwrap_or("none"),
            f.thinking,
            s.total_messages,
            s.user_messages,
            s.assistant_messages,
            s.tool_calls,
            s.tool_results,
            s.tokens.input,
            s.tokens.output,
            s.tokens.cache_read,
            s.tokens.cache_write,
            s.tokens.total,
            s.cost,
            f.context_tokens,
            f.context_window,
            s.persist_errors,
            s.extension_errors,
        )
    }

    fn model_selector(&mut self, search: &str) {
        let models = self.session.available_models();
        if models.is_empty() {
            let msg = self
                .session
                .model_fallback_message()
                .unwrap_or("No models available: set an API key.")
                .to_string();
            self.state.push(Cell::Warning(msg));
            return;
        }
        let current = self.session.model();
        let items: Vec<SelectItem> = models
            .iter()
            .map(|m| SelectItem {
                label: format!("{}/{}", m.provider, m.id),
                detail: format!(
                    "{} · {}k ctx{}",
                    m.name,
                    m.context_window / 1000,
                    if m.reasoning { " · reasoning" } else { "" }
                ),
                value: format!("{}/{}", m.provider, m.id),
                search: String::new(),
            })
            .collect();
        let sel = current
            .and_then(|c| models.iter().position(|m| m.same_as(&c)))
            .unwrap_or(0);
        let mut list = SelectList::new(SelectKind::Model, "model", items, sel);
        list.filter = search.to_string();
        if !search.is_empty() {
            list.selected = list.visible().first().copied().unwrap_or(0);
        }
        self.state.overlay = Some(Overlay::Select(list));
    }

    fn session_picker(&mut self) {
        let dir = self.options.session_dir.clone().or_else(|| {
            self.session
                .session_file()
                .and_then(|p| p.parent().map(std::path::Path::to_path_buf))
        });
        let Some(dir) = dir else {
            self.state
                .push(Cell::Info("No session directory (--no-session).".into()));
            return;
        };
        let all_root = self
            .options
            .sessions_root
            .clone()
            .or_else(|| dir.parent().map(std::path::Path::to_path_buf))
            .unwrap_or_else(|| dir.clone());
        let source = crate::session_picker::PickerSource {
            dir,
            all_root,
            current_file: self.session.session_file(),
            cwd: self.options.cwd.to_string_lossy().into_owned(),
            home: self.options.home.clone(),
            can_rename: true,
        };
        let mut picker =
            crate::session_picker::SessionPicker::new(source, filo_session::ids::now_ms());
        picker.keys = self.options.keybindings.clone();
        self.state.overlay = Some(Overlay::Sessions(Box::new(picker)));
    }

    /// Open a session chosen in the picker (the open one stays as it is).
    pub(crate) fn open_session(&mut self, path: std::path::PathBuf) {
        let same = self.session.session_file().is_some_and(|c| {
            c.canonicalize().unwrap_or(c.clone()) == path.canonicalize().unwrap_or(path.clone())
        });
        if same {
            self.state
                .push(Cell::Info("Already in this session.".into()));
            return;
        }
        let session = self.session.clone();
        self.spawn_task(async move {
            match session.switch_session(&path).await {
                Ok(()) => AppEvent::Reload,
                Err(e) => AppEvent::Error(filo_core::error_chain(&e)),
            }
        });
    }

    /// A selector's choice.
    pub(crate) fn chosen(&mut self, kind: SelectKind, value: String) {
        let session = self.session.clone();
        match kind {
            SelectKind::Model => {
                let found = self
                    .session
                    .available_models()
                    .into_iter()
                    .find(|m| format!("{}/{}", m.provider, m.id) == value);
                if let Some(m) = found {
                    match self.session.set_model(m) {
                        Ok(()) => self.refresh_footer(),
                        Err(e) => self.state.push(Cell::Error(filo_core::error_chain(&e))),
                    }
                }
            }
            SelectKind::Thinking => {
                if let Some(l) = ThinkingLevel::parse(&value) {
                    self.session.set_thinking_level(l);
                    self.refresh_footer();
                }
            }
            SelectKind::Session => self.spawn_task(async move {
                match session.switch_session(std::path::Path::new(&value)).await {
                    Ok(()) => AppEvent::Reload,
                    Err(e) => AppEvent::Error(filo_core::error_chain(&e)),
                }
            }),
            SelectKind::Tree => {
                // `branchSummary.skipPrompt`: move without asking (and without a summary).
                if session.settings().values().branch_summary.skip_prompt == Some(true) {
                    return self.navigate_tree(value, false);
                }
                let items = [
                    ("Move without a summary", "0"),
                    ("Summarize the branch left behind", "1"),
                ]
                .iter()
                .map(|(label, flag)| SelectItem {
                    label: (*label).into(),
                    detail: String::new(),
                    value: format!("{flag}:{value}"),
                    search: String::new(),
                })
                .collect();
                let list = SelectList::new(SelectKind::TreeSummary, "leave this branch", items, 0);
                self.state.overlay = Some(Overlay::Select(list));
            }
            SelectKind::TreeSummary => {
                let (flag, id) = value.split_once(':').unwrap_or(("0", value.as_str()));
                self.navigate_tree(id.to_string(), flag == "1");
            }
            SelectKind::Setting => self.change_setting(&value),
            SelectKind::Theme => self.choose_theme(&value),
            SelectKind::Import => self.import_confirmed(value),
            SelectKind::Trust => self.trust_chosen(&value),
            SelectKind::Fork => {
                let tx = self.tx.clone();
                tokio::spawn(async move {
                    match session.fork(&value).await {
                        Ok(text) => {
                            let _ = tx.send(AppEvent::Reload);
                            let _ = tx.send(AppEvent::EditorText(text));
                        }
                        Err(e) => {
                            let _ = tx.send(AppEvent::Error(filo_core::error_chain(&e)));
                        }
                    }
                });
            }
        }
    }

    fn open_life(&mut self) {
        let Some(src) = self.options.life.clone() else {
            self.state
                .push(Cell::Info("The memory is off (--no-dag).".into()));
            return;
        };
        // Waiting for the memory's queued commits and reading the graph block: off the event loop.
        let tx = self.tx.clone();
        tokio::task::spawn_blocking(move || {
            (src.flush)();
            let view = LifeView::open(&src.db_path, &(src.head_ref)(), filo_session::ids::now_ms())
                .map_err(|e| format!("life: {e}"));
            // A closed channel means the app has quit: nobody is left to show the view to.
            tx.send(AppEvent::Life(Box::new(view))).unwrap_or(());
        });
    }

    pub(crate) fn life_recall(&mut self) {
        let Some(Overlay::Life(l)) = self.state.overlay.as_mut() else {
            return;
        };
        match l.recall_selected() {
            Ok(t) => {
                l.mode = LifeMode::Recall {
                    lines: t.lines().map(str::to_string).collect(),
                    scroll: 0,
                }
            }
            Err(e) => {
                l.mode = LifeMode::Recall {
                    lines: vec![format!("Error: {e}")],
                    scroll: 0,
                }
            }
        }
    }

    /// Ctrl+P (forward) / Shift+Ctrl+P (backward).
    pub(crate) fn cycle_model_dir(&mut self, forward: bool) {
        match self.session.cycle_model(forward) {
            Ok(Some(_)) => self.refresh_footer(),
            Ok(None) => self
                .state
                .push(Cell::Info("Only one model available.".into())),
            Err(e) => self.state.push(Cell::Error(filo_core::error_chain(&e))),
        }
    }

    pub(crate) fn cycle_thinking(&mut self) {
        match self.session.cycle_thinking_level() {
            Some(_) => self.refresh_footer(),
            None => self
                .state
                .push(Cell::Info("This model does not support thinking.".into())),
        }
    }
}
