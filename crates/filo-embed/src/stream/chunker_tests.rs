//! Vectors of design §3 C20 / spec §9.5 (OpenClaw `pi-embedded-block-chunker.test.ts` and the
//! subscriber's chunking tests), more cases per rule, and property tests.

use proptest::prelude::*;

use super::*;

fn chunker(min: usize, max: usize) -> BlockChunker {
    BlockChunker::new(Chunking::new(min, max))
}

fn flush_on_paragraph(min: usize, max: usize) -> BlockChunker {
    BlockChunker::new(Chunking::new(min, max).with_flush_on_paragraph(true))
}

/// The subscriber with break mode `message_end`: the whole text, then a forced drain.
fn at_message_end(min: usize, max: usize, text: &str) -> Vec<String> {
    let mut c = chunker(min, max);
    c.append(text);
    c.drain_to_vec(true)
}

#[test]
fn breaks_at_the_paragraph_right_after_a_fence_close() {
    let mut c = chunker(1, 40);
    c.append("Intro\n```js\nconsole.log('x')\n```\n\nAfter first line\nAfter second line");
    let chunks = c.drain_to_vec(false);
    assert_eq!(chunks, ["Intro\n```js\nconsole.log('x')\n```"]);
    assert_eq!(c.buffered_text(), "After first line\nAfter second line");
}

#[test]
fn flush_on_paragraph_emits_before_min_chars() {
    for text in [
        "First paragraph.\n\nSecond paragraph.",
        "First paragraph.\n \nSecond paragraph.",
    ] {
        let mut c = flush_on_paragraph(100, 200);
        c.append(text);
        assert_eq!(c.drain_to_vec(false), ["First paragraph."], "{text:?}");
        assert_eq!(c.buffered_text(), "Second paragraph.");
    }
}

#[test]
fn flush_on_paragraph_falls_back_to_max_chars() {
    let mut c = flush_on_paragraph(1, 10);
    c.append("abcdefghijKLMNOP");
    assert_eq!(c.drain_to_vec(false), ["abcdefghij"]);
    assert_eq!(c.buffered_text(), "KLMNOP");

    let mut c = flush_on_paragraph(1, 10);
    c.append("abcdefghijk\n\nRest");
    assert_eq!(c.drain_to_vec(false), ["abcdefghij", "k"]);
    assert_eq!(c.buffered_text(), "Rest");
}

#[test]
fn flush_on_paragraph_ignores_breaks_inside_fences() {
    let mut c = flush_on_paragraph(100, 200);
    c.append("Intro\n```js\nconst a = 1;\n\nconst b = 2;\n```\n\nAfter fence");
    assert_eq!(
        c.drain_to_vec(false),
        ["Intro\n```js\nconst a = 1;\n\nconst b = 2;\n```"]
    );
    assert_eq!(c.buffered_text(), "After fence");
}

#[test]
fn flush_on_paragraph_keeps_a_leading_separator() {
    let mut c = flush_on_paragraph(100, 200);
    c.append("\n\nNext turn");
    assert!(c.drain_to_vec(false).is_empty());
    assert_eq!(c.buffered_text(), "\n\nNext turn");
}

#[test]
fn forced_split_inside_a_fence_closes_and_reopens_it() {
    let mut c = chunker(10, 30);
    c.append(&format!("```txt\n{}\n```", "a".repeat(80)));
    let chunks = c.drain_to_vec(true);
    assert!(chunks.len() > 1);
    for chunk in &chunks {
        assert!(chunk.starts_with("```txt"), "{chunk:?}");
        assert!(chunk.matches("```").count() >= 2, "{chunk:?}");
    }
    let body: String = chunks
        .iter()
        .flat_map(|c| c.lines())
        .filter(|l| !l.starts_with("```"))
        .collect();
    assert_eq!(body, "a".repeat(80));
    assert!(!c.has_buffered());
}

#[test]
fn message_end_vectors() {
    assert_eq!(
        at_message_end(5, 25, "First block line\n\nSecond block line"),
        ["First block line", "Second block line"]
    );
    for fence in ["~~~", "```"] {
        let lang = if fence == "~~~" { "sh" } else { "bash" };
        let text = format!("Intro\n\n{fence}{lang}\nline1\nline2\n{fence}\n\nOutro");
        let chunks = at_message_end(5, 25, &text);
        assert_eq!(chunks.len(), 3, "{chunks:?}");
        assert_eq!(chunks[0], "Intro");
        assert_eq!(chunks[1], format!("{fence}{lang}\nline1\nline2\n{fence}"));
        assert_eq!(chunks[2], "Outro");
    }
    let chunks = at_message_end(5, 30, "Intro\n\n  ```js\n  const x = 1;\n  ```\n\nOutro");
    assert_eq!(chunks, ["Intro", "  ```js\n  const x = 1;\n  ```", "Outro"]);
}

#[test]
fn below_min_waits_and_forced_small_buffer_goes_out_whole() {
    let mut c = chunker(20, 40);
    c.append("short text");
    assert!(c.drain_to_vec(false).is_empty());
    assert_eq!(c.buffered_text(), "short text");
    assert_eq!(c.drain_to_vec(true), ["short text"]);
    assert!(!c.has_buffered());
    // a forced drain of blank text emits nothing and clears
    c.append("  \n\n ");
    assert!(c.drain_to_vec(true).is_empty());
    assert!(!c.has_buffered());
}

#[test]
fn bounds_are_clamped() {
    // min 0 counts as 1, max below min counts as min
    let mut c = chunker(0, 0);
    c.append("ab");
    // with min = max = 1 every char is a block of its own
    assert_eq!(c.drain_to_vec(false), ["a", "b"]);
    assert_eq!(c.buffered_text(), "");
}

#[test]
fn newline_preference_waits_for_max_before_cutting_words() {
    let mut c = BlockChunker::new(Chunking::new(5, 20).with_preference(BreakPreference::Newline));
    c.append("one two three four");
    assert!(c.drain_to_vec(false).is_empty(), "no newline, below max");
    c.append(" five six\nseven");
    assert_eq!(c.drain_to_vec(false), ["one two three four"]);
}

#[test]
fn sentence_preference_cuts_after_the_last_sentence_end() {
    let mut c = BlockChunker::new(Chunking::new(5, 40).with_preference(BreakPreference::Sentence));
    c.append("First one. Second one! Third one? And more");
    let chunks = c.drain_to_vec(false);
    assert_eq!(chunks, ["First one. Second one! Third one?"]);
    assert_eq!(c.buffered_text(), "And more");
}

#[test]
fn paragraph_preference_falls_back_to_newline_then_whitespace() {
    let mut c = chunker(5, 20);
    c.append("line one\nline two is long");
    assert_eq!(c.drain_to_vec(false), ["line one"]);
    assert_eq!(c.buffered_text(), "line two is long");
    let mut c = chunker(5, 20);
    c.append("words words words words words");
    assert_eq!(c.drain_to_vec(false), ["words words words"]);
    assert_eq!(c.buffered_text(), "words words");
}

#[test]
fn tiny_max_inside_a_fence_still_makes_progress() {
    for max in 1..6 {
        let mut c = chunker(1, max);
        c.append("```\nabcdefgh\n```\nafter");
        let chunks = c.drain_to_vec(true);
        assert!(!c.has_buffered());
        let body: String = chunks
            .concat()
            .chars()
            .filter(|c| c.is_alphabetic())
            .collect();
        assert_eq!(body, "abcdefghafter", "max {max}: {chunks:?}");
    }
}

#[test]
fn long_word_is_cut_at_max_chars() {
    let mut c = chunker(5, 10);
    c.append("abcdefghijklmnopqrstuvwxy");
    assert_eq!(c.drain_to_vec(false), ["abcdefghij", "klmnopqrst"]);
    assert_eq!(c.buffered_text(), "uvwxy");
}

#[test]
fn lengths_count_chars_not_bytes() {
    let mut c = chunker(2, 4);
    c.append("ééééééé");
    let chunks = c.drain_to_vec(true);
    assert_eq!(chunks, ["éééé", "ééé"]);
    let mut c = chunker(1, 3);
    c.append("日本語のテキスト");
    let chunks = c.drain_to_vec(true);
    assert!(chunks.iter().all(|c| c.chars().count() <= 3), "{chunks:?}");
    assert_eq!(chunks.concat(), "日本語のテキスト");
}

#[test]
fn reset_clears_the_buffer() {
    let mut c = chunker(1, 10);
    c.append("abc");
    c.append("");
    assert!(c.has_buffered());
    c.reset();
    assert!(!c.has_buffered());
    assert_eq!(c.buffered_text(), "");
}

fn non_ws(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

fn chunk_stream(chunking: Chunking, deltas: &[String]) -> (Vec<String>, String) {
    let mut c = BlockChunker::new(chunking);
    let mut out = Vec::new();
    for d in deltas {
        c.append(d);
        c.drain(false, |chunk| out.push(chunk));
    }
    let rest = c.buffered_text().to_owned();
    c.drain(true, |chunk| out.push(chunk));
    assert!(!c.has_buffered());
    (out, rest)
}

fn markdown_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zé日 ]{1,12}",
        Just(". ".to_owned()),
        Just("!\n".to_owned()),
        Just("\n".to_owned()),
        Just("\n\n".to_owned()),
        Just("\n```\n".to_owned()),
        Just("\n~~~\n".to_owned()),
        Just("  \t".to_owned()),
    ]
}

fn split_into_deltas(text: &str, cuts: &[usize]) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (chars.len() + 1)).collect();
    points.push(0);
    points.push(chars.len());
    points.sort_unstable();
    points.dedup();
    points
        .windows(2)
        .map(|w| chars[w[0]..w[1]].iter().collect())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Without fences the chunks plus nothing else are the input, modulo whitespace at breaks;
    /// no chunk is blank or longer than max_chars.
    #[test]
    fn chunks_keep_every_non_space_char(
        words in proptest::collection::vec("[a-zé日]{1,15}|[ \n]{1,3}|[.!?] ", 0..60),
        cuts in proptest::collection::vec(0usize..2000, 0..40),
        min in 1usize..30,
        extra in 0usize..40,
        pref in 0u8..3,
    ) {
        let text: String = words.concat();
        let preference = match pref {
            0 => BreakPreference::Paragraph,
            1 => BreakPreference::Newline,
            _ => BreakPreference::Sentence,
        };
        let chunking = Chunking::new(min, min + extra).with_preference(preference);
        let (chunks, _) = chunk_stream(chunking, &split_into_deltas(&text, &cuts));
        prop_assert_eq!(non_ws(&chunks.concat()), non_ws(&text));
        for chunk in &chunks {
            prop_assert!(!chunk.trim().is_empty());
            prop_assert!(chunk.chars().count() <= min + extra, "{:?}", chunk);
        }
    }

    /// The caches kept between drains change nothing: a chunker rebuilt from the buffered text
    /// before every drain (no cache) emits the same blocks.
    #[test]
    fn cached_drains_match_uncached_ones(
        pieces in proptest::collection::vec(markdown_piece(), 0..60),
        cuts in proptest::collection::vec(0usize..2000, 0..40),
        min in 1usize..25,
        extra in 0usize..40,
        pref in 0u8..3,
    ) {
        let text: String = pieces.concat();
        let preference = match pref {
            0 => BreakPreference::Paragraph,
            1 => BreakPreference::Newline,
            _ => BreakPreference::Sentence,
        };
        let chunking = Chunking::new(min, min + extra).with_preference(preference);
        let mut cached = BlockChunker::new(chunking);
        let mut fresh_buffer = String::new();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for delta in split_into_deltas(&text, &cuts) {
            cached.append(&delta);
            cached.drain(false, |c| a.push(c));
            let mut fresh = BlockChunker::new(chunking);
            fresh.append(&fresh_buffer);
            fresh.append(&delta);
            fresh.drain(false, |c| b.push(c));
            fresh_buffer = fresh.buffered_text().to_owned();
        }
        prop_assert_eq!(&a, &b);
        prop_assert_eq!(cached.buffered_text(), fresh_buffer.as_str());
    }

    /// With fences, chunks keep the text up to the fence lines the chunker added,
    /// and only the closing fence may overrun max_chars.
    #[test]
    fn fenced_chunks_keep_the_text(
        pieces in proptest::collection::vec(markdown_piece(), 0..50),
        cuts in proptest::collection::vec(0usize..2000, 0..30),
        min in 1usize..20,
        extra in 0usize..30,
    ) {
        let text: String = pieces.concat();
        let chunking = Chunking::new(min, min + extra);
        let (chunks, _) = chunk_stream(chunking, &split_into_deltas(&text, &cuts));
        // The chunker adds only fence lines and drops only whitespace.
        let strip = |s: &str| -> String {
            s.chars().filter(|c| !c.is_whitespace() && *c != '`' && *c != '~').collect()
        };
        prop_assert_eq!(strip(&chunks.concat()), strip(&text));
        for chunk in &chunks {
            // a closing fence may overrun; so may a cut that needs one body char past the
            // opening line (max_chars shorter than the fence line)
            prop_assert!(chunk.chars().count() <= (min + extra).max(5) + 5, "{:?}", chunk);
        }
    }
}
