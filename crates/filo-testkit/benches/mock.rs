//! How fast the mock serves and renders: sequential request round trips per protocol over raw
//! TCP on 127.0.0.1, and the cost of rendering a large reply. Prints a table.
#![allow(clippy::print_stdout)]

use std::error::Error;
use std::hint::black_box;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use filo_testkit::{MockProvider, Protocol, Reply, StreamContext, Turn, Usage, encode, frames};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const REQUESTS: usize = 400;
const RENDERS: usize = 50;

fn reply() -> Reply {
    Reply::thinking("Let me look at the two directories first.", "sig==")
        .with_text("I will list both directories and compare them.")
        .with_tool_call("call_1", "ls", json!({"path": "/tmp/a", "limit": 10}))
        .with_tool_call("call_2", "ls", json!({"path": "/tmp/b", "limit": 20}))
        .with_usage(Usage::new(1200, 85).with_cache(300, 0))
}

fn body(protocol: Protocol) -> String {
    match protocol {
        Protocol::AnthropicMessages => json!({"model": "m", "max_tokens": 64, "stream": true, "messages": []}),
        Protocol::OpenAiCompletions => json!({"model": "m", "stream": true, "stream_options": {"include_usage": true}, "messages": []}),
        Protocol::OpenAiResponses | Protocol::AzureOpenAiResponses => json!({"model": "m", "stream": true, "input": []}),
        Protocol::GoogleGenerativeAi | Protocol::GoogleVertex => json!({"contents": []}),
        Protocol::MistralConversations => json!({"model": "m", "stream": true, "messages": []}),
        Protocol::BedrockConverseStream => json!({"messages": []}),
    }
    .to_string()
}

/// One request with `Connection: close`; returns the bytes received.
async fn round_trip(
    addr: SocketAddr,
    protocol: Protocol,
    body: &str,
) -> Result<usize, Box<dyn Error>> {
    let mut stream = TcpStream::connect(addr).await?;
    let request = format!(
        "POST {} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        protocol.request_path("m"),
        body.len()
    );
    stream.write_all(request.as_bytes()).await?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await?;
    if !raw.starts_with(b"HTTP/1.1 200") {
        return Err(format!("unexpected response: {}", String::from_utf8_lossy(&raw)).into());
    }
    Ok(raw.len())
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

async fn serve_table() -> Result<(), Box<dyn Error>> {
    println!(
        "mock round trips: {REQUESTS} sequential requests per protocol, reply = thinking + text + 2 tool calls"
    );
    println!("| protocol | req/s | p50 µs | p99 µs | bytes/response |");
    println!("|---|---:|---:|---:|---:|");
    for protocol in Protocol::ALL {
        let mock = MockProvider::start((0..REQUESTS).map(|_| Turn::Reply(reply())).collect()).await;
        let body = body(protocol);
        let mut latencies = Vec::with_capacity(REQUESTS);
        let mut bytes = 0;
        let started = Instant::now();
        for _ in 0..REQUESTS {
            let t = Instant::now();
            bytes = round_trip(mock.addr(), protocol, &body).await?;
            latencies.push(t.elapsed());
        }
        let total = started.elapsed();
        latencies.sort();
        println!(
            "| {} | {:.0} | {:.0} | {:.0} | {bytes} |",
            protocol.api_name(),
            REQUESTS as f64 / total.as_secs_f64(),
            micros(percentile(&latencies, 0.5)),
            micros(percentile(&latencies, 0.99)),
        );
        mock.shutdown().await;
    }
    Ok(())
}

fn render_table() {
    let text = "lorem ipsum dolor sit amet ".repeat(4_000);
    let big = Reply::text(text.clone()).with_tool_call(
        "call_1",
        "write",
        json!({"path": "big.txt", "content": text}),
    );
    println!();
    println!(
        "rendering a ~108 KB text block + a ~108 KB tool argument, {RENDERS} renders (frames + encode)"
    );
    println!("| protocol | frames | bytes | µs/render |");
    println!("|---|---:|---:|---:|");
    for protocol in Protocol::ALL {
        let ctx = StreamContext::new("m").with_include_usage(true);
        let started = Instant::now();
        let mut out = (0, 0);
        for _ in 0..RENDERS {
            let f = frames(protocol, black_box(&big), &ctx);
            out = (f.len(), encode(protocol, &f).len());
        }
        let per = started.elapsed() / RENDERS as u32;
        println!(
            "| {} | {} | {} | {:.0} |",
            protocol.api_name(),
            out.0,
            out.1,
            micros(per)
        );
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(serve_table())?;
    render_table();
    Ok(())
}
