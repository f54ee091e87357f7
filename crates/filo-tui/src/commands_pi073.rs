//! Slash commands pi 0.73 added: `/clone`, `/import`, `/reload`, `/scoped-models` and
//! `/changelog`.

use std::path::{Path, PathBuf};

use crate::app::{App, AppEvent};
use crate::cells::Cell;
use crate::overlay::{Overlay, SelectItem, SelectKind, SelectList, TextPage};
use crate::scoped_models::{ModelRow, ScopeAction, ScopedModels};

/// filo's own changelog, shown by `/changelog`.
pub const CHANGELOG: &str = include_str!("../../../CHANGELOG.md");

/// The path argument of `/import` (pi's rule: the first word, or a quoted path).
pub fn path_argument(arg: &str) -> Option<String> {
    let arg = arg.trim_start();
    let first = arg.chars().next()?;
    if first == '"' || first == '\'' {
        let rest = &arg[1..];
        return rest.find(first).map(|end| rest[..end].to_string());
    }
    Some(arg.split_whitespace().next()?.to_string())
}

/// Copy `source` into `dir` under its own name, for `/import`. The copy is refused, and nothing
/// written, when the file is not a session file or when a different file of that name is there.
pub fn import_copy(source: &Path, dir: &Path) -> Result<PathBuf, String> {
    if !source.is_file() {
        return Err(format!("File not found: {}", source.display()));
    }
    if !filo_session::list::has_valid_header(source) {
        return Err(format!("{} is not a session file", source.display()));
    }
    let name = source
        .file_name()
        .ok_or_else(|| format!("{} has no file name", source.display()))?;
    let dest = dir.join(name);
    let same_file = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if dest.exists() {
        if same_file(source, &dest) {
            return Ok(dest);
        }
        let identical = std::fs::read(source).ok() == std::fs::read(&dest).ok();
        if !identical {
            return Err(format!(
                "{} already exists and is a different session; rename the file to import it",
                dest.display()
            ));
        }
        return Ok(dest);
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    std::fs::copy(source, &dest).map_err(|e| format!("{}: {e}", dest.display()))?;
    Ok(dest)
}

impl App {
    /// `/clone`: the current branch, up to the leaf, into a new session.
    pub(crate) fn clone_command(&mut self) {
        if self.session.session_manager().leaf_id().is_none() {
            self.state.push(Cell::Info("Nothing to clone yet".into()));
            return;
        }
        let session = self.session.clone();
        self.spawn_task(async move {
            match session.clone_session().await {
                Ok(()) => AppEvent::Reloaded("Cloned to new session".into()),
                Err(e) => AppEvent::Error(filo_core::error_chain(&e)),
            }
        });
    }

    /// `/import <file>`: asks first, then replaces the current session with the file's.
    pub(crate) fn import_command(&mut self, arg: &str) {
        let Some(path) = path_argument(arg) else {
            self.state
                .push(Cell::Error("Usage: /import <path.jsonl>".into()));
            return;
        };
        let items = ["Yes", "No"]
            .iter()
            .map(|l| SelectItem {
                label: (*l).into(),
                detail: String::new(),
                value: if *l == "Yes" {
                    path.clone()
                } else {
                    String::new()
                },
                search: String::new(),
            })
            .collect();
        let title = format!("Import session: replace current session with {path}?");
        let list = SelectList::new(SelectKind::Import, &title, items, 0);
        self.state.overlay = Some(Overlay::Select(list));
    }

    /// The answer to `/import`'s question (`value` is the path, empty for "No").
    pub(crate) fn import_confirmed(&mut self, value: String) {
        if value.is_empty() {
            self.state.push(Cell::Info("Import cancelled".into()));
            return;
        }
        let source = self.options.cwd.join(&value);
        let dir = self
            .session
            .session_manager()
            .session_dir()
            .map(Path::to_path_buf);
        let Some(dir) = dir else {
            self.state.push(Cell::Error(
                "Failed to import session: this session is not kept in a directory (--no-session)"
                    .into(),
            ));
            return;
        };
        let dest = match import_copy(&source, &dir) {
            Ok(d) => d,
            Err(e) => {
                self.state
                    .push(Cell::Error(format!("Failed to import session: {e}")));
                return;
            }
        };
        let session = self.session.clone();
        self.spawn_task(async move {
            match session.switch_session(&dest).await {
                Ok(()) => AppEvent::Reloaded(format!("Session imported from: {value}")),
                Err(e) => AppEvent::Error(format!(
                    "Failed to import session: {}",
                    filo_core::error_chain(&e)
                )),
            }
        });
    }

    /// `/reload`: skills, prompt templates, context files, SYSTEM.md, themes and settings read
    /// again; the session's system prompt and the UI follow them.
    pub(crate) fn reload_command(&mut self) {
        if self.session.is_streaming() {
            self.state.push(Cell::Warning(
                "Wait for the current response to finish before reloading.".into(),
            ));
            return;
        }
        if self.session.is_compacting() {
            self.state.push(Cell::Warning(
                "Wait for compaction to finish before reloading.".into(),
            ));
            return;
        }
        let Some(reload) = self.options.reload.clone() else {
            self.state
                .push(Cell::Info("Nothing to reload in this session.".into()));
            return;
        };
        self.state.status = Some("Reloading skills, prompts, themes, context files…".into());
        let tx = self.tx.clone();
        tokio::task::spawn_blocking(move || {
            let loaded = reload();
            // A closed channel means the app has quit: nothing is left to reload.
            tx.send(AppEvent::ResourcesLoaded(Box::new(loaded)))
                .unwrap_or(());
        });
    }

    /// Apply what `/reload` read.
    pub(crate) fn apply_reload(&mut self, loaded: crate::Reloaded) {
        self.state.status = None;
        self.session.set_resources(loaded.resources);
        self.session.replace_settings(loaded.settings);
        self.options.themes = loaded.themes;
        self.set_keybindings(loaded.keybindings);
        let name = self.session.settings().values().theme().to_string();
        let theme = self.options.themes.get(&name);
        if let Ok(t) = &theme {
            self.state.set_theme(t.clone());
        }
        self.apply_ui_settings();
        // The conversation is rebuilt first, so the warnings stay on screen after it.
        self.reload();
        for w in loaded.warnings {
            self.state.push(Cell::Warning(w));
        }
        if let Err(e) = theme {
            self.state
                .push(Cell::Error(format!("Failed to load theme \"{name}\": {e}")));
        }
        self.state.push(Cell::Info(
            "Reloaded keybindings, skills, prompts, themes, context files and settings".into(),
        ));
    }

    /// `/changelog`: filo's CHANGELOG.md.
    pub(crate) fn changelog_command(&mut self) {
        self.state.overlay = Some(Overlay::Text(TextPage {
            title: "What's New".into(),
            lines: CHANGELOG.lines().map(str::to_string).collect(),
            scroll: 0,
        }));
    }

    /// `/scoped-models`: the checklist over the models that have a key.
    pub(crate) fn scoped_models_command(&mut self) {
        let models = self.session.available_models();
        if models.is_empty() {
            self.state.push(Cell::Info("No models available".into()));
            return;
        }
        let key = |m: &filo_ai::Model| format!("{}/{}", m.provider, m.id);
        let scoped = self.session.scoped_models();
        let enabled = if !scoped.is_empty() {
            Some(scoped.iter().map(|s| key(&s.model)).collect())
        } else {
            let patterns = filo_core::ui_settings::enabled_models(&self.session.settings());
            patterns.map(|p| {
                let (scope, _) = filo_core::model_resolve::resolve_model_scope(&p, &models);
                scope.iter().map(|s| key(&s.model)).collect()
            })
        };
        let rows = models
            .iter()
            .map(|m| ModelRow {
                key: key(m),
                provider: m.provider.clone(),
                id: m.id.clone(),
                name: m.name.clone(),
            })
            .collect();
        let mut overlay = ScopedModels::new(rows, enabled);
        overlay.keys = self.options.keybindings.clone();
        self.state.overlay = Some(Overlay::ScopedModels(overlay));
    }

    /// A key's effect in `/scoped-models`.
    pub(crate) fn scope_action(&mut self, action: ScopeAction) {
        match action {
            ScopeAction::None => {}
            ScopeAction::Close => self.state.overlay = None,
            ScopeAction::Changed(enabled) => {
                let models = self.session.available_models();
                let scope = match enabled {
                    Some(keys) if !keys.is_empty() && keys.len() < models.len() => {
                        filo_core::model_resolve::resolve_model_scope(&keys, &models).0
                    }
                    _ => Vec::new(),
                };
                self.session.set_scoped_models(scope);
            }
            ScopeAction::Save(enabled) => {
                let all = self.session.available_models().len();
                let patterns = enabled.filter(|e| e.len() < all).unwrap_or_default();
                let mut settings = self.session.settings();
                settings.set("enabledModels", patterns.into());
                let saved = settings.save();
                drop(settings);
                self.state.push(match saved {
                    Ok(()) => Cell::Info("Model selection saved to settings".into()),
                    Err(e) => Cell::Error(format!(
                        "Settings not saved: {}",
                        filo_core::error_chain(&e)
                    )),
                });
            }
        }
    }

    /// Move the session's leaf to `id` (what `/tree` chose), summarising the branch left when
    /// `summarize`.
    pub(crate) fn navigate_tree(&mut self, id: String, summarize: bool) {
        let opts = filo_core::agent_session::NavigateOptions {
            summarize,
            ..Default::default()
        };
        if summarize {
            self.state.status = Some("Summarizing the branch…".into());
        }
        let tx = self.tx.clone();
        let session = self.session.clone();
        tokio::spawn(async move {
            match session.navigate_tree(&id, opts).await {
                Ok(r) => {
                    let _ = tx.send(AppEvent::Reload);
                    if let Some(t) = r.editor_text {
                        let _ = tx.send(AppEvent::EditorText(t));
                    }
                }
                Err(e) => {
                    let _ = tx.send(AppEvent::Error(filo_core::error_chain(&e)));
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_arguments_and_safe_copies() {
        assert_eq!(path_argument(" a.jsonl extra").as_deref(), Some("a.jsonl"));
        assert_eq!(
            path_argument("\"my file.jsonl\" x").as_deref(),
            Some("my file.jsonl")
        );
        assert_eq!(path_argument("'open"), None);
        assert_eq!(path_argument("  "), None);

        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("s.jsonl");
        let head = r#"{"type":"session","version":3,"id":"x","timestamp":"t","cwd":"/p"}"#;
        std::fs::write(&src, format!("{head}\n")).unwrap();
        let dir = tmp.path().join("sessions");
        let dest = import_copy(&src, &dir).unwrap();
        assert_eq!(dest, dir.join("s.jsonl"));
        assert_eq!(import_copy(&src, &dir).unwrap(), dest, "same content: fine");
        std::fs::write(&dest, format!("{head}\n{{}}\n")).unwrap();
        let e = import_copy(&src, &dir).unwrap_err();
        assert!(e.contains("already exists"), "{e}");
        assert_eq!(
            std::fs::read_to_string(&dest).unwrap(),
            format!("{head}\n{{}}\n"),
            "the other file is untouched"
        );
        let not = tmp.path().join("n.jsonl");
        std::fs::write(&not, "hello\n").unwrap();
        assert!(
            import_copy(&not, &dir)
                .unwrap_err()
                .contains("not a session file")
        );
        assert!(
            import_copy(&tmp.path().join("gone.jsonl"), &dir)
                .unwrap_err()
                .contains("File not found")
        );
    }
}
