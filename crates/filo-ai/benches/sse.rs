//! Stream decoding throughput per wire codec: a generated ~5 MB stream (rendered by the
//! `filo-testkit` mock's own framing; Bedrock's is a binary AWS event stream) is fed in 16 KiB chunks through the real client path —
//! fixture transport, SSE framing, codec decoder, accumulator, event channel — entirely in memory.
//! Prints MB/s and heap allocations per event (counted by `stats_alloc`).

use std::alloc::System;
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use filo_ai::transport::{FixtureResponse, FixtureTransport};
use filo_ai::{
    AssistantEvent, Client, Context, Env, Model, ModelClient, ProviderRegistry, StopReason,
    StreamOptions,
};
use filo_testkit::{Block, Protocol, Reply, Stop, StreamContext, Usage};
use futures::StreamExt;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use tokio_util::sync::CancellationToken;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const TARGET_BYTES: usize = 5 * 1024 * 1024;
const CHUNK: usize = 16 * 1024;
const RUNS: usize = 7;

const WORDS: &[&str] = &[
    "the",
    "parser",
    "reads",
    "frames",
    "and",
    "emits",
    "deltas;",
    "quotes\u{a0}\"like",
    "this\"",
    "stay",
    "escaped,",
    "newlines\n",
    "too.",
    "Unicode",
    "caf\u{e9}",
    "\u{1f980}",
    "works",
    "fine",
    "here",
    "{json}",
];

fn text(words: usize, seed: usize) -> String {
    let mut s = String::new();
    for i in 0..words {
        s.push_str(WORDS[(i * 7 + seed) % WORDS.len()]);
        s.push(' ');
    }
    s
}

/// A reply of thinking, text and two tool calls, scaled by `n`.
fn reply(n: usize) -> Reply {
    Reply::default()
        .with_block(Block::Thinking {
            text: text(n / 10, 1),
            signature: "reasoning_content".into(),
        })
        .with_block(Block::Text(text(n, 2)))
        .with_block(Block::ToolCall {
            id: "call_1".into(),
            name: "write".into(),
            arguments: serde_json::json!({"path": "src/lib.rs", "content": text(200, 3)}),
        })
        .with_block(Block::ToolCall {
            id: "call_2".into(),
            name: "bash".into(),
            arguments: serde_json::json!({"command": "cargo test --workspace"}),
        })
        .with_stop(Stop::ToolUse)
        .with_usage(Usage {
            input: 1000,
            output: 5000,
            cache_read: 10,
            cache_write: 0,
        })
}

fn stream_bytes(protocol: Protocol) -> Bytes {
    let ctx = StreamContext::new("bench-model").with_include_usage(true);
    let render =
        |n| filo_testkit::encode(protocol, &filo_testkit::frames(protocol, &reply(n), &ctx));
    let probe = render(2000).len();
    let n = 2000 * TARGET_BYTES / probe.max(1);
    Bytes::from(render(n))
}

fn model(protocol: Protocol) -> Model {
    let (provider, id) = match protocol {
        Protocol::AnthropicMessages => ("anthropic", "claude-sonnet-4-5"),
        Protocol::OpenAiCompletions => ("groq", "openai/gpt-oss-120b"),
        Protocol::OpenAiResponses => ("openai", "gpt-5"),
        Protocol::GoogleGenerativeAi => ("google", "gemini-2.5-flash"),
        // APIs the built-in catalog has no provider for yet: a model record naming the API.
        Protocol::AzureOpenAiResponses => {
            return api_model(protocol, "azure-openai-responses", "gpt-5");
        }
        Protocol::GoogleVertex => return api_model(protocol, "google-vertex", "gemini-2.5-flash"),
        Protocol::MistralConversations => {
            return api_model(protocol, "mistral", "magistral-medium-latest");
        }
        Protocol::BedrockConverseStream => {
            return api_model(
                protocol,
                "amazon-bedrock",
                "us.anthropic.claude-sonnet-4-20250514-v1:0",
            );
        }
    };
    ProviderRegistry::builtin()
        .ok()
        .and_then(|r| r.model(provider, id))
        .unwrap_or_else(|| panic!("catalog lacks {provider}/{id}"))
}

fn api_model(protocol: Protocol, provider: &str, id: &str) -> Model {
    serde_json::from_value(serde_json::json!({
        "id": id, "name": id, "api": protocol.api_name(), "provider": provider,
        "baseUrl": "http://127.0.0.1:1", "reasoning": true, "input": ["text"],
        "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 100000, "maxTokens": 8000
    }))
    .unwrap_or_else(|e| panic!("model record for {id}: {e}"))
}

struct Measured {
    elapsed: Duration,
    events: usize,
    allocations: usize,
    bytes_allocated: usize,
    ok: bool,
}

async fn one_run(protocol: Protocol, body: &Bytes, m: &Model) -> Measured {
    let chunks: Vec<Bytes> = (0..body.len())
        .step_by(CHUNK)
        .map(|i| body.slice(i..(i + CHUNK).min(body.len())))
        .collect();
    let transport = Arc::new(FixtureTransport::new(vec![FixtureResponse::sse(chunks)]));
    // Bedrock signs each request (with pi's dummy keys under AWS_BEDROCK_SKIP_AUTH).
    let env = Env::from_vars([("AWS_BEDROCK_SKIP_AUTH", "1")]);
    let client = Client::with_transport(ProviderRegistry::empty(), env, transport);
    let ctx = Context::default();
    let options = StreamOptions {
        api_key: Some("bench".into()),
        ..StreamOptions::default()
    };
    let region = Region::new(GLOBAL);
    let started = Instant::now();
    let mut stream = client.stream(m, &ctx, &options, CancellationToken::new());
    let mut events = 0;
    let mut ok = false;
    while let Some(event) = stream.next().await {
        events += 1;
        if let AssistantEvent::Done { message } = &event {
            ok = message.stop_reason == StopReason::ToolUse && message.tool_calls().count() == 2;
        }
    }
    let elapsed = started.elapsed();
    let stats = region.change();
    let _ = protocol;
    Measured {
        elapsed,
        events,
        allocations: stats.allocations + stats.reallocations,
        bytes_allocated: stats.bytes_allocated,
        ok,
    }
}

fn main() {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => panic!("tokio runtime: {e}"),
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "| codec | stream MB | events | best MB/s | median MB/s | allocs/event | alloc bytes/event | ok |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---|");
    for protocol in [
        Protocol::AnthropicMessages,
        Protocol::OpenAiCompletions,
        Protocol::OpenAiResponses,
        Protocol::GoogleGenerativeAi,
        Protocol::MistralConversations,
        Protocol::BedrockConverseStream,
    ] {
        // `SSE_BENCH_ONLY=<api>` measures one codec (for profiling).
        if std::env::var("SSE_BENCH_ONLY").is_ok_and(|only| only != protocol.api_name()) {
            continue;
        }
        let body = stream_bytes(protocol);
        let m = model(protocol);
        let mut runs: Vec<Measured> = (0..RUNS)
            .map(|_| runtime.block_on(one_run(protocol, &body, &m)))
            .collect();
        runs.sort_by_key(|r| r.elapsed);
        let mb = body.len() as f64 / (1024.0 * 1024.0);
        let best = &runs[0];
        let median = &runs[RUNS / 2];
        let _ = writeln!(
            out,
            "| {} | {:.2} | {} | {:.0} | {:.0} | {:.2} | {:.0} | {} |",
            protocol.api_name(),
            mb,
            best.events,
            mb / best.elapsed.as_secs_f64(),
            mb / median.elapsed.as_secs_f64(),
            best.allocations as f64 / best.events as f64,
            best.bytes_allocated as f64 / best.events as f64,
            runs.iter().all(|r| r.ok),
        );
    }
}
