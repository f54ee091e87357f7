//! One key's runs, back to back: resolve the session entry, run the turn through the
//! embedder's fallback chain with a sink that fans events out, record the outcome, then drain
//! the follow-up queue (after its debounce) until it is empty.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use filo_ai::ThinkingLevel;
use filo_embed::queue::{QueueMode, collect_prompt};
use filo_embed::run::payloads::ReplyPayload;
use filo_embed::session_store::SessionEntry;
use filo_embed::usage::Usage;
use filo_embed::{FallbackResult, RunError, RunParams};
use filo_session::{SessionManager, SessionMessage};

use crate::core::{Core, Pending, lock};
use crate::frames;
use crate::hub::EventFrame;
use crate::outcome::{RunEvent, RunOutcome, RunStatus};
use crate::reply::GatewaySink;
use crate::store::AgentStore;

/// Runs `first`, then whatever queued behind it, until `key` has nothing left.
pub(crate) async fn drive(core: Arc<Core>, key: String, first: Pending) {
    let mut current = first;
    loop {
        // A panic in a run still answers its callers, and the key's lane goes on (the shared
        // lane's connection is closed with the dropped lease, which frees its lock).
        let run = std::panic::AssertUnwindSafe(execute(&core, &key, &current));
        let outcome = match futures::FutureExt::catch_unwind(run).await {
            Ok(outcome) => outcome,
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                failed(
                    empty_outcome(&current, &key),
                    format!("internal error: the run panicked ({what})"),
                )
            }
        };
        finish(&core, &current, outcome).await;
        match next_for(&core, &key).await {
            Some(next) => current = next,
            None => break,
        }
    }
}

/// The next run of `key` from its queue (after the debounce), or `None` when it is idle; an
/// idle key with an empty queue leaves no state behind.
async fn next_for(core: &Arc<Core>, key: &str) -> Option<Pending> {
    loop {
        let wait = {
            let mut keys = lock(&core.keys);
            let state = keys.get_mut(key)?;
            if state.queue.pending() == 0 {
                keys.remove(key);
                return None;
            }
            let debounce = Duration::from_millis(state.queue.settings.debounce_ms);
            let quiet = state.last_enqueue.elapsed();
            // An interrupting message runs at once; the others wait for a quiet moment.
            let urgent = state.queue.items.iter().any(|q| q.protected);
            if quiet >= debounce || urgent || core.is_draining() {
                let next = take_next(state);
                if let Some(p) = &next {
                    state.active = Some(crate::core::Active {
                        pending: p.clone(),
                        session_id: None,
                    });
                    core.metrics.runs_started.fetch_add(1, Ordering::Relaxed);
                }
                return next;
            }
            debounce - quiet
        };
        tokio::time::sleep(wait).await;
    }
}

/// One item (followup, steer, interrupt) or, when it was queued in collect mode, it and the
/// collect-mode messages right behind it merged into one prompt (`[Queued messages while agent
/// was busy]` …). A message that asked for its own turn (the OpenAI-compatible routes ask for
/// `followup`) is never merged into another's.
fn take_next(state: &mut crate::core::KeyState) -> Option<Pending> {
    let q = &mut state.queue;
    let collects = |p: &Pending| p.submit.mode == Some(QueueMode::Collect);
    let first = q.begin_next()?;
    if !collects(&first.item) {
        q.finish(first.id, true);
        return Some(first.item);
    }
    let mut items = vec![first];
    loop {
        let next = q
            .items
            .iter()
            .find(|i| !q.in_flight.contains(&i.id))
            .map(|i| collects(&i.item));
        if next != Some(true) {
            break;
        }
        match q.begin_next() {
            Some(item) => items.push(item),
            None => break,
        }
    }
    for i in &items {
        q.finish(i.id, true);
    }
    let summary = q.summary_prompt("message");
    q.dropped_count = 0;
    q.summary_lines.clear();
    let mut items = items.into_iter().map(|i| i.item);
    let mut merged = items.next()?;
    let rest: Vec<Pending> = items.collect();
    let prompts: Vec<&str> = std::iter::once(merged.submit.message.as_str())
        .chain(rest.iter().map(|p| p.submit.message.as_str()))
        .collect();
    let prompt = collect_prompt(&prompts, summary.as_deref());
    for p in &rest {
        merged.merged.push(p.submit.run_id.clone());
        let extra: Vec<_> = lock(&p.listeners).drain(..).collect();
        lock(&merged.listeners).extend(extra);
        // An abort of any collected request aborts the merged run.
        if p.abort.is_cancelled() {
            merged.abort.cancel();
        }
    }
    merged.submit.message = prompt;
    Some(merged)
}

/// Sends the outcome to the run's listeners and watchers (the terminal event no sooner than
/// the configured gap after the ack), records it and counts it.
pub(crate) async fn finish(core: &Arc<Core>, p: &Pending, outcome: RunOutcome) {
    let outcome = Arc::new(outcome);
    core.record_finished(&outcome);
    let status = outcome.status.as_str();
    let reason = match outcome.status {
        RunStatus::Ok | RunStatus::Aborted => None,
        RunStatus::Error | RunStatus::Timeout => outcome.error_kind(),
    };
    if !outcome.warnings.is_empty() {
        core.metrics
            .runs_with_warnings
            .fetch_add(1, Ordering::Relaxed);
    }
    core.metrics.run_finished(
        status,
        reason,
        p.accepted_at.elapsed(),
        (outcome.prompt_tokens(), outcome.completion_tokens()),
    );
    p.emit(&RunEvent::End(outcome.clone()));
    if p.submit.gap_after_ack {
        let earliest = p.accepted_at + core.config.terminal_gap;
        if Instant::now() < earliest {
            tokio::time::sleep_until(earliest.into()).await;
        }
    }
    if core.hub.has_watchers(&outcome.session_key) {
        for run_id in outcome.all_run_ids() {
            let frame = EventFrame::new("chat", &frames::chat_terminal(&outcome, run_id));
            core.hub.publish(&outcome.session_key, &frame);
        }
    }
}

/// The session entry of `key` (created on first use, with the requested session id when it is
/// a valid one), on disk before the run starts: a crash must not lose which transcript a key has.
async fn resolve_entry(
    store: &Arc<AgentStore>,
    key: &str,
    session_hint: Option<&str>,
) -> Result<(SessionEntry, bool), String> {
    let hint = session_hint
        .filter(|h| filo_embed::paths::validate_session_id(h).is_ok())
        .map(str::to_owned);
    let k = key.to_owned();
    let ((entry, created), ticket) = store
        .update(key, move |s| {
            let (e, created) = s.get_or_create(&k, &filo_embed::clock::SystemClock);
            if created && let Some(h) = hint {
                e.session_id = h;
            }
            (e.clone(), created)
        })
        .await?;
    if created {
        store.durable(ticket).await?;
    }
    Ok((entry, created))
}

/// Runs one turn for `p` and describes how it ended.
async fn execute(core: &Arc<Core>, key: &str, p: &Pending) -> RunOutcome {
    let agent = p.submit.agent_id.clone();
    let mut outcome = empty_outcome(p, key);
    if p.abort.is_cancelled() {
        outcome.status = RunStatus::Aborted;
        return outcome;
    }
    let store = core.stores.agent(&agent);
    // With several hosts: the key's lane is held on all of them for the whole run.
    match core.shared.clone() {
        None => execute_on(core, key, p, outcome, &store, None, &[]).await,
        Some(shared) => {
            crate::handoff::execute_shared(core, key, p, outcome, &store, &shared).await
        }
    }
}

/// [`execute`] once the key's lane is held: with a shared store, the entry and the transcript
/// come from it first and go back to it after the run (with `queue_rows`, the rows of the
/// messages other hosts queued that this run answers).
pub(crate) async fn execute_on(
    core: &Arc<Core>,
    key: &str,
    p: &Pending,
    mut outcome: RunOutcome,
    store: &Arc<AgentStore>,
    shared: Option<&Arc<crate::shared::SharedStore>>,
    queue_rows: &[i64],
) -> RunOutcome {
    let started = Instant::now();
    let agent = p.submit.agent_id.clone();
    if let (Some(shared), Some(idem)) = (shared, &p.submit.idempotency_key) {
        // Answered already, here or on another host: the recorded reply, and nothing runs.
        match shared
            .recorded(&crate::core::idempotency_scope(key, idem))
            .await
        {
            Ok(Some(done)) => {
                outcome.text = done.reply.clone();
                outcome.payloads = vec![ReplyPayload {
                    text: Some(done.reply),
                    ..ReplyPayload::default()
                }];
                return outcome;
            }
            Ok(None) => {}
            Err(e) => return failed(outcome, format!("shared store: {e}")),
        }
    }
    if let Some(shared) = shared {
        match shared.load_entry(&agent, key).await {
            Ok(Some(entry)) => {
                let k = key.to_owned();
                if let Err(e) = store
                    .update(key, move |s| {
                        s.entries.insert(k, entry);
                    })
                    .await
                {
                    return failed(outcome, format!("session store: {e}"));
                }
            }
            Ok(None) => {}
            Err(e) => return failed(outcome, format!("shared store: {e}")),
        }
    }
    let resolved = match resolve_entry(store, key, p.submit.session_id.as_deref()).await {
        Ok((entry, created)) => core
            .stores
            .transcript_path(&agent, key, &entry)
            .map(|file| (entry, created, file)),
        Err(e) => Err(e),
    };
    let (entry, created, file) = match resolved {
        Ok(r) => r,
        Err(e) => return failed(outcome, format!("session store: {e}")),
    };
    core.set_session_id(key, &entry.session_id);
    outcome.session_id = Some(entry.session_id.clone());
    let known = match shared {
        Some(shared) => match shared.sync_down(&entry.session_id, &file).await {
            Ok(n) => n,
            Err(e) => return failed(outcome, format!("shared transcript: {e}")),
        },
        None => 0,
    };
    let transcript = file.clone();
    let workspace = (core.workspace)(&agent);
    if created
        && !p.submit.history.is_empty()
        && let Err(e) = seed_history(&file, &entry.session_id, &workspace, &p.submit.history)
    {
        return failed(
            outcome,
            format!("could not write the earlier messages: {e}"),
        );
    }
    let params = run_params(p, key, &entry, file, workspace);
    let sink = Arc::new(GatewaySink::new(core.clone(), p.clone(), key, &agent));
    let result = core
        .embedder
        .run_with_fallback(params, sink.clone(), None)
        .await;
    sink.flush();
    // The terminal event carries the run's last event seq, as OpenClaw's does.
    outcome.last_seq = sink.last_seq();
    outcome.duration = started.elapsed();
    outcome.ended_at_ms = now_ms();
    let outcome = match result {
        Ok(r) => from_result(outcome, r, p.abort.is_cancelled()),
        Err(RunError::Aborted | RunError::LaneAborted { .. }) => {
            outcome.status = RunStatus::Aborted;
            outcome
        }
        Err(e) => failed(outcome, e.to_string()),
    };
    let mut outcome = record_entry(store, key, outcome).await;
    if let Some(shared) = shared {
        share_run(
            shared,
            store,
            p,
            key,
            &entry.session_id,
            &transcript,
            known,
            queue_rows,
            &mut outcome,
        )
        .await;
    }
    outcome
}

/// After a run on a shared store: the transcript lines it added, then the key's entry, reach
/// the database; what could not is named in the outcome's warnings.
#[allow(clippy::too_many_arguments)]
async fn share_run(
    shared: &Arc<crate::shared::SharedStore>,
    store: &Arc<AgentStore>,
    p: &Pending,
    key: &str,
    session_id: &str,
    transcript: &std::path::Path,
    known: usize,
    queue_rows: &[i64],
    outcome: &mut RunOutcome,
) {
    let agent = p.submit.agent_id.as_str();
    let commit = crate::shared::Commit {
        // Only a run that answered records its key: a failed one may be retried.
        idempotency_key: (outcome.status == RunStatus::Ok)
            .then_some(p.submit.idempotency_key.as_deref())
            .flatten()
            .map(|idem| crate::core::idempotency_scope(key, idem)),
        session_key: key.to_owned(),
        run_id: outcome.run_id.clone(),
        reply: outcome.text.clone(),
        queue_rows: queue_rows.to_vec(),
        outcome: crate::shared::queue::encode_outcome(outcome),
    };
    if let Err(e) = shared.sync_up(session_id, transcript, known, commit).await {
        // Not in the shared transcript, the turn is not part of the session: the caller is
        // told, and can send the message again (this host's copy keeps it aside).
        let mut failed_run = failed(
            outcome.clone(),
            format!("the turn was not saved, send the message again: {e}"),
        );
        failed_run.warnings.push(format!(
            "the transcript did not reach the shared store: {e}"
        ));
        *outcome = failed_run;
        return;
    }
    if let Some(entry) = store.peek(key)
        && let Err(e) = shared.save_entry(agent, key, &entry).await
    {
        outcome.warnings.push(format!(
            "the session entry did not reach the shared store: {e}"
        ));
    }
}

fn run_params(
    p: &Pending,
    key: &str,
    entry: &SessionEntry,
    file: std::path::PathBuf,
    workspace: std::path::PathBuf,
) -> RunParams {
    let s = &p.submit;
    let mut params = RunParams::new(entry.session_id.clone(), workspace, s.message.clone());
    params.session_file = Some(file);
    params.session_key = Some(key.to_owned());
    params.agent_id = Some(s.agent_id.clone());
    params.run_id = s.run_id.clone();
    params.timeout = s.timeout;
    params.extra_system_prompt = s.extra_system_prompt.clone();
    params.abort = Some(p.abort.clone());
    params.message_channel = Some("webchat".into());
    let model =
        s.model
            .clone()
            .or_else(|| match (&entry.provider_override, &entry.model_override) {
                (Some(pr), Some(m)) => Some(format!("{pr}/{m}")),
                (None, Some(m)) => Some(m.clone()),
                _ => None,
            });
    if let Some(m) = model {
        match m.split_once('/') {
            Some((provider, id)) => {
                params.provider = Some(provider.to_owned());
                params.model = Some(id.to_owned());
            }
            None => params.model = Some(m),
        }
    }
    params.think_level = s
        .thinking
        .as_deref()
        .or(entry.thinking_level.as_deref())
        .and_then(ThinkingLevel::parse);
    params
}

/// Writes a new session's earlier messages (OpenAI-style requests carry the whole chat).
fn seed_history(
    file: &std::path::Path,
    session_id: &str,
    workspace: &std::path::Path,
    history: &[filo_ai::Message],
) -> Result<(), String> {
    let mut m = SessionManager::open_or_create(file, session_id, &workspace.to_string_lossy())
        .map_err(|e| e.to_string())?;
    for msg in history {
        m.append_message(SessionMessage::Llm(msg.clone()))
            .map_err(|e| e.to_string())?;
    }
    match m.write_error() {
        Some(e) => Err(e.to_owned()),
        None => Ok(()),
    }
}

/// Updates the entry after the run: tokens, the model that answered, compactions, abort; a
/// write that fails is named in the outcome's warnings.
async fn record_entry(store: &Arc<AgentStore>, key: &str, mut outcome: RunOutcome) -> RunOutcome {
    let k = key.to_owned();
    let session_id = outcome.session_id.clone();
    let (usage, provider, model, aborted) = (
        outcome.usage,
        outcome.provider.clone(),
        outcome.model.clone(),
        outcome.status == RunStatus::Aborted,
    );
    let updated = store
        .update(key, move |s| {
            let (e, _) = s.get_or_create(&k, &filo_embed::clock::SystemClock);
            // A reset during the run gave the key a new session: that one is not this run's.
            if session_id.as_deref().is_some_and(|id| id != e.session_id) {
                return;
            }
            e.updated_at = now_ms();
            if usage.input.is_some() || usage.output.is_some() {
                e.input_tokens = usage.input;
                e.output_tokens = usage.output;
                e.total_tokens = usage
                    .total
                    .or(Some(usage.input.unwrap_or(0) + usage.output.unwrap_or(0)));
            }
            if provider.is_some() {
                e.model_provider = provider;
            }
            if model.is_some() {
                e.model = model;
            }
            e.aborted_last_run = Some(aborted);
        })
        .await;
    let written = match updated {
        Ok(((), ticket)) => store.durable(ticket).await,
        Err(e) => Err(e),
    };
    if let Err(e) = written {
        outcome
            .warnings
            .push(format!("the session store was not updated: {e}"));
    }
    outcome
}

pub(crate) fn now_ms() -> i64 {
    filo_ai::client::now_ms()
}

pub(crate) fn empty_outcome(p: &Pending, key: &str) -> RunOutcome {
    RunOutcome {
        run_id: p.submit.run_id.clone(),
        merged_run_ids: p.merged.clone(),
        session_key: key.to_owned(),
        agent_id: p.submit.agent_id.clone(),
        session_id: None,
        status: RunStatus::Ok,
        text: String::new(),
        payloads: Vec::new(),
        error: None,
        stop_reason: None,
        usage: Usage::default(),
        provider: None,
        model: None,
        duration: Duration::ZERO,
        warnings: Vec::new(),
        ended_at_ms: now_ms(),
        last_seq: 0,
    }
}

pub(crate) fn failed(mut o: RunOutcome, message: String) -> RunOutcome {
    o.status = RunStatus::Error;
    o.text = message.clone();
    o.payloads = vec![ReplyPayload {
        text: Some(message.clone()),
        is_error: true,
        ..ReplyPayload::default()
    }];
    o.error = Some(message);
    o
}

fn from_result(mut o: RunOutcome, r: FallbackResult, aborted: bool) -> RunOutcome {
    let result = r.result;
    let meta = &result.meta;
    o.provider = Some(r.provider);
    o.model = Some(r.model);
    o.stop_reason = meta.stop_reason.clone();
    o.warnings = meta.warnings.clone();
    if let Some(n) = r.notice {
        o.warnings.push(n);
    }
    if let Some(u) = meta.agent_meta.as_ref().and_then(|a| a.usage) {
        o.usage = u;
    }
    o.text = result
        .payloads
        .iter()
        .filter_map(|p| p.text.as_deref())
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n");
    let error_text = result
        .payloads
        .iter()
        .filter(|p| p.is_error)
        .filter_map(|p| p.text.clone())
        .next();
    o.status = if meta.aborted || aborted {
        RunStatus::Aborted
    } else if meta.timed_out {
        RunStatus::Timeout
    } else if meta.error.is_some() || error_text.is_some() {
        RunStatus::Error
    } else {
        RunStatus::Ok
    };
    o.error = match o.status {
        RunStatus::Error | RunStatus::Timeout => meta
            .error
            .as_ref()
            .map(|e| e.message.clone())
            .or(error_text),
        RunStatus::Ok | RunStatus::Aborted => None,
    };
    o.payloads = result.payloads;
    o
}

/// The outcome of a queued message dropped to make room (drop policy `old` or `summarize`).
pub(crate) fn dropped_outcome(p: &Pending) -> Arc<RunOutcome> {
    let mut o = empty_outcome(p, &p.submit.key);
    o.status = RunStatus::Error;
    o.error = Some("dropped from the follow-up queue (cap reached)".into());
    Arc::new(o)
}

/// The outcome of a queued message removed before its run (reset, abort, shutdown).
pub(crate) fn aborted_before_start(p: &Pending) -> Arc<RunOutcome> {
    let mut o = empty_outcome(p, &p.submit.key);
    o.status = RunStatus::Aborted;
    Arc::new(o)
}
