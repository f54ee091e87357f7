//! A fast path for the commonest Chat Completions chunk: one choice whose delta holds `content`
//! (and perhaps `role`), every other field a scalar the decoder ignores or a `null`. Anything
//! else — a second choice, a tool call, reasoning, usage, a finish reason, an escaped key, a
//! float, a duplicated field, an object or array where a scalar is expected — returns `None` and
//! the caller reads the frame with serde, so both paths give the same `Chunk` for every input
//! this one accepts (see the tests: the mock's frames of every kind of reply and edge cases, decoded both ways).

use std::borrow::Cow;

use super::{Choice, Chunk, ChunkDelta};
use crate::codec::FewVec;

/// The chunk in `data`, when it has the plain shape.
#[cfg(test)]
pub(super) fn parse(data: &str) -> Option<Chunk<'_>> {
    parse_with_template(data).map(|(chunk, _)| chunk)
}

/// A frame cut around its content string: every later frame that is `prefix`, one JSON string,
/// `suffix` reads as the same chunk with that string as its content, because the scanner's state
/// after a string value does not depend on the string. So a stream's chunks, which differ only in
/// their content, are read by comparing the two ends and scanning the one string.
#[derive(Debug)]
pub(super) struct Template {
    prefix: String,
    suffix: String,
    /// Where the borrowed, unescaped id lies in the prefix.
    id: Option<(usize, usize)>,
}

impl Template {
    /// The chunk in `data` when it is this template around one string.
    pub(super) fn read<'a>(&self, data: &'a str) -> Option<Chunk<'a>> {
        let middle = data
            .strip_prefix(self.prefix.as_str())?
            .strip_suffix(self.suffix.as_str())?;
        let mut p = Parser {
            s: middle,
            b: middle.as_bytes(),
            i: 0,
            content: None,
            id: None,
        };
        if p.b.first() != Some(&b'"') {
            return None;
        }
        let content = p.string()?;
        if p.i != middle.len() {
            return None;
        }
        let id = self.id.map(|(start, end)| Cow::Borrowed(&data[start..end]));
        Some(plain(id, Some(content)))
    }
}

fn plain<'a>(id: Option<Cow<'a, str>>, content: Option<Cow<'a, str>>) -> Chunk<'a> {
    Chunk {
        id,
        choices: FewVec::from_first(Some(Choice {
            delta: Some(ChunkDelta {
                content,
                reasoning_content: None,
                reasoning: None,
                reasoning_text: None,
                tool_calls: None,
                reasoning_details: Vec::new(),
            }),
            finish_reason: None,
            usage: None,
        })),
        usage: None,
        error: None,
    }
}

/// [`parse`], plus the frame's [`Template`] when it has one: a content string, and an id that is
/// absent or unescaped and before the content.
pub(super) fn parse_with_template(data: &str) -> Option<(Chunk<'_>, Option<Template>)> {
    let mut p = Parser {
        s: data,
        b: data.as_bytes(),
        i: 0,
        content: None,
        id: None,
    };
    let mut seen = 0u8;
    let mut id = None;
    let mut choice = None;
    p.object(|p, key| {
        match key {
            "id" => {
                once(&mut seen, 1)?;
                p.peek()?;
                let start = p.i;
                let value = p.string()?;
                if matches!(value, Cow::Borrowed(_)) {
                    p.id = Some((start + 1, p.i - 1));
                }
                id = Some(value);
            }
            "choices" => {
                once(&mut seen, 2)?;
                choice = p.choices()?;
            }
            // Only their absence is plain.
            "usage" | "error" => {
                once(&mut seen, if key == "usage" { 4 } else { 8 })?;
                p.null()?;
            }
            _ => p.scalar()?,
        }
        Some(())
    })?;
    p.ws();
    if p.i != p.b.len() {
        return None;
    }
    let template = match (p.content, p.id, &id) {
        (Some((start, end)), id_span, id)
            if id.is_none() || id_span.is_some_and(|(_, id_end)| id_end < start) =>
        {
            Some(Template {
                prefix: data[..start].to_string(),
                suffix: data[end..].to_string(),
                id: id_span,
            })
        }
        _ => None,
    };
    let chunk = Chunk {
        id,
        choices: FewVec::from_first(choice),
        usage: None,
        error: None,
    };
    Some((chunk, template))
}

/// Serde rejects a struct field given twice; so does this path (by leaving the frame to serde).
fn once(seen: &mut u8, bit: u8) -> Option<()> {
    if *seen & bit != 0 {
        return None;
    }
    *seen |= bit;
    Some(())
}

struct Parser<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
    /// Where the content string's token lies (quotes included).
    content: Option<(usize, usize)>,
    /// Where the id's text lies, when it is borrowed (quotes excluded).
    id: Option<(usize, usize)>,
}

impl<'a> Parser<'a> {
    /// Skips JSON whitespace.
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.ws();
        let end = self.i + word.len();
        (self.b.get(self.i..end)? == word).then(|| self.i = end)
    }

    fn null(&mut self) -> Option<()> {
        self.literal(b"null")
    }

    /// A string; borrowed when it holds no escape, else decoded (and checked) by serde_json.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        let (token, escaped) = self.string_token()?;
        if escaped {
            serde_json::from_str::<String>(token).ok().map(Cow::Owned)
        } else {
            Some(Cow::Borrowed(&token[1..token.len() - 1]))
        }
    }

    /// The next string token, quotes included, and whether it holds a backslash. A raw control
    /// character (invalid JSON) ends the fast path.
    fn string_token(&mut self) -> Option<(&'a str, bool)> {
        if self.peek()? != b'"' {
            return None;
        }
        let start = self.i;
        let mut from = start + 1;
        let mut escaped = false;
        let end = loop {
            let at = from + memchr::memchr2(b'"', b'\\', self.b.get(from..)?)?;
            if self.b[at] == b'"' {
                break at;
            }
            escaped = true;
            from = at + 2;
        };
        if self.b[start + 1..end].iter().any(|&c| c < 0x20) {
            return None;
        }
        self.i = end + 1;
        Some((&self.s[start..self.i], escaped))
    }

    /// An object key without escapes (an escaped key could name a field; serde decides those).
    fn key(&mut self) -> Option<&'a str> {
        let (token, escaped) = self.string_token()?;
        (!escaped).then(|| &token[1..token.len() - 1])
    }

    /// A value the decoder ignores: a string, an integer, `true`, `false` or `null`.
    fn scalar(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string_token().map(drop),
            b'n' => self.null(),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            _ => self.integer(),
        }
    }

    /// `-?(0|[1-9][0-9]*)`; whatever follows (a fraction, an exponent, another digit after a
    /// leading zero) fails at the caller's `,` or `}`.
    fn integer(&mut self) -> Option<()> {
        if self.b.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        match *self.b.get(self.i)? {
            b'0' => self.i += 1,
            b'1'..=b'9' => {
                while let Some(b'0'..=b'9') = self.b.get(self.i) {
                    self.i += 1;
                }
            }
            _ => return None,
        }
        Some(())
    }

    /// `{ "key": value, … }`, `field` reading each value.
    fn object(&mut self, mut field: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        loop {
            let key = self.key()?;
            self.eat(b':')?;
            field(self, key)?;
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// `[]` or `[ choice ]`.
    fn choices(&mut self) -> Option<Option<Choice<'a>>> {
        self.eat(b'[')?;
        if self.peek()? == b']' {
            self.i += 1;
            return Some(None);
        }
        let choice = self.choice()?;
        self.eat(b']')?;
        Some(Some(choice))
    }

    fn choice(&mut self) -> Option<Choice<'a>> {
        let mut seen = 0u8;
        let mut delta = None;
        self.object(|p, key| {
            match key {
                "delta" => {
                    once(&mut seen, 1)?;
                    delta = Some(p.delta()?);
                }
                "finish_reason" | "usage" => {
                    once(&mut seen, if key == "usage" { 2 } else { 4 })?;
                    p.null()?;
                }
                _ => p.scalar()?,
            }
            Some(())
        })?;
        Some(Choice {
            delta,
            finish_reason: None,
            usage: None,
        })
    }

    fn delta(&mut self) -> Option<ChunkDelta<'a>> {
        let mut seen = 0u8;
        let mut content = None;
        self.object(|p, key| {
            match key {
                "content" => {
                    once(&mut seen, 1)?;
                    content = match p.peek()? {
                        b'n' => p.null().map(|()| None)?,
                        _ => {
                            let start = p.i;
                            let value = p.string()?;
                            p.content = Some((start, p.i));
                            Some(value)
                        }
                    };
                }
                "reasoning_content" | "reasoning" | "reasoning_text" | "tool_calls" => {
                    let bit = match key {
                        "reasoning_content" => 2,
                        "reasoning" => 4,
                        "reasoning_text" => 8,
                        _ => 16,
                    };
                    once(&mut seen, bit)?;
                    p.null()?;
                }
                // Read by serde only (a `null` there is an error).
                "reasoning_details" => return None,
                _ => p.scalar()?,
            }
            Some(())
        })?;
        Some(ChunkDelta {
            content,
            reasoning_content: None,
            reasoning: None,
            reasoning_text: None,
            tool_calls: None,
            reasoning_details: Vec::new(),
        })
    }
}

#[cfg(test)]
#[path = "openai_completions_fast_tests.rs"]
mod tests;
