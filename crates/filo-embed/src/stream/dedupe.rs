//! C23 — messaging-tool duplicate suppression (design §3 C23; OpenClaw
//! `pi-embedded-helpers/messaging-dedupe.ts` and its test): when the agent already delivered a
//! text through a messaging tool, the same text is not sent again as its reply.
//!
//! Lengths count `char`s (OpenClaw counts UTF-16 units; equal for the BMP texts of its tests).

/// Texts shorter than this (after normalisation) are never duplicates.
pub const MIN_DUPLICATE_TEXT_LENGTH: usize = 10;

/// Normalise for comparison: trim, lower-case, drop emoji, collapse whitespace runs, trim.
pub fn normalize_text_for_comparison(text: &str) -> String {
    let lower = text.trim().to_lowercase();
    let mut out = String::with_capacity(lower.len());
    let mut in_space = false;
    for c in lower.chars() {
        if !c.is_ascii() && is_emoji(c) {
            continue;
        }
        if c.is_whitespace() {
            in_space = true;
            continue;
        }
        if in_space && !out.is_empty() {
            out.push(' ');
        }
        in_space = false;
        out.push(c);
    }
    out
}

/// `isMessagingToolDuplicateNormalized`: `normalized` repeats one of `sent` (all normalised).
///
/// A candidate inside a longer sent text counts only when it is at least half as long: short
/// commentary that happens to quote a long delivery is not swallowed.
/// (from source) OpenClaw #76915 — its current test suite requires this rule, which the design
/// listed as "later".
pub fn is_duplicate_normalized(normalized: &str, sent: &[String]) -> bool {
    let len = normalized.chars().count();
    if sent.is_empty() || len < MIN_DUPLICATE_TEXT_LENGTH {
        return false;
    }
    sent.iter().any(|s| {
        let sent_len = s.chars().count();
        if sent_len < MIN_DUPLICATE_TEXT_LENGTH {
            return false;
        }
        normalized.contains(s.as_str()) || (s.contains(normalized) && 2 * len >= sent_len)
    })
}

/// `isMessagingToolDuplicate`: normalise both sides, then [`is_duplicate_normalized`].
pub fn is_messaging_tool_duplicate(text: &str, sent: &[String]) -> bool {
    if sent.is_empty() {
        return false;
    }
    let normalized = normalize_text_for_comparison(text);
    if normalized.chars().count() < MIN_DUPLICATE_TEXT_LENGTH {
        return false;
    }
    let sent: Vec<String> = sent
        .iter()
        .map(|s| normalize_text_for_comparison(s))
        .collect();
    is_duplicate_normalized(&normalized, &sent)
}

/// `\p{Emoji_Presentation}|\p{Extended_Pictographic}` (Unicode 15 emoji-data): the
/// Extended_Pictographic ranges plus the presentation-only regional indicators and skin-tone
/// modifiers. (The workspace `regex` is built without Unicode property tables, so the ranges are
/// spelled out here.)
fn is_emoji(c: char) -> bool {
    let cp = u32::from(c);
    EMOJI_RANGES
        .binary_search_by(|&(lo, hi)| {
            if hi < cp {
                std::cmp::Ordering::Less
            } else if lo > cp {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

const EMOJI_RANGES: &[(u32, u32)] = &[
    (0x00A9, 0x00A9),
    (0x00AE, 0x00AE),
    (0x203C, 0x203C),
    (0x2049, 0x2049),
    (0x2122, 0x2122),
    (0x2139, 0x2139),
    (0x2194, 0x2199),
    (0x21A9, 0x21AA),
    (0x231A, 0x231B),
    (0x2328, 0x2328),
    (0x2388, 0x2388),
    (0x23CF, 0x23CF),
    (0x23E9, 0x23F3),
    (0x23F8, 0x23FA),
    (0x24C2, 0x24C2),
    (0x25AA, 0x25AB),
    (0x25B6, 0x25B6),
    (0x25C0, 0x25C0),
    (0x25FB, 0x25FE),
    (0x2600, 0x2605),
    (0x2607, 0x2612),
    (0x2614, 0x2685),
    (0x2690, 0x2705),
    (0x2708, 0x2712),
    (0x2714, 0x2714),
    (0x2716, 0x2716),
    (0x271D, 0x271D),
    (0x2721, 0x2721),
    (0x2728, 0x2728),
    (0x2733, 0x2734),
    (0x2744, 0x2744),
    (0x2747, 0x2747),
    (0x274C, 0x274C),
    (0x274E, 0x274E),
    (0x2753, 0x2755),
    (0x2757, 0x2757),
    (0x2763, 0x2767),
    (0x2795, 0x2797),
    (0x27A1, 0x27A1),
    (0x27B0, 0x27B0),
    (0x27BF, 0x27BF),
    (0x2934, 0x2935),
    (0x2B05, 0x2B07),
    (0x2B1B, 0x2B1C),
    (0x2B50, 0x2B50),
    (0x2B55, 0x2B55),
    (0x3030, 0x3030),
    (0x303D, 0x303D),
    (0x3297, 0x3297),
    (0x3299, 0x3299),
    (0x1F000, 0x1F0FF),
    (0x1F10D, 0x1F10F),
    (0x1F12F, 0x1F12F),
    (0x1F16C, 0x1F171),
    (0x1F17E, 0x1F17F),
    (0x1F18E, 0x1F18E),
    (0x1F191, 0x1F19A),
    (0x1F1AD, 0x1F1FF),
    (0x1F201, 0x1F20F),
    (0x1F21A, 0x1F21A),
    (0x1F22F, 0x1F22F),
    (0x1F232, 0x1F23A),
    (0x1F23C, 0x1F23F),
    (0x1F249, 0x1F53D),
    (0x1F546, 0x1F64F),
    (0x1F680, 0x1F6FF),
    (0x1F774, 0x1F77F),
    (0x1F7D5, 0x1F7FF),
    (0x1F80C, 0x1F80F),
    (0x1F848, 0x1F84F),
    (0x1F85A, 0x1F85F),
    (0x1F888, 0x1F88F),
    (0x1F8AE, 0x1F8FF),
    (0x1F90C, 0x1F93A),
    (0x1F93C, 0x1F945),
    (0x1F947, 0x1FAFF),
    (0x1FC00, 0x1FFFD),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn normalize_vectors() {
        assert_eq!(normalize_text_for_comparison("Hello World"), "hello world");
        assert_eq!(normalize_text_for_comparison("sent! 🎵"), "sent!");
        assert_eq!(normalize_text_for_comparison("done 😂"), "done");
        assert_eq!(
            normalize_text_for_comparison("  hello   world  "),
            "hello world"
        );
        assert_eq!(normalize_text_for_comparison(""), "");
        assert_eq!(
            normalize_text_for_comparison("Hello 👋 World 🌍"),
            "hello world"
        );
        assert_eq!(normalize_text_for_comparison("a\n\tb 🇫🇷 c"), "a b c");
        // non-emoji symbols and letters stay
        assert_eq!(
            normalize_text_for_comparison("Ünïcode → 日本"),
            "ünïcode → 日本"
        );
    }

    #[test]
    fn emoji_table_is_sorted_and_disjoint() {
        for w in EMOJI_RANGES.windows(2) {
            assert!(w[0].0 <= w[0].1 && w[0].1 < w[1].0, "{w:?}");
        }
        for c in ['😂', '🎵', '👋', '🌍', '❤', '✅', '🤔', '🇫', '🏽'] {
            assert!(is_emoji(c), "{c}");
        }
        for c in ['a', '日', '→', '€', 'é'] {
            assert!(!is_emoji(c), "{c}");
        }
    }

    #[test]
    fn normalized_duplicate_vectors() {
        assert!(!is_duplicate_normalized("hello world example", &[]));
        assert!(!is_duplicate_normalized(
            "hi",
            &owned(&["hi, how are you doing today"])
        ));
        let sent = "v2ex ranked list of hot topics for today";
        let candidate = "here is the v2ex ranked list of hot topics for today that was delivered";
        assert!(is_duplicate_normalized(candidate, &owned(&[sent])));
        let sent = "hello world this is a duplicate message sent via tool";
        assert!(is_duplicate_normalized(
            "hello world this is a duplicate message sent",
            &owned(&[sent])
        ));
        let long_sent = normalize_text_for_comparison(
            "1. some article title\n2. another title\nv2ex hot topics delivered to telegram\n3. yet another",
        );
        let commentary = normalize_text_for_comparison("v2ex hot topics delivered to telegram");
        assert!(!is_duplicate_normalized(&commentary, &[long_sent]));
        let metadata = normalize_text_for_comparison(
            "flac audio file: 梁静茹 宁夏 — bitrate: 1411kbps, duration: 4:23, size: 44mb, track: 1/12, album: 宁夏, year: 2004",
        );
        let music = normalize_text_for_comparison("小鸡出品，梁静茹《宁夏》，flac 无损直接发你了");
        assert!(!is_duplicate_normalized(&music, &[metadata]));
        let same = normalize_text_for_comparison(
            "this is the message that was already delivered via tool",
        );
        assert!(is_duplicate_normalized(&same, std::slice::from_ref(&same)));
        // sent texts shorter than the minimum never match
        assert!(!is_duplicate_normalized(
            "short text here",
            &owned(&["short"])
        ));
    }

    #[test]
    fn duplicate_vectors() {
        assert!(!is_messaging_tool_duplicate("hello world delivered", &[]));
        let sent = "here is your report summary for today";
        assert!(is_messaging_tool_duplicate(sent, &owned(&[sent])));
        let long_delivered = "1. article one title\n2. article two title\n3. article three title\nhot topics sent to telegram — enjoy the weekend";
        assert!(!is_messaging_tool_duplicate(
            "hot topics sent to telegram 😂",
            &owned(&[long_delivered])
        ));
        // case, emoji and spacing do not hide a duplicate
        assert!(is_messaging_tool_duplicate(
            "  HERE is your   report summary for today 🎉 ",
            &owned(&["here is your report summary for today"])
        ));
        assert!(!is_messaging_tool_duplicate("tiny", &owned(&["tiny"])));
    }
}
