//! D6 (steer and abort through the registry) and D7 (session and global lanes, draining).

use std::sync::Arc;
use std::time::Duration;

use filo_embed::{NullSink, RunError};
use filo_testkit::{Fault, Reply, Turn};
use serde_json::json;

use super::{Harness, request_texts};

async fn wait_until(mut cond: impl FnMut() -> bool) {
    for _ in 0..500 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("condition not reached");
}

#[tokio::test]
async fn d6_a_message_queued_into_a_running_session_reaches_the_next_request() {
    let stall = Fault::Stall {
        after_events: 2,
        reply: Reply::text("working on it"),
        stall: Duration::from_millis(400),
    };
    let h = Harness::new(vec![stall.into(), Turn::text("checked X too")], json!({})).await;
    let e = h.embedder.clone();
    let run = tokio::spawn({
        let p = h.params("d6", "check the logs");
        async move { e.run(p, Arc::new(NullSink)).await }
    });
    wait_until(|| h.embedder.runs().is_streaming("d6")).await;
    assert!(h.embedder.runs().queue_message("d6", "also check X"));
    let r = run.await.unwrap().unwrap();
    assert_eq!(
        r.payloads.last().and_then(|p| p.text.as_deref()),
        Some("checked X too")
    );
    let reqs = h.mock.requests();
    assert_eq!(reqs.len(), 2);
    let texts = request_texts(&reqs[1].body);
    assert!(
        texts.contains(&("user".into(), "also check X".into())),
        "{texts:?}"
    );
    assert!(!h.embedder.runs().is_active("d6"));
}

#[tokio::test]
async fn d6_aborting_through_the_registry_ends_the_run_and_frees_its_lane() {
    let stall = Fault::Stall {
        after_events: 2,
        reply: Reply::text("never finished"),
        stall: Duration::from_secs(30),
    };
    let h = Harness::new(vec![stall.into(), Turn::text("second run")], json!({})).await;
    let e = h.embedder.clone();
    let run = tokio::spawn({
        let p = h.params("d6b", "long task");
        async move { e.run(p, Arc::new(NullSink)).await }
    });
    // The request is in flight (the mock holds its stream), not only the run set up.
    wait_until(|| h.embedder.runs().is_streaming("d6b") && h.mock.requests().len() == 1).await;
    assert!(h.embedder.runs().abort("d6b"));
    assert!(
        h.embedder
            .runs()
            .wait_for_end("d6b", Duration::from_secs(10))
            .await
    );
    let r = run.await.unwrap().unwrap();
    assert!(r.meta.aborted);
    // The lane is free: the next run of the same session starts and answers.
    let next = h
        .embedder
        .run(h.params("d6b", "again"), Arc::new(NullSink))
        .await
        .unwrap();
    assert_eq!(next.payloads[0].text.as_deref(), Some("second run"));
}

#[tokio::test]
async fn d7_runs_of_one_session_complete_in_submission_order() {
    let h = Harness::new(
        vec![Turn::text("one"), Turn::text("two"), Turn::text("three")],
        json!({}),
    )
    .await;
    let mut tasks = Vec::new();
    for prompt in ["first", "second", "third"] {
        let e = h.embedder.clone();
        let p = h.params("d7", prompt);
        tasks.push(tokio::spawn(
            async move { e.run(p, Arc::new(NullSink)).await },
        ));
        tokio::task::yield_now().await;
    }
    let mut answers = Vec::new();
    for t in tasks {
        answers.push(t.await.unwrap().unwrap().payloads[0].text.clone().unwrap());
    }
    assert_eq!(answers, vec!["one", "two", "three"]);
    let reqs = h.mock.requests();
    let last_user: Vec<String> = reqs
        .iter()
        .map(|r| request_texts(&r.body).last().unwrap().1.clone())
        .collect();
    assert_eq!(last_user, vec!["first", "second", "third"]);
    // Each run saw the previous exchange.
    assert!(request_texts(&reqs[2].body).contains(&("assistant".into(), "two".into())));
}

#[tokio::test]
async fn d7_the_global_lane_bounds_concurrency_and_draining_refuses_new_runs() {
    let slow = |t: &str| -> Turn {
        Fault::Stall {
            after_events: 1,
            reply: Reply::text(t),
            stall: Duration::from_millis(60),
        }
        .into()
    };
    let turns: Vec<Turn> = (0..20).map(|i| slow(&format!("answer {i}"))).collect();
    let h = Harness::new(turns, json!({"agents": {"defaults": {"maxConcurrent": 4}}})).await;
    let peak = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let (e, peak, stop) = (h.embedder.clone(), peak.clone(), stop.clone());
        tokio::spawn(async move {
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                peak.fetch_max(e.runs().active_count(), std::sync::atomic::Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        })
    };
    let mut tasks = Vec::new();
    for i in 0..20 {
        let e = h.embedder.clone();
        let p = h.params(&format!("k{i}"), "go");
        tasks.push(tokio::spawn(
            async move { e.run(p, Arc::new(NullSink)).await },
        ));
    }
    for t in tasks {
        assert!(t.await.unwrap().unwrap().payloads[0].text.is_some());
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    watcher.await.unwrap();
    let peak = peak.load(std::sync::atomic::Ordering::SeqCst);
    assert!((1..=4).contains(&peak), "peak {peak}");
    assert_eq!(h.mock.requests().len(), 20);
    assert_eq!(h.embedder.runs().active_count(), 0);
    h.embedder.lanes().mark_draining();
    let refused = h
        .embedder
        .run(h.params("late", "hi"), Arc::new(NullSink))
        .await
        .unwrap_err();
    assert!(matches!(refused, RunError::Draining), "{refused}");
}

#[tokio::test]
async fn a_session_another_process_is_writing_waits_then_refuses_and_loses_nothing() {
    let h = Harness::new(vec![Turn::text("after the lock")], json!({})).await;
    let file = h.session_file("locked");
    // Another filo (a second gateway, the CLI) holds the session for a turn.
    let held = filo_session::SessionLock::acquire(&file, Duration::ZERO, 1).unwrap();
    let mut p = h.params("locked", "hello");
    p.timeout = Some(Duration::from_millis(200));
    let err = h.embedder.run(p, Arc::new(NullSink)).await.unwrap_err();
    assert!(matches!(err, RunError::Locked(_)), "{err}");
    assert!(
        err.to_string()
            .contains("another process is writing this session"),
        "{err}"
    );
    assert!(h.mock.requests().is_empty(), "nothing was sent");
    assert!(!file.exists(), "nothing was written");
    drop(held);
    let r = h
        .embedder
        .run(h.params("locked", "hello"), Arc::new(NullSink))
        .await
        .unwrap();
    assert_eq!(r.payloads[0].text.as_deref(), Some("after the lock"));
}

#[tokio::test]
async fn shutdown_lets_active_runs_finish_within_the_grace_then_aborts_and_saves_them() {
    let finishes = Fault::Stall {
        after_events: 2,
        reply: Reply::text("finished in time"),
        stall: Duration::from_millis(200),
    };
    let too_slow = Fault::Stall {
        after_events: 2,
        reply: Reply::text("too slow"),
        stall: Duration::from_secs(30),
    };
    let h = Harness::new(vec![finishes.into(), too_slow.into()], json!({})).await;
    let start = |id: &'static str| {
        let e = h.embedder.clone();
        let p = h.params(id, "work");
        tokio::spawn(async move { e.run(p, Arc::new(NullSink)).await })
    };
    // Within the grace: the run finishes, its session is saved, and nothing new starts.
    let run = start("graceful");
    wait_until(|| h.mock.requests().len() == 1).await;
    h.embedder.shutdown(Duration::from_secs(10)).await;
    let r = run.await.unwrap().unwrap();
    assert_eq!(r.payloads[0].text.as_deref(), Some("finished in time"));
    assert!(!r.meta.aborted);
    assert_eq!(h.embedder.cached_sessions(), 0, "idle sessions are let go");
    let refused = h
        .embedder
        .run(h.params("late", "hi"), Arc::new(NullSink))
        .await
        .unwrap_err();
    assert!(matches!(refused, RunError::Draining), "{refused}");
    let store = filo_dag::Store::open(h.dir.path().join("home/.playfilo/playfilo.db")).unwrap();
    assert!(
        store.get_ref("PI_HEAD:graceful").unwrap().is_some(),
        "the memory was flushed"
    );
}

#[tokio::test]
async fn shutdown_past_the_grace_aborts_the_run_and_keeps_what_it_had() {
    let too_slow = Fault::Stall {
        after_events: 2,
        reply: Reply::text("too slow"),
        stall: Duration::from_secs(30),
    };
    let h = Harness::new(vec![too_slow.into()], json!({})).await;
    let e = h.embedder.clone();
    let p = h.params("slow", "work");
    let run = tokio::spawn(async move { e.run(p, Arc::new(NullSink)).await });
    wait_until(|| h.embedder.runs().is_streaming("slow") && h.mock.requests().len() == 1).await;
    h.embedder.shutdown(Duration::from_millis(100)).await;
    let r = tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .expect("ended by the shutdown")
        .unwrap()
        .unwrap();
    assert!(r.meta.aborted);
    let file = std::fs::read_to_string(h.session_file("slow")).unwrap();
    assert!(file.contains(r#""text":"work""#), "the prompt was saved");
}
