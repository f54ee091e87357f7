//! Runs on a shared store (`--store postgres://…`), where a key's lane may be held by another
//! host: take the lane and run, or queue the message for the holder and wait for its answer
//! (see [`crate::shared::queue`]); after a run, the messages other hosts queued meanwhile run
//! here, under the same lane, before it is let go.

use std::sync::Arc;
use std::time::Duration;

use filo_embed::queue::{QueueMode, collect_prompt};

use crate::core::{Core, Pending};
use crate::outcome::{RunOutcome, RunStatus};
use crate::run::{empty_outcome, execute_on, failed, finish};
use crate::shared::queue::{Claimed, RowState, decode_outcome};
use crate::shared::{Lease, SharedStore};
use crate::store::AgentStore;

/// How often a waiting host looks at its row, at first and at most.
const POLL_FIRST: Duration = Duration::from_millis(20);
const POLL_MAX: Duration = Duration::from_millis(250);

/// [`crate::run`]'s `execute` on a shared store.
pub(crate) async fn execute_shared(
    core: &Arc<Core>,
    key: &str,
    p: &Pending,
    outcome: RunOutcome,
    store: &Arc<AgentStore>,
    shared: &Arc<SharedStore>,
) -> RunOutcome {
    let agent = p.submit.agent_id.clone();
    let lease = match shared.try_lease(&agent, key).await {
        Ok(Some(lease)) => lease,
        Ok(None) => match wait_elsewhere(core, key, p, shared, outcome.clone()).await {
            Waited::Answered(o) => return o,
            Waited::Lane(lease) => lease,
        },
        Err(e) => return failed(outcome, format!("shared store: {e}")),
    };
    let mut outcome = execute_on(core, key, p, outcome, store, Some(shared), &[]).await;
    match shared.claim(&agent, key).await {
        Ok(claimed) if claimed.is_empty() => lease.release().await,
        Ok(claimed) => {
            // This run's caller has its answer now; the queued messages run after it, on the
            // lane this task keeps.
            let (core, key, store, shared) =
                (core.clone(), key.to_owned(), store.clone(), shared.clone());
            tokio::spawn(async move {
                run_claimed(&core, &key, &store, &shared, claimed).await;
                lease.release().await;
            });
        }
        Err(e) => {
            lease.release().await;
            outcome.warnings.push(format!(
                "messages other hosts queued for this session could not be claimed ({e}); \
                 they run when its lane is next taken"
            ));
        }
    }
    outcome
}

enum Waited {
    /// The host holding the lane ran the message (or it was withdrawn, or failed to queue).
    Answered(RunOutcome),
    /// The lane became free before anyone ran the message: it is this host's to run.
    Lane(Lease),
}

/// Queues `p` for the host holding `key`'s lane and waits for its answer; takes the lane
/// itself when the holder let it go (or died) without answering.
async fn wait_elsewhere(
    core: &Arc<Core>,
    key: &str,
    p: &Pending,
    shared: &Arc<SharedStore>,
    mut outcome: RunOutcome,
) -> Waited {
    let agent = p.submit.agent_id.as_str();
    let mode = p.submit.mode.unwrap_or(core.queue_settings(key).mode);
    let id = match shared.enqueue(&p.submit, mode).await {
        Ok(id) => id,
        Err(e) => return Waited::Answered(failed(outcome, format!("shared queue: {e}"))),
    };
    let mut delay = POLL_FIRST;
    loop {
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(POLL_MAX);
        if p.abort.is_cancelled() && matches!(shared.withdraw(id, false).await, Ok(true)) {
            outcome.status = RunStatus::Aborted;
            return Waited::Answered(outcome);
        }
        match shared.row_state(id).await {
            Ok(RowState::Done(text)) => {
                // The row has served its purpose; one left behind is swept after a day.
                let _ = shared.forget(id).await;
                return Waited::Answered(decode_outcome(&text, outcome));
            }
            Ok(RowState::Gone) => {
                return Waited::Answered(failed(
                    outcome,
                    "the shared queue lost this message's row".into(),
                ));
            }
            Ok(RowState::Waiting) => {}
            Err(e) => {
                return Waited::Answered(failed(
                    outcome,
                    format!(
                        "shared queue: {e} (the host running this session may still answer \
                         the message)"
                    ),
                ));
            }
        }
        let Ok(Some(lease)) = shared.try_lease(agent, key).await else {
            continue;
        };
        // The lane is free: its holder answered meanwhile, or let it go without claiming this
        // row, or died while running it (its commit never happened, so the row is not done).
        if let Ok(RowState::Done(text)) = shared.row_state(id).await {
            lease.release().await;
            let _ = shared.forget(id).await;
            return Waited::Answered(decode_outcome(&text, outcome));
        }
        return match shared.withdraw(id, true).await {
            Ok(_) => Waited::Lane(lease),
            Err(e) => {
                lease.release().await;
                Waited::Answered(failed(outcome, format!("shared queue: {e}")))
            }
        };
    }
}

/// Runs what other hosts queued for `key` (the lane is held), and what they queue meanwhile,
/// until nothing is left: collect-mode messages merged into one run, the others one by one.
async fn run_claimed(
    core: &Arc<Core>,
    key: &str,
    store: &Arc<AgentStore>,
    shared: &Arc<SharedStore>,
    mut claimed: Vec<Claimed>,
) {
    while !claimed.is_empty() {
        for (pending, rows) in batches(claimed) {
            let outcome = empty_outcome(&pending, key);
            let outcome =
                execute_on(core, key, &pending, outcome, store, Some(shared), &rows).await;
            finish(core, &pending, outcome).await;
        }
        let agent = filo_embed::session_key::agent_id_from_session_key(key);
        claimed = shared.claim(&agent, key).await.unwrap_or_default();
    }
}

/// Claimed rows as runs, in order: consecutive collect-mode messages make one run (its prompt
/// lists them as on one host), every other message its own.
fn batches(claimed: Vec<Claimed>) -> Vec<(Pending, Vec<i64>)> {
    let mut out: Vec<(Vec<Claimed>, bool)> = Vec::new();
    for c in claimed {
        let collect = c.mode == QueueMode::Collect;
        match out.last_mut() {
            Some((group, true)) if collect => group.push(c),
            _ => out.push((vec![c], collect)),
        }
    }
    out.into_iter()
        .filter_map(|(group, _)| {
            let rows: Vec<i64> = group.iter().map(|c| c.id).collect();
            let mut items = group.into_iter().map(|c| c.submit);
            let mut first = items.next()?;
            let rest: Vec<_> = items.collect();
            let mut merged = Vec::new();
            if !rest.is_empty() {
                let prompts: Vec<&str> = std::iter::once(first.message.as_str())
                    .chain(rest.iter().map(|s| s.message.as_str()))
                    .collect();
                let prompt = collect_prompt(&prompts, None);
                merged = rest.iter().map(|s| s.run_id.clone()).collect();
                first.message = prompt;
            }
            let mut pending = Pending::new(first, None);
            pending.merged = merged;
            Some((pending, rows))
        })
        .collect()
}
