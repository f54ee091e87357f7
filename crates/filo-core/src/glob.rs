//! Glob matching with the semantics pi 0.73.1 gets from `minimatch` (default options) when it
//! filters resources by the `skills` / `prompts` / `themes` settings.
//!
//! Not `globset`: minimatch leaves dot segments alone (`*`, `?` and `**` never match a segment
//! starting with `.`, so `**/SKILL.md` does not match `/p/.pi/skills/a/SKILL.md`), a trailing
//! `/**` needs at least one more segment, and `{a,b}` expands before matching. globset's `*`
//! matches a leading dot, which would enable or disable resources pi leaves as they are.

/// Whether `path` (`/`-separated) matches `pattern`: `*` and `?` within one segment, `**` as a
/// whole segment for any number of segments, `[...]` / `[!...]` / `[^...]` classes, `{a,b}`
/// alternatives and `\` escapes.
pub fn matches(pattern: &str, path: &str) -> bool {
    let path: Vec<&str> = path.split('/').collect();
    expand_braces(pattern).iter().any(|p| {
        let segs: Vec<&str> = p.split('/').collect();
        match_segments(&segs, &path)
    })
}

fn match_segments(pat: &[&str], path: &[&str]) -> bool {
    match pat.split_first() {
        None => path.is_empty(),
        Some((&"**", rest)) => {
            // A trailing `**` needs one more segment; none it spans may be hidden.
            let min = usize::from(rest.is_empty());
            for skip in 0..=path.len() {
                if skip >= min && match_segments(rest, &path[skip..]) {
                    return true;
                }
                if skip < path.len() && path[skip].starts_with('.') {
                    return false;
                }
            }
            false
        }
        Some((p, rest)) => {
            !path.is_empty() && match_segment(p, path[0]) && match_segments(rest, &path[1..])
        }
    }
}

/// One segment. A segment starting with `.` is only matched by a pattern starting with a
/// literal `.`; `.` and `..` only literally.
fn match_segment(pattern: &str, segment: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let s: Vec<char> = segment.chars().collect();
    if segment.starts_with('.') && !pattern.starts_with('.') {
        return false;
    }
    if (segment == "." || segment == "..") && pattern != segment {
        return false;
    }
    match_chars(&p, &s)
}

fn match_chars(p: &[char], s: &[char]) -> bool {
    match p.first() {
        None => s.is_empty(),
        Some('*') => (0..=s.len()).any(|i| match_chars(&p[1..], &s[i..])),
        Some('?') => !s.is_empty() && match_chars(&p[1..], &s[1..]),
        Some('\\') if p.len() > 1 => s.first() == Some(&p[1]) && match_chars(&p[2..], &s[1..]),
        Some('[') => match class(p) {
            Some((set, len)) => {
                !s.is_empty() && set.contains(s[0]) && match_chars(&p[len..], &s[1..])
            }
            None => s.first() == Some(&'[') && match_chars(&p[1..], &s[1..]),
        },
        Some(c) => s.first() == Some(c) && match_chars(&p[1..], &s[1..]),
    }
}

struct Class {
    negated: bool,
    ranges: Vec<(char, char)>,
}

impl Class {
    fn contains(&self, c: char) -> bool {
        self.ranges.iter().any(|(a, b)| (*a..=*b).contains(&c)) != self.negated
    }
}

/// A `[...]` class at the start of `p` and its length in chars; `None` when it is not closed.
fn class(p: &[char]) -> Option<(Class, usize)> {
    let mut i = 1;
    let negated = matches!(p.get(1), Some('!' | '^'));
    if negated {
        i += 1;
    }
    let mut ranges = Vec::new();
    let start = i;
    while i < p.len() {
        let c = p[i];
        if c == ']' && i > start {
            return Some((Class { negated, ranges }, i + 1));
        }
        let c = if c == '\\' && i + 1 < p.len() {
            i += 1;
            p[i]
        } else {
            c
        };
        if p.get(i + 1) == Some(&'-') && p.get(i + 2).is_some_and(|e| *e != ']') {
            ranges.push((c, p[i + 2]));
            i += 3;
        } else {
            ranges.push((c, c));
            i += 1;
        }
    }
    None
}

/// `a{b,c}d` → `abd`, `acd` (nested braces too); a brace without a comma stays as it is.
fn expand_braces(pattern: &str) -> Vec<String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut depth = 0;
    let mut open = None;
    let mut commas = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '{' => {
                if depth == 0 {
                    open = Some(i);
                    commas.clear();
                }
                depth += 1;
            }
            ',' if depth == 1 => commas.push(i),
            '}' if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    let start = open.unwrap_or(0);
                    if commas.is_empty() {
                        open = None;
                    } else {
                        let head: String = chars[..start].iter().collect();
                        let tail: String = chars[i + 1..].iter().collect();
                        let mut bounds = vec![start];
                        bounds.extend(&commas);
                        bounds.push(i);
                        let mut out = Vec::new();
                        for w in bounds.windows(2) {
                            let alt: String = chars[w[0] + 1..w[1]].iter().collect();
                            out.extend(expand_braces(&format!("{head}{alt}{tail}")));
                        }
                        return out;
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    vec![pattern.to_owned()]
}

#[cfg(test)]
mod tests {
    use super::matches;

    /// Outcomes of pi 0.73.1's `minimatch(path, pattern)` (node, default options).
    #[test]
    fn matches_as_minimatch_does() {
        let cases = [
            ("a/**", "a", false),
            ("a/**", "a/b", true),
            ("**/SKILL.md", "SKILL.md", true),
            ("**/SKILL.md", "/x/.pi/skills/a/SKILL.md", false),
            ("/x/**/a/SKILL.md", "/x/.pi/skills/a/SKILL.md", false),
            ("**/lint", "../extra/lint", false),
            ("../extra/*", "../extra/lint", true),
            ("*.md", ".hidden.md", false),
            ("*.{md,txt}", "a.md", true),
            ("a?", "ab", true),
            ("a?b", "a/b", false),
            ("foo*", "foo-bar", true),
            ("skills/*", "skills/x", true),
            ("skills/*", "skills/x/y", false),
            ("skills/**", "skills/x/y", true),
            ("[a-z]", "x", true),
            ("[!a-z]", "x", false),
            ("*", "a.md", true),
        ];
        for (pattern, path, want) in cases {
            assert_eq!(matches(pattern, path), want, "{pattern} vs {path}");
        }
    }
}
