//! JSON text in serde_json's own compact form, read and written without building a
//! `serde_json::Value` (the session-line path of [`crate::recover`]).
//!
//! "Canonical" here means: the exact bytes `serde_json::to_string` gives for the `Value`
//! `serde_json::from_str` parses from the text (with this workspace's features:
//! `preserve_order`, `float_roundtrip`). [`is_canonical`] recognizes such text without
//! allocating (it refuses what it cannot decide cheaply, and the caller then goes through the
//! `Value`); the readers below assume canonical input, where every string has one spelling, an
//! object has no duplicate key and there is no whitespace.

use memchr::memchr2;

/// Deeper than this, [`is_canonical`] refuses (serde_json's own limit is 128 levels).
const MAX_DEPTH: usize = 100;
/// Objects with more keys than this are refused (the duplicate check is quadratic).
const MAX_KEYS: usize = 64;

/// Whether `to_string(from_str::<Value>(text))` would give `text` back, byte for byte. `false`
/// also for text that is not JSON, or that is canonical in a way this check does not prove.
pub(crate) fn is_canonical(text: &str) -> bool {
    let mut c = Checker {
        b: text.as_bytes(),
        pos: 0,
        keys: Vec::new(),
    };
    c.value(0) && c.pos == c.b.len()
}

struct Checker<'a> {
    b: &'a [u8],
    pos: usize,
    /// The keys of the objects being read, innermost last (spans into `b`).
    keys: Vec<(usize, usize)>,
}

impl Checker<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn value(&mut self, depth: usize) -> bool {
        match self.peek() {
            Some(b'{') => depth < MAX_DEPTH && self.object(depth + 1),
            Some(b'[') => depth < MAX_DEPTH && self.array(depth + 1),
            Some(b'"') => self.string(),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b't') => self.word(b"true"),
            Some(b'f') => self.word(b"false"),
            Some(b'n') => self.word(b"null"),
            _ => false,
        }
    }

    fn word(&mut self, w: &[u8]) -> bool {
        let ok = self.b[self.pos..].starts_with(w);
        self.pos += w.len();
        ok
    }

    fn object(&mut self, depth: usize) -> bool {
        self.pos += 1;
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return true;
        }
        let base = self.keys.len();
        let ok = loop {
            let start = self.pos;
            if self.peek() != Some(b'"') || !self.string() {
                break false;
            }
            let key = &self.b[start..self.pos];
            if self.keys.len() - base >= MAX_KEYS
                || self.keys[base..].iter().any(|&(s, e)| &self.b[s..e] == key)
            {
                break false;
            }
            self.keys.push((start, self.pos));
            if self.peek() != Some(b':') {
                break false;
            }
            self.pos += 1;
            if !self.value(depth) {
                break false;
            }
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    break true;
                }
                _ => break false,
            }
        };
        self.keys.truncate(base);
        ok
    }

    fn array(&mut self, depth: usize) -> bool {
        self.pos += 1;
        if self.peek() == Some(b']') {
            self.pos += 1;
            return true;
        }
        loop {
            if !self.value(depth) {
                return false;
            }
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return true;
                }
                _ => return false,
            }
        }
    }

    /// A string with only the escapes serde_json writes: `\" \\ \b \t \n \f \r` and `\u00xx`
    /// (lowercase) for the other control characters; no raw control character.
    fn string(&mut self) -> bool {
        self.pos += 1;
        loop {
            let Some(at) = memchr2(b'"', b'\\', &self.b[self.pos..]) else {
                return false;
            };
            if self.b[self.pos..self.pos + at].iter().any(|&c| c < 0x20) {
                return false;
            }
            self.pos += at;
            if self.b[self.pos] == b'"' {
                self.pos += 1;
                return true;
            }
            match self.b.get(self.pos + 1) {
                Some(b'"' | b'\\' | b'b' | b't' | b'n' | b'f' | b'r') => self.pos += 2,
                Some(b'u') => {
                    let Some(hex) = self.b.get(self.pos + 2..self.pos + 6) else {
                        return false;
                    };
                    let unit = match hex {
                        [b'0', b'0', hi @ (b'0' | b'1'), lo] => {
                            let lo = match lo {
                                b'0'..=b'9' => lo - b'0',
                                b'a'..=b'f' => lo - b'a' + 10,
                                _ => return false,
                            };
                            (hi - b'0') * 16 + lo
                        }
                        _ => return false,
                    };
                    if matches!(unit, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d) {
                        return false;
                    }
                    self.pos += 6;
                }
                _ => return false,
            }
        }
    }

    /// An integer of at most 18 digits (not `-0`) is its own text; anything longer, with a
    /// fraction or an exponent is compared with serde_json's writing of its own reading.
    fn number(&mut self) -> bool {
        let start = self.pos;
        let mut end = start;
        let mut plain = true;
        while let Some(&c) = self.b.get(end) {
            match c {
                b'0'..=b'9' | b'-' => {}
                b'.' | b'e' | b'E' | b'+' => plain = false,
                _ => break,
            }
            end += 1;
        }
        self.pos = end;
        let token = &self.b[start..end];
        let digits = token.strip_prefix(b"-").unwrap_or(token);
        let well_formed = !digits.is_empty()
            && digits.iter().all(u8::is_ascii_digit)
            && (digits == b"0" || digits[0] != b'0');
        if plain && well_formed && token != b"-0" && digits.len() <= 18 {
            return true;
        }
        let Ok(token) = std::str::from_utf8(token) else {
            return false;
        };
        serde_json::from_str::<serde_json::Value>(token)
            .is_ok_and(|v| v.is_number() && serde_json::to_string(&v).is_ok_and(|t| t == token))
    }
}

/// The end of the canonical value starting at `pos` in `b`.
fn skip(b: &[u8], pos: usize) -> usize {
    match b.get(pos) {
        Some(b'"') => skip_string(b, pos),
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            let mut p = pos;
            while let Some(&c) = b.get(p) {
                match c {
                    b'"' => {
                        p = skip_string(b, p);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return p + 1;
                        }
                    }
                    _ => {}
                }
                p += 1;
            }
            b.len()
        }
        _ => {
            let mut p = pos;
            while !is_end(b, p) {
                p += 1;
            }
            p
        }
    }
}

/// Whether a value at depth 0 has ended at `pos` (the next byte is a separator or the end).
fn is_end(b: &[u8], pos: usize) -> bool {
    matches!(b.get(pos), None | Some(b',' | b':' | b'}' | b']'))
}

/// The end of the string starting at `pos` (after its closing quote).
fn skip_string(b: &[u8], mut pos: usize) -> usize {
    pos += 1;
    while let Some(at) = memchr2(b'"', b'\\', &b[pos..]) {
        pos += at;
        if b[pos] == b'"' {
            return pos + 1;
        }
        pos += 2;
    }
    b.len()
}

/// The key/value pairs of a canonical object, in order: the key without its quotes (still
/// escaped) and the value's text. Nothing for text that is not an object.
pub(crate) fn fields(obj: &str) -> Fields<'_> {
    Fields {
        text: obj,
        pos: if obj.starts_with('{') && obj != "{}" {
            1
        } else {
            obj.len()
        },
    }
}

pub(crate) struct Fields<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Iterator for Fields<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        let b = self.text.as_bytes();
        if self.pos >= b.len() {
            return None;
        }
        let key_end = skip_string(b, self.pos);
        let key = self.text.get(self.pos + 1..key_end - 1)?;
        let value_end = skip(b, key_end + 1);
        let value = self.text.get(key_end + 1..value_end)?;
        // After the value: `,` then the next key, or the object's closing `}`.
        self.pos = if b.get(value_end) == Some(&b',') {
            value_end + 1
        } else {
            b.len()
        };
        Some((key, value))
    }
}

/// The value of `key` (which needs no escaping) in a canonical object, like `Value::get`.
pub(crate) fn get<'a>(obj: &'a str, key: &str) -> Option<&'a str> {
    fields(obj).find(|(k, _)| *k == key).map(|(_, v)| v)
}

/// The items of a canonical array; nothing for text that is not an array.
pub(crate) fn items(array: &str) -> impl Iterator<Item = &str> {
    let b = array.as_bytes();
    let mut pos = if array.starts_with('[') && array != "[]" {
        1
    } else {
        array.len()
    };
    std::iter::from_fn(move || {
        if pos >= b.len() {
            return None;
        }
        let end = skip(b, pos);
        let item = array.get(pos..end)?;
        pos = if b.get(end) == Some(&b',') {
            end + 1
        } else {
            b.len()
        };
        Some(item)
    })
}

/// The still-escaped text of a canonical string value; `None` for other values.
pub(crate) fn as_str(value: &str) -> Option<&str> {
    value.strip_prefix('"')?.strip_suffix('"')
}

/// JavaScript truthiness of a canonical value, as `render::preview_truthy` of its `Value`.
pub(crate) fn truthy(value: &str) -> bool {
    match value.as_bytes().first() {
        Some(b'n' | b'f') | None => false,
        Some(b't' | b'[' | b'{') => true,
        Some(b'"') => value != "\"\"",
        Some(_) => value.parse::<f64>().is_ok_and(|f| f != 0.0 && !f.is_nan()),
    }
}

/// Appends `s` as a JSON string literal exactly as serde_json writes it.
pub(crate) fn push_str(out: &mut String, s: &str) {
    out.push('"');
    push_escaped(out, s);
    out.push('"');
}

/// The inside of [`push_str`]'s literal, without the quotes.
pub(crate) fn push_escaped(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut start = 0;
    for (i, byte) in s.bytes().enumerate() {
        let escape = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            b'\t' => "\\t",
            b'\n' => "\\n",
            0x0c => "\\f",
            b'\r' => "\\r",
            0x00..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if escape.is_empty() {
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(byte >> 4)]));
            out.push(char::from(HEX[usize::from(byte & 0xf)]));
        } else {
            out.push_str(escape);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
}

/// Appends a decimal integer as serde_json writes an `i64`.
pub(crate) fn push_i64(out: &mut String, n: i64) {
    use std::fmt::Write;
    let _ = write!(out, "{n}");
}

#[cfg(test)]
#[path = "json_text_tests.rs"]
mod tests;
