//! D1 (429 → next profile), D1b (a user-locked profile is not rotated), D1c (billing backoff),
//! D9 (silent reply, thinking fallback, timeout copy), and the basics of a run.

use std::sync::Arc;
use std::time::Duration;

use filo_embed::{NullSink, RunError};
use filo_testkit::{Fault, Reply, Turn};
use serde_json::{Value, json};

use super::{Harness, NOW, request_texts};

fn two_profiles() -> Value {
    json!({
        "version": 1,
        "profiles": {
            "openai:p1": {"type": "api_key", "provider": "openai", "key": "sk-one"},
            "openai:p2": {"type": "api_key", "provider": "openai", "key": "sk-two"}
        },
        "usageStats": {"openai:p1": {"lastUsed": 1}, "openai:p2": {"lastUsed": 2}}
    })
}

#[tokio::test]
async fn a_run_answers_saves_the_session_at_its_exact_path_and_reports_usage() {
    let h = Harness::new(vec![Turn::text("Hello from the mock.")], json!({})).await;
    let r = h
        .embedder
        .run(h.params("s1", "hi"), Arc::new(NullSink))
        .await
        .unwrap();
    assert_eq!(r.payloads.len(), 1);
    assert_eq!(r.payloads[0].text.as_deref(), Some("Hello from the mock."));
    let meta = r.meta.agent_meta.unwrap();
    assert_eq!(
        (meta.provider.as_str(), meta.model.as_str()),
        ("openai", "mock-model")
    );
    assert_eq!(r.meta.stop_reason.as_deref(), Some("stop"));
    let req = h.mock.last_request().unwrap();
    assert_eq!(req.header("authorization"), Some("Bearer sk-env"));
    // A reasoning model over Chat Completions gets the system prompt as the developer message.
    let system = &req.body["messages"][0];
    assert_eq!(system["role"], "developer");
    assert!(
        system["content"]
            .as_str()
            .unwrap()
            .starts_with("You are a personal assistant running inside filo."),
        "{system}"
    );
    // The embedded prompt (C27) lists the tools offered, the memory's included, and the runtime.
    let prompt = system["content"].as_str().unwrap();
    for s in [
        "Tool availability (filtered by policy):",
        "- read:",
        "- bash:",
        "- life:",
        "- tobe:",
        "## Safety",
        "## Runtime\nRuntime: agent=main |",
        "model=openai/mock-model",
    ] {
        assert!(prompt.contains(s), "{s:?} in\n{prompt}");
    }
    let text = std::fs::read_to_string(h.session_file("s1")).unwrap();
    assert!(text.contains("Hello from the mock."), "{text}");
    let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(header["id"], "s1", "the header id is the run's session id");
    assert!(
        h.session_file("s1")
            .ends_with("agents/main/sessions/s1.jsonl")
    );
    assert_eq!(
        text.lines()
            .filter(|l| l.contains(r#""role":"user""#))
            .count(),
        1
    );
}

#[tokio::test]
async fn d1_a_rate_limited_profile_cools_down_and_the_next_one_answers() {
    let h = Harness::new(
        vec![Fault::rate_limited(0).into(), Turn::text("ok")],
        json!({}),
    )
    .await;
    h.write_auth_profiles(two_profiles());
    let r = h
        .embedder
        .run(h.params("d1", "hello"), Arc::new(NullSink))
        .await
        .unwrap();
    assert_eq!(r.payloads[0].text.as_deref(), Some("ok"));
    let reqs = h.mock.requests();
    assert_eq!(reqs.len(), 2, "no transport retry: exactly two requests");
    assert_eq!(reqs[0].header("authorization"), Some("Bearer sk-one"));
    assert_eq!(reqs[1].header("authorization"), Some("Bearer sk-two"));
    let store = h.auth_profiles();
    let p1 = &store["usageStats"]["openai:p1"];
    assert_eq!(p1["errorCount"], 1, "{store:#}");
    assert_eq!(p1["failureCounts"]["rate_limit"], 1);
    assert_eq!(p1["cooldownUntil"], NOW + 60_000);
    assert_eq!(store["usageStats"]["openai:p2"]["lastUsed"], NOW);
    assert_eq!(store["lastGood"]["openai"], "openai:p2");
    assert_eq!(
        r.meta.agent_meta.unwrap().profile_id.as_deref(),
        Some("openai:p2")
    );
}

#[tokio::test]
async fn d1d_a_cooled_down_profile_is_used_again_once_its_cooldown_ends() {
    let turns = vec![
        Fault::rate_limited(0).into(),
        Turn::text("ok"),
        Turn::text("inside"),
        Turn::text("after"),
    ];
    let h = Harness::new(turns, json!({})).await;
    h.write_auth_profiles(two_profiles());
    let sink = Arc::new(NullSink);
    h.embedder
        .run(h.params("d1d", "one"), sink.clone())
        .await
        .unwrap();
    // 59 s later p1 is still cooling down: p2 answers without trying p1.
    h.clock.advance(59_000);
    let r = h
        .embedder
        .run(h.params("d1d", "two"), sink.clone())
        .await
        .unwrap();
    assert_eq!(
        r.meta.agent_meta.unwrap().profile_id.as_deref(),
        Some("openai:p2")
    );
    assert_eq!(h.mock.requests().len(), 3);
    // Past the minute p1 is usable again and, used longer ago, goes first.
    h.clock.advance(2_000);
    let r = h
        .embedder
        .run(h.params("d1d", "three"), sink)
        .await
        .unwrap();
    assert_eq!(r.payloads[0].text.as_deref(), Some("after"));
    assert_eq!(
        r.meta.agent_meta.unwrap().profile_id.as_deref(),
        Some("openai:p1")
    );
    let reqs = h.mock.requests();
    assert_eq!(reqs.len(), 4);
    assert_eq!(reqs[3].header("authorization"), Some("Bearer sk-one"));
    let p1 = &h.auth_profiles()["usageStats"]["openai:p1"];
    assert_eq!(p1["lastUsed"], NOW + 61_000, "{p1:#}");
    assert_eq!(p1["errorCount"], 0);
}

/// Another process (another embedder on the same agent directory) put p1 in cooldown after
/// this embedder opened the store: the next run reads the store again and skips p1.
#[tokio::test]
async fn a_cooldown_another_process_recorded_is_honoured_by_the_next_run() {
    let h = Harness::new(vec![Turn::text("from p2")], json!({})).await;
    h.write_auth_profiles(two_profiles());
    // The store is open (and its copy cached) before the other process writes.
    let opened = h.embedder.auth("main").unwrap();
    assert_eq!(opened.order("openai", None), ["openai:p1", "openai:p2"]);
    let mut store = h.auth_profiles();
    store["usageStats"]["openai:p1"]["cooldownUntil"] = json!(NOW + 3_600_000);
    h.write_auth_profiles(store);
    let r = h
        .embedder
        .run(h.params("other", "one"), Arc::new(NullSink))
        .await
        .unwrap();
    assert_eq!(r.payloads[0].text.as_deref(), Some("from p2"));
    assert_eq!(
        r.meta.agent_meta.unwrap().profile_id.as_deref(),
        Some("openai:p2")
    );
    assert_eq!(h.mock.requests().len(), 1, "p1 was not tried");
    assert_eq!(
        h.mock.requests()[0].header("authorization"),
        Some("Bearer sk-two")
    );
}

#[tokio::test]
async fn d1b_a_profile_the_user_chose_is_not_rotated() {
    let h = Harness::new(
        vec![Fault::rate_limited(0).into(), Turn::text("never")],
        json!({}),
    )
    .await;
    h.write_auth_profiles(two_profiles());
    let mut p = h.params("d1b", "hello");
    p.auth_profile = Some(filo_embed::run::params::AuthProfileChoice {
        id: "openai:p1".into(),
        source: filo_embed::run::params::ProfileSource::User,
    });
    let r = h.embedder.run(p, Arc::new(NullSink)).await.unwrap();
    assert_eq!(h.mock.requests().len(), 1);
    let text = r.payloads[0].text.clone().unwrap();
    assert!(r.payloads[0].is_error);
    assert!(text.contains("rate limit"), "{text}");
    let store = h.auth_profiles();
    assert!(
        store["usageStats"]["openai:p2"].get("errorCount").is_none(),
        "{store:#}"
    );
    assert_eq!(store["usageStats"]["openai:p2"]["lastUsed"], 2);
}

#[tokio::test]
async fn d1c_a_billing_failure_disables_the_profile_for_five_hours() {
    let body = r#"{"error":{"message":"payment required"}}"#;
    let h = Harness::new(
        vec![
            super::http(402, Some(body)),
            Turn::text("paid by the other key"),
        ],
        json!({}),
    )
    .await;
    h.write_auth_profiles(two_profiles());
    let r = h
        .embedder
        .run(h.params("d1c", "hello"), Arc::new(NullSink))
        .await
        .unwrap();
    assert_eq!(r.payloads[0].text.as_deref(), Some("paid by the other key"));
    let p1 = &h.auth_profiles()["usageStats"]["openai:p1"];
    assert_eq!(p1["disabledUntil"], NOW + 5 * 3_600_000, "{p1:#}");
    assert_eq!(p1["disabledReason"], "billing");
}

#[tokio::test]
async fn d9a_a_silent_reply_sends_nothing() {
    let h = Harness::new(vec![Turn::text("NO_REPLY")], json!({})).await;
    let sink = Arc::new(super::Recorder::default());
    let r = h
        .embedder
        .run(h.params("d9a", "hi"), sink.clone())
        .await
        .unwrap();
    assert!(r.payloads.is_empty(), "{:?}", r.payloads);
    assert!(sink.blocks().is_empty());
}

#[tokio::test]
async fn d9b_the_supported_thinking_level_is_retried() {
    let body = r#"{"error":{"message":"Supported values are: \"high\", \"medium\""}}"#;
    let h = Harness::new(
        vec![super::http(400, Some(body)), Turn::text("thought hard")],
        json!({}),
    )
    .await;
    let mut p = h.params("d9b", "think");
    p.think_level = Some(filo_ai::ThinkingLevel::Low);
    // A reasoning model, so the level reaches the request.
    let r = h.embedder.run(p, Arc::new(NullSink)).await.unwrap();
    assert_eq!(r.payloads[0].text.as_deref(), Some("thought hard"));
    let reqs = h.mock.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[1].body["reasoning_effort"], "high", "{}", reqs[1].body);
}

#[tokio::test]
async fn d9c_a_run_that_times_out_says_so_and_blames_no_profile() {
    let stall = Fault::Stall {
        after_events: 1,
        reply: Reply::text("too late"),
        stall: Duration::from_secs(30),
    };
    let h = Harness::new(vec![stall.into()], json!({})).await;
    h.write_auth_profiles(json!({
        "version": 1,
        "profiles": {"openai:p1": {"type": "api_key", "provider": "openai", "key": "sk-one"}}
    }));
    let mut p = h.params("d9c", "hi");
    p.timeout = Some(Duration::from_millis(300));
    let r = h.embedder.run(p, Arc::new(NullSink)).await.unwrap();
    assert_eq!(
        r.payloads[0].text.as_deref(),
        Some(
            "Request timed out before a response was generated. Please try again, or increase `agents.defaults.timeoutSeconds` in your config."
        )
    );
    assert!(r.payloads[0].is_error);
    assert!(r.meta.aborted);
    let store = h.auth_profiles();
    assert!(
        store["usageStats"]["openai:p1"].get("errorCount").is_none(),
        "{store:#}"
    );
}

#[tokio::test]
async fn an_unknown_model_is_a_failover_error() {
    let h = Harness::new(vec![], json!({})).await;
    let mut p = h.params("x", "hi");
    p.provider = Some("openai".into());
    p.model = Some("nope".into());
    let err = h.embedder.run(p, Arc::new(NullSink)).await.unwrap_err();
    assert!(
        matches!(err, RunError::Failover(ref f) if f.message == "Unknown model: openai/nope"),
        "{err}"
    );
    assert!(h.mock.requests().is_empty());
    let _ = request_texts(&json!({}));
}

fn cooling(reason: &str) -> Value {
    json!({"cooldownUntil": NOW + 600_000, "errorCount": 2, "failureCounts": {reason: 2}, "lastFailureAt": NOW - 1_000})
}

#[tokio::test]
async fn d2_when_every_profile_cools_down_the_fallback_model_answers() {
    let config = json!({"agents": {"defaults": {"model": {
        "primary": "openai/mock-model", "fallbacks": ["mock2/other-model"]}}}});
    let h = Harness::with_env(
        vec![Turn::text("from the fallback")],
        config,
        &[("OPENAI_API_KEY", "sk-env"), ("MOCK2_KEY", "sk-mock2")],
    )
    .await;
    let mut store = two_profiles();
    store["usageStats"]["openai:p1"] = cooling("rate_limit");
    store["usageStats"]["openai:p2"] = cooling("rate_limit");
    h.write_auth_profiles(store);
    let out = h
        .embedder
        .run_with_fallback(h.params("d2", "hello"), Arc::new(NullSink), None)
        .await
        .unwrap();
    assert_eq!(
        (out.provider.as_str(), out.model.as_str()),
        ("mock2", "other-model")
    );
    assert_eq!(
        out.result.payloads[0].text.as_deref(),
        Some("from the fallback")
    );
    assert_eq!(out.attempts.len(), 1);
    assert_eq!(
        out.attempts[0].reason,
        filo_embed::classify::FailoverReason::RateLimit
    );
    assert_eq!(
        (
            out.attempts[0].provider.as_str(),
            out.attempts[0].model.as_str()
        ),
        ("openai", "mock-model")
    );
    assert!(out.notice.is_none());
    let reqs = h.mock.requests();
    assert_eq!(reqs.len(), 1, "the cooling primary was not called");
    assert_eq!(reqs[0].header("authorization"), Some("Bearer sk-mock2"));
    assert_eq!(reqs[0].body["model"], "other-model");
}

#[tokio::test]
async fn d2b_an_unknown_model_falls_back_with_a_notice_and_all_failing_names_each() {
    let config = json!({"agents": {"defaults": {"model": {
        "primary": "openai/mock-model", "fallbacks": ["mock2/other-model"]}}}});
    let h = Harness::with_env(
        vec![
            Turn::text("the fallback answers"),
            super::http(401, Some(r#"{"error":{"message":"invalid api key"}}"#)),
        ],
        config,
        &[("OPENAI_API_KEY", "sk-env"), ("MOCK2_KEY", "sk-mock2")],
    )
    .await;
    let mut p = h.params("d2b", "hello");
    p.provider = Some("openai".into());
    p.model = Some("no-such-model".into());
    let out = h
        .embedder
        .run_with_fallback(p, Arc::new(NullSink), None)
        .await
        .unwrap();
    // The requested provider is the primary's, so the configured fallbacks come first.
    assert_eq!(
        (out.provider.as_str(), out.model.as_str()),
        ("mock2", "other-model")
    );
    assert_eq!(
        out.result.payloads[0].text.as_deref(),
        Some("the fallback answers")
    );
    assert_eq!(
        out.notice.as_deref(),
        Some("Model \"openai/no-such-model\" not found. Fell back to \"mock2/other-model\".")
    );
    assert_eq!(
        out.attempts[0].reason,
        filo_embed::classify::FailoverReason::ModelNotFound
    );
    // An explicit list with a failing candidate: every failure is named.
    let mut p = h.params("d2b", "again");
    p.provider = Some("openai".into());
    p.model = Some("no-such-model".into());
    let err = h
        .embedder
        .run_with_fallback(
            p,
            Arc::new(NullSink),
            Some(vec!["mock2/other-model".into()]),
        )
        .await
        .unwrap_err();
    let RunError::AllModelsFailed { message, attempts } = err else {
        panic!("{err}")
    };
    assert_eq!(attempts.len(), 2);
    assert!(message.starts_with("All models failed (2): openai/no-such-model: Unknown model: openai/no-such-model (model_not_found) | mock2/other-model: "), "{message}");
    assert!(message.ends_with("(auth)"), "{message}");
}

#[tokio::test]
async fn a_broken_auth_profiles_file_stops_the_run_names_the_file_and_is_left_alone() {
    let h = Harness::new(vec![Turn::text("never sent")], json!({})).await;
    std::fs::create_dir_all(h.agent_dir()).unwrap();
    let file = h.agent_dir().join("auth-profiles.json");
    std::fs::write(&file, r#"{"version": 1, "profiles": {"openai:p1": {"type": "api_key", "provider": "openai", "key": 42}}}"#).unwrap();
    let before = std::fs::read(&file).unwrap();
    let err = h
        .embedder
        .run(h.params("broken", "hi"), Arc::new(NullSink))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("auth-profiles.json"), "{text}");
    assert!(text.contains("openai:p1"), "names the key: {text}");
    assert!(h.mock.requests().is_empty());
    assert_eq!(std::fs::read(&file).unwrap(), before);
}

#[tokio::test]
async fn a_session_id_that_would_escape_the_state_directory_is_refused() {
    let h = Harness::new(vec![Turn::text("never")], json!({})).await;
    for id in ["../../etc/passwd", "a/b", ".."] {
        let err = h
            .embedder
            .run(h.params(id, "hi"), Arc::new(NullSink))
            .await
            .unwrap_err();
        assert!(matches!(err, RunError::Session(_)), "{id}: {err}");
    }
    assert!(h.mock.requests().is_empty());
    assert!(!h.dir.path().join("etc").exists());
}

#[tokio::test]
async fn an_auth_state_that_cannot_be_written_is_named_in_the_warnings() {
    let h = Harness::new(
        vec![Fault::rate_limited(0).into(), Turn::text("ok")],
        json!({}),
    )
    .await;
    h.write_auth_profiles(two_profiles());
    // The lock file's place is taken by a directory: every update of the state fails.
    std::fs::create_dir(h.agent_dir().join("auth-profiles.json.lock")).unwrap();
    let before = std::fs::read(h.agent_dir().join("auth-profiles.json")).unwrap();
    let r = h
        .embedder
        .run(h.params("nowrite", "hello"), Arc::new(NullSink))
        .await
        .unwrap();
    assert_eq!(r.payloads[0].text.as_deref(), Some("ok"));
    let w = &r.meta.warnings;
    assert!(
        w.iter()
            .any(|w| w.starts_with("the failure of auth profile openai:p1 was not recorded")),
        "{w:?}"
    );
    assert!(
        w.iter()
            .any(|w| w.starts_with("the use of auth profile openai:p2 was not recorded")),
        "{w:?}"
    );
    assert_eq!(
        std::fs::read(h.agent_dir().join("auth-profiles.json")).unwrap(),
        before
    );
}
