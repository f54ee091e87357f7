//! Redraw cost of the UI (a bench binary printing a table, no harness): the first frame of an
//! empty conversation, then a 20,000-token streamed answer with a frame drawn every
//! `DELTAS_PER_FRAME` deltas (the app draws at most one frame per 16 ms and applies every event
//! that arrived in between), on ratatui's TestBackend at 120×40. Single-threaded and CPU-bound,
//! so wall time is CPU time.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::time::{Duration, Instant};

use filo_agent::{AgentEvent, AgentMessage, PartialMessage};
use filo_ai::{AssistantEvent, AssistantMessage, Message, StopReason};
use filo_core::SessionEvent;
use filo_tui::{AppState, ColorDepth, FooterInfo, Theme};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

const TOKENS: usize = 20_000;
const DELTAS_PER_FRAME: usize = 10;

fn message() -> AssistantMessage {
    AssistantMessage {
        content: Vec::new(),
        api: "openai-completions".into(),
        provider: "mock".into(),
        model: "mock-model".into(),
        usage: filo_ai::Usage::default(),
        stop_reason: StopReason::Stop,
        timestamp: 0,
        error_message: None,
        error_status: None,
        response_id: None,
    }
}

/// Markdown-ish tokens: words, some bold, a code block every so often, paragraph breaks.
fn token(i: usize) -> String {
    match i % 97 {
        0 => "\n\n".into(),
        40 => "\n\n```rust\nfn main() { let x = \"s\"; }\n```\n\n".into(),
        13 => " **bold**".into(),
        _ => format!(" word{}", i % 13),
    }
}

fn percentile(v: &mut [Duration], p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 - 1.0) * p) as usize]
}

fn main() {
    let theme = Theme::builtin("dark", ColorDepth::TrueColor).unwrap();
    let footer = FooterInfo {
        model: Some("mock/mock-model".into()),
        context_window: 200_000,
        ..FooterInfo::default()
    };
    let t0 = Instant::now();
    let mut state = AppState::new(theme, footer);
    let mut term = Terminal::new(TestBackend::new(120, 40)).unwrap();
    term.draw(|f| filo_tui::view::draw(f, &mut state)).unwrap();
    let first_frame = t0.elapsed();

    state.apply(&SessionEvent::Agent(AgentEvent::AgentStart));
    let initial = message();
    state.apply(&SessionEvent::Agent(AgentEvent::MessageStart {
        message: AgentMessage::Llm(Message::Assistant(initial.clone())),
    }));
    let mut partial = PartialMessage::new(initial);
    let mut apply_time = Duration::ZERO;
    let mut frames = Vec::new();
    let start = Instant::now();
    let ev = AssistantEvent::TextStart { index: 0 };
    partial.apply(&ev);
    state.apply(&SessionEvent::Agent(AgentEvent::MessageUpdate {
        partial: partial.clone(),
        event: ev,
    }));
    for i in 0..TOKENS {
        let a = Instant::now();
        let event = AssistantEvent::TextDelta {
            index: 0,
            delta: token(i),
        };
        partial.apply(&event);
        state.apply(&SessionEvent::Agent(AgentEvent::MessageUpdate {
            partial: partial.clone(),
            event,
        }));
        apply_time += a.elapsed();
        if i % DELTAS_PER_FRAME == DELTAS_PER_FRAME - 1 {
            let d = Instant::now();
            term.draw(|f| filo_tui::view::draw(f, &mut state)).unwrap();
            frames.push(d.elapsed());
        }
    }
    let total = start.elapsed();
    let draw_total: Duration = frames.iter().sum();
    let n = frames.len();
    let mean = draw_total / n as u32;
    let last_100: Duration = frames[n - 100..].iter().sum::<Duration>() / 100;
    let p50 = percentile(&mut frames.clone(), 0.5);
    let p99 = percentile(&mut frames.clone(), 0.99);
    let max = percentile(&mut frames, 1.0);
    let chars = partial.message().text().len();
    println!("## filo-tui redraw bench (TestBackend 120x40, release)");
    println!();
    println!("| measure | value |");
    println!("|---|---|");
    println!(
        "| first frame (state + draw, empty conversation) | {:.3} ms |",
        first_frame.as_secs_f64() * 1e3
    );
    println!("| streamed answer | {TOKENS} deltas, {chars} chars |");
    println!("| frames drawn (one per {DELTAS_PER_FRAME} deltas) | {n} |");
    println!(
        "| event apply, per delta | {:.2} µs |",
        apply_time.as_secs_f64() * 1e6 / TOKENS as f64
    );
    println!(
        "| draw per frame: mean / p50 / p99 / max | {:.3} / {:.3} / {:.3} / {:.3} ms |",
        mean.as_secs_f64() * 1e3,
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3,
        max.as_secs_f64() * 1e3
    );
    println!(
        "| draw per frame, last 100 frames (longest message) | {:.3} ms |",
        last_100.as_secs_f64() * 1e3
    );
    println!(
        "| frames/s sustainable at the end (1 / last-100 mean) | {:.0} |",
        1.0 / last_100.as_secs_f64()
    );
    println!(
        "| CPU at the 60 fps cap, end of the answer | {:.1} % of one core |",
        last_100.as_secs_f64() * 60.0 * 100.0
    );
    println!("| whole run | {:.1} ms |", total.as_secs_f64() * 1e3);
}
