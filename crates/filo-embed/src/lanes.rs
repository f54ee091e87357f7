//! Lanes and the command queue (C6): at most one run per session key, a bounded number of runs
//! overall.
//!
//! A [`CommandQueue`] is a value owned by the embedder (no process-global map). Lanes are created
//! on demand; each is a FIFO with an active set and a concurrency limit (default 1). A run goes
//! through its session lane and then its global lane:
//! `queue.enqueue(session_lane, || queue.enqueue(global_lane, work))`. Code already running inside
//! a lane must not enqueue on that lane again (it would wait for itself).
//!
//! Session lanes (`session:…`) that are idle and at the default concurrency are removed, so
//! thousands of session keys do not leak lane state.

use std::any::Any;
use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::FutureExt;
use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The lane of interactive runs.
pub const MAIN_LANE: &str = "main";
/// The lane of scheduled runs.
pub const CRON_LANE: &str = "cron";
/// The lane of subagent runs.
pub const SUBAGENT_LANE: &str = "subagent";
/// The lane of nested runs.
pub const NESTED_LANE: &str = "nested";
/// Default `warn_after` of [`EnqueueOptions`].
pub const DEFAULT_WARN_AFTER: Duration = Duration::from_secs(2);
/// Poll interval of [`CommandQueue::wait_for_active`].
const WAIT_POLL: Duration = Duration::from_millis(50);

/// Why a task did not run to completion through its lane.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LaneError {
    /// The queue is draining for a restart and accepts no new tasks.
    #[error("Gateway is draining for restart; new tasks are not accepted")]
    Draining,
    /// The task's abort token was cancelled before it started.
    #[error("Command in lane \"{lane}\" aborted while queued")]
    LaneAborted { lane: String },
    /// [`CommandQueue::clear`] removed the queued task.
    #[error("Command lane \"{lane}\" cleared")]
    Cleared { lane: String },
    /// The task was dropped before it produced a value (its runtime shut down).
    #[error("Command in lane \"{lane}\" was dropped before it finished")]
    Dropped { lane: String },
    /// The task panicked while running; its lane was freed.
    #[error("Command in lane \"{lane}\" panicked: {message}")]
    Panicked { lane: String, message: String },
}

/// The session lane of a session key: `session:<key>` (`main` for a blank key).
pub fn resolve_session_lane(key: &str) -> String {
    let trimmed = key.trim();
    let cleaned = if trimmed.is_empty() {
        MAIN_LANE
    } else {
        trimmed
    };
    if cleaned.starts_with("session:") {
        cleaned.to_owned()
    } else {
        format!("session:{cleaned}")
    }
}

/// A lane name: trimmed, `main` when blank (every queue method normalises its lane this way).
pub fn resolve_global_lane(lane: Option<&str>) -> String {
    match lane.map(str::trim) {
        Some(l) if !l.is_empty() => l.to_owned(),
        _ => MAIN_LANE.to_owned(),
    }
}

/// Called when a task starts after waiting at least `warn_after`: `(waited, queued_ahead)`.
pub type OnWait = Arc<dyn Fn(Duration, usize) + Send + Sync>;

/// Options of [`CommandQueue::enqueue_with`].
#[derive(Clone)]
pub struct EnqueueOptions {
    pub warn_after: Duration,
    pub on_wait: Option<OnWait>,
    pub abort: Option<CancellationToken>,
}

impl Default for EnqueueOptions {
    fn default() -> Self {
        Self {
            warn_after: DEFAULT_WARN_AFTER,
            on_wait: None,
            abort: None,
        }
    }
}

/// Result of [`CommandQueue::wait_for_active`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drained {
    pub drained: bool,
}

type BoxFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A queued task with its result type erased.
trait Job: Send {
    fn start(self: Box<Self>, lane: String) -> BoxFuture;
    fn reject(self: Box<Self>, error: LaneError);
}

struct TypedJob<T, F> {
    make: F,
    tx: oneshot::Sender<Result<T, LaneError>>,
}

impl<T, F, Fut> Job for TypedJob<T, F>
where
    T: Send + 'static,
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = T> + Send + 'static,
{
    fn start(self: Box<Self>, lane: String) -> BoxFuture {
        let TypedJob { make, tx } = *self;
        Box::pin(async move {
            let outcome = AssertUnwindSafe(async move { make().await })
                .catch_unwind()
                .await
                .map_err(|panic| LaneError::Panicked {
                    lane,
                    message: panic_message(panic.as_ref()),
                });
            // A caller that stopped waiting no longer wants the value; the task still ran.
            let _unwanted = tx.send(outcome);
        })
    }

    fn reject(self: Box<Self>, error: LaneError) {
        // Same as above: nobody is waiting for the rejection.
        let _unwanted = self.tx.send(Err(error));
    }
}

fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic)".to_owned()
    }
}

struct Entry {
    id: u64,
    job: Box<dyn Job>,
    enqueued_at: Instant,
    warn_after: Duration,
    on_wait: Option<OnWait>,
}

struct LaneState {
    queue: VecDeque<Entry>,
    active: HashSet<u64>,
    max_concurrent: usize,
}

impl Default for LaneState {
    fn default() -> Self {
        Self {
            queue: VecDeque::new(),
            active: HashSet::new(),
            max_concurrent: 1,
        }
    }
}

#[derive(Default)]
struct QueueState {
    lanes: HashMap<String, LaneState>,
    draining: bool,
}

/// The command queue: named lanes, each FIFO with a concurrency limit. Cheap to clone (clones
/// share the lanes).
#[derive(Clone, Default)]
pub struct CommandQueue {
    state: Arc<Mutex<QueueState>>,
    next_id: Arc<AtomicU64>,
}

impl std::fmt::Debug for CommandQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandQueue").finish_non_exhaustive()
    }
}

impl CommandQueue {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, QueueState> {
        // Nothing inside the lock can panic half-way through an update (user code never runs
        // under it), so a poisoned lock still holds consistent state.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `task` on `lane` with default options and returns its value.
    pub async fn enqueue<T, F, Fut>(&self, lane: &str, task: F) -> Result<T, LaneError>
    where
        T: Send + 'static,
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = T> + Send + 'static,
    {
        self.enqueue_with(lane, task, EnqueueOptions::default())
            .await
    }

    /// Runs `task` on `lane` once the lane has a free slot and returns its value.
    pub async fn enqueue_with<T, F, Fut>(
        &self,
        lane: &str,
        task: F,
        options: EnqueueOptions,
    ) -> Result<T, LaneError>
    where
        T: Send + 'static,
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = T> + Send + 'static,
    {
        // Same order as OpenClaw's queue: draining is reported before a cancelled token.
        if self.is_draining() {
            return Err(LaneError::Draining);
        }
        let lane = resolve_global_lane(Some(lane));
        if options.abort.as_ref().is_some_and(|t| t.is_cancelled()) {
            return Err(LaneError::LaneAborted { lane });
        }
        let (tx, mut rx) = oneshot::channel();
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        {
            let mut state = self.lock();
            if state.draining {
                return Err(LaneError::Draining);
            }
            state
                .lanes
                .entry(lane.clone())
                .or_default()
                .queue
                .push_back(Entry {
                    id,
                    job: Box::new(TypedJob { make: task, tx }),
                    enqueued_at: Instant::now(),
                    warn_after: options.warn_after,
                    on_wait: options.on_wait,
                });
            self.pump_locked(&mut state, &lane);
        }
        let received = match options.abort {
            Some(token) => tokio::select! {
                biased;
                r = &mut rx => r,
                () = token.cancelled() => {
                    if self.remove_queued(&lane, id) {
                        return Err(LaneError::LaneAborted { lane });
                    }
                    // Already started: aborting the lane entry has no effect any more.
                    rx.await
                }
            },
            None => rx.await,
        };
        received.unwrap_or(Err(LaneError::Dropped { lane }))
    }

    fn remove_queued(&self, lane: &str, id: u64) -> bool {
        let mut state = self.lock();
        let Some(l) = state.lanes.get_mut(lane) else {
            return false;
        };
        let Some(pos) = l.queue.iter().position(|e| e.id == id) else {
            return false;
        };
        // The job is dropped: the caller returns LaneAborted itself.
        drop(l.queue.remove(pos));
        Self::drop_idle_lane(&mut state, lane);
        true
    }

    fn pump_locked(&self, state: &mut QueueState, lane: &str) {
        let Some(l) = state.lanes.get_mut(lane) else {
            return;
        };
        while l.active.len() < l.max_concurrent {
            let Some(entry) = l.queue.pop_front() else {
                break;
            };
            let waited = entry.enqueued_at.elapsed();
            if waited >= entry.warn_after
                && let Some(cb) = &entry.on_wait
            {
                let queued_ahead = l.queue.len();
                // A failing callback must not stop the pump.
                let _survived =
                    std::panic::catch_unwind(AssertUnwindSafe(|| cb(waited, queued_ahead)));
            }
            l.active.insert(entry.id);
            let fut = entry.job.start(lane.to_owned());
            let queue = self.clone();
            let lane_name = lane.to_owned();
            let id = entry.id;
            tokio::spawn(async move {
                fut.await;
                queue.complete(&lane_name, id);
            });
        }
        Self::drop_idle_lane(state, lane);
    }

    fn complete(&self, lane: &str, id: u64) {
        let mut state = self.lock();
        let removed = state
            .lanes
            .get_mut(lane)
            .is_some_and(|l| l.active.remove(&id));
        // A completion from before `reset_all` finds its id gone and changes nothing.
        if removed {
            self.pump_locked(&mut state, lane);
        }
    }

    fn drop_idle_lane(state: &mut QueueState, lane: &str) {
        let idle = state
            .lanes
            .get(lane)
            .is_some_and(|l| l.queue.is_empty() && l.active.is_empty() && l.max_concurrent == 1);
        if idle && lane.starts_with("session:") {
            state.lanes.remove(lane);
        }
    }

    /// Sets a lane's concurrency to `max(1, n)` and starts what now fits.
    pub fn set_concurrency(&self, lane: &str, n: usize) {
        let mut state = self.lock();
        state
            .lanes
            .entry(lane.to_owned())
            .or_default()
            .max_concurrent = n.max(1);
        self.pump_locked(&mut state, lane);
    }

    /// Queued plus active tasks of a lane.
    pub fn queue_size(&self, lane: &str) -> usize {
        self.lock()
            .lanes
            .get(&resolve_global_lane(Some(lane)))
            .map_or(0, |l| l.queue.len() + l.active.len())
    }

    /// Queued plus active tasks over all lanes.
    pub fn total_queue_size(&self) -> usize {
        self.lock()
            .lanes
            .values()
            .map(|l| l.queue.len() + l.active.len())
            .sum()
    }

    /// Active tasks over all lanes.
    pub fn active_count(&self) -> usize {
        self.lock().lanes.values().map(|l| l.active.len()).sum()
    }

    /// Number of lanes currently held (idle session lanes are not).
    pub fn lane_count(&self) -> usize {
        self.lock().lanes.len()
    }

    /// Rejects the queued (not the active) tasks of a lane with [`LaneError::Cleared`]; returns
    /// how many.
    pub fn clear(&self, lane: &str) -> usize {
        let lane = resolve_global_lane(Some(lane));
        let lane = lane.as_str();
        let entries: Vec<Entry> = {
            let mut state = self.lock();
            let taken = state
                .lanes
                .get_mut(lane)
                .map(|l| l.queue.drain(..).collect())
                .unwrap_or_default();
            Self::drop_idle_lane(&mut state, lane);
            taken
        };
        let n = entries.len();
        for e in entries {
            e.job.reject(LaneError::Cleared {
                lane: lane.to_owned(),
            });
        }
        n
    }

    /// From now on, enqueue fails with [`LaneError::Draining`]; queued and active tasks finish.
    pub fn mark_draining(&self) {
        self.lock().draining = true;
    }

    /// Whether the queue is draining.
    pub fn is_draining(&self) -> bool {
        self.lock().draining
    }

    /// After a restart of the embedder: accept tasks again, forget active tasks (their later
    /// completions are ignored), keep queued ones and start them.
    pub fn reset_all(&self) {
        let mut state = self.lock();
        state.draining = false;
        let names: Vec<String> = state.lanes.keys().cloned().collect();
        for name in &names {
            if let Some(l) = state.lanes.get_mut(name) {
                l.active.clear();
            }
        }
        for name in &names {
            self.pump_locked(&mut state, name);
        }
    }

    /// Waits until every task active at call time has finished, polling every 50 ms, at most
    /// `timeout`.
    pub async fn wait_for_active(&self, timeout: Duration) -> Drained {
        let watched: HashSet<u64> = self
            .lock()
            .lanes
            .values()
            .flat_map(|l| l.active.iter().copied())
            .collect();
        let deadline = Instant::now() + timeout;
        loop {
            let still = {
                let state = self.lock();
                state
                    .lanes
                    .values()
                    .any(|l| l.active.iter().any(|id| watched.contains(id)))
            };
            if !still {
                return Drained { drained: true };
            }
            let now = Instant::now();
            if now >= deadline {
                return Drained { drained: false };
            }
            tokio::time::sleep(WAIT_POLL.min(deadline - now)).await;
        }
    }
}

#[cfg(test)]
#[path = "lanes_tests.rs"]
mod tests;
