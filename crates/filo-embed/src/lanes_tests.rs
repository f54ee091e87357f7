use std::sync::atomic::AtomicUsize;

use super::*;

/// Lets spawned tasks run until `cond` holds (bounded: fails instead of hanging).
async fn until(mut cond: impl FnMut() -> bool) {
    for _ in 0..10_000 {
        if cond() {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("condition never became true");
}

/// A task that runs until its gate opens.
fn gated(
    queue: &CommandQueue,
    lane: &str,
    value: u32,
    options: EnqueueOptions,
) -> (
    oneshot::Sender<()>,
    tokio::task::JoinHandle<Result<u32, LaneError>>,
) {
    let (open, gate) = oneshot::channel::<()>();
    let q = queue.clone();
    let lane = lane.to_owned();
    let handle = tokio::spawn(async move {
        q.enqueue_with(
            &lane,
            move || async move {
                let _opened = gate.await;
                value
            },
            options,
        )
        .await
    });
    (open, handle)
}

#[test]
fn lane_names_follow_the_rules() {
    let cases = [
        ("", "session:main"),
        ("   ", "session:main"),
        (" agent:main:x ", "session:agent:main:x"),
        ("session:abc", "session:abc"),
    ];
    for (key, want) in cases {
        assert_eq!(resolve_session_lane(key), want, "key {key:?}");
    }
    assert_eq!(resolve_global_lane(None), "main");
    assert_eq!(resolve_global_lane(Some("  ")), "main");
    assert_eq!(resolve_global_lane(Some(" cron ")), "cron");
}

#[tokio::test]
async fn three_tasks_run_in_order_one_at_a_time() {
    let queue = CommandQueue::new();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let active = Arc::new(AtomicUsize::new(0));
    let max_seen = Arc::new(AtomicUsize::new(0));
    let mut handles = Vec::new();
    for i in 1..=3u32 {
        let (q, calls, active, max_seen) = (
            queue.clone(),
            calls.clone(),
            active.clone(),
            max_seen.clone(),
        );
        handles.push(tokio::spawn(async move {
            q.enqueue(MAIN_LANE, move || async move {
                let now = active.fetch_add(1, Ordering::SeqCst) + 1;
                max_seen.fetch_max(now, Ordering::SeqCst);
                calls.lock().unwrap().push(i);
                tokio::task::yield_now().await;
                active.fetch_sub(1, Ordering::SeqCst);
                i
            })
            .await
        }));
    }
    let mut results = Vec::new();
    for h in handles {
        results.push(h.await.unwrap().unwrap());
    }
    assert_eq!(results, [1, 2, 3]);
    assert_eq!(*calls.lock().unwrap(), [1, 2, 3]);
    assert_eq!(max_seen.load(Ordering::SeqCst), 1);
    assert_eq!(queue.queue_size(MAIN_LANE), 0);
}

#[tokio::test(start_paused = true)]
async fn on_wait_reports_the_wait_and_the_tasks_ahead() {
    let queue = CommandQueue::new();
    let (open, first) = gated(&queue, MAIN_LANE, 1, EnqueueOptions::default());
    until(|| queue.queue_size(MAIN_LANE) == 1).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    let options = EnqueueOptions {
        warn_after: Duration::from_millis(5),
        on_wait: Some(Arc::new(move |waited, ahead| {
            seen2.lock().unwrap().push((waited, ahead));
        })),
        abort: None,
    };
    let q = queue.clone();
    let second =
        tokio::spawn(async move { q.enqueue_with(MAIN_LANE, || async { 2u32 }, options).await });
    until(|| queue.queue_size(MAIN_LANE) == 2).await;
    tokio::time::advance(Duration::from_millis(6)).await;
    open.send(()).unwrap();
    assert_eq!(first.await.unwrap(), Ok(1));
    assert_eq!(second.await.unwrap(), Ok(2));
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert!(
        seen[0].0 >= Duration::from_millis(5),
        "waited {:?}",
        seen[0].0
    );
    assert_eq!(seen[0].1, 0);
}

#[tokio::test(start_paused = true)]
async fn a_panicking_on_wait_does_not_stop_the_pump() {
    let queue = CommandQueue::new();
    let (open, first) = gated(&queue, MAIN_LANE, 1, EnqueueOptions::default());
    until(|| queue.queue_size(MAIN_LANE) == 1).await;
    let options = EnqueueOptions {
        warn_after: Duration::from_millis(1),
        on_wait: Some(Arc::new(|_, _| panic!("callback failed"))),
        abort: None,
    };
    let q = queue.clone();
    let second =
        tokio::spawn(async move { q.enqueue_with(MAIN_LANE, || async { 2u32 }, options).await });
    until(|| queue.queue_size(MAIN_LANE) == 2).await;
    tokio::time::advance(Duration::from_millis(2)).await;
    open.send(()).unwrap();
    assert_eq!(first.await.unwrap(), Ok(1));
    assert_eq!(second.await.unwrap(), Ok(2));
    assert_eq!(queue.queue_size(MAIN_LANE), 0);
}

#[tokio::test]
async fn clear_rejects_queued_tasks_only() {
    let queue = CommandQueue::new();
    let (open, active) = gated(&queue, MAIN_LANE, 1, EnqueueOptions::default());
    until(|| queue.queue_size(MAIN_LANE) == 1).await;
    let (_never, queued) = gated(&queue, MAIN_LANE, 2, EnqueueOptions::default());
    until(|| queue.queue_size(MAIN_LANE) == 2).await;
    assert_eq!(queue.clear(MAIN_LANE), 1);
    assert_eq!(
        queued.await.unwrap(),
        Err(LaneError::Cleared {
            lane: MAIN_LANE.into()
        })
    );
    open.send(()).unwrap();
    assert_eq!(active.await.unwrap(), Ok(1));
    assert_eq!(
        LaneError::Cleared { lane: "x".into() }.to_string(),
        "Command lane \"x\" cleared"
    );
}

#[tokio::test]
async fn draining_refuses_new_tasks_but_finishes_active_ones_until_reset() {
    let queue = CommandQueue::new();
    let (open, active) = gated(&queue, MAIN_LANE, 1, EnqueueOptions::default());
    until(|| queue.queue_size(MAIN_LANE) == 1).await;
    queue.mark_draining();
    let refused = queue.enqueue(MAIN_LANE, || async { 2u32 }).await;
    assert_eq!(refused, Err(LaneError::Draining));
    assert_eq!(
        LaneError::Draining.to_string(),
        "Gateway is draining for restart; new tasks are not accepted"
    );
    open.send(()).unwrap();
    assert_eq!(active.await.unwrap(), Ok(1));
    queue.reset_all();
    assert!(!queue.is_draining());
    assert_eq!(queue.enqueue(MAIN_LANE, || async { 3u32 }).await, Ok(3));
}

#[tokio::test]
async fn a_cancelled_token_refuses_the_task_before_it_is_queued() {
    let queue = CommandQueue::new();
    let token = CancellationToken::new();
    token.cancel();
    let options = EnqueueOptions {
        abort: Some(token),
        ..EnqueueOptions::default()
    };
    let ran = Arc::new(AtomicUsize::new(0));
    let ran2 = ran.clone();
    let result = queue
        .enqueue_with(
            MAIN_LANE,
            move || async move { ran2.fetch_add(1, Ordering::SeqCst) },
            options,
        )
        .await;
    assert_eq!(
        result,
        Err(LaneError::LaneAborted {
            lane: MAIN_LANE.into()
        })
    );
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    assert_eq!(queue.queue_size(MAIN_LANE), 0);
}

#[tokio::test]
async fn aborting_a_queued_task_removes_only_that_one() {
    let queue = CommandQueue::new();
    let (open, first) = gated(&queue, MAIN_LANE, 1, EnqueueOptions::default());
    until(|| queue.queue_size(MAIN_LANE) == 1).await;
    let token = CancellationToken::new();
    let with_token = EnqueueOptions {
        abort: Some(token.clone()),
        ..EnqueueOptions::default()
    };
    let (open2, second) = gated(&queue, MAIN_LANE, 2, with_token);
    until(|| queue.queue_size(MAIN_LANE) == 2).await;
    let (open3, third) = gated(&queue, MAIN_LANE, 3, EnqueueOptions::default());
    until(|| queue.queue_size(MAIN_LANE) == 3).await;
    token.cancel();
    let aborted = second.await.unwrap();
    assert_eq!(
        aborted,
        Err(LaneError::LaneAborted {
            lane: "main".into()
        })
    );
    assert_eq!(
        aborted.unwrap_err().to_string(),
        "Command in lane \"main\" aborted while queued"
    );
    assert_eq!(queue.queue_size(MAIN_LANE), 2);
    drop(open2);
    open.send(()).unwrap();
    open3.send(()).unwrap();
    assert_eq!(first.await.unwrap(), Ok(1));
    assert_eq!(third.await.unwrap(), Ok(3));
}

#[tokio::test]
async fn aborting_after_start_has_no_effect() {
    let queue = CommandQueue::new();
    let token = CancellationToken::new();
    let options = EnqueueOptions {
        abort: Some(token.clone()),
        ..EnqueueOptions::default()
    };
    let (open, task) = gated(&queue, MAIN_LANE, 7, options);
    until(|| queue.active_count() == 1).await;
    token.cancel();
    tokio::task::yield_now().await;
    open.send(()).unwrap();
    assert_eq!(task.await.unwrap(), Ok(7));
}

#[tokio::test]
async fn wait_for_active_reports_not_drained_while_a_task_runs() {
    let queue = CommandQueue::new();
    let (open, task) = gated(&queue, MAIN_LANE, 1, EnqueueOptions::default());
    until(|| queue.active_count() == 1).await;
    assert_eq!(
        queue.wait_for_active(Duration::ZERO).await,
        Drained { drained: false }
    );
    open.send(()).unwrap();
    assert_eq!(task.await.unwrap(), Ok(1));
    assert_eq!(
        queue.wait_for_active(Duration::ZERO).await,
        Drained { drained: true }
    );
}

#[tokio::test(start_paused = true)]
async fn wait_for_active_ignores_tasks_started_later() {
    let queue = CommandQueue::new();
    let (open, first) = gated(&queue, MAIN_LANE, 1, EnqueueOptions::default());
    until(|| queue.active_count() == 1).await;
    let q = queue.clone();
    let waiter = tokio::spawn(async move { q.wait_for_active(Duration::from_secs(5)).await });
    tokio::task::yield_now().await;
    let (_later, _second) = gated(&queue, "cron", 2, EnqueueOptions::default());
    until(|| queue.active_count() == 2).await;
    open.send(()).unwrap();
    assert_eq!(first.await.unwrap(), Ok(1));
    assert_eq!(waiter.await.unwrap(), Drained { drained: true });
}

#[tokio::test]
async fn concurrency_limit_is_at_least_one_and_allows_parallel_tasks() {
    let queue = CommandQueue::new();
    queue.set_concurrency("cron", 0);
    let (open_a, a) = gated(&queue, "cron", 1, EnqueueOptions::default());
    let (open_b, b) = gated(&queue, "cron", 2, EnqueueOptions::default());
    until(|| queue.queue_size("cron") == 2).await;
    assert_eq!(queue.active_count(), 1);
    queue.set_concurrency("cron", 2);
    assert_eq!(queue.active_count(), 2);
    open_b.send(()).unwrap();
    open_a.send(()).unwrap();
    assert_eq!((a.await.unwrap(), b.await.unwrap()), (Ok(1), Ok(2)));
}

#[tokio::test]
async fn a_panicking_task_errors_and_frees_its_lane() {
    let queue = CommandQueue::new();
    let lane = resolve_session_lane("agent:main:x");
    let result = queue
        .enqueue(&lane, || async {
            if true {
                panic!("boom");
            }
            1u32
        })
        .await;
    assert_eq!(
        result,
        Err(LaneError::Panicked {
            lane: lane.clone(),
            message: "boom".into()
        })
    );
    assert_eq!(queue.enqueue(&lane, || async { 2u32 }).await, Ok(2));
}

#[tokio::test]
async fn idle_session_lanes_are_dropped() {
    let queue = CommandQueue::new();
    for i in 0..1000 {
        let lane = resolve_session_lane(&format!("agent:main:peer{i}"));
        assert_eq!(queue.enqueue(&lane, move || async move { i }).await, Ok(i));
    }
    until(|| queue.lane_count() == 0).await;
    assert_eq!(queue.total_queue_size(), 0);
}

#[tokio::test]
async fn session_then_global_lane_serialises_one_session_but_not_others() {
    let queue = CommandQueue::new();
    queue.set_concurrency(MAIN_LANE, 4);
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut handles = Vec::new();
    for (key, n) in [("a", 1), ("a", 2), ("b", 3)] {
        let (q, order) = (queue.clone(), order.clone());
        handles.push(tokio::spawn(async move {
            let inner = q.clone();
            q.enqueue(&resolve_session_lane(key), move || async move {
                inner
                    .enqueue(MAIN_LANE, move || async move {
                        order.lock().unwrap().push(n);
                        n
                    })
                    .await
            })
            .await
        }));
    }
    for h in handles {
        assert!(matches!(h.await.unwrap(), Ok(Ok(_))));
    }
    let order = order.lock().unwrap();
    let pos = |n| order.iter().position(|&x| x == n).unwrap();
    assert!(pos(1) < pos(2), "session a runs in order: {order:?}");
}

#[tokio::test]
async fn reset_all_forgets_active_tasks_and_starts_queued_ones() {
    let queue = CommandQueue::new();
    let (open1, first) = gated(&queue, MAIN_LANE, 1, EnqueueOptions::default());
    until(|| queue.active_count() == 1).await;
    let (open2, second) = gated(&queue, MAIN_LANE, 2, EnqueueOptions::default());
    until(|| queue.queue_size(MAIN_LANE) == 2).await;
    queue.reset_all();
    // The queued task starts although the old one is still running.
    until(|| queue.active_count() == 1 && queue.queue_size(MAIN_LANE) == 1).await;
    let (open3, third) = gated(&queue, MAIN_LANE, 3, EnqueueOptions::default());
    until(|| queue.queue_size(MAIN_LANE) == 2).await;
    // The old generation's completion does not free a slot.
    open1.send(()).unwrap();
    assert_eq!(first.await.unwrap(), Ok(1));
    tokio::task::yield_now().await;
    assert_eq!(queue.queue_size(MAIN_LANE), 2);
    open2.send(()).unwrap();
    assert_eq!(second.await.unwrap(), Ok(2));
    open3.send(()).unwrap();
    assert_eq!(third.await.unwrap(), Ok(3));
}

#[tokio::test]
async fn lane_names_are_trimmed_and_draining_wins_over_a_cancelled_token() {
    let queue = CommandQueue::new();
    assert_eq!(queue.enqueue("  ", || async { 1u32 }).await, Ok(1));
    let (open, task) = gated(&queue, " cron ", 2, EnqueueOptions::default());
    until(|| queue.queue_size("cron") == 1).await;
    assert_eq!(queue.queue_size("  cron"), 1);
    open.send(()).unwrap();
    assert_eq!(task.await.unwrap(), Ok(2));
    queue.mark_draining();
    let token = CancellationToken::new();
    token.cancel();
    let options = EnqueueOptions {
        abort: Some(token),
        ..EnqueueOptions::default()
    };
    let refused = queue
        .enqueue_with(MAIN_LANE, || async { 3u32 }, options)
        .await;
    assert_eq!(refused, Err(LaneError::Draining));
}
