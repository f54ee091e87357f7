use std::sync::{Arc, Mutex};

use filo_core::{PromptOptions, SessionEvent};
use filo_session::{EntryKind, SessionManager};
use filo_testkit::{Fault, MockProvider, Reply, Turn, Usage};
use serde_json::json;

use super::session_with;

fn record(session: &filo_core::AgentSession) -> Arc<Mutex<Vec<String>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    session.subscribe(Arc::new(move |ev: &SessionEvent| {
        let v = serde_json::to_value(ev).unwrap();
        s2.lock()
            .unwrap()
            .push(v["type"].as_str().unwrap_or("?").to_string());
    }));
    seen
}

#[tokio::test]
async fn a_tool_turn_is_persisted_and_resumes() {
    let mock = MockProvider::start(vec![
        Turn::Reply(
            Reply::tool_call("call_1", "echo", json!({"text": "hi"})).with_usage(Usage::new(10, 5)),
        ),
        Turn::Reply(Reply::text("done").with_usage(Usage::new(20, 3))),
    ])
    .await;
    let f = session_with(&mock, 100_000, json!({}));
    let events = record(&f.session);
    f.session
        .prompt("say hi", PromptOptions::default())
        .await
        .unwrap();
    assert_eq!(f.session.last_assistant_text().as_deref(), Some("done"));
    // The last message alone is the last of the whole history.
    let last = f.session.last_message();
    assert!(last.is_some());
    assert_eq!(last, f.session.messages().last().cloned());
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].header("authorization"), Some("Bearer test-key"));
    let second = serde_json::to_string(&reqs[1].body).unwrap();
    assert!(
        second.contains("echo: hi"),
        "tool result sent back: {second}"
    );
    let types = events.lock().unwrap().clone();
    assert_eq!(types.first().map(String::as_str), Some("agent_start"));
    assert!(types.contains(&"tool_execution_end".to_string()));
    // The file has every entry; a fresh manager rebuilds the same context.
    let path = f.session.session_file().unwrap();
    let reopened = SessionManager::open(&path, "/").unwrap();
    let kinds: Vec<_> = reopened
        .entries()
        .map(|e| e.kind.type_name().to_string())
        .collect();
    assert_eq!(
        kinds,
        [
            "model_change",
            "thinking_level_change",
            "message",
            "message",
            "message",
            "message"
        ]
    );
    assert_eq!(reopened.build_context().messages.len(), 4);
    let stats = f.session.stats();
    assert_eq!(stats.assistant_messages, 2);
    assert_eq!(stats.tool_calls, 1);
    assert_eq!(stats.tokens.input, 30);
}

#[tokio::test]
async fn a_429_is_retried_by_the_session() {
    let mock = MockProvider::start(vec![
        Turn::Fault(Fault::rate_limited(0)),
        Turn::Reply(Reply::text("after retry")),
    ])
    .await;
    let f = session_with(&mock, 100_000, json!({"retry": {"baseDelayMs": 1}}));
    let events = record(&f.session);
    f.session
        .prompt("hello", PromptOptions::default())
        .await
        .unwrap();
    assert_eq!(
        f.session.last_assistant_text().as_deref(),
        Some("after retry")
    );
    let types = events.lock().unwrap().clone();
    let start = types
        .iter()
        .position(|t| t == "auto_retry_start")
        .expect("retry started");
    let end = types
        .iter()
        .position(|t| t == "auto_retry_end")
        .expect("retry ended");
    assert!(start < end);
    // The error stays in the file, not in the agent's context.
    assert!(
        f.session
            .messages()
            .iter()
            .all(|m| m.as_assistant().is_none_or(|a| a.error_message.is_none()))
    );
    let file = std::fs::read_to_string(f.session.session_file().unwrap()).unwrap();
    assert!(file.contains("\"stopReason\":\"error\""));
}

#[tokio::test]
async fn retries_give_up_after_max() {
    let mock = MockProvider::start(vec![
        Turn::Fault(Fault::http(503)),
        Turn::Fault(Fault::http(503)),
    ])
    .await;
    let f = session_with(
        &mock,
        100_000,
        json!({"retry": {"baseDelayMs": 1, "maxRetries": 1}}),
    );
    let got = Arc::new(Mutex::new(Vec::new()));
    let g2 = got.clone();
    f.session.subscribe(Arc::new(move |ev: &SessionEvent| {
        if let SessionEvent::AutoRetryEnd {
            success, attempt, ..
        } = ev
        {
            g2.lock().unwrap().push((*success, *attempt));
        }
    }));
    f.session
        .prompt("hello", PromptOptions::default())
        .await
        .unwrap();
    assert_eq!(*got.lock().unwrap(), [(false, 1)]);
}

#[tokio::test]
async fn threshold_compaction_summarizes_through_the_model() {
    let big = "x".repeat(3000);
    let mock = MockProvider::start(vec![
        Turn::Reply(Reply::text(big.clone()).with_usage(Usage::new(400, 100))),
        Turn::Reply(Reply::text("second answer").with_usage(Usage::new(900, 50))),
        Turn::Reply(Reply::text("## Goal\nsummarized")),
    ])
    .await;
    let f = session_with(
        &mock,
        1000,
        json!({"compaction": {"reserveTokens": 100, "keepRecentTokens": 5}}),
    );
    let events = record(&f.session);
    f.session
        .prompt("first", PromptOptions::default())
        .await
        .unwrap();
    f.session
        .prompt("second", PromptOptions::default())
        .await
        .unwrap();
    let types = events.lock().unwrap().clone();
    assert!(types.contains(&"compaction_start".to_string()), "{types:?}");
    assert!(types.contains(&"compaction_end".to_string()));
    let summary_req = &mock.requests()[2].body;
    let text = summary_req.to_string();
    assert!(text.contains("context summarization assistant"));
    let store = f.session.session_manager();
    let compaction = store
        .entries()
        .find(|e| matches!(e.kind, EntryKind::Compaction { .. }))
        .unwrap();
    let EntryKind::Compaction { summary, .. } = &compaction.kind else {
        unreachable!()
    };
    assert!(summary.starts_with("## Goal\nsummarized"), "{summary}");
    drop(store);
    let first = f.session.messages()[0].clone();
    assert_eq!(first.role(), "compactionSummary");
}

#[tokio::test]
async fn overflow_compacts_and_retries_once() {
    let mock = MockProvider::start(vec![
        Turn::Reply(Reply::text("ok").with_usage(Usage::new(50, 5))),
        Turn::Fault(Fault::Http { status: 400, retry_after: None, body: Some(r#"{"error":{"message":"This model's maximum context length is 1000 tokens. However, your messages resulted in 5000 tokens."}}"#.into()) }),
        Turn::Reply(Reply::text("## Goal\ncompacted")),
        Turn::Reply(Reply::text("recovered")),
    ])
    .await;
    let f = session_with(&mock, 1000, json!({"compaction": {"keepRecentTokens": 1}}));
    f.session
        .prompt("one", PromptOptions::default())
        .await
        .unwrap();
    f.session
        .prompt("two", PromptOptions::default())
        .await
        .unwrap();
    assert_eq!(
        f.session.last_assistant_text().as_deref(),
        Some("recovered")
    );
    assert_eq!(mock.remaining(), 0);
}

#[tokio::test]
async fn prompt_while_streaming_needs_a_behavior_and_steers() {
    let mock = MockProvider::start(vec![
        Turn::Fault(Fault::Stall {
            after_events: 1,
            reply: Reply::text("slow answer"),
            stall: std::time::Duration::from_millis(400),
        }),
        Turn::Reply(Reply::text("answer to steer")),
    ])
    .await;
    let f = session_with(&mock, 100_000, json!({}));
    let s2 = f.session.clone();
    let run = tokio::spawn(async move { s2.prompt("first", PromptOptions::default()).await });
    while !f.session.is_streaming() {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let err = f
        .session
        .prompt("second", PromptOptions::default())
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("Specify streamingBehavior"),
        "{err}"
    );
    let steer = PromptOptions {
        streaming_behavior: Some(filo_core::StreamingBehavior::Steer),
        ..Default::default()
    };
    f.session.prompt("steered", steer).await.unwrap();
    run.await.unwrap().unwrap();
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2, "the steering message started a second turn");
    assert!(reqs[1].body.to_string().contains("steered"));
    assert_eq!(
        f.session.last_assistant_text().as_deref(),
        Some("answer to steer")
    );
}

#[tokio::test]
async fn navigate_tree_with_a_branch_summary() {
    let mock = MockProvider::start(vec![
        Turn::Reply(Reply::text("first answer")),
        Turn::Reply(Reply::text("second answer")),
        Turn::Reply(Reply::text("## Goal\nexplored the second question")),
    ])
    .await;
    let f = session_with(&mock, 100_000, json!({}));
    f.session
        .prompt("first question", PromptOptions::default())
        .await
        .unwrap();
    f.session
        .prompt("second question", PromptOptions::default())
        .await
        .unwrap();
    let second_user = {
        let m = f.session.session_manager();
        m.entries()
            .rev()
            .find(|e| e.message().is_some_and(|m| m.role() == "user"))
            .unwrap()
            .id
            .clone()
    };
    let opts = filo_core::NavigateOptions {
        summarize: true,
        label: Some("retry".into()),
        ..Default::default()
    };
    let r = f.session.navigate_tree(&second_user, opts).await.unwrap();
    assert_eq!(r.editor_text.as_deref(), Some("second question"));
    let texts: Vec<String> = f
        .session
        .messages()
        .iter()
        .map(|m| serde_json::to_string(m).unwrap())
        .collect();
    assert_eq!(
        texts.len(),
        3,
        "first question, first answer, branch summary"
    );
    assert!(
        texts[2].contains("branchSummary") && texts[2].contains("explored the second question")
    );
    let m = f.session.session_manager();
    let summary = m
        .entries()
        .find(|e| matches!(e.kind, EntryKind::BranchSummary { .. }))
        .unwrap();
    let parent = m.entry(summary.parent_id.as_deref().unwrap()).unwrap();
    assert!(
        parent.message().is_some_and(|m| m.role() == "assistant"),
        "the summary hangs at the branch point"
    );
    assert_eq!(m.label(&summary.id), Some("retry"));
}

/// An extension that decides every compaction itself.
struct Decides(
    filo_core::extension::CompactionDecision,
    Mutex<Vec<(usize, u64, Option<String>)>>,
);

impl filo_core::Extension for Decides {
    fn name(&self) -> &str {
        "decides"
    }
    fn before_compact<'a>(
        &'a self,
        prep: &'a filo_core::compaction::CompactionPreparation,
        ctx: &'a filo_core::extension::CompactionContext,
    ) -> futures::future::BoxFuture<'a, Option<filo_core::extension::CompactionDecision>> {
        self.1.lock().unwrap().push((
            prep.messages_to_summarize.len(),
            ctx.reserve_tokens,
            ctx.custom_instructions.clone(),
        ));
        let decision = self.0.clone();
        Box::pin(async move { Some(decision) })
    }
}

#[tokio::test]
async fn before_compact_replaces_the_summary_or_cancels_the_compaction() {
    use filo_core::extension::CompactionDecision;
    for cancel in [false, true] {
        let mock = MockProvider::start(vec![
            Turn::Reply(Reply::text("x".repeat(3000)).with_usage(Usage::new(400, 100))),
            Turn::Reply(Reply::text("second").with_usage(Usage::new(500, 50))),
        ])
        .await;
        let decision = if cancel {
            CompactionDecision::Cancel {
                reason: "not now".into(),
            }
        } else {
            CompactionDecision::Replace {
                summary: "the hook's summary".into(),
                first_kept_entry_id: String::new(),
                tokens_before: 123,
                details: Some(json!({"by": "hook"})),
            }
        };
        let ext = Arc::new(Decides(decision, Mutex::default()));
        let f = super::session_with_extensions(
            &mock,
            100_000,
            json!({"compaction": {"reserveTokens": 100, "keepRecentTokens": 5}}),
            vec![ext.clone()],
        );
        for p in ["first", "second"] {
            f.session.prompt(p, PromptOptions::default()).await.unwrap();
        }
        let before = f.session.session_manager().entries().len();
        let result = f.session.compact(Some("focus on tests")).await;
        assert_eq!(
            mock.requests().len(),
            2,
            "no summary request went to the model"
        );
        let seen = ext.1.lock().unwrap().clone();
        assert_eq!(seen.len(), 1);
        assert_eq!(
            (seen[0].1, seen[0].2.as_deref()),
            (100, Some("focus on tests"))
        );
        let store = f.session.session_manager();
        if cancel {
            assert!(result.is_err());
            assert_eq!(store.entries().len(), before, "nothing written");
            continue;
        }
        let r = result.unwrap();
        assert_eq!(r.summary, "the hook's summary");
        let last = store.entries().next_back().unwrap().clone();
        let EntryKind::Compaction {
            summary,
            tokens_before,
            from_hook,
            details,
            ..
        } = &last.kind
        else {
            panic!("{last:?}")
        };
        assert_eq!(
            (summary.as_str(), *tokens_before, *from_hook),
            ("the hook's summary", 123, Some(true))
        );
        assert_eq!(details.as_ref().unwrap()["by"], "hook");
    }
}

/// Rewrites tool results before they are written, and keeps one prompt out of the file.
struct Redacts;

impl filo_core::Extension for Redacts {
    fn name(&self) -> &str {
        "redacts"
    }
    fn before_persist(&self, message: filo_agent::AgentMessage) -> Vec<filo_agent::AgentMessage> {
        use filo_agent::AgentMessage;
        use filo_ai::{ContentBlock, Message, TextContent};
        match message {
            AgentMessage::Llm(Message::ToolResult(mut t)) => {
                t.content = vec![ContentBlock::Text(TextContent {
                    text: "[redacted]".into(),
                    text_signature: None,
                })];
                vec![AgentMessage::Llm(Message::ToolResult(t))]
            }
            AgentMessage::Llm(Message::User(u))
                if u.content
                    .to_blocks()
                    .iter()
                    .any(|b| matches!(b, ContentBlock::Text(t) if t.text == "secret")) =>
            {
                Vec::new()
            }
            m => vec![m],
        }
    }
}

#[tokio::test]
async fn before_persist_changes_what_is_written_not_what_the_model_sees() {
    let mock = MockProvider::start(vec![
        Turn::Reply(Reply::tool_call("call_1", "echo", json!({"text": "hi"}))),
        Turn::Reply(Reply::text("done")),
        Turn::Reply(Reply::text("ok")),
    ])
    .await;
    let f = super::session_with_extensions(&mock, 100_000, json!({}), vec![Arc::new(Redacts)]);
    f.session
        .prompt("say hi", PromptOptions::default())
        .await
        .unwrap();
    f.session
        .prompt("secret", PromptOptions::default())
        .await
        .unwrap();
    let second = mock.requests()[1].body.to_string();
    assert!(second.contains("echo: hi"), "the model got the real result");
    let text = std::fs::read_to_string(f.session.session_file().unwrap()).unwrap();
    assert!(
        text.contains("[redacted]") && !text.contains("echo: hi"),
        "{text}"
    );
    assert!(
        !text.contains("\"secret\""),
        "a dropped message is not written"
    );
    assert!(text.contains("\"ok\""), "the rest of the turn is");
}

#[tokio::test]
async fn a_system_prompt_override_is_the_base_of_every_prompt_until_cleared() {
    let mock = MockProvider::start(vec![
        Turn::Reply(Reply::text("one")),
        Turn::Reply(Reply::text("two")),
    ])
    .await;
    let f = super::session_with(&mock, 100_000, json!({}));
    let pis = f.session.agent().system_prompt();
    f.session
        .set_system_prompt_override(Some("You are the embedded assistant.".into()));
    f.session
        .prompt("a", PromptOptions::default())
        .await
        .unwrap();
    f.session.rebuild_system_prompt();
    f.session
        .prompt("b", PromptOptions::default())
        .await
        .unwrap();
    for r in mock.requests() {
        let system = r.body["messages"][0]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert_eq!(system, "You are the embedded assistant.");
    }
    assert_eq!(
        f.session.agent().system_prompt(),
        "You are the embedded assistant."
    );
    f.session.set_system_prompt_override(None);
    assert_eq!(f.session.agent().system_prompt(), pis);
}

/// An extension whose `before_agent_start` takes a while (the prompt's preflight).
struct SlowStart;

impl filo_core::Extension for SlowStart {
    fn name(&self) -> &str {
        "slow-start"
    }
    fn before_agent_start(
        &self,
        _prompt: &str,
        _system_prompt: &str,
    ) -> futures::future::BoxFuture<'_, filo_core::extension::BeforeAgentStart> {
        Box::pin(async {
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
            filo_core::extension::BeforeAgentStart::default()
        })
    }
}

#[tokio::test]
async fn an_abort_during_the_prompts_preflight_is_not_lost() {
    let mock = MockProvider::start(vec![Turn::Reply(Reply::text("should not be asked"))]).await;
    let f = super::session_with_extensions(&mock, 100_000, json!({}), vec![Arc::new(SlowStart)]);
    let session = f.session.clone();
    let prompt = tokio::spawn(async move { session.prompt("hi", PromptOptions::default()).await });
    tokio::time::sleep(std::time::Duration::from_millis(60)).await;
    f.session.abort().await;
    prompt.await.unwrap().unwrap();
    assert!(
        mock.requests().is_empty(),
        "the aborted prompt reached the model"
    );
    // The next prompt is not affected by the earlier abort.
    let session = f.session.clone();
    session
        .prompt("again", PromptOptions::default())
        .await
        .unwrap();
    assert_eq!(mock.requests().len(), 1);
}
