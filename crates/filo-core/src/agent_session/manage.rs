//! Changing what the session runs with: model, thinking level, the session file itself; and stats.

use std::path::Path;

use filo_agent::{AgentEvent, QueueMode};
use filo_ai::{ContentBlock, Message, Model, ThinkingLevel, UserContent};
use filo_session::{EntryKind, SessionManager, SessionMessage};
use serde::Serialize;

use super::{AgentSession, SessionEvent, clamp_level, lock};
use crate::CoreError;
use crate::convert::into_agent;
use crate::extension::SessionChange;
use crate::resources::Source;

/// Token and cost totals of a session (pi's `getSessionStats`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionStats {
    /// Absent for an in-memory session (`--no-session`), as in pi.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_file: Option<String>,
    pub session_id: String,
    pub user_messages: usize,
    pub assistant_messages: usize,
    pub tool_calls: usize,
    pub tool_results: usize,
    pub total_messages: usize,
    pub tokens: TokenStats,
    pub cost: f64,
    /// How full the model's context window is (pi 0.73's `contextUsage`); absent without a
    /// model or a known window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_usage: Option<ContextUsage>,
    /// Session-file writes that failed (each also reported as a warning event).
    pub persist_errors: u64,
    /// Failures extensions absorbed (e.g. Playfilo DB writes), each also reported as a warning.
    pub extension_errors: u64,
}

/// pi's `getContextUsage()`: the estimated context tokens against the model's window. After a
/// compaction the count is unknown (`null`) until an assistant answered after it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextUsage {
    pub tokens: Option<u64>,
    pub context_window: u64,
    /// Percent as JavaScript prints it (`12.5`, `0`).
    pub percent: Option<serde_json::Number>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenStats {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub total: u64,
}

impl AgentSession {
    /// The thinking levels the current model supports.
    pub fn available_thinking_levels(&self) -> Vec<ThinkingLevel> {
        match self.model() {
            Some(m) if m.reasoning => ThinkingLevel::ALL
                .into_iter()
                .filter(|&level| clamp_level(Some(&m), level) == level)
                .collect(),
            _ => vec![ThinkingLevel::Off],
        }
    }

    /// Switch model: needs a key; recorded as `model_change`; saved as the default; thinking
    /// level re-clamped.
    pub fn set_model(&self, model: Model) -> Result<(), CoreError> {
        if (self.inner.api_key)(&model.provider).is_none() {
            return Err(CoreError::Refused(format!(
                "No API key for {}/{}",
                model.provider, model.id
            )));
        }
        self.inner.agent.set_model(model.clone());
        self.append_entry(EntryKind::ModelChange {
            provider: model.provider.clone(),
            model_id: model.id.clone(),
        });
        self.change_settings(|s| s.set_default_model(&model.provider, &model.id));
        let level = self.thinking_level();
        self.set_thinking_level(level);
        Ok(())
    }

    /// Set the thinking level (clamped to what the model supports); recorded when it changes.
    pub fn set_thinking_level(&self, level: ThinkingLevel) {
        let available = self.available_thinking_levels();
        let chosen = if available.contains(&level) {
            level
        } else {
            available
                .iter()
                .copied()
                .find(|l| *l >= level)
                .or_else(|| available.last().copied())
                .unwrap_or(ThinkingLevel::Off)
        };
        let changed = chosen != self.thinking_level();
        self.inner.agent.set_thinking_level(chosen);
        if changed {
            self.append_entry(EntryKind::ThinkingLevelChange {
                thinking_level: chosen.as_str().into(),
            });
            let reasoning = self.model().is_some_and(|m| m.reasoning);
            if reasoning || chosen != ThinkingLevel::Off {
                self.change_settings(|s| s.set_default_thinking_level(chosen));
            }
            self.emit(&SessionEvent::ThinkingLevelChanged {
                level: chosen.as_str(),
            });
        }
    }

    /// Name the session.
    pub fn set_session_name(&self, name: &str) {
        self.append_entry(EntryKind::SessionInfo {
            name: name.trim().to_string(),
        });
        self.emit(&SessionEvent::SessionInfoChanged {
            name: self.session_name(),
        });
    }

    /// Start a new session in the same directory.
    pub async fn new_session(&self) -> Result<(), CoreError> {
        self.new_session_with_parent(None).await
    }

    /// Start a new session whose header names `parent_session` (a session file path).
    pub async fn new_session_with_parent(
        &self,
        parent_session: Option<String>,
    ) -> Result<(), CoreError> {
        self.refuse_to_leave_unsaved()?;
        self.abort().await;
        self.inner.agent.reset();
        {
            let mut st = lock(&self.inner.state);
            st.pending_steer.clear();
            st.pending_follow_up.clear();
            st.pending_bash.clear();
        }
        lock(&self.inner.store).new_session(None, parent_session);
        {
            let sid = self.session_id();
            self.inner.agent.set_session_id(Some(sid));
        }
        let level = self.thinking_level();
        self.append_entry(EntryKind::ThinkingLevelChange {
            thinking_level: level.as_str().into(),
        });
        for ext in &self.inner.extensions {
            ext.session_changed(SessionChange::New, &self.info());
        }
        Ok(())
    }

    /// Open another session file and continue it.
    pub async fn switch_session(&self, path: &Path) -> Result<(), CoreError> {
        self.refuse_to_leave_unsaved()?;
        self.abort().await;
        let cwd = self.inner.cwd.to_string_lossy().into_owned();
        let mut manager = SessionManager::open(path, &cwd)?;
        let mut notices = super::persist::load_notices(&manager);
        for ext in &self.inner.extensions {
            notices.extend(ext.prepare_session(&mut manager));
        }
        notices.extend(super::persist::unsaved_notice(&manager));
        for notice in notices {
            self.emit(&super::SessionEvent::Warning { message: notice });
        }
        let ctx = manager.build_context();
        let has_level = manager
            .branch_path(None)
            .iter()
            .any(|e| matches!(e.kind, EntryKind::ThinkingLevelChange { .. }));
        *lock(&self.inner.store) = manager;
        self.inner
            .agent
            .replace_messages(ctx.messages.into_iter().map(into_agent).collect());
        self.inner.agent.set_session_id(Some(self.session_id()));
        if let Some(r) = ctx.model {
            let found = self.inner.models.find(&r.provider, &r.model_id).cloned();
            if let Some(m) = found.filter(|m| (self.inner.api_key)(&m.provider).is_some()) {
                self.inner.agent.set_model(m);
            }
        }
        let level = if has_level {
            ThinkingLevel::parse(&ctx.thinking_level).unwrap_or(ThinkingLevel::Off)
        } else {
            lock(&self.inner.settings).values().default_thinking_level()
        };
        let clamped = clamp_level(self.model().as_ref(), level);
        self.inner.agent.set_thinking_level(clamped);
        if !has_level {
            self.append_entry(EntryKind::ThinkingLevelChange {
                thinking_level: clamped.as_str().into(),
            });
        }
        for ext in &self.inner.extensions {
            ext.session_changed(SessionChange::Resume, &self.info());
        }
        Ok(())
    }

    /// Fork at a user message: a new session holding everything before it. Returns the user's
    /// text (for the editor).
    pub async fn fork(&self, entry_id: &str) -> Result<String, CoreError> {
        self.refuse_to_leave_unsaved()?;
        self.abort().await;
        let (text, parent) = {
            let store = lock(&self.inner.store);
            let entry = store
                .entry(entry_id)
                .ok_or_else(|| CoreError::Refused("Invalid entry ID for forking".into()))?;
            let Some(SessionMessage::Llm(Message::User(u))) = entry.message() else {
                return Err(CoreError::Refused("Invalid entry ID for forking".into()));
            };
            let text = match &u.content {
                filo_ai::UserContent::Text(t) => t.clone(),
                filo_ai::UserContent::Blocks(b) => b
                    .iter()
                    .filter_map(filo_ai::ContentBlock::as_text)
                    .collect(),
            };
            (text, entry.parent_id.clone())
        };
        {
            let mut store = lock(&self.inner.store);
            match parent {
                None => {
                    let old = store
                        .session_file()
                        .map(|p| p.to_string_lossy().into_owned());
                    store.new_session(None, old);
                }
                Some(p) => store
                    .create_branched_session(&p)
                    .map_err(CoreError::Session)?,
            }
        }
        self.inner.agent.set_session_id(Some(self.session_id()));
        self.reload_messages_from_session();
        for ext in &self.inner.extensions {
            ext.session_changed(SessionChange::Fork, &self.info());
        }
        Ok(text)
    }

    /// Duplicate the current branch, up to and including the leaf, into a new session and
    /// continue there (pi 0.73's `/clone` and RPC `clone`).
    pub async fn clone_session(&self) -> Result<(), CoreError> {
        self.refuse_to_leave_unsaved()?;
        self.abort().await;
        {
            let mut store = lock(&self.inner.store);
            let leaf = store.leaf_id().map(str::to_string).ok_or_else(|| {
                CoreError::Refused("Cannot clone session: no current entry selected".into())
            })?;
            store
                .create_branched_session(&leaf)
                .map_err(CoreError::Session)?;
        }
        self.inner.agent.set_session_id(Some(self.session_id()));
        self.reload_messages_from_session();
        for ext in &self.inner.extensions {
            ext.session_changed(SessionChange::Fork, &self.info());
        }
        Ok(())
    }

    /// pi 1.6's `getSessionStats`: totals over every message entry of the session, the history a
    /// compaction summarised and abandoned branches included (what was billed), and the context
    /// usage now.
    pub fn stats(&self) -> SessionStats {
        let mut s = SessionStats {
            session_file: self
                .session_file()
                .map(|p| p.to_string_lossy().into_owned()),
            session_id: self.session_id(),
            persist_errors: lock(&self.inner.state).persist_errors,
            extension_errors: self.inner.extensions.iter().map(|e| e.error_count()).sum(),
            ..SessionStats::default()
        };
        {
            let store = lock(&self.inner.store);
            for entry in store.entries() {
                let filo_session::EntryKind::Message(m) = &entry.kind else {
                    continue;
                };
                s.total_messages += 1;
                match m {
                    SessionMessage::Llm(Message::User(_)) => s.user_messages += 1,
                    SessionMessage::Llm(Message::Assistant(a)) => {
                        s.assistant_messages += 1;
                        s.tool_calls += a.tool_calls().count();
                        s.tokens.input += a.usage.input;
                        s.tokens.output += a.usage.output;
                        s.tokens.cache_read += a.usage.cache_read;
                        s.tokens.cache_write += a.usage.cache_write;
                        s.cost += a.usage.cost.total;
                    }
                    SessionMessage::Llm(Message::ToolResult(_)) => s.tool_results += 1,
                    _ => {}
                }
            }
        }
        s.tokens.total =
            s.tokens.input + s.tokens.output + s.tokens.cache_read + s.tokens.cache_write;
        s.context_usage = self.context_usage();
        s
    }

    /// pi's `getContextUsage()`.
    pub fn context_usage(&self) -> Option<ContextUsage> {
        let context_window = self.model()?.context_window;
        if context_window == 0 {
            return None;
        }
        if !self.usage_known_since_compaction() {
            return Some(ContextUsage {
                tokens: None,
                context_window,
                percent: None,
            });
        }
        let messages: Vec<SessionMessage> = self
            .messages()
            .iter()
            .filter_map(crate::convert::to_session)
            .collect();
        let tokens = crate::compaction::estimate_context_tokens(&messages);
        let percent = tokens as f64 / context_window as f64 * 100.0;
        let percent = if percent.fract() == 0.0 && percent.abs() < 9.0e15 {
            Some(serde_json::Number::from(percent as i64))
        } else {
            serde_json::Number::from_f64(percent)
        };
        Some(ContextUsage {
            tokens: Some(tokens),
            context_window,
            percent,
        })
    }

    /// Whether, on the current branch, no compaction happened or the last assistant answer after
    /// the latest one (not aborted, not an error) reported a context size.
    fn usage_known_since_compaction(&self) -> bool {
        let manager = self.session_manager();
        let branch = manager.branch_path(None);
        let Some(compaction) = branch
            .iter()
            .rposition(|e| matches!(e.kind, EntryKind::Compaction { .. }))
        else {
            return true;
        };
        branch[compaction + 1..]
            .iter()
            .rev()
            .find_map(|e| match &e.kind {
                EntryKind::Message(SessionMessage::Llm(Message::Assistant(a)))
                    if !matches!(
                        a.stop_reason,
                        filo_ai::StopReason::Aborted | filo_ai::StopReason::Error
                    ) =>
                {
                    Some(crate::compaction::calculate_context_tokens(&a.usage) > 0)
                }
                _ => None,
            })
            .unwrap_or(false)
    }
}

/// One entry of the RPC `get_commands` list (pi 0.73's shape).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandInfo {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `extension`, `prompt` or `skill`.
    pub source: &'static str,
    pub source_info: SourceInfo,
}

/// Where a resource came from (pi 0.73's `sourceInfo`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceInfo {
    /// The file, or `<sdk:name>` for something registered in code.
    pub path: String,
    /// `auto` (found in a resource directory), `cli` (a command-line path) or `sdk`.
    pub source: &'static str,
    /// `user`, `project` or `temporary`.
    pub scope: &'static str,
    /// Always `top-level` (filo installs no packages).
    pub origin: &'static str,
    /// The directory auto-discovered resources were found under (the agent directory or
    /// `<cwd>/.pi`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_dir: Option<String>,
}

/// A user message the session can be forked at.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ForkMessage {
    pub entry_id: String,
    pub text: String,
}

/// What [`AgentSession::cycle_model`] switched to.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CycleModelResult {
    pub model: Model,
    pub thinking_level: ThinkingLevel,
    /// Whether the cycle went through scoped models (`--models`).
    pub is_scoped: bool,
}

impl AgentSession {
    /// The `sourceInfo` of a prompt template or skill file.
    fn source_info(&self, path: &Path, source: Source) -> SourceInfo {
        let shown = |p: &Path| p.to_string_lossy().into_owned();
        let resources = lock(&self.inner.resources);
        let user_dir = match &resources.pi_agent_dir {
            Some(pi) if path.starts_with(pi) => Some(pi),
            _ => resources.agent_dir.as_ref(),
        };
        let (source, scope, base_dir) = match source {
            Source::User => ("auto", "user", user_dir.map(|d| shown(d))),
            Source::Project => ("auto", "project", Some(shown(&self.inner.cwd.join(".pi")))),
            Source::Path => ("cli", "temporary", None),
        };
        SourceInfo {
            path: shown(path),
            source,
            scope,
            origin: "top-level",
            base_dir,
        }
    }
}

fn queue_mode_name(m: QueueMode) -> &'static str {
    match m {
        QueueMode::All => "all",
        QueueMode::OneAtATime => "one-at-a-time",
    }
}

/// The text of a user message: the string, or its text blocks joined.
pub(super) fn user_text(content: &UserContent) -> String {
    match content {
        UserContent::Text(t) => t.clone(),
        UserContent::Blocks(b) => b.iter().filter_map(ContentBlock::as_text).collect(),
    }
}

impl AgentSession {
    /// Models that have an API key (pi's `modelRegistry.getAvailable()`).
    pub fn available_models(&self) -> Vec<Model> {
        self.inner
            .models
            .all()
            .iter()
            .filter(|m| (self.inner.api_key)(&m.provider).is_some())
            .cloned()
            .collect()
    }

    /// The models ctrl+p cycles through (pi's `scopedModels`); empty when not scoped.
    pub fn scoped_models(&self) -> Vec<crate::model_resolve::ScopedModel> {
        lock(&self.inner.scoped_models).clone()
    }

    /// Scopes model cycling to `models` (pi's `setScopedModels`; empty: every model with a key).
    pub fn set_scoped_models(&self, models: Vec<crate::model_resolve::ScopedModel>) {
        *lock(&self.inner.scoped_models) = models;
    }

    /// Switch to the next (or previous) model: of the scope when there is one (those with a
    /// key), else of the available ones; `None` when there is at most one.
    pub fn cycle_model(&self, forward: bool) -> Result<Option<CycleModelResult>, CoreError> {
        let scoped: Vec<crate::model_resolve::ScopedModel> = self
            .scoped_models()
            .into_iter()
            .filter(|s| (self.inner.api_key)(&s.model.provider).is_some())
            .collect();
        let is_scoped = !self.scoped_models().is_empty();
        let models: Vec<(Model, Option<ThinkingLevel>)> = if is_scoped {
            scoped.into_iter().map(|s| (s.model, s.thinking)).collect()
        } else {
            self.available_models()
                .into_iter()
                .map(|m| (m, None))
                .collect()
        };
        if models.len() <= 1 {
            return Ok(None);
        }
        let current = self.model();
        let i = models
            .iter()
            .position(|(m, _)| current.as_ref().is_some_and(|c| c.same_as(m)))
            .unwrap_or(0);
        let n = models.len();
        let (next, level) = models[if forward {
            (i + 1) % n
        } else {
            (i + n - 1) % n
        }]
        .clone();
        let level = level.unwrap_or_else(|| self.thinking_level());
        self.set_model(next.clone())?;
        // A scoped model's own level wins; otherwise the session's, clamped to the new model.
        self.set_thinking_level(level);
        Ok(Some(CycleModelResult {
            model: next,
            thinking_level: self.thinking_level(),
            is_scoped,
        }))
    }

    /// Move to the next thinking level the model supports; `None` for a model that cannot think.
    pub fn cycle_thinking_level(&self) -> Option<ThinkingLevel> {
        if !self.model().is_some_and(|m| m.reasoning) {
            return None;
        }
        let levels = self.available_thinking_levels();
        let current = self.thinking_level();
        let i = levels.iter().position(|l| *l == current).unwrap_or(0);
        let next = levels[(i + 1) % levels.len()];
        self.set_thinking_level(next);
        Some(next)
    }

    /// How queued steering messages are delivered; saved as `steeringMode`.
    pub fn set_steering_mode(&self, mode: QueueMode) {
        self.inner.agent.set_steering_mode(mode);
        self.change_settings(|s| s.set_steering_mode(mode));
    }

    /// How queued follow-up messages are delivered; saved as `followUpMode`.
    pub fn set_follow_up_mode(&self, mode: QueueMode) {
        self.inner.agent.set_follow_up_mode(mode);
        self.change_settings(|s| s.set_follow_up_mode(mode));
    }

    /// `"all"` or `"one-at-a-time"`.
    pub fn steering_mode(&self) -> &'static str {
        queue_mode_name(self.inner.agent.steering_mode())
    }

    /// `"all"` or `"one-at-a-time"`.
    pub fn follow_up_mode(&self) -> &'static str {
        queue_mode_name(self.inner.agent.follow_up_mode())
    }

    /// Turn automatic compaction on or off (`compaction.enabled`, saved).
    pub fn set_auto_compaction_enabled(&self, enabled: bool) {
        self.change_settings(|s| s.set_compaction_enabled(enabled));
    }

    pub fn auto_compaction_enabled(&self) -> bool {
        lock(&self.inner.settings).values().compaction().enabled
    }

    /// Turn automatic retry on or off (`retry.enabled`, saved).
    pub fn set_auto_retry_enabled(&self, enabled: bool) {
        self.change_settings(|s| s.set_retry_enabled(enabled));
    }

    pub fn auto_retry_enabled(&self) -> bool {
        lock(&self.inner.settings).values().retry_enabled()
    }

    /// Cancel the wait before a pending automatic retry.
    pub fn abort_retry(&self) {
        if let Some(c) = &lock(&self.inner.state).retry_cancel {
            c.cancel();
        }
    }

    /// Whether the session waits to retry a failed request.
    pub fn is_retrying(&self) -> bool {
        lock(&self.inner.state).retry_cancel.is_some()
    }

    /// Whether a compaction (manual or automatic) is running.
    pub fn is_compacting(&self) -> bool {
        lock(&self.inner.state).compaction_cancel.is_some()
    }

    /// Queued steering and follow-up messages not delivered yet.
    pub fn pending_message_count(&self) -> usize {
        let st = lock(&self.inner.state);
        st.pending_steer.len() + st.pending_follow_up.len()
    }

    /// Every user message of the session file, in file order (pi's `getUserMessagesForForking`).
    pub fn fork_messages(&self) -> Vec<ForkMessage> {
        let store = lock(&self.inner.store);
        store
            .entries()
            .filter_map(|e| match e.message() {
                Some(SessionMessage::Llm(Message::User(u))) => Some(ForkMessage {
                    entry_id: e.id.clone(),
                    text: user_text(&u.content),
                }),
                _ => None,
            })
            .filter(|f| !f.text.is_empty())
            .collect()
    }

    /// Extension commands, prompt templates and skills (`skill:<name>`), in that order.
    pub fn commands(&self) -> Vec<CommandInfo> {
        let mut out = Vec::new();
        for ext in &self.inner.extensions {
            out.extend(ext.commands().into_iter().map(|c| CommandInfo {
                source_info: SourceInfo {
                    path: format!("<sdk:{}>", c.name),
                    source: "sdk",
                    scope: "temporary",
                    origin: "top-level",
                    base_dir: None,
                },
                name: c.name,
                description: Some(c.description).filter(|d| !d.is_empty()),
                source: "extension",
            }));
        }
        let r = lock(&self.inner.resources).clone();
        out.extend(r.templates.iter().map(|t| CommandInfo {
            name: t.name.clone(),
            description: Some(t.description.clone()),
            source: "prompt",
            source_info: self.source_info(&t.path, t.source),
        }));
        out.extend(r.skills.iter().map(|s| CommandInfo {
            name: format!("skill:{}", s.name),
            description: Some(s.description.clone()),
            source: "skill",
            source_info: self.source_info(&s.file_path, s.source),
        }));
        out
    }

    /// A user message started: it is no longer pending (pi removes the first matching text from
    /// the steering list, else from the follow-up list).
    pub(super) fn track_delivered(&self, ev: &AgentEvent) {
        let AgentEvent::MessageStart { message } = ev else {
            return;
        };
        let Some(Message::User(u)) = message.as_llm() else {
            return;
        };
        let text = user_text(&u.content);
        let removed = {
            let mut st = lock(&self.inner.state);
            if let Some(i) = st.pending_steer.iter().position(|t| *t == text) {
                st.pending_steer.remove(i);
                true
            } else if let Some(i) = st.pending_follow_up.iter().position(|t| *t == text) {
                st.pending_follow_up.remove(i);
                true
            } else {
                false
            }
        };
        if removed {
            self.emit_queue_update();
        }
    }

    /// pi's `queue_update`: both queues as they are now.
    pub(super) fn emit_queue_update(&self) {
        let (steering, follow_up) = {
            let st = lock(&self.inner.state);
            (st.pending_steer.clone(), st.pending_follow_up.clone())
        };
        self.emit(&SessionEvent::QueueUpdate {
            steering,
            follow_up,
        });
    }

    /// Change settings and write them; a failed write is shown to the user as a warning (the
    /// change stays in effect and is written with the next successful save).
    /// Turn `images.blockImages` on or off (saved); the next request to the model follows it.
    pub fn set_block_images(&self, on: bool) {
        self.change_settings(|s| s.set_nested("images", "blockImages", on.into()));
    }

    pub fn block_images(&self) -> bool {
        self.inner
            .block_images
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Replace the settings with ones read again from disk (`/reload`).
    pub fn replace_settings(&self, settings: crate::Settings) {
        *lock(&self.inner.settings) = settings;
        self.sync_settings();
    }

    /// Keep what the session caches from the settings in step with them.
    fn sync_settings(&self) {
        let blocked = lock(&self.inner.settings).values().block_images();
        self.inner
            .block_images
            .store(blocked, std::sync::atomic::Ordering::Relaxed);
    }

    fn change_settings(&self, change: impl FnOnce(&mut crate::Settings)) {
        let result = {
            let mut s = lock(&self.inner.settings);
            change(&mut s);
            s.save()
        };
        self.sync_settings();
        if let Err(e) = result {
            self.emit(&super::SessionEvent::Warning {
                message: format!("Settings not saved: {}", crate::error_chain(&e)),
            });
        }
    }
}

impl AgentSession {
    /// End the session: abort any work and tell extensions (pi's `session_shutdown`), which
    /// flush what they buffer.
    pub async fn shutdown(&self) {
        self.abort().await;
        let info = self.info();
        for ext in &self.inner.extensions {
            ext.session_changed(SessionChange::Shutdown, &info);
        }
    }
}
