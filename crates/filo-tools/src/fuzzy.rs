//! Text matching for `edit` (pi `edit-diff.ts`): exact first, then a fuzzy match in a normalised
//! space (NFKC, trailing whitespace per line, smart quotes, Unicode dashes, special spaces).
//! Also line-ending and BOM handling.

use std::borrow::Cow;

use unicode_normalization::UnicodeNormalization;

/// The file's line ending: CRLF when the first `\n` is part of a `\r\n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineEnding {
    Lf,
    CrLf,
}

/// Detect the line ending from the first newline.
pub fn detect_line_ending(content: &str) -> LineEnding {
    match content.find('\n') {
        Some(i) if i > 0 && content.as_bytes()[i - 1] == b'\r' => LineEnding::CrLf,
        _ => LineEnding::Lf,
    }
}

/// `\r\n` and lone `\r` become `\n` (borrowed when there is no `\r`).
pub fn normalize_to_lf(text: &str) -> Cow<'_, str> {
    if text.contains('\r') {
        Cow::Owned(text.replace("\r\n", "\n").replace('\r', "\n"))
    } else {
        Cow::Borrowed(text)
    }
}

/// Put the file's line ending back (borrowed for LF).
pub fn restore_line_endings(text: &str, ending: LineEnding) -> Cow<'_, str> {
    match ending {
        LineEnding::Lf => Cow::Borrowed(text),
        LineEnding::CrLf => Cow::Owned(text.replace('\n', "\r\n")),
    }
}

/// Split off a leading UTF-8 BOM: `(bom, rest)`.
pub fn strip_bom(text: &str) -> (&str, &str) {
    match text.strip_prefix('\u{FEFF}') {
        Some(rest) => ("\u{FEFF}", rest),
        None => ("", text),
    }
}

fn fuzzy_char(c: char) -> char {
    match c {
        '\u{2018}'..='\u{201B}' => '\'',
        '\u{201C}'..='\u{201F}' => '"',
        '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
        '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
        other => other,
    }
}

/// The normalised form both sides are compared in: NFKC, then per line `trimEnd` and the
/// quote / dash / space mapping.
///
/// NFKC is applied line by line, which is equivalent to normalising the whole text (`\n` is a
/// starter that nothing composes with and no decomposition produces), and skipped for ASCII lines
/// (ASCII is invariant under NFKC and under the mapping) — most lines of source code.
pub fn normalize_for_fuzzy_match(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if line.is_ascii() {
            out.push_str(line.trim_end());
        } else {
            let nfkc: String = line.nfkc().collect();
            out.extend(nfkc.trim_end().chars().map(fuzzy_char));
        }
    }
    out
}

/// Where `old` was found and the text the replacement must be applied to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match<'a> {
    /// Byte index into `content`.
    pub index: usize,
    /// Byte length of the matched text in `content`.
    pub length: usize,
    /// Whether the normalised space had to be used.
    pub fuzzy: bool,
    /// The original content (exact, borrowed) or its normalised form (fuzzy).
    pub content: Cow<'a, str>,
}

/// Exact `find`, else the same in normalised space; `None` when absent from both.
pub fn fuzzy_find<'a>(content: &'a str, old: &str) -> Option<Match<'a>> {
    if let Some(index) = content.find(old) {
        return Some(Match {
            index,
            length: old.len(),
            fuzzy: false,
            content: Cow::Borrowed(content),
        });
    }
    let fuzzy_content = normalize_for_fuzzy_match(content);
    let fuzzy_old = normalize_for_fuzzy_match(old);
    let index = fuzzy_content.find(&fuzzy_old)?;
    Some(Match {
        index,
        length: fuzzy_old.len(),
        fuzzy: true,
        content: Cow::Owned(fuzzy_content),
    })
}

/// Occurrences of `old` in `content`, counted in normalised space like pi
/// (`split(old).length - 1`; an empty pattern counts the gaps between UTF-16 units).
pub fn count_occurrences(content: &str, old: &str) -> usize {
    let fuzzy_content = normalize_for_fuzzy_match(content);
    let fuzzy_old = normalize_for_fuzzy_match(old);
    if fuzzy_old.is_empty() {
        return fuzzy_content.encode_utf16().count().saturating_sub(1);
    }
    fuzzy_content.matches(&fuzzy_old).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_endings_and_bom() {
        assert_eq!(detect_line_ending("a\r\nb\n"), LineEnding::CrLf);
        assert_eq!(detect_line_ending("a\nb\r\n"), LineEnding::Lf);
        assert_eq!(detect_line_ending("abc"), LineEnding::Lf);
        assert_eq!(normalize_to_lf("a\r\nb\rc"), "a\nb\nc");
        assert_eq!(restore_line_endings("a\nb", LineEnding::CrLf), "a\r\nb");
        assert_eq!(strip_bom("\u{FEFF}x"), ("\u{FEFF}", "x"));
    }

    #[test]
    fn normalization_covers_pi_classes() {
        assert_eq!(normalize_for_fuzzy_match("a  \nb\t"), "a\nb");
        assert_eq!(
            normalize_for_fuzzy_match("\u{201C}x\u{201D} \u{2018}y\u{2019}"),
            "\"x\" 'y'"
        );
        assert_eq!(
            normalize_for_fuzzy_match("a\u{2013}b\u{2014}c\u{2212}d"),
            "a-b-c-d"
        );
        assert_eq!(normalize_for_fuzzy_match("a\u{00A0}b\u{3000}c"), "a b c");
        assert_eq!(normalize_for_fuzzy_match("\u{FF41}\u{FF42}"), "ab");
    }

    #[test]
    fn exact_is_preferred() {
        let m = fuzzy_find("it\u{2019}s it's", "it's").unwrap();
        assert!(!m.fuzzy);
        assert_eq!(m.index, "it\u{2019}s ".len());
        let m = fuzzy_find("it\u{2019}s", "it's").unwrap();
        assert!(m.fuzzy);
        assert_eq!(m.content, "it's");
        assert_eq!(fuzzy_find("abc", "xyz"), None);
        assert_eq!(count_occurrences("x\u{2019} x'", "x'"), 2);
    }

    proptest::proptest! {
        #[test]
        fn normalisation_is_idempotent_and_keeps_exact_matches(
            text in "[a-c '\\n\u{2018}\u{201C}\u{2013}\u{00A0}\u{FF41}\u{3000}\t]{0,60}",
            start in 0usize..60,
            len in 0usize..20,
        ) {
            let once = normalize_for_fuzzy_match(&text);
            proptest::prop_assert_eq!(normalize_for_fuzzy_match(&once), once.clone());
            let chars: Vec<char> = text.chars().collect();
            let start = start.min(chars.len());
            let end = (start + len).min(chars.len());
            let needle: String = chars[start..end].iter().collect();
            let found = fuzzy_find(&text, &needle);
            proptest::prop_assert!(found.is_some());
            proptest::prop_assert!(!found.map(|m| m.fuzzy).unwrap_or(true));
        }
    }
}
