//! Classification cost per error text (ISSUE 11 benchmark list): `classify_failover_reason`,
//! `is_likely_context_overflow_error` and `format_error_text` over a mix of real provider error
//! texts, next to the naive approach — every pattern compiled on each call. Prints a table; run
//! with `cargo bench -p filo-embed --bench classify`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::hint::black_box;
use std::time::Instant;

use filo_embed::classify::copy::{ErrorCopyContext, format_error_text};
use filo_embed::classify::{classify_failover_reason, is_likely_context_overflow_error};
use regex::Regex;

const TEXTS: &[&str] = &[
    "429 Too Many Requests",
    r#"429 {"type":"error","error":{"type":"rate_limit_error","message":"Rate limit reached"}}"#,
    r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    "prompt is too long: 208423 tokens > 200000 maximum",
    "Stream idle timeout: no data received for 60000 ms",
    "Connection error: connection refused",
    "No API key for provider: openai",
    "Your credit balance is too low to access the Anthropic API.",
    "503 service unavailable",
    "invalid request format",
    "file does not exist",
    "image exceeds 5 MB maximum",
];

/// The naive classifier: the same rate-limit / timeout / auth regexes, compiled per call.
fn naive(text: &str) -> bool {
    let lower = text.to_lowercase();
    [
        r"rate[_ ]limit|too many requests|429",
        r"timeout|timed out|connection error|deadline exceeded",
        r"invalid[_ ]?api[_ ]?key|unauthorized|no api key",
        r"credit balance|payment required|insufficient credits",
    ]
    .iter()
    .any(|p| Regex::new(p).unwrap().is_match(&lower))
}

fn measure(name: &str, rounds: usize, mut f: impl FnMut(&str) -> usize) {
    let mut best = f64::MAX;
    for _ in 0..5 {
        let start = Instant::now();
        let mut sink = 0;
        for _ in 0..rounds {
            for text in TEXTS {
                sink += f(black_box(text));
            }
        }
        black_box(sink);
        best = best.min(start.elapsed().as_secs_f64());
    }
    let per_text_ns = best * 1e9 / (rounds * TEXTS.len()) as f64;
    println!("| {name:<40} | {per_text_ns:>12.0} |");
}

fn main() {
    println!("{} error texts, best of 5 runs; ns per text", TEXTS.len());
    println!("| {:<40} | {:>12} |", "case", "ns/text");
    println!("|{:-<42}|{:->14}|", "", "");
    // warm the compiled-once patterns
    for t in TEXTS {
        classify_failover_reason(t);
        is_likely_context_overflow_error(t);
    }
    measure("classify_failover_reason", 20_000, |t| {
        usize::from(classify_failover_reason(t).is_some())
    });
    measure("is_likely_context_overflow_error", 20_000, |t| {
        usize::from(is_likely_context_overflow_error(t))
    });
    measure("format_error_text (user copy)", 20_000, |t| {
        format_error_text(t, &ErrorCopyContext::default()).len()
    });
    measure("naive: regexes compiled per call", 200, |t| {
        usize::from(naive(t))
    });
}
