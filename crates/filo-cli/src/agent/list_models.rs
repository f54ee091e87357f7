//! `--list-models [search]` as pi 0.73 prints it: the models that have a key, filtered by a
//! fuzzy search over `provider id`, sorted by provider then id, in six padded columns with
//! token counts as `200K` / `1M`.

use filo_ai::Model;

/// A token count as pi shows it: `1M`, `1.5M`, `200K`, `32.8K`, `512`.
pub fn format_tokens(count: u64) -> String {
    // JavaScript's `toFixed(1)` on `count / unit`: to tenths, halves up.
    let scaled = |unit: u64, suffix: &str| {
        if count.is_multiple_of(unit) {
            format!("{}{suffix}", count / unit)
        } else {
            let tenths = (count + unit / 20) / (unit / 10);
            format!("{}.{}{suffix}", tenths / 10, tenths % 10)
        }
    };
    if count >= 1_000_000 {
        scaled(1_000_000, "M")
    } else if count >= 1_000 {
        scaled(1_000, "K")
    } else {
        count.to_string()
    }
}

/// pi-tui's `fuzzyMatch`: every query character in order; `Some(score)` (lower is better).
fn fuzzy_score(query: &str, text: &str) -> Option<f64> {
    let text: Vec<char> = text.to_lowercase().chars().collect();
    let query = query.to_lowercase();
    let score_of = |q: &[char]| -> Option<f64> {
        if q.is_empty() {
            return Some(0.0);
        }
        if q.len() > text.len() {
            return None;
        }
        let (mut qi, mut score, mut last, mut run) = (0usize, 0.0f64, None::<usize>, 0u32);
        for (i, &c) in text.iter().enumerate() {
            if qi == q.len() {
                break;
            }
            if c != q[qi] {
                continue;
            }
            let boundary =
                i == 0 || matches!(text[i - 1], ' ' | '\t' | '-' | '_' | '.' | '/' | ':');
            if last.is_some_and(|l| l + 1 == i) {
                run += 1;
                score -= f64::from(run) * 5.0;
            } else {
                run = 0;
                if let Some(l) = last {
                    score += (i - l - 1) as f64 * 2.0;
                }
            }
            if boundary {
                score -= 10.0;
            }
            score += i as f64 * 0.1;
            last = Some(i);
            qi += 1;
        }
        if qi < q.len() {
            return None;
        }
        if q == text.as_slice() {
            score -= 100.0;
        }
        Some(score)
    };
    let q: Vec<char> = query.chars().collect();
    if let Some(s) = score_of(&q) {
        return Some(s);
    }
    // `abc12` also matches as `12abc`, and the other way round.
    let split = q.iter().position(|c| !c.is_ascii_lowercase())?;
    let (head, tail) = q.split_at(split);
    let swapped: Vec<char> = if !head.is_empty() && tail.iter().all(char::is_ascii_digit) {
        tail.iter().chain(head).copied().collect()
    } else {
        let digits = q.iter().position(|c| !c.is_ascii_digit())?;
        let (d, l) = q.split_at(digits);
        if d.is_empty() || !l.iter().all(char::is_ascii_lowercase) {
            return None;
        }
        l.iter().chain(d).copied().collect()
    };
    score_of(&swapped).map(|s| s + 5.0)
}

/// Whether every whitespace-separated token of `query` fuzzily matches `text`.
pub fn fuzzy_matches(query: &str, text: &str) -> bool {
    query
        .split_whitespace()
        .all(|token| fuzzy_score(token, text).is_some())
}

/// ASCII punctuation in the order of ICU's root collation (what Node's `localeCompare` uses).
const PUNCTUATION_ORDER: &str = " _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$";

/// A sort key close to JavaScript's `localeCompare` for ids: case folded first, punctuation
/// (in ICU's order) before digits before letters, the original text breaking ties.
fn collation_key(s: &str) -> (Vec<(u8, u32)>, String) {
    let key = s
        .chars()
        .map(|c| {
            if c.is_alphabetic() {
                (2, u32::from(c.to_lowercase().next().unwrap_or(c)))
            } else if c.is_numeric() {
                (1, u32::from(c))
            } else {
                let rank = PUNCTUATION_ORDER
                    .chars()
                    .position(|p| p == c)
                    .and_then(|i| u32::try_from(i).ok())
                    .unwrap_or(0x100 + u32::from(c));
                (0, rank)
            }
        })
        .collect();
    (key, s.to_owned())
}

/// The table for `models` (those with a key) and `search`; the line pi prints when nothing
/// matches.
pub fn render(models: &[Model], search: &str) -> String {
    if models.is_empty() {
        return "No models available. Set an API key in the environment, in auth.json or in \
                models.json (see `filo --help`).\n"
            .to_owned();
    }
    let mut shown: Vec<&Model> = models
        .iter()
        .filter(|m| {
            search.trim().is_empty() || fuzzy_matches(search, &format!("{} {}", m.provider, m.id))
        })
        .collect();
    if shown.is_empty() {
        return format!("No models matching \"{search}\"\n");
    }
    shown.sort_by_cached_key(|m| (collation_key(&m.provider), collation_key(&m.id)));
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    let header = [
        "provider", "model", "context", "max-out", "thinking", "images",
    ]
    .map(String::from);
    let rows: Vec<[String; 6]> = shown
        .iter()
        .map(|m| {
            [
                m.provider.clone(),
                m.id.clone(),
                format_tokens(m.context_window),
                format_tokens(m.max_tokens),
                yes_no(m.reasoning).to_owned(),
                yes_no(m.input.iter().any(|i| i == "image")).to_owned(),
            ]
        })
        .collect();
    let mut widths = header.clone().map(|h| h.chars().count());
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for r in std::iter::once(&header).chain(&rows) {
        let cells: Vec<String> = r
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(&cells.join("  "));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_counts_read_as_pi_shows_them() {
        for (n, s) in [
            (1_000_000, "1M"),
            (1_048_576, "1.0M"),
            (2_000_000, "2M"),
            (200_000, "200K"),
            (32_768, "32.8K"),
            (128_000, "128K"),
            (999, "999"),
            (1_250, "1.3K"),
            (0, "0"),
        ] {
            assert_eq!(format_tokens(n), s, "{n}");
        }
    }

    #[test]
    fn fuzzy_search_needs_every_token_in_order() {
        assert!(fuzzy_matches("son4", "anthropic claude-sonnet-4"));
        assert!(fuzzy_matches("anth sonnet", "anthropic claude-sonnet-4"));
        assert!(!fuzzy_matches("sonnet gpt", "anthropic claude-sonnet-4"));
        assert!(!fuzzy_matches("zz", "openai gpt-5"));
        // Letters and digits swapped still match (`5gpt` finds gpt-5's "gpt5"-ish text).
        assert!(fuzzy_matches("4o", "openai gpt-4o"));
        assert!(fuzzy_matches("o4", "openai gpt-4o"));
    }
}
