//! C21 — think/final tag stripping while text streams (design §3 C21, spec §8.3
//! `stripBlockTags`): never show reasoning; optionally show only what sits inside
//! `<final>…</final>`; leave tags that are inside code alone.
//!
//! Thinking tags: `<think>`, `<thinking>`, `<thought>`, `<antthinking>` (any case, whitespace
//! allowed around the name and the slash); final tags: `<final>`, `</final>`. A tag inside fenced
//! code (the fence rule of [`super::fences`]) or inline code (a backtick run, closed by a run of
//! the same length) is text. An opening thinking tag enters thinking, a closing one leaves it (no
//! nesting counter).
//!
//! filo change: OpenClaw strips each delta on its own (carrying only the inline-code state), so a
//! tag or a fence line split across two deltas leaks. [`TagStripper`] holds back the few chars
//! that cannot be decided yet (a `<` that may start a tag, a backtick run, the start of a line
//! that may open a fence), so any split of a text into deltas yields the same output as the whole
//! text at once.

/// What a piece of assistant text contains once the tags are resolved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stripped {
    /// Text the user may see.
    pub visible: String,
    /// Text that was inside thinking tags (for reasoning streams; never shown as the answer).
    pub thinking: String,
}

impl Stripped {
    fn append(&mut self, other: Stripped) {
        self.visible.push_str(&other.visible);
        self.thinking.push_str(&other.thinking);
    }
}

/// Strip a whole text at once (same result as streaming it through a [`TagStripper`]).
pub fn strip_block_tags(text: &str, enforce_final_tag: bool) -> Stripped {
    let mut stripper = TagStripper::new(enforce_final_tag);
    let mut out = stripper.push(text);
    out.append(stripper.finish());
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fence {
    marker: u8,
    len: usize,
}

/// The streaming stripper: feed deltas with [`TagStripper::push`], end with
/// [`TagStripper::finish`]. State carries across deltas (and across messages until
/// [`TagStripper::reset`]).
#[derive(Debug, Clone)]
pub struct TagStripper {
    enforce_final_tag: bool,
    thinking: bool,
    in_final: bool,
    fence: Option<Fence>,
    /// The line that opened the current fence is still running (it must not close it).
    fence_opening_line: bool,
    /// The current line inside a fence, for the closing check at its end.
    fence_line: String,
    /// An open inline code span and the length of its backtick run.
    inline_ticks: Option<usize>,
    at_line_start: bool,
    /// Undecided text held back from the previous delta.
    pending: String,
}

enum TagParse {
    Tag {
        len: usize,
        closing: bool,
        thinking: bool,
    },
    NotTag,
    Partial,
}

enum LineStart {
    Fence(Fence, usize),
    NotFence,
    Partial,
}

const TAG_NAMES: [(&str, bool); 5] = [
    ("think", true),
    ("thinking", true),
    ("thought", true),
    ("antthinking", true),
    ("final", false),
];

impl TagStripper {
    pub fn new(enforce_final_tag: bool) -> Self {
        Self {
            enforce_final_tag,
            thinking: false,
            in_final: false,
            fence: None,
            fence_opening_line: false,
            fence_line: String::new(),
            inline_ticks: None,
            at_line_start: true,
            pending: String::new(),
        }
    }

    /// Forget all state (a new message).
    pub fn reset(&mut self) {
        *self = Self::new(self.enforce_final_tag);
    }

    /// Inside a thinking block right now.
    pub fn is_thinking(&self) -> bool {
        self.thinking
    }

    /// Inside `<final>…</final>` right now.
    pub fn in_final(&self) -> bool {
        self.in_final
    }

    /// Text held back until the next delta decides it.
    pub fn pending(&self) -> &str {
        &self.pending
    }

    /// Process one delta; returns what can be decided now.
    pub fn push(&mut self, delta: &str) -> Stripped {
        let mut out = Stripped::default();
        self.push_into(delta, &mut out);
        out
    }

    /// [`TagStripper::push`], appending to `out` (no allocation per delta).
    pub fn push_into(&mut self, delta: &str, out: &mut Stripped) {
        if self.pending.is_empty() {
            self.process(delta, false, out);
        } else {
            let mut text = std::mem::take(&mut self.pending);
            text.push_str(delta);
            self.process(&text, false, out);
        }
    }

    /// End of the text: decide whatever was held back.
    pub fn finish(&mut self) -> Stripped {
        let text = std::mem::take(&mut self.pending);
        let mut out = Stripped::default();
        self.process(&text, true, &mut out);
        out
    }

    fn emit(&self, out: &mut Stripped, text: &str) {
        if self.thinking {
            out.thinking.push_str(text);
        } else if !self.enforce_final_tag || self.in_final {
            out.visible.push_str(text);
        }
    }

    fn process(&mut self, text: &str, at_end: bool, out: &mut Stripped) {
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let rest = &text[i..];
            if let Some(fence) = self.fence {
                i += self.fence_line_step(rest, fence, out);
                continue;
            }
            if self.at_line_start {
                match fence_opening(rest, at_end) {
                    LineStart::Partial => {
                        self.pending = rest.to_owned();
                        return;
                    }
                    LineStart::Fence(fence, prefix) => {
                        self.fence = Some(fence);
                        self.fence_opening_line = true;
                        self.emit(out, &rest[..prefix]);
                        i += prefix;
                    }
                    LineStart::NotFence => {}
                }
                self.at_line_start = false;
                continue;
            }
            match bytes[i] {
                b'\n' => {
                    self.emit(out, "\n");
                    self.at_line_start = true;
                    i += 1;
                }
                b'`' => {
                    let run = rest.bytes().take_while(|b| *b == b'`').count();
                    if run == rest.len() && !at_end {
                        self.pending = rest.to_owned();
                        return;
                    }
                    self.inline_ticks = match self.inline_ticks {
                        None => Some(run),
                        Some(open) if open == run => None,
                        Some(open) => Some(open),
                    };
                    self.emit(out, &rest[..run]);
                    i += run;
                }
                b'<' if self.inline_ticks.is_none() => match parse_tag(rest, at_end) {
                    TagParse::Partial => {
                        self.pending = rest.to_owned();
                        return;
                    }
                    TagParse::Tag {
                        len,
                        closing,
                        thinking,
                    } => {
                        self.apply_tag(closing, thinking);
                        i += len;
                    }
                    TagParse::NotTag => {
                        self.emit(out, "<");
                        i += 1;
                    }
                },
                _ => {
                    let plain = memchr::memchr3(b'\n', b'`', b'<', &bytes[i + 1..])
                        .map_or(bytes.len(), |n| i + 1 + n);
                    self.emit(out, &text[i..plain]);
                    i = plain;
                }
            }
        }
    }

    /// Inside a fence: emit up to the end of the line; at the line end, a closing fence line
    /// ends the fence. Returns the bytes consumed.
    fn fence_line_step(&mut self, rest: &str, fence: Fence, out: &mut Stripped) -> usize {
        match memchr::memchr(b'\n', rest.as_bytes()) {
            Some(n) => {
                self.fence_line.push_str(&rest[..n]);
                self.emit(out, &rest[..=n]);
                if !self.fence_opening_line && closes_fence(&self.fence_line, fence) {
                    self.fence = None;
                }
                self.fence_opening_line = false;
                self.fence_line.clear();
                self.at_line_start = true;
                n + 1
            }
            None => {
                self.fence_line.push_str(rest);
                self.emit(out, rest);
                rest.len()
            }
        }
    }

    fn apply_tag(&mut self, closing: bool, thinking: bool) {
        if thinking {
            self.thinking = !closing;
        } else if !self.thinking && self.enforce_final_tag {
            self.in_final = !closing;
        }
        // Final tags without enforcement (and inside thinking) are simply removed.
    }
}

/// At a line start outside a fence: does this line open a fence (`^( {0,3})(`{3,}|~{3,})`)?
/// `Fence(fence, prefix_len)` consumes the indent and the marker run.
fn fence_opening(rest: &str, at_end: bool) -> LineStart {
    let bytes = rest.as_bytes();
    let indent = bytes.iter().take(4).take_while(|b| **b == b' ').count();
    if indent > 3 {
        return LineStart::NotFence;
    }
    let Some(&marker) = bytes.get(indent) else {
        return if at_end {
            LineStart::NotFence
        } else {
            LineStart::Partial
        };
    };
    if marker != b'`' && marker != b'~' {
        return LineStart::NotFence;
    }
    let run = bytes[indent..].iter().take_while(|b| **b == marker).count();
    if indent + run == bytes.len() && !at_end {
        return LineStart::Partial;
    }
    if run < 3 {
        return LineStart::NotFence;
    }
    LineStart::Fence(Fence { marker, len: run }, indent + run)
}

/// A closing fence line: ≤ 3 spaces, at least as many of the same marker, then only spaces or
/// tabs (a trailing `\r` ignored).
fn closes_fence(line: &str, fence: Fence) -> bool {
    let line = line.strip_suffix('\r').unwrap_or(line);
    let bytes = line.as_bytes();
    let indent = bytes.iter().take(4).take_while(|b| **b == b' ').count();
    if indent > 3 {
        return false;
    }
    let run = bytes[indent..]
        .iter()
        .take_while(|b| **b == fence.marker)
        .count();
    run >= fence.len
        && bytes[indent + run..]
            .iter()
            .all(|b| *b == b' ' || *b == b'\t')
}

/// `<\s*(/?)\s*(think|thinking|thought|antthinking|final)\s*>`, case-insensitive, at the start of
/// `rest`. `Partial` when `rest` ends before the answer is known.
fn parse_tag(rest: &str, at_end: bool) -> TagParse {
    let partial = if at_end {
        TagParse::NotTag
    } else {
        TagParse::Partial
    };
    let mut chars = rest.char_indices().skip(1).peekable();
    let skip_ws = |chars: &mut std::iter::Peekable<_>| {
        while chars
            .next_if(|(_, c): &(usize, char)| c.is_whitespace())
            .is_some()
        {}
    };
    skip_ws(&mut chars);
    let closing = chars.next_if(|(_, c)| *c == '/').is_some();
    skip_ws(&mut chars);
    let mut name = String::new();
    while let Some((_, c)) = chars.next_if(|(_, c)| c.is_ascii_alphabetic()) {
        name.push(c.to_ascii_lowercase());
    }
    if chars.peek().is_none() {
        let could_grow = TAG_NAMES.iter().any(|(n, _)| n.starts_with(name.as_str()));
        return if could_grow {
            partial
        } else {
            TagParse::NotTag
        };
    }
    let Some(&(_, thinking)) = TAG_NAMES.iter().find(|(n, _)| *n == name) else {
        return TagParse::NotTag;
    };
    skip_ws(&mut chars);
    match chars.next() {
        None => partial,
        Some((at, '>')) => TagParse::Tag {
            len: at + 1,
            closing,
            thinking,
        },
        Some(_) => TagParse::NotTag,
    }
}

#[cfg(test)]
#[path = "tags_tests.rs"]
mod tags_tests;
