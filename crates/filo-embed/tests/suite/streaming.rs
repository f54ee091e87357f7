//! D4 (block-chunked stream with a code fence) and D5 (flush before tool).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use filo_agent::{AgentTool, ToolCallContext, ToolError, ToolOutput};
use filo_embed::run::params::BlockReplyConfig;
use filo_embed::stream::chunker::{BreakPreference, Chunking};
use filo_embed::subscriber::machine::BlockBreak;
use filo_embed::{ReplySink, RunError, ToolContext};
use filo_testkit::{Reply, Turn};
use futures::future::BoxFuture;
use serde_json::json;

use super::{Harness, Recorder, Seen};

const D4_TEXT: &str = "<think>plan</think>[[reply_to_current]] Intro paragraph here.\n\n```rust\nfn main() {\n    println!(\"hello world from filo\");\n}\n```\n\nDone.";

#[tokio::test]
async fn d4_blocks_keep_code_fences_balanced_and_hide_tags() {
    let h = Harness::new(vec![Turn::text(D4_TEXT)], json!({})).await;
    let sink = Arc::new(Recorder::default());
    let mut p = h.params("d4", "show me");
    p.block_reply = Some(BlockReplyConfig {
        break_mode: BlockBreak::TextEnd,
        chunking: Some(Chunking::new(10, 40).with_preference(BreakPreference::Paragraph)),
    });
    let r = h.embedder.run(p, sink.clone()).await.unwrap();
    let blocks = sink.blocks();
    let texts: Vec<String> = blocks
        .iter()
        .map(|b| b.text.clone().unwrap_or_default())
        .collect();
    assert!(blocks.len() >= 3, "{texts:#?}");
    assert_eq!(texts[0], "Intro paragraph here.");
    assert!(blocks[0].reply_to_current);
    assert_eq!(texts.last().map(String::as_str), Some("Done."));
    for t in &texts {
        assert!(!t.contains("<think>") && !t.contains("[["), "{t}");
        assert_eq!(t.matches("```").count() % 2, 0, "unbalanced fence in {t:?}");
    }
    let code: Vec<&String> = texts.iter().filter(|t| t.contains("```")).collect();
    assert!(code.len() >= 2, "the code block is split: {texts:#?}");
    assert!(code.iter().all(|t| t.starts_with("```rust")), "{code:#?}");
    let partials = sink.partials();
    assert!(!partials.is_empty());
    for w in partials.windows(2) {
        assert!(w[1].starts_with(&w[0]) && w[1].len() > w[0].len(), "{w:?}");
    }
    assert!(
        partials
            .iter()
            .all(|p| !p.contains("<think>") && !p.contains("[["))
    );
    let payloads: Vec<String> = r.payloads.iter().filter_map(|p| p.text.clone()).collect();
    assert_eq!(payloads, texts, "the result carries the same blocks");
    // Golden: what OpenClaw 2026.9.6's own `EmbeddedBlockChunker` emits for these word deltas
    // with min 10 / max 40 / paragraph (run with node on the npm package).
    assert_eq!(
        texts,
        vec![
            "Intro paragraph here.".to_owned(),
            "```rust\nfn main() {\n    println!(\"he\n```".to_owned(),
            "```rust\nllo world from filo\");\n}\n```".to_owned(),
            "Done.".to_owned(),
        ]
    );
}

/// A tool that records which blocks the sink had received when it ran.
struct Probe {
    sink: Arc<Recorder>,
    saw: Arc<Mutex<Option<Vec<Seen>>>>,
}

impl AgentTool for Probe {
    fn name(&self) -> &str {
        "probe"
    }
    fn label(&self) -> &str {
        "Probe"
    }
    fn description(&self) -> &str {
        "Records what the channel has shown"
    }
    fn parameters(&self) -> serde_json::Value {
        json!({"type": "object", "properties": {}})
    }
    fn execute(&self, _ctx: ToolCallContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            *self.saw.lock().unwrap() = Some(self.sink.seen());
            Ok(ToolOutput::text("probed"))
        })
    }
}

#[tokio::test(start_paused = true)]
async fn d5_the_text_before_a_tool_call_is_delivered_before_the_tool_runs() {
    let first = Reply::text("Checking the file.").with_tool_call("call_1", "probe", json!({}));
    let h = Harness::new(vec![first.into(), Turn::text("Done")], json!({})).await;
    let sink = Arc::new(Recorder {
        block_delay: Some(Duration::from_millis(50)),
        ..Recorder::default()
    });
    let saw: Arc<Mutex<Option<Vec<Seen>>>> = Arc::default();
    let (probe_sink, probe_saw) = (sink.clone(), saw.clone());
    h.embedder
        .register_tool_factory(Arc::new(move |_ctx: &ToolContext| {
            vec![Arc::new(Probe {
                sink: probe_sink.clone(),
                saw: probe_saw.clone(),
            }) as Arc<dyn AgentTool>]
        }));
    let mut p = h.params("d5", "check");
    p.block_reply = Some(BlockReplyConfig {
        break_mode: BlockBreak::TextEnd,
        chunking: None,
    });
    let r = h.embedder.run(p, sink.clone()).await.unwrap();
    assert_eq!(
        r.payloads.last().and_then(|p| p.text.as_deref()),
        Some("Done")
    );
    let seen_by_tool = saw.lock().unwrap().clone().expect("the probe ran");
    let delivered: Vec<String> = seen_by_tool
        .iter()
        .filter_map(|s| match s {
            Seen::Block(b) => b.text.clone(),
            _ => None,
        })
        .collect();
    assert_eq!(delivered, vec!["Checking the file.".to_owned()]);
    let reqs = h.mock.requests();
    assert_eq!(reqs.len(), 2);
    assert!(reqs[1].body.to_string().contains("probed"));
}

/// A channel whose delivery panics, or never returns.
struct BrokenSink {
    hang: bool,
}

impl ReplySink for BrokenSink {
    fn block_reply(&self, _b: filo_embed::BlockReply) -> BoxFuture<'_, ()> {
        let hang = self.hang;
        Box::pin(async move {
            if hang {
                std::future::pending::<()>().await;
            }
            panic!("the channel crashed");
        })
    }
}

fn text_end() -> Option<BlockReplyConfig> {
    Some(BlockReplyConfig {
        break_mode: BlockBreak::TextEnd,
        chunking: None,
    })
}

#[tokio::test(start_paused = true)]
async fn a_sink_that_panics_or_hangs_ends_its_run_with_an_error_and_frees_its_lane() {
    let turns = vec![
        Turn::text("to a broken channel"),
        Turn::text("to a stuck channel"),
        Turn::text("fine again"),
    ];
    let h = Harness::new(turns, json!({})).await;
    for hang in [false, true] {
        let mut p = h.params("sink", "hi");
        p.block_reply = text_end();
        let err = h
            .embedder
            .run(p, Arc::new(BrokenSink { hang }))
            .await
            .unwrap_err();
        assert!(matches!(err, RunError::Sink(_)), "{err}");
        let expected = if hang {
            "did not finish a delivery"
        } else {
            "panicked"
        };
        assert!(err.to_string().contains(expected), "{err}");
    }
    // The turns were saved, and the lane is free for the next run of the same session.
    let text = std::fs::read_to_string(h.session_file("sink")).unwrap();
    assert!(text.contains("to a broken channel") && text.contains("to a stuck channel"));
    let sink = Arc::new(Recorder::default());
    let mut p = h.params("sink", "again");
    p.block_reply = text_end();
    let r = h.embedder.run(p, sink.clone()).await.unwrap();
    assert_eq!(r.payloads[0].text.as_deref(), Some("fine again"));
    assert_eq!(sink.blocks().len(), 1);
}

#[tokio::test]
async fn run_streaming_sends_the_same_callbacks_as_events_and_ends_with_the_result() {
    use filo_embed::ReplyEvent;
    let h = Harness::new(vec![Turn::text("First part.\n\nSecond part.")], json!({})).await;
    let mut p = h.params("stream", "go");
    p.block_reply = Some(BlockReplyConfig {
        break_mode: BlockBreak::TextEnd,
        chunking: Some(Chunking::new(5, 20)),
    });
    let (task, mut rx) = h.embedder.run_streaming(p);
    // The channel closes when the run is over: an idle cached session keeps no sink alive.
    let collect = async {
        let mut events = Vec::new();
        while let Some(e) = rx.recv().await {
            events.push(e);
        }
        events
    };
    let events = tokio::time::timeout(Duration::from_secs(60), collect)
        .await
        .expect("the sink is released when the run ends");
    task.await.unwrap();
    let blocks: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            ReplyEvent::Block(b) => b.text.clone(),
            _ => None,
        })
        .collect();
    assert_eq!(
        blocks,
        vec!["First part.".to_owned(), "Second part.".to_owned()]
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, ReplyEvent::Partial(p) if p.text.starts_with("First")))
    );
    let Some(ReplyEvent::Done(result)) = events.last() else {
        panic!("the last event is the result: {events:?}")
    };
    let r = result.as_ref().as_ref().unwrap();
    let texts: Vec<&str> = r
        .payloads
        .iter()
        .filter_map(|p| p.text.as_deref())
        .collect();
    assert_eq!(texts, ["First part.", "Second part."]);
}

#[tokio::test]
async fn the_shell_sees_the_embedders_variables_not_the_process_environment_nor_keys() {
    assert!(
        std::env::var_os("HOME").is_some(),
        "the test process has a HOME"
    );
    let call = Reply::tool_call(
        "call_1",
        "bash",
        json!({"command": "echo \"[$EMBED_VISIBLE|$OPENAI_API_KEY|$HOME]\""}),
    );
    let path = std::env::var("PATH").unwrap();
    let h = super::Harness::with_env(
        vec![call.into(), Turn::text("done")],
        json!({}),
        &[
            ("OPENAI_API_KEY", "sk-env"),
            ("EMBED_VISIBLE", "yes"),
            ("PATH", &path),
        ],
    )
    .await;
    let r = h
        .embedder
        .run(
            h.params("env", "show env"),
            Arc::new(super::Recorder::default()),
        )
        .await
        .unwrap();
    assert_eq!(
        r.payloads.last().and_then(|p| p.text.as_deref()),
        Some("done")
    );
    let sent = h.mock.requests()[1].body.to_string();
    assert!(
        sent.contains("[yes||]"),
        "the key is removed and HOME is not inherited: {sent}"
    );
}
