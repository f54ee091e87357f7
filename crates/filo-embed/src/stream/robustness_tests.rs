//! Any input, however odd, comes back without a panic or a hang from every text tool.

use proptest::prelude::*;

use super::chunker::{BlockChunker, Chunking};
use super::dedupe::is_messaging_tool_duplicate;
use super::directives::{DirectiveAccumulator, parse_reply_directives};
use super::media::split_media_from_output;
use super::reasoning::{Trim, UnclosedMode, strip_reasoning_tags_from_text};
use super::tags::strip_block_tags;
use crate::classify::copy::{ErrorCopyContext, format_error_text};
use crate::classify::thinking::{UnsupportedWithoutList, pick_fallback_thinking_level};
use crate::classify::{classify_failover_reason, is_likely_context_overflow_error};

fn odd_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        any::<String>(),
        Just("MEDIA:".to_owned()),
        Just("media:".to_owned()),
        Just("\"".to_owned()),
        Just("'".to_owned()),
        Just("`".to_owned()),
        Just("```".to_owned()),
        Just("~~~".to_owned()),
        Just("\u{a0}".to_owned()),
        Just("\u{3000}".to_owned()),
        Just("é日😀".to_owned()),
        Just("[[".to_owned()),
        Just("]]".to_owned()),
        Just("[[reply_to:".to_owned()),
        Just("<think>".to_owned()),
        Just("</final>".to_owned()),
        Just("\n".to_owned()),
        Just("\r\n".to_owned()),
        Just("    ".to_owned()),
        Just("/tmp/a b.png".to_owned()),
        Just("https://".to_owned()),
        Just("NO_REPLY".to_owned()),
        Just("Supported values: ".to_owned()),
        Just(" and ".to_owned()),
        Just("\u{212a}\u{130}".to_owned()),
    ];
    proptest::collection::vec(piece, 0..16).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn text_tools_accept_any_input(text in odd_text(), min in 1usize..20, extra in 0usize..20) {
        let _ = split_media_from_output(&text);
        let _ = parse_reply_directives(&text, Some("m"), None);
        let mut acc = DirectiveAccumulator::new();
        let _ = acc.consume(&text, false, None);
        let _ = acc.consume(&text, true, None);
        let _ = strip_reasoning_tags_from_text(&text, UnclosedMode::Strict, Trim::Both);
        let _ = strip_block_tags(&text, true);
        let _ = is_messaging_tool_duplicate(&text, std::slice::from_ref(&text));
        let _ = classify_failover_reason(&text);
        let _ = is_likely_context_overflow_error(&text);
        let _ = format_error_text(&text, &ErrorCopyContext::default());
        let _ = pick_fallback_thinking_level(Some(&text), &[], UnsupportedWithoutList::TryOff);
        let mut chunker = BlockChunker::new(Chunking::new(min, min + extra));
        chunker.append(&text);
        let _ = chunker.drain_to_vec(false);
        let _ = chunker.drain_to_vec(true);
        prop_assert!(!chunker.has_buffered());
    }
}
