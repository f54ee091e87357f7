//! Changing what the session runs with: model, thinking level, the session file itself; and stats.

use std::path::Path;

use filo_ai::{Message, Model, ThinkingLevel};
use filo_session::{EntryKind, SessionManager, SessionMessage};
use serde::Serialize;

use super::{AgentSession, clamp_level, lock};
use crate::CoreError;
use crate::convert::to_agent;
use crate::extension::SessionChange;

/// Token and cost totals of a session (pi's `getSessionStats`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionStats {
    pub session_file: Option<String>,
    pub session_id: String,
    pub user_messages: usize,
    pub assistant_messages: usize,
    pub tool_calls: usize,
    pub tool_results: usize,
    pub total_messages: usize,
    pub tokens: TokenStats,
    pub cost: f64,
    /// Session-file writes that failed (each also reported as a warning event).
    pub persist_errors: u64,
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
            Some(m) if m.reasoning => {
                let mut v = vec![
                    ThinkingLevel::Off,
                    ThinkingLevel::Minimal,
                    ThinkingLevel::Low,
                    ThinkingLevel::Medium,
                    ThinkingLevel::High,
                ];
                if clamp_level(Some(&m), ThinkingLevel::Xhigh) == ThinkingLevel::Xhigh {
                    v.push(ThinkingLevel::Xhigh);
                }
                v
            }
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
        {
            let mut s = lock(&self.inner.settings);
            s.set("defaultProvider", model.provider.clone().into());
            s.set("defaultModel", model.id.clone().into());
            let _ = s.save();
        }
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
        }
        let reasoning = self.model().is_some_and(|m| m.reasoning);
        if reasoning || chosen != ThinkingLevel::Off {
            let mut s = lock(&self.inner.settings);
            s.set("defaultThinkingLevel", chosen.as_str().into());
            let _ = s.save();
        }
    }

    /// Name the session.
    pub fn set_session_name(&self, name: &str) {
        self.append_entry(EntryKind::SessionInfo {
            name: name.trim().to_string(),
        });
    }

    /// Start a new session in the same directory.
    pub async fn new_session(&self) -> Result<(), CoreError> {
        self.abort().await;
        self.inner.agent.reset();
        lock(&self.inner.store).new_session(None, None);
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
        self.abort().await;
        let cwd = self.inner.cwd.to_string_lossy().into_owned();
        let manager =
            SessionManager::open(path, &cwd).map_err(|e| CoreError::Config(e.to_string()))?;
        let ctx = manager.build_context();
        let has_level = manager
            .branch_path(None)
            .iter()
            .any(|e| matches!(e.kind, EntryKind::ThinkingLevelChange { .. }));
        *lock(&self.inner.store) = manager;
        self.inner
            .agent
            .replace_messages(ctx.messages.iter().map(to_agent).collect());
        self.inner.agent.set_session_id(Some(self.session_id()));
        if let Some(r) = ctx.model {
            let found = self
                .inner
                .models
                .iter()
                .find(|m| m.provider == r.provider && m.id == r.model_id)
                .cloned();
            if let Some(m) = found.filter(|m| (self.inner.api_key)(&m.provider).is_some()) {
                self.inner.agent.set_model(m);
            }
        }
        let level = if has_level {
            ThinkingLevel::parse(&ctx.thinking_level).unwrap_or(ThinkingLevel::Off)
        } else {
            lock(&self.inner.settings)
                .get_str("defaultThinkingLevel")
                .and_then(ThinkingLevel::parse)
                .unwrap_or(ThinkingLevel::Medium)
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
                    .map_err(|e| CoreError::Refused(e.to_string()))?,
            }
        }
        self.inner.agent.set_session_id(Some(self.session_id()));
        self.reload_messages_from_session();
        for ext in &self.inner.extensions {
            ext.session_changed(SessionChange::Fork, &self.info());
        }
        Ok(text)
    }

    /// Totals over the session's entries.
    pub fn stats(&self) -> SessionStats {
        let store = lock(&self.inner.store);
        let mut s = SessionStats {
            session_file: store
                .session_file()
                .map(|p| p.to_string_lossy().into_owned()),
            session_id: store.session_id().to_string(),
            persist_errors: lock(&self.inner.state).persist_errors,
            ..SessionStats::default()
        };
        for e in store.entries() {
            let Some(m) = e.message() else { continue };
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
        s.tokens.total =
            s.tokens.input + s.tokens.output + s.tokens.cache_read + s.tokens.cache_write;
        s
    }

    /// Empty both queues; returns how many steering and follow-up messages were dropped.
    pub fn clear_queue(&self) {
        self.inner.agent.clear_all_queues();
    }
}
