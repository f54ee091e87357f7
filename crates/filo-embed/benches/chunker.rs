//! Block chunker throughput on a 10 MB mixed markdown stream delivered in word-sized deltas
//! (ISSUE 11 goal: ≥ 200 MB/s), next to the naive approach (append, cut every `max_chars`
//! chars with no break or fence logic) on the same deltas, and the streaming tag stripper on the
//! same stream. Prints a table; run with `cargo bench -p filo-embed --bench chunker`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::hint::black_box;
use std::time::Instant;

use filo_embed::stream::chunker::{BlockChunker, Chunking};
use filo_embed::stream::tags::{Stripped, TagStripper};

const TARGET_BYTES: usize = 10 * 1024 * 1024;
const RUNS: usize = 5;

/// A deterministic markdown document: paragraphs of words and sentences, bullet lists, fenced
/// code blocks, inline code, a few non-ASCII words.
fn markdown(target: usize) -> String {
    let words = [
        "the",
        "agent",
        "reads",
        "file",
        "and",
        "then",
        "writes",
        "a",
        "patch",
        "for",
        "über",
        "naïve",
        "日本語",
        "`cargo`",
        "test",
        "build",
        "tool",
        "call",
        "result",
        "stream",
    ];
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut out = String::with_capacity(target + 4096);
    while out.len() < target {
        match next() % 10 {
            0 => {
                out.push_str("```rust\n");
                for _ in 0..(5 + next() % 20) {
                    out.push_str("    let x = compute(y, z); // step\n");
                }
                out.push_str("```\n\n");
            }
            1 | 2 => {
                for _ in 0..(2 + next() % 5) {
                    out.push_str("- ");
                    for _ in 0..(3 + next() % 8) {
                        out.push_str(words[(next() % words.len() as u64) as usize]);
                        out.push(' ');
                    }
                    out.push('\n');
                }
                out.push('\n');
            }
            _ => {
                for s in 0..(2 + next() % 6) {
                    for w in 0..(5 + next() % 15) {
                        if w > 0 {
                            out.push(' ');
                        }
                        out.push_str(words[(next() % words.len() as u64) as usize]);
                    }
                    out.push_str(if s % 3 == 2 { "!\n" } else { ". " });
                }
                out.push_str("\n\n");
            }
        }
    }
    out
}

/// Word-sized deltas: each word with the whitespace before it.
fn deltas(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        while i < bytes.len() && !bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        out.push(&text[start..i]);
        start = i;
    }
    out
}

fn chunker_run(deltas: &[&str], chunking: Chunking) -> (usize, usize) {
    let mut chunker = BlockChunker::new(chunking);
    let (mut blocks, mut bytes) = (0, 0);
    for d in deltas {
        chunker.append(d);
        chunker.drain(false, |c| {
            blocks += 1;
            bytes += c.len();
        });
    }
    chunker.drain(true, |c| {
        blocks += 1;
        bytes += c.len();
    });
    (blocks, bytes)
}

fn naive_run(deltas: &[&str], max_chars: usize) -> (usize, usize) {
    let mut buffer = String::new();
    let (mut blocks, mut bytes) = (0, 0);
    for d in deltas {
        buffer.push_str(d);
        while buffer.chars().count() >= max_chars {
            let cut = buffer
                .char_indices()
                .nth(max_chars)
                .map_or(buffer.len(), |(i, _)| i);
            let rest = buffer.split_off(cut);
            blocks += 1;
            bytes += buffer.len();
            buffer = rest;
        }
    }
    if !buffer.is_empty() {
        blocks += 1;
        bytes += buffer.len();
    }
    (blocks, bytes)
}

fn tags_run(deltas: &[&str]) -> (usize, usize) {
    let mut stripper = TagStripper::new(false);
    let mut out = Stripped::default();
    for d in deltas {
        stripper.push_into(d, &mut out);
        out.visible.clear();
    }
    let bytes = stripper.finish().visible.len();
    (deltas.len(), bytes)
}

fn measure(name: &str, input_bytes: usize, mut f: impl FnMut() -> (usize, usize)) {
    let mut best = f64::MAX;
    let mut result = (0, 0);
    for _ in 0..RUNS {
        let start = Instant::now();
        result = black_box(f());
        best = best.min(start.elapsed().as_secs_f64());
    }
    let mbps = input_bytes as f64 / (1024.0 * 1024.0) / best;
    println!(
        "| {name:<44} | {:>9.1} | {:>8.1} | {:>8} |",
        best * 1000.0,
        mbps,
        result.0
    );
}

fn main() {
    let text = markdown(TARGET_BYTES);
    let parts = deltas(&text);
    println!(
        "input: {:.1} MB mixed markdown, {} word-sized deltas; best of {RUNS} runs",
        text.len() as f64 / (1024.0 * 1024.0),
        parts.len()
    );
    println!(
        "| {:<44} | {:>9} | {:>8} | {:>8} |",
        "case", "ms", "MB/s", "blocks"
    );
    println!("|{:-<46}|{:->11}|{:->10}|{:->10}|", "", "", "", "");
    for (min, max) in [(200, 800), (800, 1200), (1500, 3000)] {
        let chunking = Chunking::new(min, max);
        measure(
            &format!("BlockChunker paragraph min {min} max {max}"),
            text.len(),
            || chunker_run(&parts, chunking),
        );
    }
    measure("naive cut every 800 chars", text.len(), || {
        naive_run(&parts, 800)
    });
    measure(
        "TagStripper (streaming, no enforcement)",
        text.len(),
        || tags_run(&parts),
    );
}
