//! JavaScript string and date semantics the tool outputs depend on: UTF-16 lengths and slices,
//! `truncate`, `Date.prototype.toISOString`, local `YYYY-MM-DD HH:MM`.

use std::borrow::Cow;

/// `s.length` in JavaScript: the number of UTF-16 code units.
pub fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// `s.slice(0, n)` in UTF-16 units, as the reference prints it. A cut through a surrogate pair
/// leaves JavaScript a lone high surrogate, which its UTF-8 output encodes as U+FFFD (`EF BF BD`);
/// the result then ends with U+FFFD, which is one UTF-16 unit too, so lengths stay as in JS.
pub fn utf16_prefix(s: &str, n: usize) -> Cow<'_, str> {
    let mut units = 0;
    for (i, c) in s.char_indices() {
        let width = c.len_utf16();
        if units + width > n {
            if units == n {
                return Cow::Borrowed(&s[..i]);
            }
            let mut cut = String::with_capacity(i + 3);
            cut.push_str(&s[..i]);
            cut.push(char::REPLACEMENT_CHARACTER);
            return Cow::Owned(cut);
        }
        units += width;
    }
    Cow::Borrowed(s)
}

/// The reference's `truncate(s, n)`: `s` if it has at most `n` UTF-16 units, else the first `n`
/// units followed by `...`.
pub fn truncate(s: &str, n: usize) -> String {
    if utf16_len(s) <= n {
        s.to_owned()
    } else {
        format!("{}...", utf16_prefix(s, n))
    }
}

/// Civil date (year, month, day) of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Broken-down time of `ms` since the epoch shifted by `offset_s` seconds.
struct Civil {
    year: i64,
    month: i64,
    day: i64,
    hour: i64,
    minute: i64,
    second: i64,
    millis: i64,
}

fn civil(ms: i64, offset_s: i64) -> Civil {
    let ms = ms + offset_s * 1000;
    let days = ms.div_euclid(86_400_000);
    let in_day = ms.rem_euclid(86_400_000);
    let (year, month, day) = civil_from_days(days);
    Civil {
        year,
        month,
        day,
        hour: in_day / 3_600_000,
        minute: in_day / 60_000 % 60,
        second: in_day / 1000 % 60,
        millis: in_day % 1000,
    }
}

/// `new Date(ms).toISOString()`, e.g. `2026-01-01T09:00:00.000Z`. Written digit by digit: session
/// loading formats one per entry, and `format!` was a twentieth of a whole load.
pub fn iso_utc(ms: i64) -> String {
    let c = civil(ms, 0);
    let mut out = String::with_capacity(27);
    if (0..=9999).contains(&c.year) {
        push_digits(&mut out, c.year, 4);
    } else {
        out.push(if c.year < 0 { '-' } else { '+' });
        push_digits(&mut out, c.year.abs(), 6);
    }
    for (sep, value, width) in [
        ('-', c.month, 2),
        ('-', c.day, 2),
        ('T', c.hour, 2),
        (':', c.minute, 2),
        (':', c.second, 2),
        ('.', c.millis, 3),
    ] {
        out.push(sep);
        push_digits(&mut out, value, width);
    }
    out.push('Z');
    out
}

/// Appends `value` (non-negative) zero-padded to `width` digits (more digits if it needs them).
fn push_digits(out: &mut String, value: i64, width: u32) {
    let mut div = 10_i64.pow(width.saturating_sub(1));
    while div > 1 && value >= div * 10 {
        div *= 10;
    }
    while div > 0 {
        let digit = u8::try_from(value / div % 10).unwrap_or(0);
        out.push(char::from(b'0' + digit));
        div /= 10;
    }
}

/// `YYYY-MM-DD HH:MM` of `ms` in a zone `offset_s` seconds east of UTC.
pub fn local_minutes(ms: i64, offset_s: i64) -> String {
    let c = civil(ms, offset_s);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}",
        c.year, c.month, c.day, c.hour, c.minute
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncate_counts_utf16_units() {
        assert_eq!(truncate("abc", 3), "abc");
        assert_eq!(truncate("abcd", 3), "abc...");
        assert_eq!(truncate("😀😀", 2), "😀...");
        assert_eq!(utf16_len("😀é"), 3);
        assert_eq!(utf16_prefix("a→b", 2), "a→");
    }

    /// `s.slice(0, n)` printed by Node: a lone high surrogate becomes U+FFFD. Expected values are
    /// what `process.stdout.write(s.slice(0, n))` writes, decoded as UTF-8.
    #[test]
    fn a_cut_through_a_surrogate_pair_prints_u_fffd() {
        let cases: &[(&str, usize, &str)] = &[
            ("😀😀", 0, ""),
            ("😀😀", 1, "\u{FFFD}"),
            ("😀😀", 2, "😀"),
            ("😀😀", 3, "😀\u{FFFD}"),
            ("😀😀", 4, "😀😀"),
            ("😀😀", 9, "😀😀"),
            ("a😀b", 2, "a\u{FFFD}"),
            ("a😀b", 3, "a😀"),
            ("é😀", 2, "é\u{FFFD}"),
            ("→𝄞x", 2, "→\u{FFFD}"),
            ("日本😀語", 3, "日本\u{FFFD}"),
            ("", 5, ""),
        ];
        for (s, n, want) in cases {
            assert_eq!(utf16_prefix(s, *n), *want, "{s:?}.slice(0, {n})");
            let cut = utf16_prefix(s, *n);
            assert_eq!(utf16_len(&cut), (*n).min(utf16_len(s)), "{s:?} {n}");
        }
    }

    /// life's 60-unit preview with an emoji across the cut, and the other limits.
    #[test]
    fn truncate_prints_u_fffd_for_a_split_emoji() {
        let fifty_nine = "x".repeat(59);
        let cases: Vec<(String, usize, String)> = vec![
            (
                format!("{fifty_nine}😀"),
                60,
                format!("{fifty_nine}\u{FFFD}..."),
            ),
            (format!("{fifty_nine}😀"), 61, format!("{fifty_nine}😀")),
            (
                format!("{fifty_nine}😀 tail"),
                60,
                format!("{fifty_nine}\u{FFFD}..."),
            ),
            (
                format!("{}😀", "y".repeat(60)),
                60,
                format!("{}...", "y".repeat(60)),
            ),
            ("😀😀".to_owned(), 3, "😀\u{FFFD}...".to_owned()),
            ("ab😀".to_owned(), 3, "ab\u{FFFD}...".to_owned()),
            ("ab😀".to_owned(), 4, "ab😀".to_owned()),
        ];
        for (s, n, want) in cases {
            assert_eq!(truncate(&s, n), want, "truncate({s:?}, {n})");
        }
    }

    #[test]
    fn dates_match_javascript() {
        assert_eq!(iso_utc(1_767_258_000_000), "2026-01-01T09:00:00.000Z");
        assert_eq!(iso_utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_utc(-1), "1969-12-31T23:59:59.999Z");
        assert_eq!(iso_utc(951_782_400_123), "2000-02-29T00:00:00.123Z");
        // Years outside 0..=9999 are signed and six digits wide, as in JavaScript.
        assert_eq!(
            iso_utc(8_640_000_000_000_000),
            "+275760-09-13T00:00:00.000Z"
        );
        assert_eq!(iso_utc(-62_198_755_200_000), "-000001-01-01T00:00:00.000Z");
        assert_eq!(iso_utc(253_402_300_799_999), "9999-12-31T23:59:59.999Z");
        assert_eq!(iso_utc(253_402_300_800_000), "+010000-01-01T00:00:00.000Z");
        assert_eq!(local_minutes(1_767_265_284_000, 0), "2026-01-01 11:01");
        assert_eq!(
            local_minutes(1_767_265_284_000, -12 * 3600),
            "2025-12-31 23:01"
        );
    }
}
