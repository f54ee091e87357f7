//! Steering and follow-up messages (pi spec §2.3 steps 2–4, §2.4 skip rules, §2.5 queues).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use filo_agent::{
    AgentMessage, BeforeToolCall, QueueMode, SKIPPED_TEXT, ToolCallDecision, ToolExecution,
};
use filo_ai::StopReason;
use pretty_assertions::assert_eq;
use serde_json::json;
use tokio::sync::Notify;

use super::support::*;

fn skipped() -> String {
    format!("toolResult!:{SKIPPED_TEXT}")
}

#[tokio::test]
async fn steering_after_the_first_tool_skips_the_rest_sequential() {
    let gate = Arc::new(Notify::new());
    let tool = TestTool {
        gate: Some(Arc::clone(&gate)),
        ..TestTool::new("echo")
    };
    let started = Arc::clone(&tool.started);
    let client = Scripted::new(vec![
        tools_turn(&[
            ("c1", "echo", json!({"text": "a"})),
            ("c2", "echo", json!({"text": "b"})),
        ]),
        text_turn("ok"),
    ]);
    let agent = agent_with(client.clone(), vec![Arc::new(tool)]);
    agent.set_tool_execution(ToolExecution::Sequential);
    let rec = Recorder::attach(&agent);
    let run = tokio::spawn({
        let agent = agent.clone();
        async move { agent.prompt("go").await }
    });
    started.notified().await;
    agent.steer(AgentMessage::user_text("stop that"));
    gate.notify_one();
    run.await.unwrap().unwrap();
    assert_eq!(
        history(&agent),
        [
            "user:go".to_string(),
            "assistant[ToolUse]:".into(),
            "toolResult:echo: a".into(),
            skipped(),
            "user:stop that".into(),
            "assistant[Stop]:ok".into(),
        ]
    );
    // The skipped call still got its start event; the steering message is in the next context.
    assert!(
        rec.kinds()
            .contains(&"tool_execution_start(c2)".to_string())
    );
    assert_eq!(
        client.roles(1)[3..],
        [
            format!("toolResult:{SKIPPED_TEXT}"),
            "user:stop that".to_string()
        ]
    );
}

#[tokio::test]
async fn steering_during_parallel_preparation_runs_nothing() {
    let tool = TestTool::new("echo");
    let max_running = Arc::clone(&tool.max_running);
    let client = Scripted::new(vec![
        tools_turn(&[
            ("c1", "echo", json!({"text": "a"})),
            ("c2", "echo", json!({"text": "b"})),
            ("c3", "echo", json!({"text": "c"})),
        ]),
        text_turn("ok"),
    ]);
    let agent = agent_with(client, vec![Arc::new(tool)]);
    // The user steers while the first call is being prepared.
    let steerer = agent.clone();
    let hook: BeforeToolCall = Arc::new(move |info, _cancel| {
        if info.tool_call.id == "c1" {
            steerer.steer(AgentMessage::user_text("wait"));
        }
        Box::pin(async { Ok(ToolCallDecision::Allow) })
    });
    agent.set_before_tool_call(Some(hook));
    let rec = Recorder::attach(&agent);
    agent.prompt("go").await.unwrap();
    assert_eq!(max_running.load(Ordering::SeqCst), 0, "nothing executed");
    let tool_kinds: Vec<String> = rec
        .kinds()
        .into_iter()
        .filter(|k| k.starts_with("tool_"))
        .collect();
    assert_eq!(
        tool_kinds,
        [
            "tool_execution_start(c1)",
            "tool_execution_end(c1)",
            "tool_execution_start(c2)",
            "tool_execution_end(c2)",
            "tool_execution_start(c3)",
            "tool_execution_end(c3)",
        ]
    );
    assert_eq!(
        history(&agent)[2..6],
        [skipped(), skipped(), skipped(), "user:wait".into()]
    );
}

#[tokio::test]
async fn follow_ups_continue_the_run_after_it_would_stop() {
    let gate = Arc::new(Notify::new());
    let tool = TestTool {
        gate: Some(Arc::clone(&gate)),
        ..TestTool::new("echo")
    };
    let started = Arc::clone(&tool.started);
    let client = Scripted::new(vec![
        tools_turn(&[("c1", "echo", json!({"text": "a"}))]),
        text_turn("first"),
        text_turn("second"),
    ]);
    let agent = agent_with(client, vec![Arc::new(tool)]);
    let rec = Recorder::attach(&agent);
    let run = tokio::spawn({
        let agent = agent.clone();
        async move { agent.prompt("go").await }
    });
    started.notified().await;
    agent.follow_up(AgentMessage::user_text("and then?"));
    gate.notify_one();
    run.await.unwrap().unwrap();
    assert_eq!(
        history(&agent),
        [
            "user:go",
            "assistant[ToolUse]:",
            "toolResult:echo: a",
            "assistant[Stop]:first",
            "user:and then?",
            "assistant[Stop]:second",
        ]
    );
    let kinds = rec.kinds();
    assert_eq!(kinds.iter().filter(|k| *k == "agent_start").count(), 1);
    assert_eq!(kinds.iter().filter(|k| *k == "turn_start").count(), 3);
    assert!(!agent.has_queued_messages());
}

async fn two_follow_ups(mode: QueueMode) -> Vec<String> {
    let gate = Arc::new(Notify::new());
    let client = Scripted::new(vec![
        TurnBuilder::new()
            .step(Step::Wait(Arc::clone(&gate)))
            .text(&["one"])
            .done(StopReason::Stop),
        text_turn("two"),
        text_turn("three"),
    ]);
    let agent = agent_with(client, vec![]);
    agent.set_follow_up_mode(mode);
    assert_eq!(agent.follow_up_mode(), mode);
    let run = tokio::spawn({
        let agent = agent.clone();
        async move { agent.prompt("go").await }
    });
    eventually(|| agent.is_streaming()).await;
    agent.follow_up(AgentMessage::user_text("f1"));
    agent.follow_up(AgentMessage::user_text("f2"));
    gate.notify_one();
    run.await.unwrap().unwrap();
    history(&agent)
}

#[tokio::test]
async fn follow_up_modes() {
    assert_eq!(
        two_follow_ups(QueueMode::OneAtATime).await,
        [
            "user:go",
            "assistant[Stop]:one",
            "user:f1",
            "assistant[Stop]:two",
            "user:f2",
            "assistant[Stop]:three",
        ]
    );
    assert_eq!(
        two_follow_ups(QueueMode::All).await,
        [
            "user:go",
            "assistant[Stop]:one",
            "user:f1",
            "user:f2",
            "assistant[Stop]:two"
        ]
    );
}

#[tokio::test]
async fn continue_from_an_assistant_tail_uses_the_queues() {
    let client = Scripted::new(vec![text_turn("a1"), text_turn("a2"), text_turn("a3")]);
    let agent = agent_with(client.clone(), vec![]);
    agent.replace_messages(vec![
        AgentMessage::user_text("u0"),
        AgentMessage::from(assistant(
            vec![filo_ai::ContentBlock::text("a0")],
            StopReason::Stop,
        )),
    ]);
    // One-at-a-time steering: each steering message gets its own turn.
    agent.steer(AgentMessage::user_text("s1"));
    agent.steer(AgentMessage::user_text("s2"));
    agent.continue_run().await.unwrap();
    assert_eq!(
        history(&agent)[2..],
        [
            "user:s1",
            "assistant[Stop]:a1",
            "user:s2",
            "assistant[Stop]:a2"
        ]
    );
    // A queued follow-up is processed too.
    agent.follow_up(AgentMessage::user_text("f"));
    agent.continue_run().await.unwrap();
    assert_eq!(history(&agent)[6..], ["user:f", "assistant[Stop]:a3"]);
    // Nothing queued: pi's error.
    let err = agent.continue_run().await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "Cannot continue from message role: assistant"
    );
    assert!(err.is_refused());
    assert_eq!(client.calls().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steering_while_parallel_tools_run_waits_for_them() {
    let gate = Arc::new(Notify::new());
    let tool = TestTool {
        gate: Some(Arc::clone(&gate)),
        ..TestTool::new("echo")
    };
    let running = Arc::clone(&tool.running);
    let client = Scripted::new(vec![
        tools_turn(&[
            ("c1", "echo", json!({"text": "a"})),
            ("c2", "echo", json!({"text": "b"})),
        ]),
        text_turn("ok"),
    ]);
    let agent = agent_with(client.clone(), vec![Arc::new(tool)]);
    let run = tokio::spawn({
        let agent = agent.clone();
        async move { agent.prompt("go").await }
    });
    eventually(|| running.load(Ordering::SeqCst) == 2).await;
    agent.steer(AgentMessage::user_text("also this"));
    gate.notify_waiters();
    run.await.unwrap().unwrap();
    // Both calls ran to completion; the steering message opens the next turn.
    assert_eq!(
        history(&agent),
        [
            "user:go",
            "assistant[ToolUse]:",
            "toolResult:echo: a",
            "toolResult:echo: b",
            "user:also this",
            "assistant[Stop]:ok",
        ]
    );
    assert_eq!(client.calls().len(), 2);
}

#[tokio::test]
async fn steering_during_a_text_answer_opens_another_turn() {
    let gate = Arc::new(Notify::new());
    let client = Scripted::new(vec![
        TurnBuilder::new()
            .text(&["thinking"])
            .step(Step::Wait(Arc::clone(&gate)))
            .done(StopReason::Stop),
        text_turn("adjusted"),
    ]);
    let agent = agent_with(client.clone(), vec![]);
    let rec = Recorder::attach(&agent);
    let run = tokio::spawn({
        let agent = agent.clone();
        async move { agent.prompt("go").await }
    });
    eventually(|| {
        agent
            .stream_message()
            .is_some_and(|m| m.role() == "assistant")
    })
    .await;
    agent.steer(AgentMessage::user_text("shorter please"));
    gate.notify_one();
    run.await.unwrap().unwrap();
    assert_eq!(
        history(&agent),
        [
            "user:go",
            "assistant[Stop]:thinking",
            "user:shorter please",
            "assistant[Stop]:adjusted",
        ]
    );
    let kinds = rec.kinds();
    assert_eq!(kinds.iter().filter(|k| *k == "agent_start").count(), 1);
    assert_eq!(kinds.iter().filter(|k| *k == "turn_start").count(), 2);
    assert_eq!(
        client.roles(1).last().map(String::as_str),
        Some("user:shorter please")
    );
}
