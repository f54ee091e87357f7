//! Tool execution (pi spec §2.4): parallel and sequential modes, concurrency slots, fatal errors.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use filo_agent::{AgentEvent, AgentTool, Concurrency, ToolError, ToolExecution};
use pretty_assertions::assert_eq;
use serde_json::json;
use tokio::sync::Notify;

use super::support::*;

fn tool_events(rec: &Recorder) -> Vec<String> {
    rec.kinds()
        .into_iter()
        .filter(|k| k.starts_with("tool_") || k.contains("toolResult"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_tools_end_as_they_finish_and_publish_results_in_order_after_the_batch() {
    let gate = Arc::new(Notify::new());
    let slow = TestTool {
        updates: 1,
        delay: Duration::from_millis(2),
        gate: Some(Arc::clone(&gate)),
        ..TestTool::new("slow")
    };
    let fast = TestTool {
        updates: 1,
        delay: Duration::from_millis(2),
        running: Arc::clone(&slow.running),
        max_running: Arc::clone(&slow.max_running),
        ..TestTool::new("fast")
    };
    let (running, max_running) = (Arc::clone(&slow.running), Arc::clone(&slow.max_running));
    let client = Scripted::new(vec![
        tools_turn(&[
            ("c1", "slow", json!({"text": "s"})),
            ("c2", "fast", json!({"text": "f"})),
        ]),
        text_turn("done"),
    ]);
    let agent = agent_with(client, vec![Arc::new(slow), Arc::new(fast)]);
    let rec = Recorder::attach(&agent);
    let run = tokio::spawn({
        let agent = agent.clone();
        async move { agent.prompt("go").await }
    });
    // Both ran at once and the fast one has finished: its end is out, no result message yet.
    eventually(|| max_running.load(Ordering::SeqCst) == 2 && running.load(Ordering::SeqCst) == 1)
        .await;
    eventually(|| rec.kinds().iter().any(|k| k == "tool_execution_end(c2)")).await;
    eventually(|| {
        rec.kinds()
            .iter()
            .filter(|k| k.starts_with("tool_execution_update"))
            .count()
            == 2
    })
    .await;
    assert!(
        !rec.kinds()
            .iter()
            .any(|k| k.starts_with("tool_execution_end(c1)")
                || k.starts_with("message_start(toolResult)"))
    );
    gate.notify_one();
    run.await.unwrap().unwrap();
    let events = tool_events(&rec);
    assert_eq!(
        events[..2],
        ["tool_execution_start(c1)", "tool_execution_start(c2)"]
    );
    let mut updates = events[2..4].to_vec();
    updates.sort();
    assert_eq!(
        updates,
        ["tool_execution_update(c1)", "tool_execution_update(c2)"]
    );
    assert_eq!(
        events[4..],
        [
            "tool_execution_end(c2)",
            "tool_execution_end(c1)",
            "message_start(toolResult)",
            "message_end(toolResult)",
            "message_start(toolResult)",
            "message_end(toolResult)",
        ]
    );
    assert_eq!(
        history(&agent)[2..4],
        ["toolResult:echo: s", "toolResult:echo: f"]
    );
}

#[tokio::test]
async fn exclusive_tools_run_alone_in_parallel_mode() {
    let reader = |name| TestTool {
        delay: Duration::from_millis(15),
        ..TestTool::new(name)
    };
    let read = reader("read");
    let log = Arc::clone(&read.log);
    let write = TestTool {
        concurrency: Concurrency::Exclusive,
        log: Arc::clone(&log),
        ..reader("write")
    };
    let client = Scripted::new(vec![
        tools_turn(&[
            ("c1", "read", json!({"text": "r1"})),
            ("c2", "read", json!({"text": "r2"})),
            ("c3", "write", json!({"text": "w"})),
            ("c4", "read", json!({"text": "r3"})),
        ]),
        text_turn("done"),
    ]);
    let tools: Vec<Arc<dyn AgentTool>> = vec![Arc::new(read), Arc::new(write)];
    let agent = agent_with(client, tools);
    agent.prompt("go").await.unwrap();
    let log = log.lock().unwrap().clone();
    // r1 and r2 overlap; w starts after both ended and ends before r3 starts.
    assert_eq!(&log[..2], ["start r1", "start r2"]);
    let mut middle = log[2..4].to_vec();
    middle.sort();
    assert_eq!(middle, ["end r1", "end r2"]);
    assert_eq!(&log[4..], ["start w", "end w", "start r3", "end r3"]);
    assert_eq!(
        history(&agent)[2..6],
        [
            "toolResult:echo: r1",
            "toolResult:echo: r2",
            "toolResult:echo: w",
            "toolResult:echo: r3"
        ]
    );
}

#[tokio::test]
async fn sequential_mode_runs_one_call_at_a_time() {
    let tool = TestTool {
        delay: Duration::from_millis(5),
        updates: 1,
        ..TestTool::new("echo")
    };
    let max_running = Arc::clone(&tool.max_running);
    let client = Scripted::new(vec![
        tools_turn(&[
            ("c1", "echo", json!({"text": "a"})),
            ("c2", "echo", json!({"text": "b"})),
        ]),
        text_turn("done"),
    ]);
    let agent = agent_with(client, vec![Arc::new(tool)]);
    agent.set_tool_execution(ToolExecution::Sequential);
    let rec = Recorder::attach(&agent);
    agent.prompt("go").await.unwrap();
    assert_eq!(max_running.load(Ordering::SeqCst), 1);
    assert_eq!(
        tool_events(&rec),
        [
            "tool_execution_start(c1)",
            "tool_execution_update(c1)",
            "tool_execution_end(c1)",
            "message_start(toolResult)",
            "message_end(toolResult)",
            "tool_execution_start(c2)",
            "tool_execution_update(c2)",
            "tool_execution_end(c2)",
            "message_start(toolResult)",
            "message_end(toolResult)",
        ]
    );
}

#[tokio::test]
async fn a_failing_tool_is_model_facing_a_fatal_one_ends_the_run() {
    let failing = TestTool {
        fail: Some(ToolError::failed("disk full")),
        ..TestTool::new("flaky")
    };
    let fatal = TestTool {
        fail: Some(ToolError::Fatal("store is gone".into())),
        ..TestTool::new("fatal")
    };
    let gate = Arc::new(Notify::new());
    let waiting = TestTool {
        gate: Some(gate),
        ..TestTool::new("wait")
    };
    let client = Scripted::new(vec![
        tools_turn(&[
            ("c1", "flaky", json!({"text": "a"})),
            ("c2", "wait", json!({"text": "b"})),
            ("c3", "fatal", json!({"text": "c"})),
        ]),
        text_turn("never"),
    ]);
    let agent = agent_with(
        client.clone(),
        vec![Arc::new(failing), Arc::new(fatal), Arc::new(waiting)],
    );
    let rec = Recorder::attach(&agent);
    agent.prompt("go").await.unwrap();
    assert_eq!(
        history(&agent),
        [
            "user:go",
            "assistant[ToolUse]:",
            "toolResult!:disk full",
            "toolResult!:Operation aborted",
            "toolResult!:store is gone",
            "assistant[Error]:",
        ]
    );
    assert_eq!(agent.error().as_deref(), Some("store is gone"));
    assert_eq!(client.calls().len(), 1);
    let events = rec.events();
    let n = events.len();
    assert_eq!(events[n - 2].kind(), "turn_end");
    let AgentEvent::AgentEnd { messages, .. } = &events[n - 1] else {
        panic!("no agent_end")
    };
    assert_eq!(messages.len(), 1);
    assert_eq!(
        messages[0].as_assistant().unwrap().error_message.as_deref(),
        Some("store is gone")
    );
}

struct Panics;

impl AgentTool for Panics {
    fn name(&self) -> &str {
        "panics"
    }
    fn label(&self) -> &str {
        "panics"
    }
    fn description(&self) -> &str {
        "always panics"
    }
    fn parameters(&self) -> serde_json::Value {
        json!({"type": "object"})
    }
    fn execute(
        &self,
        _ctx: filo_agent::ToolCallContext,
    ) -> futures::future::BoxFuture<'_, Result<filo_agent::ToolOutput, ToolError>> {
        Box::pin(async { panic!("index out of bounds") })
    }
}

#[tokio::test]
async fn a_panicking_tool_becomes_an_error_result() {
    let client = Scripted::new(vec![
        tools_turn(&[
            ("c1", "panics", json!({})),
            ("c2", "echo", json!({"text": "still here"})),
        ]),
        text_turn("recovered"),
    ]);
    let agent = agent_with(
        client,
        vec![Arc::new(Panics), Arc::new(TestTool::new("echo"))],
    );
    agent.prompt("go").await.unwrap();
    assert_eq!(
        history(&agent),
        [
            "user:go",
            "assistant[ToolUse]:",
            "toolResult!:Tool panics panicked: index out of bounds",
            "toolResult:echo: still here",
            "assistant[Stop]:recovered",
        ]
    );
}
