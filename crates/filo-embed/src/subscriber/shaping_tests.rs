//! The subscriber's vectors that need the real text tools (design C19 "Vectors"): final-tag
//! enforcement, think tags promoted to reasoning, and code-fence-safe chunking.

use filo_ai::ContentBlock;

use super::*;
use crate::stream::chunker::{BreakPreference, Chunking};
use crate::subscriber::machine::tests::{Stream, block, partial, replies};
use crate::subscriber::machine::{
    BlockBreak, ReasoningMode, ReplyEvent, Subscriber, SubscriberConfig,
};

fn shaped(config: SubscriberConfig, enforce_final_tag: bool) -> Subscriber {
    Subscriber::new(config, Box::new(TagShaper::new(enforce_final_tag)), None)
}

fn partials(log: &[ReplyEvent]) -> Vec<ReplyEvent> {
    replies(log)
        .into_iter()
        .filter(|e| matches!(e, ReplyEvent::Partial { .. }))
        .collect()
}

fn blocks(log: &[ReplyEvent]) -> Vec<ReplyEvent> {
    replies(log)
        .into_iter()
        .filter(|e| matches!(e, ReplyEvent::Block { .. }))
        .collect()
}

#[test]
fn enforced_final_tag_shows_only_what_is_inside_it() {
    let mut sub = shaped(SubscriberConfig::default(), true);
    let mut log = Vec::new();
    let mut s = Stream::start(&mut sub, &mut log);
    s.text(&mut sub, &mut log, 0, &["<final>Hi there</final>"]);
    s.end(&mut sub, &mut log, vec![]);
    assert_eq!(partials(&log), [partial("Hi there")]);
    assert_eq!(blocks(&log), [block("Hi there")]);

    // A new message whose text closes a final tag it never opened shows nothing.
    let mut log = Vec::new();
    let mut s = Stream::start(&mut sub, &mut log);
    s.text(&mut sub, &mut log, 0, &["</final>Oops no start"]);
    s.end(&mut sub, &mut log, vec![]);
    assert_eq!(partials(&log), []);
    assert_eq!(blocks(&log), []);
}

#[test]
fn without_enforcement_plain_text_passes() {
    let mut sub = shaped(SubscriberConfig::default(), false);
    let mut log = Vec::new();
    let mut s = Stream::start(&mut sub, &mut log);
    s.text(&mut sub, &mut log, 0, &["Hello", " world"]);
    s.end(&mut sub, &mut log, vec![]);
    assert_eq!(partials(&log).last(), Some(&partial("Hello world")));
    assert_eq!(blocks(&log), [block("Hello world")]);
}

#[test]
fn think_tags_in_the_text_become_the_reasoning_reply() {
    for tag in ["think", "thinking", "thought", "antthinking"] {
        let mut sub = shaped(
            SubscriberConfig {
                reasoning: ReasoningMode::On,
                block_reply_break: BlockBreak::MessageEnd,
                ..SubscriberConfig::default()
            },
            false,
        );
        let mut log = Vec::new();
        let s = Stream::start(&mut sub, &mut log);
        let text = format!("<{tag}>\nBecause it helps\n</{tag}>\n\nFinal answer");
        s.end(&mut sub, &mut log, vec![ContentBlock::text(&text)]);
        assert_eq!(
            blocks(&log),
            [
                block("Reasoning:\n_Because it helps_"),
                block("Final answer")
            ],
            "<{tag}>"
        );
    }
}

fn chunked(min: usize, max: usize) -> Subscriber {
    let chunker =
        BlockChunker::new(Chunking::new(min, max).with_preference(BreakPreference::Paragraph));
    Subscriber::new(
        SubscriberConfig {
            block_reply_break: BlockBreak::MessageEnd,
            ..SubscriberConfig::default()
        },
        Box::new(TagShaper::new(false)),
        Some(Box::new(chunker)),
    )
}

fn stream_blocks(mut sub: Subscriber, text: &str) -> Vec<ReplyEvent> {
    let mut log = Vec::new();
    let mut s = Stream::start(&mut sub, &mut log);
    // Word-sized deltas, as providers stream.
    let deltas: Vec<&str> = text.split_inclusive(' ').collect();
    s.text(&mut sub, &mut log, 0, &deltas);
    s.end(&mut sub, &mut log, vec![]);
    blocks(&log)
}

#[test]
fn paragraph_chunking_splits_blocks() {
    assert_eq!(
        stream_blocks(chunked(5, 25), "First block line\n\nSecond block line"),
        [block("First block line"), block("Second block line")]
    );
}

#[test]
fn chunking_never_splits_a_code_fence() {
    for fence in ["~~~sh", "```bash"] {
        let close = &fence[..3];
        let text = format!("Intro\n\n{fence}\nline1\nline2\n{close}\n\nOutro");
        let got = stream_blocks(chunked(5, 25), &text);
        assert_eq!(got.len(), 3, "{fence}: {got:?}");
        assert_eq!(got[1], block(&format!("{fence}\nline1\nline2\n{close}")));
    }
    let got = stream_blocks(
        chunked(5, 30),
        "Intro\n\n  ```js\n  const x = 1;\n  ```\n\nOutro",
    );
    assert_eq!(got.len(), 3, "{got:?}");
    assert_eq!(got[1], block("  ```js\n  const x = 1;\n  ```"));
}
