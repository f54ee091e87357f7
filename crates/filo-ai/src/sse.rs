//! Server-sent events framing (the WHATWG event-stream format): bytes in, `(event, data)` frames
//! out. Incremental, so chunks may split lines, UTF-8 sequences or `\r\n` anywhere; buffers are
//! reused between frames so parsing allocates only when a frame outgrows them.
//!
//! Bounded: a line, a frame's data or its event name longer than the parser's limit (16 MiB by
//! default) is a [`FrameTooLarge`] error, so a hostile or broken server cannot make the parser
//! buffer without end. The frames produced, and whether the limit is hit, do not depend on how
//! the bytes are split into chunks.

/// The default limit on one line, one frame's data and one event name.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 16 << 20;

/// A line or a frame grew past the parser's limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("an event-stream line or frame exceeded {limit} bytes")]
pub struct FrameTooLarge {
    pub limit: usize,
}

/// One dispatched event. `event` is empty when the frame had no `event:` line.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SseFrame {
    pub event: String,
    pub data: String,
}

/// Incremental SSE parser.
#[derive(Debug)]
pub struct SseParser {
    /// Bytes of an incomplete line carried over from the previous chunk.
    pending: Vec<u8>,
    /// The previous chunk ended in `\r`; a leading `\n` of the next one belongs to it.
    skip_lf: bool,
    frame: SseFrame,
    has_data: bool,
    limit: usize,
}

impl Default for SseParser {
    fn default() -> Self {
        SseParser::with_limit(DEFAULT_MAX_FRAME_BYTES)
    }
}

impl SseParser {
    pub fn new() -> Self {
        SseParser::default()
    }

    /// A parser that refuses lines, frame data and event names longer than `limit` bytes.
    pub fn with_limit(limit: usize) -> Self {
        SseParser {
            pending: Vec::new(),
            skip_lf: false,
            frame: SseFrame::default(),
            has_data: false,
            limit,
        }
    }

    /// Bytes held between calls (the unfinished line and frame); at most three times the limit.
    pub fn buffered(&self) -> usize {
        self.pending.len() + self.frame.data.len() + self.frame.event.len()
    }

    fn too_large<E: From<FrameTooLarge>>(&self) -> E {
        E::from(FrameTooLarge { limit: self.limit })
    }

    /// Feed a chunk; `on_frame` is called for every complete frame, in order. Stops early and
    /// returns the error if `on_frame` fails or a line or frame outgrows the limit.
    pub fn feed<E: From<FrameTooLarge>>(
        &mut self,
        chunk: &[u8],
        on_frame: &mut dyn FnMut(&SseFrame) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut rest = chunk;
        // An empty chunk must not clear `skip_lf`: a `\r\n` split around it is still one ending.
        if rest.is_empty() {
            return Ok(());
        }
        if self.skip_lf {
            self.skip_lf = false;
            if let Some(stripped) = rest.strip_prefix(b"\n") {
                rest = stripped;
            }
        }
        while let Some(pos) = memchr::memchr2(b'\n', b'\r', rest) {
            let (line, after) = rest.split_at(pos);
            let is_cr = after[0] == b'\r';
            rest = &after[1..];
            if is_cr {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.skip_lf = true,
                }
            }
            if self.pending.is_empty() {
                self.line(line, on_frame)?;
            } else {
                let mut joined = std::mem::take(&mut self.pending);
                joined.extend_from_slice(line);
                let result = self.line(&joined, on_frame);
                joined.clear();
                self.pending = joined;
                result?;
            }
        }
        if self.pending.len() + rest.len() > self.limit {
            return Err(self.too_large());
        }
        self.pending.extend_from_slice(rest);
        Ok(())
    }

    /// The byte stream ended: a final frame without its blank line is still dispatched, as
    /// providers sometimes omit the trailing newline.
    pub fn finish<E: From<FrameTooLarge>>(
        &mut self,
        on_frame: &mut dyn FnMut(&SseFrame) -> Result<(), E>,
    ) -> Result<(), E> {
        if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            self.line(&line, on_frame)?;
        }
        self.dispatch(on_frame)
    }

    fn line<E: From<FrameTooLarge>>(
        &mut self,
        line: &[u8],
        on_frame: &mut dyn FnMut(&SseFrame) -> Result<(), E>,
    ) -> Result<(), E> {
        if line.len() > self.limit {
            return Err(self.too_large());
        }
        if line.is_empty() {
            return self.dispatch(on_frame);
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        let value = match std::str::from_utf8(value) {
            Ok(v) => std::borrow::Cow::Borrowed(v),
            Err(_) => String::from_utf8_lossy(value),
        };
        match field {
            b"event" => {
                self.frame.event.clear();
                self.frame.event.push_str(&value);
            }
            b"data" => {
                if self.frame.data.len() + value.len() + 1 > self.limit {
                    return Err(self.too_large());
                }
                if self.has_data {
                    self.frame.data.push('\n');
                }
                self.frame.data.push_str(&value);
                self.has_data = true;
            }
            _ => {}
        }
        Ok(())
    }

    fn dispatch<E>(
        &mut self,
        on_frame: &mut dyn FnMut(&SseFrame) -> Result<(), E>,
    ) -> Result<(), E> {
        let result = if self.has_data || !self.frame.event.is_empty() {
            on_frame(&self.frame)
        } else {
            Ok(())
        };
        self.frame.event.clear();
        self.frame.data.clear();
        self.has_data = false;
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_chunks(chunks: &[&[u8]]) -> Vec<SseFrame> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        let mut push = |f: &SseFrame| -> Result<(), FrameTooLarge> {
            out.push(f.clone());
            Ok(())
        };
        for c in chunks {
            p.feed(c, &mut push).unwrap();
        }
        p.finish(&mut push).unwrap();
        out
    }

    fn frame(event: &str, data: &str) -> SseFrame {
        SseFrame {
            event: event.into(),
            data: data.into(),
        }
    }

    #[test]
    fn events_data_comments_and_multiline() {
        let frames = parse_chunks(&[
            b": ping\n\nevent: message_start\ndata: {\"a\":1}\n\ndata: x\ndata: y\n\n",
        ]);
        assert_eq!(
            frames,
            vec![frame("message_start", "{\"a\":1}"), frame("", "x\ny")]
        );
    }

    #[test]
    fn split_anywhere_and_crlf() {
        let whole = "event: e\r\ndata: h\u{e9}llo\r\n\r\ndata:no-space\r\rdata: [DONE]\n\n";
        let bytes = whole.as_bytes();
        for split in 0..bytes.len() {
            let frames = parse_chunks(&[&bytes[..split], &bytes[split..]]);
            assert_eq!(
                frames,
                vec![
                    frame("e", "h\u{e9}llo"),
                    frame("", "no-space"),
                    frame("", "[DONE]")
                ],
                "split at {split}"
            );
        }
    }

    #[test]
    fn final_frame_without_blank_line() {
        assert_eq!(parse_chunks(&[b"data: last"]), vec![frame("", "last")]);
        assert_eq!(parse_chunks(&[b"\n\n\n"]), vec![]);
    }
}

#[cfg(test)]
#[path = "sse_proptests.rs"]
mod proptests;
