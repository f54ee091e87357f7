//! Benchmark support: an endless scripted mock provider for the filo-vs-pi comparison.
//!
//! Owns: [`Scenario`] (what the mock model answers, request after request) and [`EndlessMock`],
//! a [`MockProvider`] whose script is topped up in the background so that any number of runs can
//! be served by one long-lived server process (`filo-mock-server`).
//!
//! Does not own: the mock provider and its wire protocols (`filo-testkit`), the benchmark driver
//! (`scripts/bench-vs-pi/run.sh`), or anything compiled into filo.
//!
//! Invariants: the script never runs dry while the refill task is alive (it is topped up well
//! before the low-water mark could be reached by sequential runs); in the [`Scenario::Tool`]
//! script turns come in pairs — a `bash` tool call, then a text answer — and are always pushed a
//! whole pair at a time, so a client that completes each tool loop sees them alternate.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use filo_testkit::{MockProvider, Turn, Usage};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

/// The text the [`Scenario::Text`] model answers with.
pub const TEXT_ANSWER: &str = "Hello from the benchmark mock. This is a short, complete answer.";

/// The command the [`Scenario::Tool`] model asks `bash` to run.
pub const TOOL_COMMAND: &str = "echo filo-bench-tool-output";

/// The text the [`Scenario::Tool`] model answers with once it has the tool result.
pub const TOOL_ANSWER: &str = "The command printed filo-bench-tool-output. Done.";

/// Words in the [`Scenario::Stream`] answer: one streamed delta each.
pub const STREAM_WORDS: usize = 20_000;

/// The [`Scenario::Stream`] answer: [`STREAM_WORDS`] words (`w1 w2 …`), one line every 12 words
/// as a long answer has, ending with [`STREAM_END`].
pub fn stream_answer() -> String {
    let mut text = String::with_capacity(STREAM_WORDS * 7);
    for i in 1..STREAM_WORDS {
        text.push('w');
        text.push_str(&i.to_string());
        text.push(if i % 12 == 0 { '\n' } else { ' ' });
    }
    text.push_str(STREAM_END);
    text
}

/// The last word of the [`Scenario::Stream`] answer (what a driver checks for).
pub const STREAM_END: &str = "end-of-stream.";

/// Turns kept queued at least; a refill tops the script up to twice this.
pub const LOW_WATER: usize = 64;

/// How often the refill task looks at the script.
const REFILL_EVERY: Duration = Duration::from_millis(5);

/// What the mock model answers, request after request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// Every request gets [`TEXT_ANSWER`].
    Text,
    /// Requests alternate: a `bash` call of [`TOOL_COMMAND`], then [`TOOL_ANSWER`].
    Tool,
    /// Every request gets [`stream_answer`]: [`STREAM_WORDS`] deltas.
    Stream,
}

impl Scenario {
    /// The scenario named `name` (`text`, `tool` or `stream`).
    pub fn from_name(name: &str) -> Option<Scenario> {
        match name {
            "text" => Some(Scenario::Text),
            "tool" => Some(Scenario::Tool),
            "stream" => Some(Scenario::Stream),
            _ => None,
        }
    }

    /// The turns of one script unit: one turn for `Text`, a call-then-answer pair for `Tool`.
    /// `n` numbers the unit, so tool-call ids stay unique over the server's life.
    pub fn unit(self, n: u64) -> Vec<Turn> {
        let usage = Usage::new(120, 12);
        match self {
            Scenario::Text => vec![Turn::Reply(
                filo_testkit::Reply::text(TEXT_ANSWER).with_usage(usage),
            )],
            Scenario::Tool => vec![
                Turn::Reply(
                    filo_testkit::Reply::tool_call(
                        &format!("call_bench_{n}"),
                        "bash",
                        json!({ "command": TOOL_COMMAND }),
                    )
                    .with_usage(usage),
                ),
                Turn::Reply(filo_testkit::Reply::text(TOOL_ANSWER).with_usage(usage)),
            ],
            Scenario::Stream => vec![Turn::Reply(
                filo_testkit::Reply::text(stream_answer()).with_usage(Usage::new(120, 20_000)),
            )],
        }
    }
}

/// A [`MockProvider`] on 127.0.0.1 whose script never runs out.
#[derive(Debug)]
pub struct EndlessMock {
    mock: Arc<MockProvider>,
    refill: JoinHandle<()>,
}

impl EndlessMock {
    /// Start serving `scenario`. Must be called inside a tokio runtime.
    pub async fn start(scenario: Scenario) -> io::Result<EndlessMock> {
        let mock = Arc::new(MockProvider::try_start(Vec::new()).await?);
        let mut next = top_up(&mock, scenario, 0);
        let refilled = Arc::clone(&mock);
        let refill = tokio::spawn(async move {
            let mut tick = tokio::time::interval(REFILL_EVERY);
            loop {
                tick.tick().await;
                next = top_up(&refilled, scenario, next);
            }
        });
        Ok(EndlessMock { mock, refill })
    }

    /// `http://127.0.0.1:PORT` (an OpenAI-compatible client uses this plus `/v1`).
    pub fn url(&self) -> String {
        self.mock.url()
    }

    /// Turns queued right now (never below [`LOW_WATER`] for long).
    pub fn remaining(&self) -> usize {
        self.mock.remaining()
    }

    /// One line per request served so far: its number, path, how many messages (and tools) it
    /// sent and the size of its compact JSON body — enough to check that two clients sent the
    /// same context.
    pub fn request_summaries(&self) -> Vec<String> {
        self.mock
            .requests()
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let count = |key: &str| {
                    r.body
                        .get(key)
                        .and_then(Value::as_array)
                        .map_or(0, Vec::len)
                };
                format!(
                    "request {}: {} {} messages={} tools={} body_bytes={}",
                    i + 1,
                    r.method,
                    r.path,
                    count("messages"),
                    count("tools"),
                    r.body.to_string().len()
                )
            })
            .collect()
    }
}

impl Drop for EndlessMock {
    fn drop(&mut self) {
        // The refill task holds the other reference to the provider; once it is gone, the
        // provider drops with `self` and aborts its server task.
        self.refill.abort();
    }
}

/// Push whole units until at least `2 * LOW_WATER` turns are queued, when fewer than
/// [`LOW_WATER`] are; returns the next unit number.
fn top_up(mock: &MockProvider, scenario: Scenario, mut next: u64) -> u64 {
    if mock.remaining() >= LOW_WATER {
        return next;
    }
    while mock.remaining() < 2 * LOW_WATER {
        for turn in scenario.unit(next) {
            mock.push(turn);
        }
        next += 1;
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;
    use filo_testkit::{Block, Stop};

    #[test]
    fn scenario_names() {
        assert_eq!(Scenario::from_name("text"), Some(Scenario::Text));
        assert_eq!(Scenario::from_name("tool"), Some(Scenario::Tool));
        assert_eq!(Scenario::from_name("stream"), Some(Scenario::Stream));
        assert_eq!(Scenario::from_name("Tool"), None);
        assert_eq!(Scenario::from_name(""), None);
    }

    #[test]
    fn the_stream_answer_is_twenty_thousand_deltas() {
        let answer = stream_answer();
        assert_eq!(filo_testkit::split_words(&answer).len(), STREAM_WORDS);
        assert!(answer.ends_with(STREAM_END));
    }

    #[test]
    fn a_tool_unit_is_a_bash_call_then_an_answer_with_unique_ids() {
        let call_id = |n| match &Scenario::Tool.unit(n)[0] {
            Turn::Reply(r) => {
                assert_eq!(r.stop, Stop::ToolUse);
                match &r.blocks[..] {
                    [
                        Block::ToolCall {
                            id,
                            name,
                            arguments,
                        },
                    ] => {
                        assert_eq!(name, "bash");
                        assert_eq!(arguments, &json!({"command": TOOL_COMMAND}));
                        id.clone()
                    }
                    other => panic!("expected one tool call, got {other:?}"),
                }
            }
            Turn::Fault(f) => panic!("unexpected fault {f:?}"),
        };
        assert_ne!(call_id(0), call_id(1));
        match &Scenario::Tool.unit(0)[1] {
            Turn::Reply(r) => assert_eq!(r.stop, Stop::Stop),
            Turn::Fault(f) => panic!("unexpected fault {f:?}"),
        }
        assert_eq!(Scenario::Text.unit(7).len(), 1);
    }

    #[tokio::test]
    async fn the_script_is_topped_up_after_it_is_drained() {
        let mock = MockProvider::start(Vec::new()).await;
        let next = top_up(&mock, Scenario::Tool, 0);
        assert!(mock.remaining() >= 2 * LOW_WATER);
        assert_eq!(mock.remaining() % 2, 0, "tool turns are pushed in pairs");
        assert_eq!(
            top_up(&mock, Scenario::Tool, next),
            next,
            "no refill above the mark"
        );
        let endless = EndlessMock::start(Scenario::Text).await.unwrap();
        assert!(endless.remaining() >= 2 * LOW_WATER);
        assert!(endless.request_summaries().is_empty());
    }
}
