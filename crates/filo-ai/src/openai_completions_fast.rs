//! A fast path for the commonest Chat Completions chunk: one choice whose delta holds `content`
//! (and perhaps `role`), every other field a scalar the decoder ignores or a `null`. Anything
//! else — a second choice, a tool call, reasoning, usage, a finish reason, an escaped key, a
//! float, a duplicated field, an object or array where a scalar is expected — returns `None` and
//! the caller reads the frame with serde, so both paths give the same `Chunk` for every input
//! this one accepts (see `fast_path_matches_serde` in the tests).

use std::borrow::Cow;

use super::{Choice, Chunk, ChunkDelta};
use crate::codec::FewVec;

/// The chunk in `data`, when it has the plain shape.
pub(super) fn parse(data: &str) -> Option<Chunk<'_>> {
    let mut p = Parser {
        s: data,
        b: data.as_bytes(),
        i: 0,
    };
    let mut seen = 0u8;
    let mut id = None;
    let mut choice = None;
    p.object(|p, key| {
        match key {
            "id" => {
                once(&mut seen, 1)?;
                id = Some(p.string()?);
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
    Some(Chunk {
        id,
        choices: FewVec::from_first(choice),
        usage: None,
        error: None,
    })
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
                        _ => Some(p.string()?),
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
