//! Abort anywhere ends the run cleanly (pi spec §2.4 abort rules, STYLE point 7).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use filo_agent::{ABORTED_TEXT, Agent, AgentEvent, AgentOptions};
use filo_ai::StopReason;
use pretty_assertions::assert_eq;
use serde_json::json;
use tokio::sync::Notify;

use super::support::*;

#[tokio::test]
async fn abort_during_streaming_keeps_the_partial() {
    let client = Scripted::new(vec![
        TurnBuilder::new()
            .text(&["par", "tial"])
            .step(Step::Delay(Duration::from_secs(60)))
            .text(&["never"])
            .done(StopReason::Stop),
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
            .and_then(|m| m.as_assistant().map(filo_ai::AssistantMessage::text))
            .as_deref()
            == Some("partial")
    })
    .await;
    agent.abort();
    run.await.unwrap().unwrap();
    assert_eq!(history(&agent), ["user:go", "assistant[Aborted]:partial"]);
    assert_eq!(agent.error().as_deref(), Some("Request was aborted."));
    assert!(!agent.is_streaming());
    assert_eq!(client.calls().len(), 1);
    let kinds = squash(rec.kinds());
    assert_eq!(
        kinds[kinds.len() - 4..],
        [
            "message_update*",
            "message_end(assistant)",
            "turn_end",
            "agent_end"
        ]
    );
    // The agent is usable again.
    agent.wait_for_idle().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_during_parallel_tools_gives_every_call_a_result() {
    let gate = Arc::new(Notify::new());
    let tool = TestTool {
        gate: Some(gate),
        ..TestTool::new("echo")
    };
    let running = Arc::clone(&tool.running);
    let client = Scripted::new(vec![
        tools_turn(&[
            ("c1", "echo", json!({"text": "a"})),
            ("c2", "echo", json!({"text": "b"})),
        ]),
        text_turn("not reached"),
    ]);
    let agent = agent_with(client.clone(), vec![Arc::new(tool)]);
    let rec = Recorder::attach(&agent);
    let run = tokio::spawn({
        let agent = agent.clone();
        async move { agent.prompt("go").await }
    });
    eventually(|| running.load(Ordering::SeqCst) == 2).await;
    assert_eq!(agent.state().pending_tool_calls, ["c1", "c2"]);
    agent.abort();
    run.await.unwrap().unwrap();
    let aborted = format!("toolResult!:{ABORTED_TEXT}");
    assert_eq!(
        history(&agent),
        [
            "user:go".to_string(),
            "assistant[ToolUse]:".into(),
            aborted.clone(),
            aborted,
            "assistant[Aborted]:".into(),
        ]
    );
    // pi calls the provider once more; it answers the aborted signal at once.
    assert_eq!(client.calls().len(), 2);
    assert_eq!(running.load(Ordering::SeqCst), 0);
    assert!(agent.state().pending_tool_calls.is_empty());
    let ends = rec
        .events()
        .iter()
        .filter(|e| matches!(e, AgentEvent::ToolExecutionEnd { is_error: true, .. }))
        .count();
    assert_eq!(ends, 2);
}

#[tokio::test]
async fn a_tool_that_ignores_the_abort_is_dropped_after_the_grace() {
    let gate = Arc::new(Notify::new());
    let tool = TestTool {
        gate: Some(gate),
        stubborn: true,
        ..TestTool::new("echo")
    };
    let running = Arc::clone(&tool.running);
    let client = Scripted::new(vec![tools_turn(&[("c1", "echo", json!({"text": "a"}))])]);
    let agent = Agent::with_options(
        client,
        AgentOptions {
            model: Some(model()),
            tools: vec![Arc::new(tool)],
            abort_grace: Duration::from_millis(20),
            ..AgentOptions::default()
        },
    );
    let run = tokio::spawn({
        let agent = agent.clone();
        async move { agent.prompt("go").await }
    });
    eventually(|| running.load(Ordering::SeqCst) == 1).await;
    agent.abort();
    run.await.unwrap().unwrap();
    assert_eq!(
        history(&agent)[2..],
        [
            format!("toolResult!:{ABORTED_TEXT}"),
            "assistant[Aborted]:".into()
        ]
    );
}

#[tokio::test]
async fn abort_between_turns_ends_before_the_next_model_answer() {
    let client = Scripted::new(vec![
        tools_turn(&[("c1", "echo", json!({"text": "a"}))]),
        text_turn("not reached"),
        text_turn("fresh"),
    ]);
    let agent = agent_with(client, vec![Arc::new(TestTool::new("echo"))]);
    let aborter = agent.clone();
    let id = agent.subscribe(move |e| {
        if matches!(e, AgentEvent::TurnEnd { .. }) {
            aborter.abort();
        }
    });
    agent.prompt("go").await.unwrap();
    assert_eq!(
        history(&agent),
        [
            "user:go",
            "assistant[ToolUse]:",
            "toolResult:echo: a",
            "assistant[Aborted]:"
        ]
    );
    // A new prompt after an abort runs normally.
    assert!(agent.unsubscribe(id));
    agent.prompt("again").await.unwrap();
    assert_eq!(
        history(&agent)[4..],
        ["user:again", "assistant[Stop]:fresh"]
    );
}

#[tokio::test]
async fn abort_when_idle_does_nothing_and_the_next_run_is_not_cancelled() {
    let client = Scripted::new(vec![text_turn("fine")]);
    let agent = agent_with(client, vec![]);
    agent.abort();
    agent.prompt("go").await.unwrap();
    assert_eq!(history(&agent), ["user:go", "assistant[Stop]:fine"]);
}

#[tokio::test]
async fn abort_during_a_before_hook_aborts_every_remaining_call() {
    let client = Scripted::new(vec![
        tools_turn(&[
            ("c1", "echo", json!({"text": "a"})),
            ("c2", "echo", json!({"text": "b"})),
        ]),
        text_turn("not reached"),
    ]);
    let tool = TestTool::new("echo");
    let max_running = Arc::clone(&tool.max_running);
    let agent = agent_with(client, vec![Arc::new(tool)]);
    let in_hook = Arc::new(Notify::new());
    let signal = Arc::clone(&in_hook);
    let hook: filo_agent::BeforeToolCall = Arc::new(move |_info, cancel| {
        signal.notify_one();
        Box::pin(async move {
            cancel.cancelled().await;
            Ok(filo_agent::ToolCallDecision::Allow)
        })
    });
    agent.set_before_tool_call(Some(hook));
    let run = tokio::spawn({
        let agent = agent.clone();
        async move { agent.prompt("go").await }
    });
    in_hook.notified().await;
    agent.abort();
    run.await.unwrap().unwrap();
    let aborted = format!("toolResult!:{ABORTED_TEXT}");
    assert_eq!(
        history(&agent)[1..],
        [
            "assistant[ToolUse]:".to_string(),
            aborted.clone(),
            aborted,
            "assistant[Aborted]:".into(),
        ]
    );
    assert_eq!(max_running.load(Ordering::SeqCst), 0, "no tool ran");
}

/// A client that sends `Start` and one delta, then never answers again, cancelled or not.
struct Deaf;

impl filo_ai::ModelClient for Deaf {
    fn stream(
        &self,
        _model: &filo_ai::Model,
        _context: &filo_ai::Context,
        _options: &filo_ai::StreamOptions,
        _cancel: tokio_util::sync::CancellationToken,
    ) -> filo_ai::AssistantStream {
        let start = filo_ai::AssistantEvent::Start {
            message: assistant(vec![], StopReason::Stop),
        };
        let delta = filo_ai::AssistantEvent::TextStart { index: 0 };
        use futures::StreamExt;
        Box::pin(futures::stream::iter([start, delta]).chain(futures::stream::pending()))
    }
}

/// The agent itself watches the turn's cancellation while it waits for the stream: a client
/// that ignores the cancellation still ends the run, aborted.
#[tokio::test]
async fn abort_ends_the_run_even_when_the_client_ignores_the_cancellation() {
    let agent = Agent::with_options(
        Arc::new(Deaf),
        AgentOptions {
            model: Some(model()),
            ..AgentOptions::default()
        },
    );
    let aborter = agent.clone();
    agent.subscribe(move |e| {
        if matches!(e, AgentEvent::MessageUpdate { .. }) {
            aborter.abort();
        }
    });
    tokio::time::timeout(Duration::from_secs(20), agent.prompt("go"))
        .await
        .expect("the run ignored the abort")
        .unwrap();
    assert_eq!(history(&agent), ["user:go", "assistant[Aborted]:"]);
}
