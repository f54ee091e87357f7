//! D3 (context overflow → compaction → retry) and D8 (repair of a crashed transcript).

use std::sync::Arc;

use filo_embed::NullSink;
use filo_embed::run::params::RunErrorKind;
use filo_testkit::Turn;
use serde_json::json;

use super::{Harness, request_texts};

const OVERFLOW: &str = r#"{"error":{"message":"prompt is too long: 208423 tokens > 200000 maximum","type":"invalid_request_error"}}"#;

fn overflow() -> Turn {
    super::http(400, Some(OVERFLOW))
}

/// A pi session file with `turns` long exchanges (enough history to compact).
fn seed_session(path: &std::path::Path, id: &str, turns: usize) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut lines = vec![
        json!({"type": "session", "version": 3, "id": id,
        "timestamp": "2026-12-01T10:00:00.000Z", "cwd": "/tmp"})
        .to_string(),
    ];
    let mut parent: Option<String> = None;
    for i in 0..turns {
        for (role, text) in [
            ("user", format!("old question {i} {}", "q".repeat(6000))),
            ("assistant", format!("old answer {i} {}", "a".repeat(6000))),
        ] {
            let eid = format!("e{i}{}", &role[..1]);
            let message = if role == "user" {
                json!({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1})
            } else {
                json!({"role": "assistant", "content": [{"type": "text", "text": text}],
                    "api": "openai-completions", "provider": "openai", "model": "mock-model",
                    "usage": {"input": 10, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 20,
                        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                    "stopReason": "stop", "timestamp": 2})
            };
            lines.push(
                json!({"type": "message", "id": eid, "parentId": parent,
                "timestamp": "2026-12-01T10:00:01.000Z", "message": message})
                .to_string(),
            );
            parent = Some(eid);
        }
    }
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

#[tokio::test]
async fn d3_an_overflow_is_compacted_and_the_turn_retried() {
    let h = Harness::new(
        vec![
            overflow(),
            Turn::text("## Goal\nThe summary of old talk."),
            Turn::text("the answer"),
        ],
        json!({}),
    )
    .await;
    seed_session(&h.session_file("d3"), "d3", 12);
    let r = h
        .embedder
        .run(h.params("d3", "new question"), Arc::new(NullSink))
        .await
        .unwrap();
    assert_eq!(r.payloads.len(), 1, "{:?}", r.payloads);
    assert_eq!(r.payloads[0].text.as_deref(), Some("the answer"));
    assert_eq!(r.meta.agent_meta.unwrap().compaction_count, Some(1));
    let file = std::fs::read_to_string(h.session_file("d3")).unwrap();
    assert_eq!(
        file.lines()
            .filter(|l| l.contains(r#""type":"compaction""#))
            .count(),
        1
    );
    let reqs = h.mock.requests();
    assert_eq!(reqs.len(), 3);
    let third = reqs[2].body.to_string();
    assert!(third.contains("The summary of old talk."));
    assert!(
        !third.contains("old question 0 "),
        "the dropped messages are gone"
    );
}

#[tokio::test]
async fn d3b_an_overflow_that_never_ends_gives_the_overflow_copy() {
    // Each attempt overflows, compacts itself once (the summary) and overflows again; the loop
    // retries three times and then gives up.
    let mut turns = vec![overflow(), Turn::text("a summary")];
    turns.extend((0..20).map(|_| overflow()));
    let h = Harness::new(turns, json!({})).await;
    seed_session(&h.session_file("d3b"), "d3b", 12);
    let r = h
        .embedder
        .run(h.params("d3b", "new question"), Arc::new(NullSink))
        .await
        .unwrap();
    assert_eq!(
        r.payloads[0].text.as_deref(),
        Some(
            "Context overflow: prompt too large for the model. Try /reset (or /new) to start a fresh session, or use a larger-context model."
        )
    );
    // pi 1.6 no longer summarises a history that fits in `keepRecentTokens` ("Nothing to compact
    // (session too small)", where 0.73 asked the model and that request overflowed too, a
    // compaction failure): once the first compaction has summarised the old messages, nothing is
    // left to compact and the run ends on the overflow itself, with the same copy.
    assert_eq!(
        r.meta.error.map(|e| e.kind),
        Some(RunErrorKind::ContextOverflow)
    );
    let prompts = h
        .mock
        .requests()
        .iter()
        .filter(|q| {
            super::request_texts(&q.body)
                .last()
                .is_some_and(|(_, t)| t == "new question")
        })
        .count();
    assert!(
        prompts <= 1 + 1 + 3,
        "bounded by the compaction attempts: {prompts}"
    );
}

#[tokio::test]
async fn d8_a_crashed_transcript_is_repaired_before_the_prompt() {
    let h = Harness::new(vec![Turn::text("recovered")], json!({})).await;
    let path = h.session_file("d8");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let lines = [
        json!({"type": "session", "version": 3, "id": "d8", "timestamp": "2026-12-01T10:00:00.000Z", "cwd": "/tmp"}),
        json!({"type": "message", "id": "u1", "parentId": null, "timestamp": "2026-12-01T10:00:01.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": "read it"}], "timestamp": 1}}),
        json!({"type": "message", "id": "a1", "parentId": "u1", "timestamp": "2026-12-01T10:00:02.000Z",
            "message": {"role": "assistant", "content": [{"type": "toolCall", "id": "call_9", "name": "read", "arguments": {"path": "x"}}],
                "api": "openai-completions", "provider": "openai", "model": "mock-model",
                "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                "stopReason": "toolUse", "timestamp": 2}}),
        json!({"type": "message", "id": "u2", "parentId": "a1", "timestamp": "2026-12-01T10:00:03.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": "are you there?"}], "timestamp": 3}}),
    ];
    let text: String = lines.iter().map(|l| l.to_string() + "\n").collect();
    std::fs::write(&path, text).unwrap();
    let r = h
        .embedder
        .run(h.params("d8", "hello again"), Arc::new(NullSink))
        .await
        .unwrap();
    assert_eq!(r.payloads[0].text.as_deref(), Some("recovered"));
    let body = &h.mock.last_request().unwrap().body;
    let msgs = body["messages"].as_array().unwrap();
    let call = msgs
        .iter()
        .position(|m| m["tool_calls"].is_array())
        .expect("the call is sent");
    assert_eq!(msgs[call + 1]["role"], "tool");
    assert!(
        msgs[call + 1]["content"]
            .to_string()
            .contains("missing tool result"),
        "{}",
        msgs[call + 1]
    );
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert!(
        !roles.windows(2).any(|w| w == ["user", "user"]),
        "{roles:?}"
    );
    let texts = request_texts(body);
    assert!(
        !texts.iter().any(|(_, t)| t == "are you there?"),
        "the orphaned message was branched away"
    );
    // The file is still a valid session: it opens and its leaf is the new answer.
    let m = filo_session::SessionManager::open(&path, "/tmp").unwrap();
    assert!(m.warnings().is_empty());
    let leaf = m.leaf_entry().unwrap();
    assert!(format!("{leaf:?}").contains("recovered"));
}

#[tokio::test]
async fn a_cached_session_serves_the_next_turn_until_another_writer_touches_its_file() {
    let h = Harness::new(
        vec![
            Turn::text("first answer"),
            Turn::text("second answer"),
            Turn::text("third answer"),
            super::http(500, None),
            Turn::text("fifth answer"),
        ],
        json!({}),
    )
    .await;
    let run = |prompt: &'static str| {
        let e = h.embedder.clone();
        let p = h.params("c1", prompt);
        async move { e.run(p, Arc::new(NullSink)).await.unwrap() }
    };
    run("one").await;
    assert_eq!(h.embedder.cached_sessions(), 1, "kept after a clean turn");
    run("two").await;
    let texts = request_texts(&h.mock.requests()[1].body);
    assert!(
        texts.contains(&("assistant".into(), "first answer".into())),
        "{texts:?}"
    );
    // Another program continues the session in the file (as pi would): the cache must not
    // hide it.
    let path = h.session_file("c1");
    let file = std::fs::read_to_string(&path).unwrap();
    let last: serde_json::Value = serde_json::from_str(file.lines().last().unwrap()).unwrap();
    let line = json!({"type": "message", "id": "ext00001", "parentId": last["id"],
        "timestamp": "2026-12-01T10:00:00.000Z",
        "message": {"role": "user", "content": [{"type": "text", "text": "written elsewhere"}], "timestamp": 5}});
    let answer = json!({"type": "message", "id": "ext00002", "parentId": "ext00001",
        "timestamp": "2026-12-01T10:00:01.000Z",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "answered elsewhere"}],
            "api": "openai-completions", "provider": "openai", "model": "mock-model",
            "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
            "stopReason": "stop", "timestamp": 6}});
    std::fs::write(&path, format!("{file}{line}\n{answer}\n")).unwrap();
    run("three").await;
    let texts = request_texts(&h.mock.requests()[2].body);
    assert!(
        texts.contains(&("user".into(), "written elsewhere".into())),
        "{texts:?}"
    );
    assert!(
        texts.contains(&("assistant".into(), "answered elsewhere".into())),
        "{texts:?}"
    );
    // A turn that ends in an error is not kept.
    let failed = run("four").await;
    assert!(failed.payloads[0].is_error);
    assert_eq!(h.embedder.cached_sessions(), 0);
    run("five").await;
    let saved = std::fs::read_to_string(&path).unwrap();
    for t in [
        "one",
        "two",
        "three",
        "four",
        "five",
        "fifth answer",
        "answered elsewhere",
    ] {
        assert!(saved.contains(&format!("\"{t}\"")), "{t} saved");
    }
}

/// A tool whose result is long (a big file read, a noisy command).
struct Noisy;

impl filo_agent::AgentTool for Noisy {
    fn name(&self) -> &str {
        "noisy"
    }
    fn label(&self) -> &str {
        "Noisy"
    }
    fn description(&self) -> &str {
        "Prints a lot"
    }
    fn parameters(&self) -> serde_json::Value {
        json!({"type": "object", "properties": {}})
    }
    fn execute(
        &self,
        _ctx: filo_agent::ToolCallContext,
    ) -> futures::future::BoxFuture<'_, Result<filo_agent::ToolOutput, filo_agent::ToolError>> {
        Box::pin(async {
            Ok(filo_agent::ToolOutput::text(format!(
                "BEGIN{}END",
                "x".repeat(20_000)
            )))
        })
    }
}

#[tokio::test]
async fn after_the_prompt_cache_expires_old_tool_results_are_pruned_from_the_context_only() {
    let call = filo_testkit::Reply::text("Looking.").with_tool_call("call_1", "noisy", json!({}));
    let turns = vec![
        call.into(),
        Turn::text("done"),
        Turn::text("two"),
        Turn::text("three"),
    ];
    let config = json!({"agents": {"defaults": {
        "model": {"primary": "anthropic/claude-mock"},
        "contextPruning": {"mode": "cache-ttl", "ttl": "1m", "keepLastAssistants": 1,
            "softTrimRatio": 0, "hardClearRatio": 0, "minPrunableToolChars": 0,
            "hardClear": {"placeholder": "[cleared]"}}}}});
    let h = Harness::with_env(turns, config, &[("ANTHROPIC_API_KEY", "sk-ant")]).await;
    h.embedder
        .register_tool_factory(Arc::new(|_ctx: &filo_embed::ToolContext| {
            vec![Arc::new(Noisy) as Arc<dyn filo_agent::AgentTool>]
        }));
    let run = |prompt: &'static str| {
        let e = h.embedder.clone();
        let p = h.params("prune", prompt);
        async move { e.run(p, Arc::new(NullSink)).await.unwrap() }
    };
    run("look").await;
    let file = std::fs::read_to_string(h.session_file("prune")).unwrap();
    assert!(
        file.contains(r#""customType":"filo.cache-ttl""#),
        "the cache touch is recorded"
    );
    // Within the TTL the cache is warm: the context goes as it is.
    h.clock.advance(30_000);
    run("again").await;
    assert!(h.mock.requests()[2].body.to_string().contains("BEGINxxx"));
    // Past the TTL the old result is cleared from what is sent, and only from that.
    h.clock.advance(61_000);
    run("later").await;
    let sent = h.mock.requests()[3].body.to_string();
    assert!(
        !sent.contains("BEGINxxx") && sent.contains("[cleared]"),
        "{}",
        &sent[..sent.len().min(2000)]
    );
    let file = std::fs::read_to_string(h.session_file("prune")).unwrap();
    assert!(
        file.contains("BEGINxxx"),
        "the session file keeps the full result"
    );
}

/// A seeded session whose first exchange has a failed `exec` call.
fn seed_with_failure(path: &std::path::Path, id: &str) {
    seed_session(path, id, 12);
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let usage = json!({"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}});
    let call = json!({"type": "message", "id": "f1", "parentId": "e0u", "timestamp": "2026-12-01T10:00:01.000Z",
        "message": {"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "exec", "arguments": {"command": "cat missing"}}],
            "api": "openai-completions", "provider": "openai", "model": "mock-model", "usage": usage, "stopReason": "toolUse", "timestamp": 2}});
    let result = json!({"type": "message", "id": "f2", "parentId": "f1", "timestamp": "2026-12-01T10:00:01.000Z",
        "message": {"role": "toolResult", "toolCallId": "c1", "toolName": "exec",
            "content": [{"type": "text", "text": "ENOENT:   missing\nfile"}], "details": {"status": "failed", "exitCode": 1},
            "isError": true, "timestamp": 3}});
    // u0 → call → result → a0 → …
    lines[2]["parentId"] = json!("f2");
    lines.insert(2, result);
    lines.insert(2, call);
    let out: String = lines.iter().map(|l| l.to_string() + "\n").collect();
    std::fs::write(path, out).unwrap();
}

fn compact_params(h: &Harness, id: &str) -> filo_embed::CompactParams {
    filo_embed::CompactParams {
        session_id: id.into(),
        session_key: None,
        session_file: None,
        agent_id: None,
        workspace_dir: h.workspace(),
        provider: None,
        model: None,
        custom_instructions: None,
    }
}

#[tokio::test]
async fn the_safeguard_summary_keeps_tool_failures_and_a_failed_summary_keeps_the_history() {
    let config = json!({"agents": {"defaults": {"compaction": {"mode": "safeguard"}}}});
    let h = Harness::new(
        vec![Turn::text("## Decisions\nship it"), super::http(500, None)],
        config,
    )
    .await;
    let path = h.session_file("sg");
    seed_with_failure(&path, "sg");
    let r = h.embedder.compact(compact_params(&h, "sg")).await;
    assert!(r.ok && r.compacted, "{r:?}");
    let summary = r.summary.unwrap();
    assert!(summary.starts_with("## Decisions\nship it"), "{summary}");
    assert!(
        summary.contains(
            "\n\n## Tool Failures\n- exec (status=failed exitCode=1): ENOENT: missing file"
        ),
        "{summary}"
    );
    let file = std::fs::read_to_string(&path).unwrap();
    let entry: serde_json::Value = serde_json::from_str(file.lines().last().unwrap()).unwrap();
    assert_eq!(entry["type"], "compaction");
    assert_eq!(entry["fromHook"], true);
    let req = h.mock.requests()[0].body.to_string();
    assert!(
        req.contains("<conversation>"),
        "summarised through the model"
    );

    // The next compaction's summary fails: cancelled, nothing written, the history kept.
    let other = h.session_file("sg2");
    seed_with_failure(&other, "sg2");
    let before = std::fs::read_to_string(&other).unwrap();
    let r = h.embedder.compact(compact_params(&h, "sg2")).await;
    assert!(!r.compacted, "{r:?}");
    let after = std::fs::read_to_string(&other).unwrap();
    let added: Vec<&str> = after.lines().skip(before.lines().count()).collect();
    assert!(after.starts_with(&before), "earlier lines untouched");
    assert!(
        !after.contains(r#""type":"compaction""#),
        "no compaction written: {added:?}"
    );
}

#[tokio::test]
async fn an_oversized_tool_result_is_capped_in_the_file_but_not_for_the_turn() {
    let call = filo_testkit::Reply::text("Looking.").with_tool_call("call_1", "noisy", json!({}));
    let h = Harness::new(vec![call.into(), Turn::text("done")], json!({})).await;
    h.embedder
        .register_tool_factory(Arc::new(|_ctx: &filo_embed::ToolContext| {
            vec![Arc::new(Noisy) as Arc<dyn filo_agent::AgentTool>]
        }));
    let r = h
        .embedder
        .run(h.params("cap", "look"), Arc::new(NullSink))
        .await
        .unwrap();
    assert!(r.meta.warnings.is_empty(), "{:?}", r.meta.warnings);
    // The model saw the whole result in this turn.
    assert!(h.mock.requests()[1].body.to_string().contains("xEND"));
    let file = std::fs::read_to_string(h.session_file("cap")).unwrap();
    let result = file
        .lines()
        .find(|l| l.contains(r#""role":"toolResult""#))
        .unwrap();
    assert!(!result.contains("xEND"));
    // 20 008 chars capped at 16 000 (min(100 000 × 0.3 × 4, 16 000)).
    assert!(
        result.contains("[... 4008 more characters truncated]"),
        "{}",
        &result[result.len() - 200..]
    );
    // The memory holds what the file holds.
    let store = filo_dag::Store::open(h.dir.path().join("home/.playfilo/playfilo.db")).unwrap();
    let head = store.get_ref("PI_HEAD:cap").unwrap().unwrap();
    let entries = store.load_entries(Some(&head)).unwrap();
    let mirrored = entries
        .iter()
        .find(|e| e["message"]["role"] == "toolResult")
        .unwrap()
        .to_string();
    assert!(mirrored.contains("more characters truncated") && !mirrored.contains("xEND"));
}

#[tokio::test]
async fn a_compaction_names_what_it_could_not_keep() {
    let h = Harness::new(vec![Turn::text("## Decisions\nsummary")], json!({})).await;
    let db = h.dir.path().join("home/.playfilo/playfilo.db");
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    std::fs::write(&db, b"not a database".repeat(100)).unwrap();
    seed_session(&h.session_file("cw"), "cw", 12);
    let r = h.embedder.compact(compact_params(&h, "cw")).await;
    assert!(r.compacted, "{r:?}");
    assert!(
        r.warnings
            .iter()
            .any(|w| w.starts_with("memory disabled for this run")),
        "{:?}",
        r.warnings
    );
}
