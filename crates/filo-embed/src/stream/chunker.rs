//! C20 — the block chunker (design §3 C20, spec §9; checked against OpenClaw's
//! `pi-embedded-block-chunker.ts`): cut streamed text into channel-sized blocks at good breaks,
//! never inside a code fence unless forced — then the fence is closed at the end of the block
//! and reopened at the start of the next.
//!
//! Lengths (`min_chars`, `max_chars`) count `char`s; internally every index is a byte offset on
//! a char boundary. A chunk never splits a char.

use super::fences::{
    FenceScanner, FenceSpan, fence_span_at, is_safe_fence_break, parse_fence_spans,
};

/// Where a block should preferably end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BreakPreference {
    /// A blank line, else a newline, else a sentence end.
    #[default]
    Paragraph,
    /// A newline only (waits for `max_chars` before cutting elsewhere).
    Newline,
    /// A sentence end.
    Sentence,
}

/// Chunker settings (`BlockReplyChunking`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunking {
    pub min_chars: usize,
    pub max_chars: usize,
    pub break_preference: BreakPreference,
    /// (later trees) emit every finished paragraph at once, whatever its length.
    pub flush_on_paragraph: bool,
}

impl Chunking {
    pub fn new(min_chars: usize, max_chars: usize) -> Self {
        Self {
            min_chars,
            max_chars,
            break_preference: BreakPreference::Paragraph,
            flush_on_paragraph: false,
        }
    }

    pub fn with_preference(mut self, preference: BreakPreference) -> Self {
        self.break_preference = preference;
        self
    }

    pub fn with_flush_on_paragraph(mut self, flush: bool) -> Self {
        self.flush_on_paragraph = flush;
        self
    }

    /// `min = max(1, min)`, `max = max(min, max)`.
    fn bounds(&self, min_override: Option<usize>) -> (usize, usize) {
        let min = min_override.unwrap_or(self.min_chars).max(1);
        let max = self.max_chars.max(min);
        (min, max)
    }
}

/// A chosen break: cut at byte `index`; `fence` when the cut falls inside that fenced block.
struct Break {
    index: usize,
    fence: Option<FenceSplit>,
}

struct FenceSplit {
    close_line: String,
    reopen_line: String,
}

impl Break {
    const NONE: Break = Break {
        index: 0,
        fence: None,
    };

    fn at(index: usize) -> Self {
        Self { index, fence: None }
    }
}

/// Streaming block chunker (`EmbeddedBlockChunker`).
#[derive(Debug, Clone)]
pub struct BlockChunker {
    chunking: Chunking,
    buffer: String,
    /// `buffer.chars().count()`, kept in step with every change.
    chars: usize,
    /// Caches valid while the buffer only grows (reset whenever it is replaced).
    cache: GrowCache,
}

/// What earlier drains learnt about a buffer that has only grown since.
///
/// (filo, performance) OpenClaw re-parses the fences and re-searches the whole buffer on every
/// drain, which is quadratic while a long code block streams in. Appending text can only make
/// positions near the old end into new break candidates (a fence line completed by the new
/// text only removes candidates, and no old position leaves a fence); so after a non-forced
/// drain found no break, the next one searches from the old end only. Results are identical.
#[derive(Debug, Clone, Default)]
struct GrowCache {
    fences: FenceScanner,
    /// Byte offset below which no break candidate exists (0: search everything).
    search_from: usize,
    /// Byte offsets of char `n` for the two bounds, once the buffer is longer than `n` chars.
    char_bytes: [Option<(usize, usize)>; 2],
}

impl BlockChunker {
    pub fn new(chunking: Chunking) -> Self {
        Self {
            chunking,
            buffer: String::new(),
            chars: 0,
            cache: GrowCache::default(),
        }
    }

    pub fn chunking(&self) -> Chunking {
        self.chunking
    }

    /// Add streamed text (empty text is ignored).
    pub fn append(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.buffer.push_str(text);
        self.chars += text.chars().count();
    }

    pub fn reset(&mut self) {
        self.buffer.clear();
        self.chars = 0;
        self.cache = GrowCache::default();
    }

    pub fn buffered_text(&self) -> &str {
        &self.buffer
    }

    pub fn has_buffered(&self) -> bool {
        !self.buffer.is_empty()
    }

    /// Drain into a vector (convenience over [`BlockChunker::drain`]).
    pub fn drain_to_vec(&mut self, force: bool) -> Vec<String> {
        let mut out = Vec::new();
        self.drain(force, |chunk| out.push(chunk));
        out
    }

    /// Emit every block that is ready. Not forced: blocks of at least `min_chars` at good breaks,
    /// keeping the rest buffered. Forced (end of message, before a tool runs): everything.
    pub fn drain(&mut self, force: bool, mut emit: impl FnMut(String)) {
        let (min, max) = self.chunking.bounds(None);
        if self.chunking.flush_on_paragraph && !force {
            self.drain_paragraphs(max, &mut emit);
            return;
        }
        if self.chars < min && !force {
            return;
        }
        if force && self.chars <= max {
            if !self.buffer.trim().is_empty() {
                emit(std::mem::take(&mut self.buffer));
            }
            self.reset();
            return;
        }
        while self.chars >= min || (force && self.chars > 0) {
            let pick = if force && self.chars <= max {
                self.pick_soft_break(1)
            } else {
                self.pick_hard_break(force.then_some(1))
            };
            if pick.index == 0 {
                if force {
                    emit(std::mem::take(&mut self.buffer));
                    self.reset();
                }
                return;
            }
            if !self.emit_break(pick, &mut emit) {
                continue;
            }
            if !force && (self.chars < min || self.chars < max) {
                return;
            }
        }
    }

    /// flush-on-paragraph mode: every finished paragraph goes out at once.
    fn drain_paragraphs(&mut self, max: usize, emit: &mut impl FnMut(String)) {
        while !self.buffer.is_empty() {
            let max_byte = self.byte_of_char(max);
            let spans = parse_fence_spans(&self.buffer);
            let found = next_paragraph_break(&self.buffer, &spans);
            let Some((index, end)) = found.filter(|(index, _)| *index <= max_byte) else {
                if self.chars >= max {
                    let pick = self.pick_hard_break(Some(1));
                    if pick.index > 0 {
                        self.emit_break(pick, emit);
                        continue;
                    }
                }
                return;
            };
            let chunk = &self.buffer[..index];
            if !chunk.trim().is_empty() {
                emit(chunk.to_owned());
            }
            if index == 0 {
                // A leading break is a separator between turns: keep it for the next paragraph.
                return;
            }
            let rest = strip_leading_newlines(&self.buffer[end..]);
            let cut = self.buffer.len() - rest.len();
            self.remove_prefix(cut);
        }
    }

    /// Cut the buffer at `pick`; `false` when the cut-off text was blank (dropped, not emitted).
    fn emit_break(&mut self, pick: Break, emit: &mut impl FnMut(String)) -> bool {
        let index = pick.index;
        if index == 0 {
            return false;
        }
        if self.buffer[..index].trim().is_empty() {
            let rest = strip_leading_newlines(&self.buffer[index..]).trim_start();
            let cut = self.buffer.len() - rest.len();
            self.remove_prefix(cut);
            return false;
        }
        match pick.fence {
            Some(split) => {
                let mut chunk = self.buffer[..index].to_owned();
                if !chunk.ends_with('\n') {
                    chunk.push('\n');
                }
                chunk.push_str(&split.close_line);
                chunk.push('\n');
                let mut rest = split.reopen_line;
                if !rest.ends_with('\n') {
                    rest.push('\n');
                }
                rest.push_str(&self.buffer[index..]);
                emit(chunk);
                self.set_buffer(rest);
            }
            None => {
                emit(self.buffer[..index].to_owned());
                let skip = self.buffer[index..]
                    .chars()
                    .next()
                    .filter(|c| c.is_whitespace())
                    .map_or(0, char::len_utf8);
                let rest = strip_leading_newlines(&self.buffer[index + skip..]);
                let cut = self.buffer.len() - rest.len();
                self.remove_prefix(cut);
            }
        }
        true
    }

    fn set_buffer(&mut self, buffer: String) {
        self.chars = buffer.chars().count();
        self.buffer = buffer;
        self.cache = GrowCache::default();
    }

    /// Drop the first `cut` bytes in place.
    fn remove_prefix(&mut self, cut: usize) {
        self.chars -= self.buffer[..cut].chars().count();
        self.buffer.drain(..cut);
        self.cache = GrowCache::default();
    }

    /// Byte offset of char `n` (the buffer length when it has no more than `n` chars).
    fn byte_of_char(&mut self, n: usize) -> usize {
        if n >= self.chars {
            return self.buffer.len();
        }
        if self.chars == self.buffer.len() {
            return n; // ASCII
        }
        if let Some(&(_, byte)) = self
            .cache
            .char_bytes
            .iter()
            .flatten()
            .find(|(k, _)| *k == n)
        {
            return byte;
        }
        let byte = self
            .buffer
            .char_indices()
            .nth(n)
            .map_or(self.buffer.len(), |(i, _)| i);
        let slot = usize::from(self.cache.char_bytes[0].is_some());
        self.cache.char_bytes[slot.min(1)] = Some((n, byte));
        byte
    }

    /// Forced drain of a buffer within `max_chars`: the first good break, searching forward.
    fn pick_soft_break(&mut self, min_override: usize) -> Break {
        let (min, _) = self.chunking.bounds(Some(min_override));
        if self.chars < min {
            return Break::NONE;
        }
        let min_byte = self.byte_of_char(min);
        let text = self.buffer.as_str();
        let spans = parse_fence_spans(text);
        let pref = self.chunking.break_preference;
        let found = match pref {
            BreakPreference::Paragraph => paragraph_break_forward(text, &spans, min_byte)
                .or_else(|| newline_break_forward(text, &spans, min_byte))
                .or_else(|| sentence_break(text, &spans, min_byte)),
            BreakPreference::Newline => newline_break_forward(text, &spans, min_byte),
            BreakPreference::Sentence => sentence_break(text, &spans, min_byte),
        };
        found.map_or(Break::NONE, Break::at)
    }

    /// The last good break within the first `max_chars`, else a cut at `max_chars` (closing and
    /// reopening a fence it falls into).
    fn pick_hard_break(&mut self, min_override: Option<usize>) -> Break {
        let (min, max) = self.chunking.bounds(min_override);
        if self.chars < min {
            return Break::NONE;
        }
        let max_byte = self.byte_of_char(max);
        let min_byte = self.byte_of_char(min);
        let pref = self.chunking.break_preference;
        // The search-from shortcut holds only for searches that looked at every candidate kind.
        let cacheable = min_override.is_none() && pref != BreakPreference::Newline;
        let from = if cacheable {
            min_byte.max(self.cache.search_from)
        } else {
            min_byte
        };
        let spans = self.cache.fences.spans(&self.buffer);
        let text = self.buffer.as_str();
        let window = &text[..max_byte];
        let preferred = match pref {
            BreakPreference::Paragraph => paragraph_break_backward(window, spans, from)
                .or_else(|| newline_break_backward(window, spans, from))
                .or_else(|| sentence_break(window, spans, from)),
            BreakPreference::Newline => newline_break_backward(window, spans, from),
            BreakPreference::Sentence => sentence_break(window, spans, from),
        };
        if let Some(index) = preferred {
            return Break::at(index);
        }
        // OpenClaw's current source (`embedded-agent-block-chunker.ts`, 2026.9) waits for a
        // preferred break until the buffer is full; only then does a space or a hard cut do.
        // The spec's older rule cut at any space past `min_chars` ("Intro paragraph" | "here.").
        if self.chars < max {
            if cacheable {
                // Only the last char can pair with new text (`\n` + `\n`, `.` + space).
                self.cache.search_from = text.len().saturating_sub(1);
            }
            return Break::NONE;
        }
        // The cached `from` covers only the preferred kinds: spaces are looked for from `min`.
        let whitespace = window
            .char_indices()
            .rev()
            .take_while(|(i, _)| *i >= min_byte)
            .find(|(i, c)| c.is_whitespace() && is_safe_fence_break(spans, *i));
        if let Some((index, _)) = whitespace {
            return Break::at(index);
        }
        // A cut at the very end of a buffer that is still inside an open fence is inside that
        // fence too (OpenClaw's `openFence?.end === index`).
        let open_at_end = spans.last().filter(|s| {
            s.start < max_byte && s.end == max_byte && close_line_start(text, s).is_none()
        });
        match fence_span_at(spans, max_byte).or(open_at_end) {
            None => Break::at(max_byte),
            Some(span) => {
                let span = span.clone();
                self.split_fence_within_max(&span, min, max)
                    .unwrap_or_else(|| split_inside_fence(&self.buffer, &span, max_byte))
            }
        }
    }

    /// A cut inside `span` that keeps the chunk, closing line included, within `max` chars (as
    /// OpenClaw's current source does): at the closing line when it starts in `[min, cut]`, else
    /// `max − close − 1` chars in. The reopened rest uses the opening line when it fits in `max`
    /// with room for a body, else the bare marker. `None` when no such cut falls inside the body
    /// (the fallback then decides).
    fn split_fence_within_max(
        &mut self,
        span: &FenceSpan,
        min: usize,
        max: usize,
    ) -> Option<Break> {
        let close_line = span.close_line();
        let bare_len = close_line.chars().count();
        if bare_len * 2 + 3 > max {
            return None;
        }
        let open_line = &self.buffer[span.open_line.clone()];
        let reopen_line = if open_line.chars().count() + bare_len + 3 <= max {
            open_line.to_owned()
        } else {
            close_line.clone()
        };
        let cut_chars = max.saturating_sub(bare_len + 1).max(1);
        let mut index = self.byte_of_char(cut_chars);
        if let Some(close_start) = close_line_start(&self.buffer, span) {
            let close_chars = self.buffer[..close_start].chars().count();
            if close_chars >= min && close_start <= index {
                index = close_start;
            }
        }
        let body_start = self.buffer[span.open_line.end..]
            .find('\n')
            .map(|i| span.open_line.end + i + 1)?;
        (index > body_start).then_some(Break {
            index,
            fence: Some(FenceSplit {
                close_line,
                reopen_line,
            }),
        })
    }
}

/// Where the line that closes `span` starts, when the buffer holds it.
fn close_line_start(text: &str, span: &FenceSpan) -> Option<usize> {
    let end = span.end.min(text.len());
    let line_start = text[..end].rfind('\n')? + 1;
    let line = text[line_start..end].trim_end_matches('\r');
    let stripped = line.trim_start_matches(' ');
    if line.len() - stripped.len() > 3 {
        return None;
    }
    let markers = stripped
        .chars()
        .take_while(|c| *c == span.marker_char)
        .count();
    let rest = &stripped[markers * span.marker_char.len_utf8()..];
    (markers >= span.marker_len && rest.trim_matches([' ', '\t']).is_empty()).then_some(line_start)
}

/// A cut at `index` inside `span`: close the fence at the end of the chunk and reopen it in the
/// rest.
///
/// filo change: OpenClaw cuts at exactly `max_chars` even when that leaves no fence body in the
/// chunk (`max_chars` reaching no further than the opening line); the reopened rest is then as
/// long as before and its drain never ends. Here such a cut moves to the start of the fence when
/// text precedes it, else just past the first body char (the chunk overruns `max_chars`, as a
/// closing fence already may), else — no body yet — to a plain cut.
fn split_inside_fence(text: &str, span: &FenceSpan, index: usize) -> Break {
    let body_start = text[span.open_line.end..]
        .find('\n')
        .map(|i| span.open_line.end + i + 1);
    let split = |index| Break {
        index,
        fence: Some(fence_split(text, span)),
    };
    match body_start {
        Some(body) if index > body => return split(index),
        _ if span.start > 0 => return Break::at(span.start),
        _ => {}
    }
    let first_body_char = body_start.and_then(|body| {
        let first = text[body..span.end].chars().next()?;
        Some(body + first.len_utf8())
    });
    match first_body_char {
        Some(end) => split(end),
        None => Break::at(index),
    }
}

fn fence_split(text: &str, span: &FenceSpan) -> FenceSplit {
    FenceSplit {
        close_line: span.close_line(),
        reopen_line: text[span.open_line.clone()].to_owned(),
    }
}

fn strip_leading_newlines(text: &str) -> &str {
    text.trim_start_matches('\n')
}

/// First blank line (`\n\n` at p): candidates p then p+1, each at ≥ min, before the end, safe.
fn paragraph_break_forward(text: &str, spans: &[FenceSpan], min: usize) -> Option<usize> {
    let finder = memchr::memmem::find_iter(text.as_bytes(), b"\n\n");
    for p in finder {
        for candidate in [p, p + 1] {
            if candidate >= min && candidate < text.len() && is_safe_fence_break(spans, candidate) {
                return Some(candidate);
            }
        }
    }
    None
}

/// Last blank line at p ≥ min: candidates p then p+1. Occurrences may overlap (`\n\n\n` has
/// two), as with JavaScript's `lastIndexOf`.
fn paragraph_break_backward(text: &str, spans: &[FenceSpan], min: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let from = (min + 1).min(bytes.len());
    for second in memchr::memrchr_iter(b'\n', &bytes[from..]) {
        let p = from + second - 1;
        if bytes[p] != b'\n' {
            continue;
        }
        for candidate in [p, p + 1] {
            if candidate < text.len() && is_safe_fence_break(spans, candidate) {
                return Some(candidate);
            }
        }
    }
    None
}

fn newline_break_forward(text: &str, spans: &[FenceSpan], min: usize) -> Option<usize> {
    memchr::memchr_iter(b'\n', text.as_bytes()).find(|&i| i >= min && is_safe_fence_break(spans, i))
}

fn newline_break_backward(text: &str, spans: &[FenceSpan], min: usize) -> Option<usize> {
    memchr::memrchr_iter(b'\n', text.as_bytes())
        .take_while(|&i| i >= min)
        .find(|&i| is_safe_fence_break(spans, i))
}

/// The last sentence end (`[.!?]` followed by whitespace or the end of `text`) at ≥ min whose
/// break (just after the mark) is safe.
fn sentence_break(text: &str, spans: &[FenceSpan], min: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let from = min.min(bytes.len());
    memchr::memrchr3_iter(b'.', b'!', b'?', &bytes[from..]).find_map(|offset| {
        let candidate = from + offset + 1;
        let ends = text[candidate..]
            .chars()
            .next()
            .is_none_or(char::is_whitespace);
        (ends && is_safe_fence_break(spans, candidate)).then_some(candidate)
    })
}

/// The first blank-line run `\n[\t ]*\n+` outside fences: (start, end) byte offsets.
fn next_paragraph_break(text: &str, spans: &[FenceSpan]) -> Option<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(found) = memchr::memchr(b'\n', &bytes[from..]) {
        let start = from + found;
        let mut j = start + 1;
        while j < bytes.len() && (bytes[j] == b' ' || bytes[j] == b'\t') {
            j += 1;
        }
        if j < bytes.len() && bytes[j] == b'\n' {
            let mut end = j;
            while end < bytes.len() && bytes[end] == b'\n' {
                end += 1;
            }
            if is_safe_fence_break(spans, start) {
                return Some((start, end));
            }
            from = end;
        } else {
            from = start + 1;
        }
    }
    None
}

#[cfg(test)]
#[path = "chunker_tests.rs"]
mod chunker_tests;
