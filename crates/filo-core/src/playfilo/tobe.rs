//! `tobe`: jump back to an earlier node carrying a note to the past self (playfilo spec §6, V2
//! flow with the fixes of §10.4).

use std::collections::HashSet;
use std::sync::Arc;

use filo_agent::{AgentMessage, AgentTool, Concurrency, ToolCallContext, ToolError, ToolOutput};
use filo_ai::{ContentBlock, Message, UserContent, UserMessage};
use filo_dag::{DagError, NewBlob, NodeCommit, Parent, blob_type, carryover_text, role, short_id};
use filo_session::SessionMessage;
use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::{Shared, Window, lock};
use crate::convert::to_agent;

const STARTED: &str = "Time travel initiated. Aborting current turn — your next response will be in the new timeline.";

/// Why a jump did not happen. The `tobe` tool shows these to the model as `Error: <text>`; the
/// resolution texts are the reference's.
#[derive(Debug, thiserror::Error)]
pub enum TravelError {
    /// The session this memory belongs to has ended.
    #[error("the session is gone")]
    NoSession,
    /// A user jump while the agent is running.
    #[error("the agent is working; abort it before travelling")]
    Busy,
    /// No node matches the target.
    #[error("Node not found for \"{0}\".")]
    NotFound(String),
    /// A hash prefix matches several nodes.
    #[error("Ambiguous hash prefix \"{prefix}\" matches {count} nodes.")]
    Ambiguous {
        /// The prefix as given.
        prefix: String,
        /// How many nodes it matches.
        count: u64,
    },
    /// A target providers would reject (an assistant with unanswered tool calls, a departure
    /// marker); the text says why and what to choose instead.
    #[error("{0}")]
    Refused(String),
    /// The memory database failed.
    #[error("{0}")]
    Dag(DagError),
    /// The carryover could not be written to the session file.
    #[error("session file: {0}")]
    Session(filo_session::SessionError),
}

pub(crate) struct TobeTool {
    pub shared: Arc<Shared>,
}

/// `pi:<id>` is an external id first; bare text is a hash prefix first; each falls back to the
/// other only when the first finds nothing (§10.2 #10). Ambiguity is reported (§10.4 #26).
fn resolve(shared: &Shared, arg: &str) -> Result<String, TravelError> {
    let store = shared.store();
    let not_found = || TravelError::NotFound(arg.to_string());
    let by_ext = |s: &str| store.node_id_by_external_id(s).map_err(TravelError::Dag);
    if let Some(ext) = arg.strip_prefix("pi:") {
        if let Some(id) = by_ext(ext)? {
            return Ok(id);
        }
        return store.resolve_prefix(ext).map_err(|_| not_found());
    }
    match store.resolve_prefix(arg) {
        Ok(id) => Ok(id),
        Err(DagError::Ambiguous { prefix, count }) => Err(TravelError::Ambiguous { prefix, count }),
        Err(_) => by_ext(arg)?.ok_or_else(not_found),
    }
}

/// Targets providers would reject (§10.4 #25): an assistant whose tool calls are unanswered there,
/// and a departure node.
fn refuse_reason(shared: &Shared, target: &str) -> Result<Option<String>, DagError> {
    let store = shared.store();
    let Some(node) = store.node(target)? else {
        return Ok(Some(format!("Node {} not found.", short_id(target))));
    };
    let blobs = store.blobs(node.parts.iter())?;
    let has = |t: &str| blobs.values().any(|b| b.blob_type == t);
    if node.role == role::ASSISTANT && has(blob_type::TOOL_CALL) {
        return Ok(Some(format!(
            "Cannot travel to {}: it is an assistant message whose tool calls would be left unanswered. Choose its tool result or the message before it.",
            short_id(target)
        )));
    }
    let departure = blobs.values().any(|b| {
        b.blob_type == blob_type::TOOL_RESULT
            && b.value().and_then(|v| v.get("toolCallId").cloned()) == Some(json!("tobe_departure"))
    });
    if departure {
        return Ok(Some(format!(
            "Cannot travel to {}: it is a departure marker of an earlier jump. Choose a node of a conversation.",
            short_id(target)
        )));
    }
    Ok(None)
}

/// The jump of a `tobe` call. Blocking (waits for queued commits, reads and writes SQLite): run it
/// off the async workers.
fn jump(
    shared: &Shared,
    call_id: &str,
    target_arg: &str,
    carryover: &str,
) -> Result<String, ToolError> {
    // The calling assistant and everything before it must be in the DAG first.
    shared.flush();
    let session = shared
        .session()
        .ok_or_else(|| ToolError::Fatal("tobe: the session is gone".into()))?;
    let target = match resolve(shared, target_arg) {
        Ok(t) => t,
        Err(e) => return Ok(format!("Error: {e}")),
    };
    match refuse_reason(shared, &target) {
        Ok(Some(text)) => return Ok(format!("Error: {text}")),
        Ok(None) => {}
        Err(e) => return Ok(format!("Error: {e}")),
    }
    // The calling assistant, passed explicitly: the mirrored assistant holding this call.
    let caller = lock(&shared.state)
        .last_assistant
        .clone()
        .filter(|(_, _, ids)| ids.iter().any(|i| i == call_id));
    let now = shared.now();
    let departure = match &caller {
        Some((_, node, _)) => {
            let blob = NewBlob::departure(&target);
            let commit = NodeCommit::new(role::TOOL_RESULT, now)
                .parent(Parent::Node(node.clone()))
                .part(blob);
            match shared.store().commit_node(&commit) {
                Ok(c) => Some(c.id),
                Err(e) => return Ok(format!("Error: {e}")),
            }
        }
        None => None,
    };
    let leaf_after = caller.as_ref().map(|(entry, _, _)| entry.clone());
    let jump = match incarnate(
        shared,
        &session,
        &target,
        carryover,
        departure.as_deref(),
        leaf_after.as_deref(),
    ) {
        Ok(j) => j,
        Err(e) => return Ok(format!("Error: {e}")),
    };
    let (context, carry_id) = (jump.context, jump.carryover_entry);
    let call_ids: HashSet<String> = match &caller {
        Some((_, _, ids)) => ids.iter().cloned().collect(),
        None => std::iter::once(call_id.to_string()).collect(),
    };
    {
        let mut st = lock(&shared.state);
        st.window = Some(Window {
            call_ids,
            context,
            carryover_entry: carry_id,
            steering: Vec::new(),
        });
        st.held = None;
    }
    session.agent().abort();
    Ok(STARTED.to_string())
}

/// A jump that happened: the new context (target lineage + carryover) and the carryover entry.
pub(crate) struct Incarnation {
    pub context: Vec<AgentMessage>,
    pub carryover_entry: String,
}

/// The shared part of a jump (§6.2 steps 4–8): load the target lineage into the session, append
/// the carryover to the session file as a child of the target, commit the carryover node, move
/// the heads onto it and log INCARNATE from `from`. `leaf_after` is where the session leaf goes
/// next (the calling assistant, for the rest of an aborted turn); by default the carryover.
pub(crate) fn incarnate(
    shared: &Shared,
    session: &crate::AgentSession,
    target: &str,
    carryover: &str,
    from: Option<&str>,
    leaf_after: Option<&str>,
) -> Result<Incarnation, TravelError> {
    let now = shared.now();
    let lines = shared
        .store()
        .load_entry_lines(Some(target))
        .map_err(TravelError::Dag)?;
    let mut entries = super::resume::entries_of(&lines);
    drop(lines);
    let text = carryover_text(carryover);
    let (mut context, carry_id) = {
        let mut manager = session.session_manager();
        for e in &mut entries {
            let same = manager
                .entry(&e.id)
                .filter(|f| f.kind.type_name() == e.kind.type_name())
                .cloned();
            if let Some(f) = same {
                let parent = e.parent_id.take();
                *e = f;
                e.parent_id = parent;
            }
        }
        let target_entry = entries.last().map(|e| e.id.clone());
        manager.merge_in_memory(entries);
        match &target_entry {
            Some(id) => {
                let _ = manager.branch(id);
            }
            None => manager.reset_leaf(),
        }
        let context: Vec<AgentMessage> = manager
            .build_context()
            .messages
            .iter()
            .map(to_agent)
            .collect();
        let carry = SessionMessage::Llm(Message::User(UserMessage {
            content: UserContent::Blocks(vec![ContentBlock::text(text.clone())]),
            timestamp: now,
        }));
        let carry_id = manager
            .append_message(carry)
            .map_err(TravelError::Session)?;
        if let Some(entry) = leaf_after {
            let _ = manager.branch(entry);
        }
        (context, carry_id)
    };
    let carry_commit = NodeCommit::new(role::USER, now)
        .parent(Parent::Node(target.to_string()))
        .part(NewBlob::text(text.clone()))
        .external_id(carry_id.clone());
    let carry_node = shared
        .store()
        .commit_node(&carry_commit)
        .map_err(TravelError::Dag)?
        .id;
    lock(&shared.state)
        .nodes
        .insert(carry_id.clone(), carry_node.clone());
    shared.move_heads(&carry_node);
    shared.log(
        filo_dag::action_type::INCARNATE,
        from,
        Some(&carry_node),
        Some(carryover.to_string()),
    );
    context.push(AgentMessage::user_text(text));
    Ok(Incarnation {
        context,
        carryover_entry: carry_id,
    })
}

/// A jump the user asked for (the `/life` view), outside any tool call: the session must be
/// idle. INCARNATE is logged from the session's head; the context becomes the target lineage
/// plus the carryover, ready for the agent to continue.
pub(crate) fn travel(
    shared: &Shared,
    target_arg: &str,
    carryover: &str,
) -> Result<(), TravelError> {
    shared.flush();
    let session = shared.session().ok_or(TravelError::NoSession)?;
    if session.is_streaming() {
        return Err(TravelError::Busy);
    }
    let target = resolve(shared, target_arg)?;
    if let Some(text) = refuse_reason(shared, &target).map_err(TravelError::Dag)? {
        return Err(TravelError::Refused(text));
    }
    let from = lock(&shared.state).head.clone();
    let jump = incarnate(shared, &session, &target, carryover, from.as_deref(), None)?;
    session.agent().replace_messages(jump.context);
    Ok(())
}

/// At the end of the aborted run: move the session leaf to the carryover, re-send steering typed
/// during the jump, and hand the new context to the session to continue.
pub(crate) fn finish_jump(shared: &Shared) -> Option<Vec<AgentMessage>> {
    shared.release_held();
    let window = lock(&shared.state).window.take()?;
    let session = shared.session()?;
    let _ = session.session_manager().branch(&window.carryover_entry);
    for m in window.steering {
        session.agent().steer(m);
    }
    Some(window.context)
}

impl AgentTool for TobeTool {
    fn name(&self) -> &str {
        "tobe"
    }

    fn label(&self) -> &str {
        "To Be (State Switch)"
    }

    fn description(&self) -> &str {
        "Manifest a specific past state into your current reality. On success, your current turn ends and you awaken in the target timeline with a [SYSTEM / INCARNATION NOTE] containing your carryover message, followed by a [SYSTEM WARNING] about filesystem desync."
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {
            "target_node_hash": {"type": "string", "description": "The node identifier from life output. Can be a hash prefix (e.g. 'a1b2c3d4e5f6') or a pi:uuid."},
            "carryover_message": {"type": "string", "description": "A message to your past self explaining WHY you are jumping. This will appear as [SYSTEM / INCARNATION NOTE] in the target timeline."}
        }, "required": ["target_node_hash", "carryover_message"]})
    }

    fn concurrency(&self) -> Concurrency {
        Concurrency::Exclusive
    }

    fn execute(&self, ctx: ToolCallContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let target = ctx
                .args
                .get("target_node_hash")
                .and_then(Value::as_str)
                .map(str::to_string);
            let carry = ctx
                .args
                .get("carryover_message")
                .and_then(Value::as_str)
                .map(str::to_string);
            let (Some(target), Some(carry)) = (target, carry) else {
                return Ok(ToolOutput::text("Invalid command."));
            };
            let (shared, call_id) = (self.shared.clone(), ctx.call_id.clone());
            let result =
                tokio::task::spawn_blocking(move || jump(&shared, &call_id, &target, &carry))
                    .await
                    .map_err(|e| ToolError::Fatal(format!("tobe stopped: {e}")))?;
            if lock(&self.shared.state).window.is_none() {
                // No jump: the results held back for it belong to the DAG after all.
                self.shared.release_held();
            }
            result.map(ToolOutput::text)
        })
    }
}
