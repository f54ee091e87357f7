//! Session operations shared by the WebSocket methods and the HTTP routes: resolving a key,
//! history, listing, reset, patch.

use std::sync::Arc;

use filo_embed::session_key::{agent_id_from_session_key, normalize_agent_id, to_store_key};
use filo_embed::session_store::SessionEntry;
use filo_session::SessionManager;
use serde_json::{Value, json};

use crate::core::Core;
use crate::frames;

/// A request the gateway refuses (`INVALID_REQUEST` on the WebSocket, 400/404 over HTTP).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Unavailable(String),
    #[error("{0}")]
    Internal(String),
}

/// Longest session key accepted.
const MAX_KEY_LEN: usize = 512;

/// Checks a client's session key: no path separators, no `..`, no control characters.
pub fn validate_key(raw: &str) -> Result<&str, ApiError> {
    let k = raw.trim();
    if k.is_empty() {
        return Err(ApiError::Invalid("invalid session key: empty".into()));
    }
    if k.chars().count() > MAX_KEY_LEN {
        return Err(ApiError::Invalid(format!(
            "invalid session key: longer than {MAX_KEY_LEN} characters"
        )));
    }
    if k.contains('/') || k.contains('\\') || k.contains("..") || k.chars().any(char::is_control) {
        return Err(ApiError::Invalid(
            "invalid session key: it must not contain '/', '\\', '..' or control characters".into(),
        ));
    }
    Ok(k)
}

/// The store key and agent of a request: `sessionKey`, else `agent:<agent>:explicit:<sessionId>`,
/// else the agent's main key.
pub fn resolve_key(
    core: &Core,
    session_key: Option<&str>,
    agent_id: Option<&str>,
    session_id: Option<&str>,
) -> Result<(String, String), ApiError> {
    let agent = agent_id
        .filter(|a| !a.trim().is_empty())
        .map(normalize_agent_id)
        .unwrap_or_else(|| core.config.default_agent.clone());
    let key = match (session_key.filter(|k| !k.trim().is_empty()), session_id) {
        (Some(k), _) => to_store_key(&agent, Some(validate_key(k)?), None),
        (None, Some(id)) if !id.trim().is_empty() => {
            filo_embed::paths::validate_session_id(id.trim())
                .map_err(|e| ApiError::Invalid(e.to_string()))?;
            format!("agent:{agent}:explicit:{}", id.trim().to_lowercase())
        }
        _ => to_store_key(&agent, None, None),
    };
    let agent = agent_id_from_session_key(&key);
    Ok((key, agent))
}

/// The stored entry of `key`, if there is one.
pub async fn entry(core: &Arc<Core>, key: &str) -> Result<Option<SessionEntry>, ApiError> {
    core.stores
        .agent(&agent_id_from_session_key(key))
        .get(key)
        .await
        .map_err(ApiError::Internal)
}

/// Changes `key`'s entry in the agent's store and waits until it is on disk.
async fn write_entry(
    core: &Arc<Core>,
    agent: &str,
    key: &str,
    change: impl FnOnce(&mut filo_embed::session_store::SessionStore, &str) -> SessionEntry
    + Send
    + 'static,
) -> Result<SessionEntry, ApiError> {
    let store = core.stores.agent(agent);
    let k = key.to_owned();
    let (entry, ticket) = store
        .update(key, move |st| change(st, &k))
        .await
        .map_err(ApiError::Internal)?;
    store.durable(ticket).await.map_err(ApiError::Internal)?;
    Ok(entry)
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| Err(ApiError::Internal(format!("task failed: {e}"))))
}

/// `chat.history`: the last `limit` user/assistant messages of the key's current branch.
/// With several hosts the entry and transcript come from the shared store, so a host that never
/// served the session shows its history too.
pub async fn history(core: &Arc<Core>, key: &str, limit: usize) -> Result<Value, ApiError> {
    let agent = agent_id_from_session_key(key);
    let mut entry = entry(core, key).await?;
    let mut shared_lines = None;
    if let Some(shared) = &core.shared {
        if let Some(e) = shared
            .load_entry(&agent, key)
            .await
            .map_err(ApiError::Internal)?
        {
            entry = Some(e);
        }
        if let Some(e) = &entry {
            let lines = shared
                .transcript(&e.session_id)
                .await
                .map_err(ApiError::Internal)?;
            shared_lines = Some(lines);
        }
    }
    let (messages, total) = match &entry {
        None => (Vec::new(), 0),
        Some(e) => {
            let path = match shared_lines {
                // Read through a private copy: the session's own local copy belongs to its lane.
                Some(lines) => {
                    let dir = core.embedder.paths().state_dir.join("tmp");
                    let copy = dir.join(format!("history-{}.jsonl", uuid::Uuid::new_v4()));
                    blocking(move || {
                        std::fs::create_dir_all(&dir)
                            .map_err(|e| ApiError::Internal(format!("{}: {e}", dir.display())))?;
                        let mut text = lines.join("\n");
                        text.push('\n');
                        std::fs::write(&copy, text)
                            .map_err(|e| ApiError::Internal(format!("{}: {e}", copy.display())))?;
                        Ok(TempCopy(copy))
                    })
                    .await
                    .map(Source::Copy)?
                }
                None => Source::Local(
                    core.stores
                        .transcript_path(&agent, key, e)
                        .map_err(ApiError::Internal)?,
                ),
            };
            blocking(move || {
                let path = path.path();
                if !path.exists() {
                    return Ok((Vec::new(), 0));
                }
                let m = SessionManager::open_read_only(path)
                    .map_err(|e| ApiError::Internal(e.to_string()))?;
                let all = frames::history_messages(&m.build_context().messages);
                let total = all.len();
                let skip = total.saturating_sub(limit);
                Ok((all.into_iter().skip(skip).collect::<Vec<_>>(), total))
            })
            .await?
        }
    };
    let active = core.active_run(key);
    Ok(json!({
        "sessionKey": key,
        "sessionId": entry.as_ref().map(|e| e.session_id.clone()),
        "messages": messages,
        "hasMore": total > messages.len(),
        "totalMessages": total,
        "defaults": defaults(core, entry.as_ref()),
        "sessionInfo": {"key": key, "agentId": agent, "kind": "direct",
            "hasActiveRun": active.is_some(), "activeRunIds": active.into_iter().collect::<Vec<_>>()},
    }))
}

/// A private copy of a shared transcript, removed when dropped.
struct TempCopy(std::path::PathBuf);

impl Drop for TempCopy {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Where `chat.history` reads a transcript.
enum Source {
    Local(std::path::PathBuf),
    Copy(TempCopy),
}

impl Source {
    fn path(&self) -> &std::path::Path {
        match self {
            Source::Local(p) => p,
            Source::Copy(c) => &c.0,
        }
    }
}

/// The model a session shows: its last model, else the configured primary.
pub fn defaults(core: &Core, entry: Option<&SessionEntry>) -> Value {
    let config = core.embedder.config();
    let primary = config.defaults.model.primary.clone();
    let (cfg_provider, cfg_model) = match primary.as_deref().and_then(|p| p.split_once('/')) {
        Some((p, m)) => (Some(p.to_owned()), Some(m.to_owned())),
        None => (None, primary),
    };
    let provider = entry
        .and_then(|e| e.model_provider.clone())
        .or(cfg_provider);
    let model = entry.and_then(|e| e.model.clone()).or(cfg_model);
    frames::defaults(
        provider.as_deref(),
        model.as_deref(),
        config
            .defaults
            .context_tokens
            .unwrap_or(filo_embed::config::DEFAULT_CONTEXT_TOKENS),
    )
}

/// `sessions.list`: the agent's entries, most recently updated first.
pub async fn list(core: &Arc<Core>, agent: &str, limit: Option<usize>) -> Result<Value, ApiError> {
    let s = core.stores.agent(agent);
    let path = s.path().display().to_string();
    let loaded = s
        .read(|st| st.entries.clone())
        .await
        .map_err(ApiError::Internal)?;
    let mut rows: Vec<(&String, &SessionEntry)> = loaded.iter().collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.1.updated_at));
    let rows: Vec<Value> = rows
        .into_iter()
        .take(limit.unwrap_or(usize::MAX))
        .map(|(k, e)| frames::session_row(k, agent, e, core.active_run(k).as_deref()))
        .collect();
    Ok(json!({
        "ts": filo_ai::client::now_ms(), "path": path, "count": rows.len(), "sessions": rows,
        "defaults": defaults(core, None),
    }))
}

/// Entries `health` lists under `recent`.
const HEALTH_RECENT: usize = 5;

/// The `sessions` block of `health` (OpenClaw's HealthSessionSummary): the agent's store, how
/// many entries it holds and the most recently updated ones (`age` in ms; `openclaw health`
/// prints "Session store (main): PATH (N entries)" and a line per recent key).
pub async fn health_summary(core: &Arc<Core>, agent: &str) -> Result<Value, ApiError> {
    let s = core.stores.agent(agent);
    let path = s.path().display().to_string();
    let now = filo_ai::client::now_ms();
    // Only the count and the newest few leave the store (no copy of every entry).
    let (count, recent) = s
        .read(move |st| {
            let mut rows: Vec<(&String, &SessionEntry)> = st.entries.iter().collect();
            rows.sort_by_key(|r| std::cmp::Reverse(r.1.updated_at));
            let recent: Vec<Value> = rows
                .iter()
                .take(HEALTH_RECENT)
                .map(|(k, e)| {
                    let updated = (e.updated_at > 0).then_some(e.updated_at);
                    json!({"key": k, "updatedAt": updated, "age": updated.map(|u| (now - u).max(0))})
                })
                .collect();
            (st.entries.len(), recent)
        })
        .await
        .map_err(ApiError::Internal)?;
    Ok(json!({"path": path, "count": count, "recent": recent}))
}

/// `sessions.reset`: aborts the key's run, drops its queue, gives it a new session id (the old
/// transcript stays on disk) and tells subscribers.
pub async fn reset(core: &Arc<Core>, key: &str, reason: &str) -> Result<Value, ApiError> {
    core.abort(key, None);
    core.clear_queue(key);
    let agent = agent_id_from_session_key(key);
    let entry = write_entry(core, &agent, key, |st, k| {
        st.rotate(k, &filo_embed::clock::SystemClock).clone()
    })
    .await?;
    let change = json!({"sessionKey": key, "reason": reason, "sessionId": entry.session_id,
        "ts": filo_ai::client::now_ms()});
    core.hub.publish_session_change(
        key,
        &crate::hub::EventFrame::new("sessions.changed", &change),
    );
    Ok(json!({"ok": true, "key": key, "entry": frames::session_row(key, &agent, &entry, None)}))
}

/// `sessions.patch`: model, thinking level, queue settings and label into the entry (`null`
/// clears a field).
pub async fn patch(core: &Arc<Core>, key: &str, params: &Value) -> Result<Value, ApiError> {
    let agent = agent_id_from_session_key(key);
    let text = |name: &str| -> Result<Option<Option<String>>, ApiError> {
        match params.get(name) {
            None => Ok(None),
            Some(Value::Null) => Ok(Some(None)),
            Some(Value::String(s)) => Ok(Some(Some(s.clone()))),
            Some(other) => Err(ApiError::Invalid(format!(
                "{name}: expected a string, got {other}"
            ))),
        }
    };
    let model = text("model")?;
    let thinking = text("thinkingLevel")?.or(text("thinking")?);
    let queue_mode = text("queueMode")?;
    let label = text("label")?;
    if let Some(Some(t)) = &thinking
        && filo_ai::ThinkingLevel::parse(t).is_none()
    {
        return Err(ApiError::Invalid(format!(
            "thinkingLevel: unknown level {t:?}"
        )));
    }
    if let Some(Some(m)) = &queue_mode
        && filo_embed::queue::QueueMode::parse(m).is_none()
    {
        return Err(ApiError::Invalid(format!(
            "queueMode: {m:?} is not steer, followup, collect or interrupt"
        )));
    }
    let entry = write_entry(core, &agent, key, move |st, k| {
        let (e, _) = st.get_or_create(k, &filo_embed::clock::SystemClock);
        if let Some(m) = model {
            match m.as_deref().and_then(|m| m.split_once('/')) {
                Some((p, id)) => {
                    e.provider_override = Some(p.to_owned());
                    e.model_override = Some(id.to_owned());
                }
                None => {
                    e.provider_override = None;
                    e.model_override = m;
                }
            }
        }
        if let Some(t) = thinking {
            e.thinking_level = t;
        }
        if let Some(q) = queue_mode {
            e.queue_mode = q;
        }
        if let Some(l) = label {
            e.label = l;
        }
        e.updated_at = filo_ai::client::now_ms();
        e.clone()
    })
    .await?;
    Ok(
        json!({"ok": true, "key": key, "entry": frames::session_row(key, &agent, &entry, core.active_run(key).as_deref())}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_keys_are_refused() {
        for bad in ["", "  ", "../etc", "a/b", "a\\b", "x..y", "a\u{0}b", "a\nb"] {
            assert!(validate_key(bad).is_err(), "{bad:?}");
        }
        assert!(validate_key(&"k".repeat(600)).is_err());
        for good in [
            "main",
            "agent:main:tui1",
            "agent:main:telegram:group:-100123",
            "a.b",
        ] {
            assert!(validate_key(good).is_ok(), "{good:?}");
        }
    }
}
