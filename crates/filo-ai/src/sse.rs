//! Server-sent events framing (the WHATWG event-stream format): bytes in, `(event, data)` frames
//! out. Incremental, so chunks may split lines, UTF-8 sequences or `\r\n` anywhere; buffers are
//! reused between frames so parsing allocates only when a frame outgrows them.

/// One dispatched event. `event` is empty when the frame had no `event:` line.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SseFrame {
    pub event: String,
    pub data: String,
}

/// Incremental SSE parser.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of an incomplete line carried over from the previous chunk.
    pending: Vec<u8>,
    /// The previous chunk ended in `\r`; a leading `\n` of the next one belongs to it.
    skip_lf: bool,
    frame: SseFrame,
    has_data: bool,
}

impl SseParser {
    pub fn new() -> Self {
        SseParser::default()
    }

    /// Feed a chunk; `on_frame` is called for every complete frame, in order. Stops early and
    /// returns the error if `on_frame` fails.
    pub fn feed<E>(
        &mut self,
        chunk: &[u8],
        on_frame: &mut dyn FnMut(&SseFrame) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut rest = chunk;
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
        self.pending.extend_from_slice(rest);
        Ok(())
    }

    /// The byte stream ended: a final frame without its blank line is still dispatched, as
    /// providers sometimes omit the trailing newline.
    pub fn finish<E>(
        &mut self,
        on_frame: &mut dyn FnMut(&SseFrame) -> Result<(), E>,
    ) -> Result<(), E> {
        if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            self.line(&line, on_frame)?;
        }
        self.dispatch(on_frame)
    }

    fn line<E>(
        &mut self,
        line: &[u8],
        on_frame: &mut dyn FnMut(&SseFrame) -> Result<(), E>,
    ) -> Result<(), E> {
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
        let mut push = |f: &SseFrame| -> Result<(), ()> {
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
