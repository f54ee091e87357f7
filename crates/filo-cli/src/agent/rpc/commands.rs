//! The RPC commands (pi spec §6.4 table): decoding each command's fields, calling the session,
//! and shaping the response data.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use filo_agent::QueueMode;
use filo_ai::{ContentBlock, StopReason, ThinkingLevel};
use filo_core::{AgentSession, Disposition, PromptOptions, StreamingBehavior};
use serde_json::{Map, Value, json};
use tokio::task::JoinSet;

use super::Output;

/// Every command type RPC mode knows.
const COMMANDS: &[&str] = &[
    "prompt",
    "steer",
    "follow_up",
    "abort",
    "new_session",
    "get_state",
    "set_model",
    "cycle_model",
    "get_available_models",
    "set_thinking_level",
    "cycle_thinking_level",
    "set_steering_mode",
    "set_follow_up_mode",
    "compact",
    "set_auto_compaction",
    "set_auto_retry",
    "abort_retry",
    "bash",
    "abort_bash",
    "get_session_stats",
    "export_html",
    "switch_session",
    "fork",
    "clone",
    "get_fork_messages",
    "get_last_assistant_text",
    "set_session_name",
    "get_messages",
    "get_commands",
    "clear_queue",
    "get_available_thinking_levels",
    "get_entries",
    "get_tree",
];

/// Commands that wait (on the agent, a model call, a process or a session switch); they run as
/// tasks so other commands are served meanwhile.
const WAITING: &[&str] = &[
    "abort",
    "new_session",
    "compact",
    "bash",
    "switch_session",
    "fork",
    "clone",
];

/// How a command ended: data for a success response, or a failure pi reports explicitly
/// (`error(id, command, …)`). An `Err` is a failure while handling the command (pi's
/// `catch (commandError)`); it is answered the same way, with the command's id and type.
enum Reply {
    Data(Option<Value>),
    Fail(String),
}

type Handled = Result<Reply, String>;

fn ok() -> Handled {
    Ok(Reply::Data(None))
}

fn data(v: Value) -> Handled {
    Ok(Reply::Data(Some(v)))
}

/// Any serializable value as JSON (a macro: this crate does not name `serde` itself).
macro_rules! to_json {
    ($v:expr) => {
        serde_json::to_value($v).map_err(|e| e.to_string())
    };
}

fn str_field<'a>(v: &'a Value, key: &str) -> Result<&'a str, String> {
    v.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("\"{key}\" must be a string"))
}

fn opt_str<'a>(v: &'a Value, key: &str) -> Result<Option<&'a str>, String> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(format!("\"{key}\" must be a string")),
    }
}

fn bool_field(v: &Value, key: &str) -> Result<bool, String> {
    v.get(key)
        .and_then(Value::as_bool)
        .ok_or_else(|| format!("\"{key}\" must be a boolean"))
}

fn images(v: &Value) -> Result<Vec<ContentBlock>, String> {
    match v.get("images") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(list) => serde_json::from_value(list.clone()).map_err(|e| format!("images: {e}")),
    }
}

fn queue_mode(v: &Value) -> Result<QueueMode, String> {
    match str_field(v, "mode")? {
        "all" => Ok(QueueMode::All),
        "one-at-a-time" => Ok(QueueMode::OneAtATime),
        other => Err(format!(
            "Invalid mode \"{other}\" (expected \"all\" or \"one-at-a-time\")"
        )),
    }
}

/// The `message` of a steer / follow-up; an extension command cannot be queued.
fn queueable<'a>(s: &AgentSession, v: &'a Value) -> Result<&'a str, String> {
    let message = str_field(v, "message")?;
    if let Some(rest) = message.strip_prefix('/') {
        let name = rest.split_whitespace().next().unwrap_or_default();
        if s.commands()
            .iter()
            .any(|c| c.source == "extension" && c.name == name)
        {
            return Err(format!(
                "Extension command \"/{name}\" cannot be queued. Use prompt() or execute the command when not streaming."
            ));
        }
    }
    Ok(message)
}

/// Handle one input line.
pub(super) async fn handle(
    session: &AgentSession,
    out: &Output,
    tasks: &mut JoinSet<()>,
    text: &str,
) {
    let v: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return out.parse_error(&e.to_string()),
    };
    // The client's answer to an extension UI request is not a command and gets no response
    // (pi 0.73 resolves a pending request with it, or drops it); filo sends no such requests.
    if v.get("type").and_then(Value::as_str) == Some("extension_ui_response") {
        return;
    }
    let id = v.get("id").cloned();
    // pi 1.6 answers an unknown command with the request's id, so a client waiting on it ends.
    let kind = match v.get("type") {
        Some(Value::String(s)) => s.clone(),
        None => {
            return out.error(id, None, "Unknown command: undefined".into());
        }
        Some(other) => other.to_string(),
    };
    if !COMMANDS.contains(&kind.as_str()) {
        return out.error(id, Some(&kind), format!("Unknown command: {kind}"));
    }
    if kind == "prompt" {
        return prompt(session, out, tasks, id, &v).await;
    }
    if WAITING.contains(&kind.as_str()) {
        let (session, out) = (session.clone(), out.clone());
        start(tasks, async move {
            let result = run(&session, &kind, id.as_ref(), &v).await;
            respond(&out, id, &kind, result);
        })
        .await;
    } else {
        let result = run(session, &kind, id.as_ref(), &v).await;
        respond(out, id, &kind, result);
    }
}

fn respond(out: &Output, id: Option<Value>, kind: &str, result: Handled) {
    match result {
        Ok(Reply::Data(d)) => out.success(id, kind, d),
        Ok(Reply::Fail(e)) | Err(e) => out.error(id, Some(kind), e),
    }
}

/// `prompt` answers once: success with its `disposition` when the prompt passed its preflight (it
/// runs, was queued or was handled), otherwise the refusal, both with the command's id (pi 1.6).
/// A failure after the run started is reported by the run's own events, not by a second
/// response.
async fn prompt(
    session: &AgentSession,
    out: &Output,
    tasks: &mut JoinSet<()>,
    id: Option<Value>,
    v: &Value,
) {
    let parsed = (|| {
        let message = str_field(v, "message")?.to_string();
        let behavior = match opt_str(v, "streamingBehavior")? {
            None => None,
            Some("steer") => Some(StreamingBehavior::Steer),
            Some("followUp") => Some(StreamingBehavior::FollowUp),
            Some(other) => return Err(format!("Invalid streamingBehavior \"{other}\"")),
        };
        Ok((message, images(v)?, behavior))
    })();
    let (message, images, streaming_behavior) = match parsed {
        Ok(p) => p,
        Err(e) => return out.error(id, Some("prompt"), e),
    };
    let (session, out) = (session.clone(), out.clone());
    let accepted = Arc::new(AtomicBool::new(false));
    let preflight = {
        let (out, id, accepted) = (out.clone(), id.clone(), Arc::clone(&accepted));
        Arc::new(move |disposition: Option<Disposition>| {
            if let Some(d) = disposition {
                accepted.store(true, Ordering::SeqCst);
                out.success(
                    id.clone(),
                    "prompt",
                    Some(json!({"disposition": d.as_str()})),
                );
            }
        })
    };
    start(tasks, async move {
        let opts = PromptOptions {
            images,
            streaming_behavior,
            preflight: Some(preflight),
            ..PromptOptions::default()
        };
        if let Err(e) = session.prompt(&message, opts).await
            && !accepted.load(Ordering::SeqCst)
        {
            out.error(id, Some("prompt"), filo_core::error_chain(&e));
        }
    })
    .await;
}

/// Run `work` here until it first waits, then move it to a task: like a JavaScript async
/// handler, everything before its first wait (registering a bash run's cancel handle, starting
/// the agent) is done before the next command is read.
async fn start(tasks: &mut JoinSet<()>, work: impl Future<Output = ()> + Send + 'static) {
    let mut work = Box::pin(work);
    tokio::select! {
        biased;
        () = &mut work => {}
        () = std::future::ready(()) => {
            tasks.spawn(work);
        }
    }
}

/// A queued message's answer: filo has no input handlers that consume one, so it is queued.
fn queued() -> Handled {
    data(json!({"disposition": Disposition::Queued.as_str()}))
}

async fn run(s: &AgentSession, kind: &str, id: Option<&Value>, v: &Value) -> Handled {
    match kind {
        "steer" => {
            s.steer(queueable(s, v)?, images(v)?);
            queued()
        }
        "follow_up" => {
            s.follow_up(queueable(s, v)?, images(v)?);
            queued()
        }
        "clear_queue" => data(to_json!(&s.clear_queue())?),
        "abort" => {
            // pi 1.6 answers once the session is idle: after the chain's `agent_settled`.
            s.abort().await;
            s.wait_for_idle().await;
            ok()
        }
        "new_session" => {
            let parent = opt_str(v, "parentSession")?.map(str::to_string);
            s.new_session_with_parent(parent)
                .await
                .map_err(|e| filo_core::error_chain(&e))?;
            data(json!({"cancelled": false}))
        }
        "compact" => {
            let result = s
                .compact(opt_str(v, "customInstructions")?)
                .await
                .map_err(|e| filo_core::error_chain(&e))?;
            data(to_json!(&result)?)
        }
        "bash" => {
            let exclude = match v.get("excludeFromContext") {
                None | Some(Value::Null) => false,
                Some(_) => bool_field(v, "excludeFromContext")?,
            };
            let result = s
                .execute_bash_streaming(str_field(v, "command")?, exclude, id.cloned())
                .await
                .map_err(|e| filo_core::error_chain(&e))?;
            data(to_json!(&result)?)
        }
        "switch_session" => {
            let path = str_field(v, "sessionPath")?;
            s.switch_session(Path::new(path))
                .await
                .map_err(|e| filo_core::error_chain(&e))?;
            data(json!({"cancelled": false}))
        }
        "fork" => {
            let text = s
                .fork(str_field(v, "entryId")?)
                .await
                .map_err(|e| filo_core::error_chain(&e))?;
            data(json!({"text": text, "cancelled": false}))
        }
        "clone" => {
            s.clone_session()
                .await
                .map_err(|e| filo_core::error_chain(&e))?;
            data(json!({"cancelled": false}))
        }
        _ => settings_command(s, kind, v),
    }
}

/// Model, thinking, queue, compaction and retry settings.
fn settings_command(s: &AgentSession, kind: &str, v: &Value) -> Handled {
    match kind {
        "set_model" => {
            let provider = str_field(v, "provider")?;
            let model_id = str_field(v, "modelId")?;
            let found = s
                .available_models()
                .into_iter()
                .find(|m| m.provider == provider && m.id == model_id);
            let Some(model) = found else {
                return Ok(Reply::Fail(format!(
                    "Model not found: {provider}/{model_id}"
                )));
            };
            s.set_model(model.clone())
                .map_err(|e| filo_core::error_chain(&e))?;
            data(to_json!(&model)?)
        }
        "cycle_model" => match s
            .cycle_model(true)
            .map_err(|e| filo_core::error_chain(&e))?
        {
            Some(r) => data(to_json!(&r)?),
            None => data(Value::Null),
        },
        "get_available_models" => data(json!({"models": to_json!(&s.available_models())?})),
        "set_thinking_level" => {
            let level = str_field(v, "level")?;
            let parsed = ThinkingLevel::parse(level)
                .ok_or_else(|| format!("Invalid thinking level \"{level}\""))?;
            s.set_thinking_level(parsed);
            ok()
        }
        "get_available_thinking_levels" => {
            let levels: Vec<&str> = s
                .available_thinking_levels()
                .into_iter()
                .map(ThinkingLevel::as_str)
                .collect();
            data(json!({"levels": levels}))
        }
        "cycle_thinking_level" => match s.cycle_thinking_level() {
            Some(l) => data(json!({"level": l.as_str()})),
            None => data(Value::Null),
        },
        "set_steering_mode" => {
            s.set_steering_mode(queue_mode(v)?);
            ok()
        }
        "set_follow_up_mode" => {
            s.set_follow_up_mode(queue_mode(v)?);
            ok()
        }
        "set_auto_compaction" => {
            s.set_auto_compaction_enabled(bool_field(v, "enabled")?);
            ok()
        }
        "set_auto_retry" => {
            s.set_auto_retry_enabled(bool_field(v, "enabled")?);
            ok()
        }
        "abort_retry" => {
            s.abort_retry();
            ok()
        }
        "abort_bash" => {
            s.abort_bash();
            ok()
        }
        _ => session_query(s, kind, v),
    }
}

/// Reading the session, naming it and exporting it.
fn session_query(s: &AgentSession, kind: &str, v: &Value) -> Handled {
    match kind {
        "get_state" => data(state(s)?),
        "get_session_stats" => data(to_json!(&s.stats())?),
        "export_html" => {
            let path = s
                .export_to_html(opt_str(v, "outputPath")?.map(Path::new))
                .map_err(|e| filo_core::error_chain(&e))?;
            data(json!({"path": path.to_string_lossy()}))
        }
        "get_fork_messages" => data(json!({"messages": to_json!(&s.fork_messages())?})),
        "get_last_assistant_text" => {
            let mut m = Map::new();
            if let Some(t) = last_assistant_text(s) {
                m.insert("text".into(), t.into());
            }
            data(Value::Object(m))
        }
        "set_session_name" => {
            let name = str_field(v, "name")?.trim();
            if name.is_empty() {
                return Ok(Reply::Fail("Session name cannot be empty".into()));
            }
            s.set_session_name(name);
            ok()
        }
        "get_messages" => data(json!({"messages": to_json!(&s.messages())?})),
        "get_entries" => {
            let (entries, leaf) = s
                .entries_since(opt_str(v, "since")?)
                .map_err(|e| filo_core::error_chain(&e))?;
            data(json!({"entries": entries, "leafId": leaf}))
        }
        "get_tree" => {
            let (tree, leaf) = s.entry_tree();
            data(json!({"tree": tree, "leafId": leaf}))
        }
        "get_commands" => data(json!({"commands": to_json!(&s.commands())?})),
        other => Err(format!("Unknown command: {other}")),
    }
}

/// `get_state` data; absent values are omitted.
fn state(s: &AgentSession) -> Result<Value, String> {
    let mut m = Map::new();
    if let Some(model) = s.model() {
        m.insert("model".into(), to_json!(&model)?);
    }
    m.insert("thinkingLevel".into(), s.thinking_level().as_str().into());
    m.insert("isStreaming".into(), s.is_streaming().into());
    m.insert("isCompacting".into(), s.is_compacting().into());
    m.insert("steeringMode".into(), s.steering_mode().into());
    m.insert("followUpMode".into(), s.follow_up_mode().into());
    if let Some(f) = s.session_file() {
        m.insert("sessionFile".into(), f.to_string_lossy().into());
    }
    m.insert("sessionId".into(), s.session_id().into());
    if let Some(n) = s.session_name() {
        m.insert("sessionName".into(), n.into());
    }
    m.insert(
        "autoCompactionEnabled".into(),
        s.auto_compaction_enabled().into(),
    );
    m.insert("messageCount".into(), s.messages().len().into());
    m.insert(
        "pendingMessageCount".into(),
        s.pending_message_count().into(),
    );
    Ok(Value::Object(m))
}

/// pi 1.6's `getLastAssistantText`: the last assistant reply that ended normally or has text
/// (an aborted, failed or tool-calling turn without text is skipped), its text blocks joined and
/// trimmed; `None` when that is empty.
fn last_assistant_text(s: &AgentSession) -> Option<String> {
    let messages = s.messages();
    let last = messages.iter().rev().find_map(|m| {
        m.as_assistant().filter(|a| {
            a.stop_reason == StopReason::Stop
                || a.content
                    .iter()
                    .filter_map(ContentBlock::as_text)
                    .any(|t| !t.trim().is_empty())
        })
    })?;
    let text: String = last
        .content
        .iter()
        .filter_map(ContentBlock::as_text)
        .collect();
    Some(text.trim().to_string()).filter(|t| !t.is_empty())
}
