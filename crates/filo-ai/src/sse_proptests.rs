//! Hostile inputs for the SSE parser: random and mutated byte streams, split at random points.
//! Whatever the bytes, the parser does not panic, holds at most a bounded number of bytes between
//! chunks, and produces the same frames (and the same limit error) however the bytes are split.

use proptest::prelude::*;

use super::{FrameTooLarge, SseFrame, SseParser};

/// The frames of `bytes` fed in the given chunks, and whether the limit was hit. Checks the
/// memory bound after every chunk.
fn run(bytes: &[u8], cuts: &[usize], limit: usize) -> (Vec<SseFrame>, bool) {
    let mut parser = SseParser::with_limit(limit);
    let mut frames = Vec::new();
    let mut push = |f: &SseFrame| -> Result<(), FrameTooLarge> {
        frames.push(f.clone());
        Ok(())
    };
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    points.sort_unstable();
    points.push(bytes.len());
    let mut start = 0;
    for end in points {
        if let Err(e) = parser.feed(&bytes[start..end], &mut push) {
            assert_eq!(e, FrameTooLarge { limit });
            return (frames, true);
        }
        assert!(
            parser.buffered() <= 3 * limit,
            "{} bytes buffered with a limit of {limit}",
            parser.buffered()
        );
        start = end;
    }
    let hit = parser.finish(&mut push).is_err();
    (frames, hit)
}

/// A well-formed stream: named and unnamed frames, comments, multi-line data, all three line
/// endings.
fn stream() -> impl Strategy<Value = Vec<u8>> {
    let field = prop_oneof![
        "[a-z_]{1,12}".prop_map(|e| format!("event: {e}")),
        "[ -~é€😀]{0,40}".prop_map(|d| format!("data: {d}")),
        "[ -~]{0,20}".prop_map(|c| format!(":{c}")),
        Just("data".to_string()),
        Just("id: 7".to_string()),
    ];
    let eol = prop_oneof![Just("\n"), Just("\r\n"), Just("\r")];
    prop::collection::vec(
        (prop::collection::vec((field, eol.clone()), 1..5), eol),
        0..12,
    )
    .prop_map(|frames| {
        let mut out = String::new();
        for (lines, end) in frames {
            for (line, eol) in lines {
                out.push_str(&line);
                out.push_str(eol);
            }
            out.push_str(end);
        }
        out.into_bytes()
    })
}

/// Byte-level damage: replace, insert or delete a byte at a position.
fn mutate(mut bytes: Vec<u8>, edits: &[(usize, u8, u8)]) -> Vec<u8> {
    for &(at, kind, byte) in edits {
        let at = at % (bytes.len() + 1);
        match kind % 3 {
            0 if at < bytes.len() => bytes[at] = byte,
            1 => bytes.insert(at, byte),
            _ if at < bytes.len() => {
                bytes.remove(at);
            }
            _ => bytes.push(byte),
        }
    }
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_bytes_frame_the_same_whatever_the_split(
        bytes in prop::collection::vec(any::<u8>(), 0..2048),
        cuts in prop::collection::vec(any::<usize>(), 0..16),
        limit in prop_oneof![Just(64usize), Just(1 << 20)],
    ) {
        let whole = run(&bytes, &[], limit);
        let split = run(&bytes, &cuts, limit);
        prop_assert_eq!(whole, split);
    }

    #[test]
    fn mutated_streams_frame_the_same_whatever_the_split(
        clean in stream(),
        edits in prop::collection::vec((any::<usize>(), any::<u8>(), any::<u8>()), 0..8),
        // Small values, so that cuts repeat and some chunks are empty.
        cuts in prop::collection::vec(0usize..256, 0..48),
    ) {
        let bytes = mutate(clean, &edits);
        let whole = run(&bytes, &[], 1 << 20);
        let split = run(&bytes, &cuts, 1 << 20);
        let one_by_one: Vec<usize> = (0..bytes.len()).collect();
        let bytewise = run(&bytes, &one_by_one, 1 << 20);
        prop_assert_eq!(&whole, &split);
        prop_assert_eq!(&whole, &bytewise);
    }

    #[test]
    fn a_line_that_never_ends_hits_the_limit(
        filler in prop::collection::vec(any::<u8>().prop_filter("no line end", |b| *b != b'\n' && *b != b'\r'), 200..400),
        cuts in prop::collection::vec(any::<usize>(), 0..16),
    ) {
        let mut bytes = b"data: ".to_vec();
        bytes.extend_from_slice(&filler);
        let (frames, hit) = run(&bytes, &cuts, 128);
        prop_assert!(frames.is_empty());
        prop_assert!(hit);
    }
}

#[test]
fn an_empty_chunk_between_cr_and_lf_is_not_a_blank_line() {
    let bytes = b"data: a\r\ndata: b\n\n";
    let whole = run(bytes, &[], 1024);
    assert_eq!(whole.0.len(), 1);
    assert_eq!(whole.0[0].data, "a\nb");
    // Cut right after `\r`, twice: the second chunk is empty.
    assert_eq!(run(bytes, &[8, 8], 1024), whole);
}

#[test]
fn many_short_data_lines_cannot_grow_a_frame_past_the_limit() {
    let bytes = "data: 0123456789\n".repeat(100);
    let (frames, hit) = run(bytes.as_bytes(), &[3, 50, 700], 256);
    assert!(frames.is_empty());
    assert!(hit);
    let (frames, hit) = run(b"data: fits\n\n", &[], 256);
    assert_eq!(frames.len(), 1);
    assert!(!hit);
}
