//! Output truncation (pi `truncate.ts`): keep the head or the tail of a text within a line and a
//! byte budget, never returning a partial line except for tail truncation of one huge last line.
//!
//! Lines are `split('\n')`, so a trailing newline yields a final empty line that counts. Byte sizes
//! are UTF-8 bytes. The result is stored verbatim in tool `details.truncation`.

use serde::Serialize;

/// Default line budget (2,000 lines).
pub const DEFAULT_MAX_LINES: usize = 2000;
/// Default byte budget (50 KiB).
pub const DEFAULT_MAX_BYTES: usize = 50 * 1024;
/// Longest grep line shown, in UTF-16 code units.
pub const GREP_MAX_LINE_LENGTH: usize = 500;

/// Which budget stopped the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TruncatedBy {
    Lines,
    Bytes,
}

/// pi's `TruncationResult`, field for field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Truncation {
    pub content: String,
    pub truncated: bool,
    pub truncated_by: Option<TruncatedBy>,
    pub total_lines: usize,
    pub total_bytes: usize,
    pub output_lines: usize,
    pub output_bytes: usize,
    pub last_line_partial: bool,
    pub first_line_exceeds_limit: bool,
    pub max_lines: usize,
    pub max_bytes: usize,
}

/// The two budgets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_lines: usize,
    pub max_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_lines: DEFAULT_MAX_LINES,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

impl Limits {
    /// Only the byte budget (grep, find, ls: their own count limits come first).
    pub fn bytes_only() -> Self {
        Limits {
            max_lines: usize::MAX,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

impl Truncation {
    fn untouched(content: &str, total_lines: usize, limits: Limits) -> Self {
        Truncation {
            content: content.to_string(),
            truncated: false,
            truncated_by: None,
            total_lines,
            total_bytes: content.len(),
            output_lines: total_lines,
            output_bytes: content.len(),
            last_line_partial: false,
            first_line_exceeds_limit: false,
            max_lines: limits.max_lines,
            max_bytes: limits.max_bytes,
        }
    }

    /// The details JSON (`details.truncation`).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

/// Keep whole lines from the start. If line 1 alone is over budget the content is empty and
/// `first_line_exceeds_limit` is set.
pub fn truncate_head(content: &str, limits: Limits) -> Truncation {
    let total_lines = content.split('\n').count();
    if total_lines <= limits.max_lines && content.len() <= limits.max_bytes {
        return Truncation::untouched(content, total_lines, limits);
    }
    let first_len = content.split('\n').next().map_or(0, str::len);
    let mut result = Truncation::untouched("", total_lines, limits);
    result.total_bytes = content.len();
    result.truncated = true;
    if first_len > limits.max_bytes {
        result.truncated_by = Some(TruncatedBy::Bytes);
        result.output_lines = 0;
        result.output_bytes = 0;
        result.first_line_exceeds_limit = true;
        return result;
    }
    let mut end = 0usize;
    let mut bytes = 0usize;
    let mut count = 0usize;
    let mut by = TruncatedBy::Lines;
    for (i, line) in content.split('\n').enumerate() {
        if count >= limits.max_lines {
            break;
        }
        let cost = line.len() + usize::from(i > 0);
        if bytes + cost > limits.max_bytes {
            by = TruncatedBy::Bytes;
            break;
        }
        bytes += cost;
        end += cost;
        count += 1;
    }
    if count >= limits.max_lines && bytes <= limits.max_bytes {
        by = TruncatedBy::Lines;
    }
    result.content = content[..end].to_string();
    result.truncated_by = Some(by);
    result.output_lines = count;
    result.output_bytes = end;
    result
}

/// Keep whole lines from the end. If the very last line alone is over budget, keep its last
/// bytes (from a character boundary) and set `last_line_partial`.
pub fn truncate_tail(content: &str, limits: Limits) -> Truncation {
    let total_lines = content.split('\n').count();
    if total_lines <= limits.max_lines && content.len() <= limits.max_bytes {
        return Truncation::untouched(content, total_lines, limits);
    }
    let mut result = Truncation::untouched("", total_lines, limits);
    result.truncated = true;
    let mut start = content.len();
    let mut bytes = 0usize;
    let mut count = 0usize;
    let mut by = TruncatedBy::Lines;
    for line in content.rsplit('\n') {
        if count >= limits.max_lines {
            break;
        }
        let cost = line.len() + usize::from(count > 0);
        if bytes + cost > limits.max_bytes {
            by = TruncatedBy::Bytes;
            if count == 0 {
                let mut cut = line.len() - limits.max_bytes;
                while !line.is_char_boundary(cut) {
                    cut += 1;
                }
                start = content.len() - (line.len() - cut);
                bytes = line.len() - cut;
                count = 1;
                result.last_line_partial = true;
            }
            break;
        }
        bytes += cost;
        start -= cost;
        count += 1;
    }
    if count >= limits.max_lines && bytes <= limits.max_bytes {
        by = TruncatedBy::Lines;
    }
    result.content = content[start..].to_string();
    result.truncated_by = Some(by);
    result.output_lines = count;
    result.output_bytes = result.content.len();
    result
}

/// `<b>B`, `<x.x>KB` or `<x.x>MB` (pi's `formatSize`).
pub fn format_size(bytes: usize) -> String {
    if bytes < 1024 {
        format!("{bytes}B")
    } else if bytes < 1024 * 1024 {
        format!("{:.1}KB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1}MB", bytes as f64 / (1024.0 * 1024.0))
    }
}

/// Cut a line to `max_chars` UTF-16 code units plus `... [truncated]`; says whether it cut.
pub fn truncate_line(line: &str, max_chars: usize) -> (String, bool) {
    let mut units = 0usize;
    for (index, ch) in line.char_indices() {
        let width = ch.len_utf16();
        if units + width > max_chars {
            return (format!("{}... [truncated]", &line[..index]), true);
        }
        units += width;
    }
    (line.to_string(), false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(lines: usize, bytes: usize) -> Limits {
        Limits {
            max_lines: lines,
            max_bytes: bytes,
        }
    }

    #[test]
    fn head_fits_untouched() {
        let t = truncate_head("a\nb\n", Limits::default());
        assert!(!t.truncated);
        assert_eq!(t.total_lines, 3);
        assert_eq!(t.content, "a\nb\n");
    }

    #[test]
    fn head_by_lines_and_bytes() {
        let t = truncate_head("1\n2\n3\n4", limits(2, 100));
        assert_eq!(t.content, "1\n2");
        assert_eq!(t.truncated_by, Some(TruncatedBy::Lines));
        assert_eq!((t.output_lines, t.output_bytes), (2, 3));
        let t = truncate_head("aaaa\nbbbb\ncccc", limits(100, 9));
        assert_eq!(t.content, "aaaa\nbbbb");
        assert_eq!(t.truncated_by, Some(TruncatedBy::Bytes));
        let t = truncate_head("aaaaaaaaaaaa\nb", limits(100, 5));
        assert!(t.first_line_exceeds_limit);
        assert_eq!(t.content, "");
    }

    #[test]
    fn tail_keeps_the_end_and_partial_last_line() {
        let t = truncate_tail("1\n2\n3\n4", limits(2, 100));
        assert_eq!(t.content, "3\n4");
        assert_eq!(t.truncated_by, Some(TruncatedBy::Lines));
        let t = truncate_tail("x\nhéllo", limits(100, 4));
        assert!(t.last_line_partial);
        assert_eq!(t.content, "llo");
        assert_eq!(t.output_lines, 1);
        assert_eq!(t.truncated_by, Some(TruncatedBy::Bytes));
    }

    #[test]
    fn sizes_and_lines() {
        assert_eq!(format_size(1023), "1023B");
        assert_eq!(format_size(51200), "50.0KB");
        assert_eq!(format_size(3 * 1024 * 1024 / 2), "1.5MB");
        assert_eq!(
            truncate_line("abcdef", 3),
            ("abc... [truncated]".to_string(), true)
        );
        assert_eq!(truncate_line("abc", 3), ("abc".to_string(), false));
    }

    #[test]
    fn details_use_pi_field_names() {
        let t = truncate_head("1\n2\n3", limits(1, 100));
        let json = t.to_json();
        assert_eq!(json["truncatedBy"], "lines");
        assert_eq!(json["firstLineExceedsLimit"], false);
        assert_eq!(json["maxLines"], 1);
    }

    proptest::proptest! {
        #[test]
        fn head_is_a_bounded_prefix(text in "[a-zé\\n]{0,300}", lines in 1usize..20, bytes in 1usize..120) {
            let t = truncate_head(&text, limits(lines, bytes));
            proptest::prop_assert!(text.starts_with(&t.content));
            proptest::prop_assert!(t.output_lines <= lines);
            proptest::prop_assert!(t.content.len() <= bytes || !t.truncated);
            proptest::prop_assert_eq!(t.output_bytes, t.content.len());
            proptest::prop_assert_eq!(t.total_lines, text.split('\n').count());
            if !t.truncated {
                proptest::prop_assert_eq!(&t.content, &text);
            } else if !t.first_line_exceeds_limit {
                proptest::prop_assert_eq!(t.output_lines, t.content.split('\n').count());
                // Whole lines only: the next character of the input is the newline ending it.
                proptest::prop_assert_eq!(text.as_bytes()[t.content.len()], b'\n');
            }
        }

        #[test]
        fn tail_is_a_bounded_suffix(text in "[a-zé\\n]{0,300}", lines in 1usize..20, bytes in 4usize..120) {
            let t = truncate_tail(&text, limits(lines, bytes));
            proptest::prop_assert!(text.ends_with(&t.content));
            proptest::prop_assert!(t.output_lines <= lines);
            proptest::prop_assert!(t.content.len() <= bytes || !t.truncated);
            if t.truncated && !t.last_line_partial {
                proptest::prop_assert_eq!(t.output_lines, t.content.split('\n').count());
                let cut = text.len() - t.content.len();
                proptest::prop_assert!(cut == 0 || text.as_bytes()[cut - 1] == b'\n');
            }
        }
    }
}
