//! Markdown code fences (OpenClaw `markdown/fences.ts`, used by the chunker, the tag stripper and
//! the media parser): where fenced code starts and ends in a text, so nothing breaks, strips or
//! parses inside it.
//!
//! Offsets are byte offsets into the scanned text, always on char boundaries.

use std::ops::Range;

/// One fenced code block: from the start of its opening line to the end of its closing line
/// (exclusive; the closing line's `\n` is outside), or to the end of the text when unclosed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FenceSpan {
    pub start: usize,
    pub end: usize,
    /// The opening line (without its `\n` or a trailing `\r`).
    pub open_line: Range<usize>,
    /// The marker char (`` ` `` or `~`) and how many of them opened the fence.
    pub marker_char: char,
    pub marker_len: usize,
    /// Spaces before the marker (0–3).
    pub indent: usize,
}

impl FenceSpan {
    /// The line that closes this fence: the opening indent and marker.
    pub fn close_line(&self) -> String {
        let mut line = " ".repeat(self.indent);
        line.extend(std::iter::repeat_n(self.marker_char, self.marker_len));
        line
    }
}

/// A line that looks like a fence: `^( {0,3})(`{3,}|~{3,})(.*)$`.
struct FenceLine<'a> {
    indent: usize,
    marker_char: char,
    marker_len: usize,
    rest: &'a str,
}

fn fence_line(line: &str) -> Option<FenceLine<'_>> {
    let indent = line.bytes().take_while(|b| *b == b' ').count();
    if indent > 3 {
        return None;
    }
    let after = &line[indent..];
    let marker = after.bytes().next()?;
    if marker != b'`' && marker != b'~' {
        return None;
    }
    let marker_len = after.bytes().take_while(|b| *b == marker).count();
    if marker_len < 3 {
        return None;
    }
    Some(FenceLine {
        indent,
        marker_char: char::from(marker),
        marker_len,
        rest: &after[marker_len..],
    })
}

#[derive(Debug, Clone)]
struct Open {
    start: usize,
    open_line: Range<usize>,
    marker_char: char,
    marker_len: usize,
    indent: usize,
}

impl Open {
    fn span(&self, end: usize) -> FenceSpan {
        FenceSpan {
            start: self.start,
            end,
            open_line: self.open_line.clone(),
            marker_char: self.marker_char,
            marker_len: self.marker_len,
            indent: self.indent,
        }
    }
}

/// Line-by-line fence state: the closed spans so far and the fence still open.
#[derive(Debug, Clone, Default)]
struct ScanState {
    spans: Vec<FenceSpan>,
    open: Option<Open>,
}

impl ScanState {
    /// Process the line `text[offset..line_end]` (without its `\n`).
    fn line(&mut self, text: &str, offset: usize, line_end: usize) {
        let raw = &text[offset..line_end];
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        // Cheap pre-check: a fence line has a marker within its first four bytes.
        let maybe = line.len() >= 3 && line.bytes().take(4).any(|b| b == b'`' || b == b'~');
        let Some(found) = maybe.then(|| fence_line(line)).flatten() else {
            return;
        };
        match &self.open {
            None => {
                self.open = Some(Open {
                    start: offset,
                    open_line: offset..offset + line.len(),
                    marker_char: found.marker_char,
                    marker_len: found.marker_len,
                    indent: found.indent,
                });
            }
            Some(o) => {
                let closes = o.marker_char == found.marker_char
                    && found.marker_len >= o.marker_len
                    && found.rest.bytes().all(|b| b == b' ' || b == b'\t');
                if closes {
                    self.spans.push(o.span(line_end));
                    self.open = None;
                }
            }
        }
    }

    /// The spans of a text of `len` bytes whose lines were all processed.
    fn finish(mut self, len: usize) -> Vec<FenceSpan> {
        if let Some(o) = self.open.take() {
            self.spans.push(o.span(len));
        }
        self.spans
    }
}

/// Every fenced block of `text`, in order. A fence closes on a line with the same marker char,
/// at least as many markers, and nothing but spaces/tabs after them.
pub fn parse_fence_spans(text: &str) -> Vec<FenceSpan> {
    let mut state = ScanState::default();
    let mut offset = 0;
    while let Some(n) = memchr::memchr(b'\n', &text.as_bytes()[offset..]) {
        state.line(text, offset, offset + n);
        offset += n + 1;
    }
    state.line(text, offset, text.len());
    state.finish(text.len())
}

/// [`parse_fence_spans`] for a text that only grows: complete lines are scanned once; each
/// query scans only the new lines (and the unfinished last line, without keeping its result).
#[derive(Debug, Clone, Default)]
pub struct FenceScanner {
    state: ScanState,
    /// Bytes of complete lines already scanned.
    done: usize,
    /// The spans of the last query (reused buffer).
    view: Vec<FenceSpan>,
}

impl FenceScanner {
    pub fn new() -> Self {
        Self::default()
    }

    /// Forget everything (the text was replaced, not extended).
    pub fn reset(&mut self) {
        self.state = ScanState::default();
        self.done = 0;
        self.view.clear();
    }

    /// The fence spans of `text`, which must extend the text of the previous call.
    pub fn spans(&mut self, text: &str) -> &[FenceSpan] {
        if self.done > text.len() {
            self.reset();
        }
        while let Some(n) = memchr::memchr(b'\n', &text.as_bytes()[self.done..]) {
            self.state.line(text, self.done, self.done + n);
            self.done += n + 1;
        }
        self.view.clear();
        self.view.extend_from_slice(&self.state.spans);
        let mut last = ScanState {
            spans: Vec::new(),
            open: self.state.open.clone(),
        };
        last.line(text, self.done, text.len());
        self.view.extend(last.finish(text.len()));
        &self.view
    }
}

/// The span strictly containing `index` (`start < index < end`), if any.
pub fn fence_span_at(spans: &[FenceSpan], index: usize) -> Option<&FenceSpan> {
    // Spans are sorted and disjoint: the candidate is the last span starting before `index`.
    let after = spans.partition_point(|s| s.start < index);
    let span = spans.get(after.checked_sub(1)?)?;
    (index < span.end).then_some(span)
}

/// A break at `index` does not cut a fenced block (the block's own edges are safe).
pub fn is_safe_fence_break(spans: &[FenceSpan], index: usize) -> bool {
    fence_span_at(spans, index).is_none()
}

/// Code regions for tag stripping: fenced blocks plus **closed** inline code spans (a backtick
/// run closed by a run of the same length). Sorted, disjoint byte ranges.
pub fn code_regions(text: &str) -> Vec<Range<usize>> {
    let fences = parse_fence_spans(text);
    let mut regions: Vec<Range<usize>> = Vec::new();
    let mut fence_iter = fences.iter().peekable();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if let Some(f) = fence_iter.peek()
            && i >= f.start
        {
            regions.push(f.start..f.end);
            i = f.end;
            fence_iter.next();
            continue;
        }
        let Some(found) = memchr::memchr(b'`', &bytes[i..]) else {
            regions.extend(fence_iter.map(|f| f.start..f.end));
            break;
        };
        let tick = i + found;
        if fence_iter.peek().is_some_and(|f| tick >= f.start) {
            i = fence_iter.peek().map_or(tick, |f| f.start);
            continue;
        }
        let run = bytes[tick..].iter().take_while(|b| **b == b'`').count();
        let limit = fence_iter.peek().map_or(bytes.len(), |f| f.start);
        match find_closing_run(&bytes[..limit], tick + run, run) {
            Some(close) => {
                regions.push(tick..close + run);
                i = close + run;
            }
            None => i = tick + run,
        }
    }
    regions
}

/// The start of the next backtick run of exactly `len` ticks at or after `from`.
fn find_closing_run(bytes: &[u8], from: usize, len: usize) -> Option<usize> {
    let mut i = from;
    while i < bytes.len() {
        let found = memchr::memchr(b'`', &bytes[i..])?;
        let start = i + found;
        let run = bytes[start..].iter().take_while(|b| **b == b'`').count();
        if run == len {
            return Some(start);
        }
        i = start + run;
    }
    None
}

/// Whether `index` lies inside one of `regions` (`start <= index < end`).
pub fn is_inside(regions: &[Range<usize>], index: usize) -> bool {
    let after = regions.partition_point(|r| r.start <= index);
    after
        .checked_sub(1)
        .and_then(|i| regions.get(i))
        .is_some_and(|r| index < r.end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_of_closed_unclosed_and_indented_fences() {
        let text = "a\n```js\nx\n```\nb\n  ~~~~\ny\n~~~\nz\n~~~~~ \nc\n````\nopen";
        let spans = parse_fence_spans(text);
        assert_eq!(spans.len(), 3);
        assert_eq!(&text[spans[0].start..spans[0].end], "```js\nx\n```");
        assert_eq!(&text[spans[0].open_line.clone()], "```js");
        assert_eq!(spans[0].close_line(), "```");
        // a shorter `~~~` does not close a `~~~~` fence; a longer one with trailing space does
        assert_eq!(
            &text[spans[1].start..spans[1].end],
            "  ~~~~\ny\n~~~\nz\n~~~~~ "
        );
        assert_eq!(spans[1].close_line(), "  ~~~~");
        assert_eq!(&text[spans[2].start..spans[2].end], "````\nopen");
    }

    #[test]
    fn not_fences() {
        for text in ["    ```\ncode", "``\nx", "``` ```x\n", "~~\n"] {
            let spans = parse_fence_spans(text);
            assert!(spans.len() <= 1, "{text:?}");
        }
        assert!(parse_fence_spans("    ```\ncode").is_empty());
        assert!(parse_fence_spans("text ``` inline").is_empty());
        // closing line with text after the marker does not close
        let spans = parse_fence_spans("```\nx\n``` no\ny");
        assert_eq!(spans[0].end, "```\nx\n``` no\ny".len());
    }

    #[test]
    fn scanner_matches_a_full_parse_at_every_length() {
        let text = "a\n```js\nx\n``` \nb\n  ~~~~\ny\n~~~\nz\n~~~~~\nc\n````\nopen";
        let mut scanner = FenceScanner::new();
        for end in 0..=text.len() {
            assert_eq!(
                scanner.spans(&text[..end]),
                parse_fence_spans(&text[..end]),
                "{end}"
            );
        }
        scanner.reset();
        assert_eq!(scanner.spans("```\nx"), parse_fence_spans("```\nx"));
    }

    #[test]
    fn crlf_lines() {
        let text = "```py\r\nx\r\n```\r\nafter";
        let spans = parse_fence_spans(text);
        assert_eq!(&text[spans[0].open_line.clone()], "```py");
        assert_eq!(&text[spans[0].start..spans[0].end], "```py\r\nx\r\n```\r");
    }

    #[test]
    fn safe_breaks_are_outside_or_on_the_edges() {
        let text = "ab\n```\ncode\n```\ncd";
        let spans = parse_fence_spans(text);
        let (start, end) = (spans[0].start, spans[0].end);
        assert!(is_safe_fence_break(&spans, start));
        assert!(is_safe_fence_break(&spans, end));
        assert!(!is_safe_fence_break(&spans, start + 1));
        assert!(!is_safe_fence_break(&spans, end - 1));
        assert!(is_safe_fence_break(&spans, 1));
        assert_eq!(
            fence_span_at(&spans, start + 4).map(|s| s.start),
            Some(start)
        );
    }

    #[test]
    fn code_regions_cover_fences_and_closed_inline_spans() {
        let text = "a `x` b ``y ` z`` c `open";
        let regions = code_regions(text);
        let shown: Vec<&str> = regions.iter().map(|r| &text[r.clone()]).collect();
        assert_eq!(shown, ["`x`", "``y ` z``"]);
        let text = "t\n```\n`a\n```\n`b`";
        let shown: Vec<&str> = code_regions(text)
            .iter()
            .map(|r| &text[r.clone()])
            .collect();
        assert_eq!(shown, ["```\n`a\n```", "`b`"]);
        let text = "a\n~~~\n<b>\n~~~\nc";
        assert_eq!(
            code_regions(text),
            vec![std::ops::Range { start: 2, end: 13 }]
        );
        assert!(is_inside(&code_regions("x `y` z"), 3));
        assert!(!is_inside(&code_regions("x `y` z"), 5));
    }
}
