//! The session picker's search (pi 0.73's syntax): words match fuzzily (their letters in order),
//! `"a phrase"` matches as written (case and runs of spaces ignored), `re:<pattern>` is a
//! case-insensitive regular expression. A match has a score; lower is better.

use filo_session::SessionInfo;

/// A word of the query.
#[derive(Debug, Clone)]
pub enum Token {
    Fuzzy(String),
    Phrase(String),
}

/// A parsed query.
#[derive(Debug, Clone)]
pub enum Query {
    Tokens(Vec<Token>),
    Regex(regex::Regex),
    /// `re:` with a pattern that does not compile (or is empty): nothing matches.
    Invalid,
}

fn normalize(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// Parse the search box. Unbalanced quotes fall back to plain words.
pub fn parse(query: &str) -> Query {
    let q = query.trim();
    if let Some(p) = q.strip_prefix("re:") {
        let p = p.trim();
        if p.is_empty() {
            return Query::Invalid;
        }
        return regex::RegexBuilder::new(p)
            .case_insensitive(true)
            .build()
            .map_or(Query::Invalid, Query::Regex);
    }
    let mut tokens = Vec::new();
    let mut buf = String::new();
    let mut quoted = false;
    let flush = |buf: &mut String, tokens: &mut Vec<Token>, phrase: bool| {
        let v = buf.trim().to_string();
        buf.clear();
        if !v.is_empty() {
            tokens.push(if phrase {
                Token::Phrase(v)
            } else {
                Token::Fuzzy(v)
            });
        }
    };
    for c in q.chars() {
        if c == '"' {
            flush(&mut buf, &mut tokens, quoted);
            quoted = !quoted;
        } else if c.is_whitespace() && !quoted {
            flush(&mut buf, &mut tokens, false);
        } else {
            buf.push(c);
        }
    }
    if quoted {
        return Query::Tokens(
            q.split_whitespace()
                .map(|w| Token::Fuzzy(w.to_string()))
                .collect(),
        );
    }
    flush(&mut buf, &mut tokens, false);
    Query::Tokens(tokens)
}

/// Whether `needle`'s letters occur in `hay` in order (both lowercase); the score grows with the
/// gaps between them and with how late the match starts.
fn fuzzy(needle: &str, hay: &str) -> Option<f64> {
    let mut chars = hay.char_indices();
    let mut first = None;
    let mut last = 0usize;
    let mut gaps = 0usize;
    for n in needle.chars() {
        let (i, _) = chars.by_ref().find(|(_, h)| *h == n)?;
        match first {
            None => first = Some(i),
            Some(_) => gaps += i.saturating_sub(last + 1),
        }
        last = i;
    }
    Some(gaps as f64 + first.unwrap_or(0) as f64 * 0.01)
}

fn search_text(s: &SessionInfo) -> String {
    format!(
        "{} {} {} {}",
        s.id,
        s.name.as_deref().unwrap_or(""),
        s.all_messages_text,
        s.cwd
    )
}

/// The score of `session` for `query`, or `None` when it does not match.
pub fn score(session: &SessionInfo, query: &Query) -> Option<f64> {
    let text = search_text(session);
    match query {
        Query::Invalid => None,
        Query::Regex(re) => re.find(&text).map(|m| m.start() as f64 * 0.1),
        Query::Tokens(tokens) => {
            let lower = text.to_lowercase();
            let mut normalized: Option<String> = None;
            let mut total = 0.0;
            for t in tokens {
                match t {
                    Token::Phrase(p) => {
                        let hay = normalized.get_or_insert_with(|| normalize(&text));
                        let at = hay.find(&normalize(p))?;
                        total += at as f64 * 0.1;
                    }
                    Token::Fuzzy(w) => total += fuzzy(&w.to_lowercase(), &lower)?,
                }
            }
            Some(total)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(name: Option<&str>, text: &str) -> SessionInfo {
        SessionInfo {
            path: "/s/a.jsonl".into(),
            id: "0190abcd".into(),
            cwd: "/home/me/project".into(),
            name: name.map(str::to_string),
            parent_session_path: None,
            created: String::new(),
            modified: 0,
            message_count: 1,
            first_message: text.into(),
            all_messages_text: text.into(),
        }
    }

    #[test]
    fn words_phrases_and_regexes() {
        let s = info(Some("Parser work"), "we chose a hand-written   lexer");
        assert!(score(&s, &parse("lexer")).is_some());
        assert!(score(&s, &parse("hwl")).is_some(), "letters in order");
        assert!(score(&s, &parse("zzz")).is_none());
        assert!(score(&s, &parse("\"hand-written lexer\"")).is_some());
        assert!(score(&s, &parse("\"lexer hand\"")).is_none());
        assert!(score(&s, &parse("re:hand-\\w+")).is_some());
        assert!(score(&s, &parse("re:^nothing$")).is_none());
        assert!(
            score(&s, &parse("re:(")).is_none(),
            "a bad pattern matches nothing"
        );
        let tight = score(&s, &parse("lexer")).unwrap();
        let loose = score(&s, &parse("lxr")).unwrap();
        assert!(tight < loose, "{tight} {loose}");
    }
}
