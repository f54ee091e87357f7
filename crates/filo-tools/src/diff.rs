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

/// Runs of equal / removed / added lines (jsdiff's `diffLines` parts). Lines shared at the start
/// and the end are split off first, so a one-line edit of a large file only diffs the middle.
fn parts<'a>(old: &'a str, new: &'a str) -> Vec<(Kind, Vec<&'a str>)> {
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let prefix = old_lines
        .iter()
        .zip(&new_lines)
        .take_while(|(a, b)| a == b)
        .count();
    let room = old_lines.len().min(new_lines.len()) - prefix;
    let suffix = old_lines
        .iter()
        .rev()
        .zip(new_lines.iter().rev())
        .take(room)
        .take_while(|(a, b)| a == b)
        .count();
    let mut parts: Vec<(Kind, Vec<&'a str>)> = Vec::new();
    for line in &old_lines[..prefix] {
        push_line(&mut parts, Kind::Same, strip_newline(line));
    }
    let old_mid = &old[old_lines[..prefix].iter().map(|l| l.len()).sum::<usize>()
        ..old.len()
            - old_lines[old_lines.len() - suffix..]
                .iter()
                .map(|l| l.len())
                .sum::<usize>()];
    let new_mid = &new[new_lines[..prefix].iter().map(|l| l.len()).sum::<usize>()
        ..new.len()
            - new_lines[new_lines.len() - suffix..]
                .iter()
                .map(|l| l.len())
                .sum::<usize>()];
    let diff = TextDiff::from_lines(old_mid, new_mid);
    for change in diff.iter_all_changes() {
        let kind = match change.tag() {
            ChangeTag::Equal => Kind::Same,
            ChangeTag::Insert => Kind::Added,
            ChangeTag::Delete => Kind::Removed,
        };
        push_line(&mut parts, kind, strip_newline(change.value()));
    }
    for line in &old_lines[old_lines.len() - suffix..] {
        push_line(&mut parts, Kind::Same, strip_newline(line));
    }
    parts
}

/// The diff text and the first changed line in the new file (1-based).
pub fn generate_diff_string(old: &str, new: &str, context: usize) -> (String, Option<usize>) {
    let parts = parts(old, new);
    let width = old
        .split('\n')
        .count()
        .max(new.split('\n').count())
        .to_string()
        .len();
    let blank = " ".repeat(width);
    let mut out: Vec<String> = Vec::new();
    let (mut old_no, mut new_no) = (1usize, 1usize);
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
