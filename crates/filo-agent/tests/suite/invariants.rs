//! Properties of tool execution over random batches: every call gets exactly one start and one
//! end, results are published in assistant order, exclusive calls never overlap anything.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use filo_agent::{
    AgentEvent, AgentTool, Concurrency, ToolCallContext, ToolError, ToolExecution, ToolOutput,
};
use futures::future::BoxFuture;
use proptest::prelude::*;
use serde_json::{Value, json};

use super::support::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Shared,
    Exclusive,
    Failing,
    Unknown,
    Invalid,
}

#[derive(Default)]
struct Probes {
    running: AtomicUsize,
    exclusive: AtomicUsize,
    violations: AtomicUsize,
}

struct Probe {
    name: &'static str,
    concurrency: Concurrency,
    fail: bool,
    probes: Arc<Probes>,
}

impl AgentTool for Probe {
    fn name(&self) -> &str {
        self.name
    }
    fn label(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "probe"
    }
    fn parameters(&self) -> Value {
        json!({"type":"object","properties":{"ms":{"type":"integer"},"updates":{"type":"integer"}},"required":["ms"]})
    }
    fn concurrency(&self) -> Concurrency {
        self.concurrency
    }
    fn execute(&self, ctx: ToolCallContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let p = &self.probes;
            let exclusive = self.concurrency == Concurrency::Exclusive;
            let others = p.running.fetch_add(1, Ordering::SeqCst);
            if p.exclusive.load(Ordering::SeqCst) > 0 || (exclusive && others > 0) {
                p.violations.fetch_add(1, Ordering::SeqCst);
            }
            if exclusive {
                p.exclusive.fetch_add(1, Ordering::SeqCst);
            }
            let updates = ctx.args["updates"].as_u64().unwrap_or(0);
            for i in 0..updates {
                (ctx.updates)(ToolOutput::text(format!("{i}")));
                tokio::task::yield_now().await;
            }
            let ms = ctx.args["ms"].as_u64().unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            if exclusive {
                p.exclusive.fetch_sub(1, Ordering::SeqCst);
            }
            p.running.fetch_sub(1, Ordering::SeqCst);
            if self.fail {
                Err(ToolError::failed("probe failed"))
            } else {
                Ok(ToolOutput::text(format!("{} done", ctx.call_id)))
            }
        })
    }
}

fn call_for(i: usize, kind: Kind, ms: u64, updates: u64) -> (String, &'static str, Value) {
    let id = format!("c{i}");
    let args = json!({"ms": ms, "updates": updates});
    match kind {
        Kind::Shared => (id, "shared", args),
        Kind::Exclusive => (id, "exclusive", args),
        Kind::Failing => (id, "failing", args),
        Kind::Unknown => (id, "missing", args),
        Kind::Invalid => (id, "shared", json!({"updates": "many"})),
    }
}

async fn check(calls: Vec<(Kind, u64, u64)>, sequential: bool) {
    let probes = Arc::new(Probes::default());
    let tool = |name, concurrency, fail| -> Arc<dyn AgentTool> {
        Arc::new(Probe {
            name,
            concurrency,
            fail,
            probes: Arc::clone(&probes),
        })
    };
    let tools = vec![
        tool("shared", Concurrency::Shared, false),
        tool("exclusive", Concurrency::Exclusive, false),
        tool("failing", Concurrency::Shared, true),
    ];
    let specs: Vec<_> = calls
        .iter()
        .enumerate()
        .map(|(i, (k, ms, up))| call_for(i, *k, *ms, *up))
        .collect();
    let turn_calls: Vec<(&str, &str, Value)> = specs
        .iter()
        .map(|(id, name, args)| (id.as_str(), *name, args.clone()))
        .collect();
    let client = Scripted::new(vec![tools_turn(&turn_calls), text_turn("end")]);
    let agent = agent_with(client, tools);
    if sequential {
        agent.set_tool_execution(ToolExecution::Sequential);
    }
    let rec = Recorder::attach(&agent);
    agent.prompt("go").await.unwrap();

    assert_eq!(
        probes.violations.load(Ordering::SeqCst),
        0,
        "exclusive overlap"
    );
    let events = rec.events();
    let executed: Vec<bool> = calls
        .iter()
        .map(|(k, _, _)| matches!(k, Kind::Shared | Kind::Exclusive | Kind::Failing))
        .collect();
    let mut ends = Vec::new();
    for (i, (id, _, _)) in specs.iter().enumerate() {
        let pos = |kind: &str| -> Vec<usize> {
            events
                .iter()
                .enumerate()
                .filter(|(_, e)| label(e) == format!("{kind}({id})"))
                .map(|(n, _)| n)
                .collect()
        };
        let (starts, end, updates) = (
            pos("tool_execution_start"),
            pos("tool_execution_end"),
            pos("tool_execution_update"),
        );
        assert_eq!((starts.len(), end.len()), (1, 1), "call {id}");
        assert!(starts[0] < end[0]);
        assert!(updates.iter().all(|u| *u > starts[0] && *u < end[0]));
        if executed[i] {
            ends.push(end[0]);
        }
    }
    let first_result = events.iter().position(
        |e| matches!(e, AgentEvent::MessageStart { message } if message.as_tool_result().is_some()),
    );
    if sequential {
        assert!(
            ends.windows(2).all(|w| w[0] < w[1]),
            "executed calls end in order"
        );
    } else {
        // pi 0.73: ends in completion order, then every result message once the batch is done.
        let last_end = ends.iter().max().copied().unwrap_or(0);
        assert!(
            first_result.is_none_or(|r| r > last_end),
            "results follow every end"
        );
    }
    let published: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::MessageEnd { message } => {
                message.as_tool_result().map(|r| r.tool_call_id.clone())
            }
            _ => None,
        })
        .collect();
    let expected: Vec<String> = specs.iter().map(|(id, _, _)| id.clone()).collect();
    assert_eq!(published, expected);
    assert!(agent.state().pending_tool_calls.is_empty());
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        3 => Just(Kind::Shared),
        2 => Just(Kind::Exclusive),
        1 => Just(Kind::Failing),
        1 => Just(Kind::Unknown),
        1 => Just(Kind::Invalid),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 40,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_call_gets_one_result_in_order(
        calls in prop::collection::vec((kind(), 0u64..3, 0u64..3), 1..7),
        sequential in any::<bool>(),
    ) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(check(calls, sequential));
    }
}
