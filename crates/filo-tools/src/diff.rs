//! The edit tool's diff text (pi `generateDiffString`): line-numbered, 4 lines of context around
//! each change, skipped context shown as `...`.

use similar::{ChangeTag, TextDiff};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Same,
    Added,
    Removed,
}

fn strip_newline(line: &str) -> &str {
    line.strip_suffix('\n').unwrap_or(line)
}

fn push_line<'a>(parts: &mut Vec<(Kind, Vec<&'a str>)>, kind: Kind, line: &'a str) {
    match parts.last_mut() {
        Some((last, lines)) if *last == kind => lines.push(line),
        _ => parts.push((kind, vec![line])),
    }
}

/// Byte length of the longest common prefix of `a` and `b` made of whole (`\n`-ended) lines.
fn common_line_prefix(a: &[u8], b: &[u8]) -> usize {
    const CHUNK: usize = 4096;
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + CHUNK <= n && a[i..i + CHUNK] == b[i..i + CHUNK] {
        i += CHUNK;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    a[..i]
        .iter()
        .rposition(|&c| c == b'\n')
        .map_or(0, |p| p + 1)
}

/// Byte length of the longest common suffix of `a` and `b` that starts at a line start in both.
fn common_line_suffix(a: &[u8], b: &[u8]) -> usize {
    const CHUNK: usize = 4096;
    let n = a.len().min(b.len());
    let mut k = 0;
    while k + CHUNK <= n
        && a[a.len() - k - CHUNK..a.len() - k] == b[b.len() - k - CHUNK..b.len() - k]
    {
        k += CHUNK;
    }
    while k < n && a[a.len() - 1 - k] == b[b.len() - 1 - k] {
        k += 1;
    }
    let line_start = |t: &[u8], at: usize| at == 0 || t[at - 1] == b'\n';
    while k > 0 && !(line_start(a, a.len() - k) && line_start(b, b.len() - k)) {
        k -= 1;
    }
    k
}

fn newlines(text: &str) -> usize {
    text.bytes().filter(|&b| b == b'\n').count()
}

/// The last `count` lines of `text` (every line `\n`-ended), without their newlines.
fn last_lines(text: &str, count: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut end = text.len();
    while out.len() < count && end > 0 {
        let start = text[..end - 1].rfind('\n').map_or(0, |p| p + 1);
        out.push(&text[start..end - 1]);
        end = start;
    }
    out.reverse();
    out
}

/// Runs of equal / removed / added lines (jsdiff's `diffLines` parts), plus how many leading
/// equal lines were left out. Lines shared at the start and the end are split off by a byte
/// comparison first, so a one-line edit of a large file only diffs the middle; of those shared
/// runs only the lines the rendering can show (context + 1) are kept.
fn parts<'a>(old: &'a str, new: &'a str, context: usize) -> (usize, Vec<(Kind, Vec<&'a str>)>) {
    let prefix = common_line_prefix(old.as_bytes(), new.as_bytes());
    let suffix = common_line_suffix(&old.as_bytes()[prefix..], &new.as_bytes()[prefix..]);
    let head = &old[..prefix];
    let tail = &old[old.len() - suffix..];
    let head_lines = newlines(head);
    let kept = last_lines(head, context + 1);
    let dropped = head_lines - kept.len();
    let mut parts: Vec<(Kind, Vec<&'a str>)> = Vec::new();
    if !kept.is_empty() {
        parts.push((Kind::Same, kept));
    }
    let old_mid = &old[prefix..old.len() - suffix];
    let new_mid = &new[prefix..new.len() - suffix];
    let diff = TextDiff::from_lines(old_mid, new_mid);
    for change in diff.iter_all_changes() {
        let kind = match change.tag() {
            ChangeTag::Equal => Kind::Same,
            ChangeTag::Insert => Kind::Added,
            ChangeTag::Delete => Kind::Removed,
        };
        push_line(&mut parts, kind, strip_newline(change.value()));
    }
    for line in tail.split_inclusive('\n').take(context + 1) {
        push_line(&mut parts, Kind::Same, strip_newline(line));
    }
    (dropped, parts)
}

/// The diff text and the first changed line in the new file (1-based).
pub fn generate_diff_string(old: &str, new: &str, context: usize) -> (String, Option<usize>) {
    let (dropped, parts) = parts(old, new, context);
    let width = (newlines(old).max(newlines(new)) + 1).to_string().len();
    render_parts(dropped, &parts, width, context)
}

/// pi's rendering of the parts: changes with line numbers, ≤ `context` lines around them.
fn render_parts(
    dropped: usize,
    parts: &[(Kind, Vec<&str>)],
    width: usize,
    context: usize,
) -> (String, Option<usize>) {
    let blank = " ".repeat(width);
    let mut out: Vec<String> = Vec::new();
    let (mut old_no, mut new_no) = (1 + dropped, 1 + dropped);
    let mut last_was_change = false;
    let mut first_changed = None;
    for (i, (kind, lines)) in parts.iter().enumerate() {
        match kind {
            Kind::Added | Kind::Removed => {
                first_changed.get_or_insert(new_no);
                for line in lines {
                    if *kind == Kind::Added {
                        out.push(format!("+{new_no:>width$} {line}"));
                        new_no += 1;
                    } else {
                        out.push(format!("-{old_no:>width$} {line}"));
                        old_no += 1;
                    }
                }
                last_was_change = true;
            }
            Kind::Same => {
                let next_is_change = parts.get(i + 1).is_some_and(|(k, _)| *k != Kind::Same);
                if last_was_change || next_is_change {
                    let mut shown: &[&str] = lines;
                    let mut skip_start = 0;
                    let mut skip_end = 0;
                    if !last_was_change {
                        skip_start = lines.len().saturating_sub(context);
                        shown = &lines[skip_start..];
                    }
                    if !next_is_change && shown.len() > context {
                        skip_end = shown.len() - context;
                        shown = &shown[..context];
                    }
                    if skip_start > 0 {
                        out.push(format!(" {blank} ..."));
                        old_no += skip_start;
                        new_no += skip_start;
                    }
                    for line in shown {
                        out.push(format!(" {old_no:>width$} {line}"));
                        old_no += 1;
                        new_no += 1;
                    }
                    if skip_end > 0 {
                        out.push(format!(" {blank} ..."));
                        old_no += skip_end;
                        new_no += skip_end;
                    }
                } else {
                    old_no += lines.len();
                    new_no += lines.len();
                }
                last_was_change = false;
            }
        }
    }
    (out.join("\n"), first_changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The straightforward version: diff the whole texts, keep every line.
    fn reference(old: &str, new: &str, context: usize) -> (String, Option<usize>) {
        let diff = TextDiff::from_lines(old, new);
        let mut parts: Vec<(Kind, Vec<&str>)> = Vec::new();
        for change in diff.iter_all_changes() {
            let kind = match change.tag() {
                ChangeTag::Equal => Kind::Same,
                ChangeTag::Insert => Kind::Added,
                ChangeTag::Delete => Kind::Removed,
            };
            push_line(&mut parts, kind, strip_newline(change.value()));
        }
        let width = old
            .split('\n')
            .count()
            .max(new.split('\n').count())
            .to_string()
            .len();
        render_parts(0, &parts, width, context)
    }

    proptest::proptest! {
        #[test]
        fn trimmed_diff_equals_the_full_diff(
            count in 0usize..60,
            at in 0usize..60,
            remove in 0usize..6,
            insert in 0usize..6,
            trailing_newline in proptest::bool::ANY,
        ) {
            // Distinct lines, so the diff is unambiguous and both versions must agree exactly.
            let lines: Vec<String> = (0..count).map(|i| format!("l{i}")).collect();
            let join = |ls: &[String]| {
                let mut t = ls.join("\n");
                if trailing_newline && !ls.is_empty() {
                    t.push('\n');
                }
                t
            };
            let old = join(&lines);
            let at = at.min(lines.len());
            let end = (at + remove).min(lines.len());
            let mut edited = lines[..at].to_vec();
            edited.extend((0..insert).map(|j| format!("new{j}")));
            edited.extend(lines[end..].iter().cloned());
            let new = join(&edited);
            proptest::prop_assert_eq!(generate_diff_string(&old, &new, 4), reference(&old, &new, 4));
        }
    }

    #[test]
    fn one_line_change_with_context() {
        let old: String = (1..=12).map(|i| format!("line {i}\n")).collect();
        let new = old.replace("line 6\n", "line six\n");
        let (diff, first) = generate_diff_string(&old, &new, 4);
        let expected = [
            "    ...",
            "  2 line 2",
            "  3 line 3",
            "  4 line 4",
            "  5 line 5",
            "- 6 line 6",
            "+ 6 line six",
            "  7 line 7",
            "  8 line 8",
            "  9 line 9",
            " 10 line 10",
            "    ...",
        ]
        .join("\n");
        assert_eq!(diff, expected);
        assert_eq!(first, Some(6));
    }

    #[test]
    fn identical_text_has_no_diff() {
        assert_eq!(
            generate_diff_string("a\nb", "a\nb", 4),
            (String::new(), None)
        );
    }
}
