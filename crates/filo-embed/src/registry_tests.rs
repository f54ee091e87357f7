use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::*;

#[derive(Default)]
struct FakeRun {
    streaming: AtomicBool,
    compacting: AtomicBool,
    stopped: Mutex<Option<bool>>,
    aborts: AtomicUsize,
    queued: Mutex<Vec<String>>,
}

impl RunHandle for FakeRun {
    fn queue_message(&self, text: &str) {
        self.queued.lock().unwrap().push(text.to_owned());
    }
    fn is_streaming(&self) -> bool {
        self.streaming.load(Ordering::SeqCst)
    }
    fn is_compacting(&self) -> bool {
        self.compacting.load(Ordering::SeqCst)
    }
    fn is_stopped(&self) -> Option<bool> {
        *self.stopped.lock().unwrap()
    }
    fn abort(&self) {
        self.aborts.fetch_add(1, Ordering::SeqCst);
    }
}

fn run_with(streaming: bool, compacting: bool, stopped: Option<bool>) -> Arc<FakeRun> {
    let r = FakeRun::default();
    r.streaming.store(streaming, Ordering::SeqCst);
    r.compacting.store(compacting, Ordering::SeqCst);
    *r.stopped.lock().unwrap() = stopped;
    Arc::new(r)
}

fn run(streaming: bool, compacting: bool, stopped: bool) -> Arc<FakeRun> {
    run_with(streaming, compacting, stopped.then_some(true))
}

#[test]
fn queue_message_only_reaches_a_streaming_run() {
    // (streaming, compacting, stopped) → accepted
    let cases = [
        ((true, false, None), true),
        ((false, false, None), false),
        ((true, true, None), false),
        ((true, false, Some(true)), false),
        // A handle that knows it is running accepts between two streamed replies.
        ((false, false, Some(false)), true),
        ((true, true, Some(false)), false),
    ];
    for ((streaming, compacting, stopped), accepted) in cases {
        let runs = ActiveRuns::new();
        let fake = run_with(streaming, compacting, stopped);
        runs.set("s1", fake.clone(), Some("agent:main:main"));
        assert_eq!(runs.queue_message("s1", "hi"), accepted);
        let queued = fake.queued.lock().unwrap().clone();
        assert_eq!(queued.len(), usize::from(accepted));
    }
    assert!(!ActiveRuns::new().queue_message("none", "hi"));
}

#[test]
fn clear_needs_the_registered_handle() {
    let runs = ActiveRuns::new();
    let first: Arc<dyn RunHandle> = run(true, false, false);
    let second: Arc<dyn RunHandle> = run(true, false, false);
    runs.set("s1", first.clone(), Some("k1"));
    runs.set_snapshot(
        "s1",
        RunSnapshot {
            leaf_id: Some("leaf".into()),
            ..RunSnapshot::default()
        },
    );
    runs.set("s1", second.clone(), Some("k1"));
    assert_eq!(runs.clear("s1", &first), ClearOutcome::HandleMismatch);
    assert!(runs.is_active("s1"));
    assert_eq!(runs.session_id_for_key("k1").as_deref(), Some("s1"));
    assert_eq!(runs.clear("s1", &second), ClearOutcome::Cleared);
    assert!(!runs.is_active("s1"));
    assert_eq!(runs.snapshot("s1"), None);
    assert_eq!(runs.session_id_for_key("k1"), None);
    assert_eq!(runs.clear("s1", &second), ClearOutcome::HandleMismatch);
}

#[test]
fn abort_and_abort_all() {
    let runs = ActiveRuns::new();
    let a = run(true, false, false);
    let b = run(false, true, false);
    runs.set("a", a.clone(), None);
    runs.set("b", b.clone(), None);
    assert!(runs.abort("a"));
    assert!(!runs.abort("missing"));
    assert_eq!(a.aborts.load(Ordering::SeqCst), 1);
    assert_eq!(runs.abort_all(AbortMode::Compacting), 1);
    assert_eq!(b.aborts.load(Ordering::SeqCst), 1);
    assert_eq!(a.aborts.load(Ordering::SeqCst), 1);
    assert_eq!(runs.abort_all(AbortMode::All), 2);
    assert_eq!(runs.active_count(), 2);
    assert!(runs.is_streaming("a"));
    assert!(!runs.is_streaming("b"));
}

#[tokio::test(start_paused = true)]
async fn wait_for_end_is_immediate_without_a_run_and_woken_by_clear() {
    let runs = ActiveRuns::new();
    assert!(runs.wait_for_end("none", Duration::ZERO).await);
    let handle: Arc<dyn RunHandle> = run(true, false, false);
    runs.set("s1", handle.clone(), None);
    let r = runs.clone();
    let waiter = tokio::spawn(async move { r.wait_for_end("s1", DEFAULT_WAIT_TIMEOUT).await });
    tokio::task::yield_now().await;
    assert_eq!(runs.clear("s1", &handle), ClearOutcome::Cleared);
    assert!(waiter.await.unwrap());
}

#[tokio::test(start_paused = true)]
async fn wait_for_end_times_out_no_sooner_than_the_floor() {
    let runs = ActiveRuns::new();
    runs.set("s1", run(true, false, false), None);
    let start = Instant::now();
    assert!(!runs.wait_for_end("s1", Duration::from_millis(1)).await);
    assert!(start.elapsed() >= WAIT_FOR_END_FLOOR);
}

#[tokio::test(start_paused = true)]
async fn wait_for_all_polls_until_every_run_ends() {
    let runs = ActiveRuns::new();
    assert_eq!(
        runs.wait_for_all(Duration::ZERO, DEFAULT_WAIT_POLL).await,
        AllDrained { drained: true }
    );
    let handle: Arc<dyn RunHandle> = run(true, false, false);
    runs.set("s1", handle.clone(), None);
    assert_eq!(
        runs.wait_for_all(Duration::from_secs(1), Duration::ZERO)
            .await,
        AllDrained { drained: false }
    );
    let r = runs.clone();
    let waiter = tokio::spawn(async move {
        r.wait_for_all(DEFAULT_WAIT_TIMEOUT, DEFAULT_WAIT_POLL)
            .await
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(runs.clear("s1", &handle), ClearOutcome::Cleared);
    assert_eq!(waiter.await.unwrap(), AllDrained { drained: true });
}

#[tokio::test(start_paused = true)]
async fn force_detach_wakes_waiters_and_makes_the_late_clear_a_no_op() {
    let runs = ActiveRuns::new();
    let handle: Arc<dyn RunHandle> = run(true, false, false);
    runs.set("s1", handle.clone(), Some("  k1  "));
    assert_eq!(runs.session_id_for_key("k1").as_deref(), Some("s1"));
    let r = runs.clone();
    let waiter = tokio::spawn(async move { r.wait_for_end("s1", DEFAULT_WAIT_TIMEOUT).await });
    tokio::task::yield_now().await;
    assert!(runs.force_detach("s1"));
    assert!(waiter.await.unwrap());
    assert!(!runs.force_detach("s1"));
    assert_eq!(runs.clear("s1", &handle), ClearOutcome::HandleMismatch);
    runs.set_snapshot("s1", RunSnapshot::default());
    assert_eq!(runs.snapshot("s1"), None, "no snapshot without a run");
    assert!(runs.wait_for_end("", Duration::ZERO).await);
}
