//! AWS event-stream framing (`application/vnd.amazon.eventstream`), what Bedrock's
//! ConverseStream answers with: binary messages, each
//!
//! ```text
//! total length u32 | headers length u32 | prelude CRC-32 u32 | headers | payload | message CRC-32 u32
//! ```
//!
//! (big-endian; the prelude CRC covers the first 8 bytes, the message CRC everything before it).
//! A header is a name (u8 length + bytes), a type byte and a value (booleans, integers, byte
//! arrays, strings, timestamps, UUIDs). The parser is incremental: chunks may split a message
//! anywhere, and both checksums are verified before a message is used. An `event` message
//! becomes an [`SseFrame`] named by its `:event-type` with the payload as data; an `exception`
//! message is an [`AiError::Http`] with the status its `:exception-type` stands for, so rate
//! limits and unavailability are classified like the same answers before the stream.

use crate::error::AiError;
use crate::sse::SseFrame;

/// The prelude: two lengths and the prelude's checksum.
const PRELUDE: usize = 12;
/// The smallest message: prelude and message checksum.
const MIN_MESSAGE: usize = PRELUDE + 4;
/// The largest message AWS sends (16 MiB), so a corrupt length cannot make us buffer forever.
pub const MAX_MESSAGE_BYTES: usize = 16 << 20;

/// One decoded message: its string headers and payload.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EventMessage {
    /// String headers, in order (other header types are checked and skipped).
    pub headers: Vec<(String, String)>,
    pub payload: Vec<u8>,
}

impl EventMessage {
    /// A string header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Incremental event-stream parser.
#[derive(Debug, Default)]
pub struct EventStreamParser {
    buf: Vec<u8>,
    /// Reused for every event, so steady streaming allocates only when a frame outgrows it.
    frame: SseFrame,
}

fn be32(bytes: &[u8]) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[..4]);
    u32::from_be_bytes(word)
}

fn bad(what: impl std::fmt::Display) -> AiError {
    AiError::Decode(format!("event-stream message {what}"))
}

/// What [`each_message`] calls with a message's header bytes and payload bytes.
type OnMessage<'f> = dyn FnMut(&[u8], &[u8]) -> Result<(), AiError> + 'f;

/// Hand every complete, checksum-verified message in `buf` (headers bytes, payload bytes) to
/// `on_message`, then drop the bytes used.
fn each_message(buf: &mut Vec<u8>, on_message: &mut OnMessage<'_>) -> Result<(), AiError> {
    let mut start = 0;
    let result = loop {
        let rest = &buf[start..];
        if rest.len() < PRELUDE {
            break Ok(());
        }
        let total = be32(rest) as usize;
        let headers_len = be32(&rest[4..]) as usize;
        let prelude_crc = be32(&rest[8..]);
        if crc32fast::hash(&rest[..8]) != prelude_crc {
            break Err(bad(format!(
                "has a bad prelude checksum (total length {total}, headers length {headers_len})"
            )));
        }
        if !(MIN_MESSAGE..=MAX_MESSAGE_BYTES).contains(&total) {
            break Err(bad(format!(
                "has an impossible length {total} (between {MIN_MESSAGE} and {MAX_MESSAGE_BYTES} bytes)"
            )));
        }
        if headers_len > total - MIN_MESSAGE {
            break Err(bad(format!(
                "declares {headers_len} bytes of headers in a {total}-byte message"
            )));
        }
        if rest.len() < total {
            break Ok(());
        }
        let message_crc = be32(&rest[total - 4..]);
        if crc32fast::hash(&rest[..total - 4]) != message_crc {
            break Err(bad(format!("has a bad message checksum ({total} bytes)")));
        }
        start += total;
        let headers = &rest[PRELUDE..PRELUDE + headers_len];
        let payload = &rest[PRELUDE + headers_len..total - 4];
        if let Err(e) = on_message(headers, payload) {
            break Err(e);
        }
    };
    buf.drain(..start);
    result
}

impl EventStreamParser {
    pub fn new() -> Self {
        EventStreamParser::default()
    }

    /// Bytes of an unfinished message held between calls.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Feed a chunk; `on_message` gets every complete message, in order. A bad length or
    /// checksum, or malformed headers, is an [`AiError::Decode`].
    pub fn feed_messages(
        &mut self,
        chunk: &[u8],
        on_message: &mut dyn FnMut(EventMessage) -> Result<(), AiError>,
    ) -> Result<(), AiError> {
        self.buf.extend_from_slice(chunk);
        each_message(&mut self.buf, &mut |headers, payload| {
            let mut owned = Vec::new();
            visit_headers(headers, &mut |k, v| {
                owned.push((k.to_string(), v.to_string()))
            })?;
            on_message(EventMessage {
                headers: owned,
                payload: payload.to_vec(),
            })
        })
    }

    /// Feed a chunk; every complete `event` message goes to `on_frame` as an [`SseFrame`]
    /// (`event` = `:event-type`, `data` = the payload). An `exception` or `error` message ends
    /// the stream with its error.
    pub fn feed(
        &mut self,
        chunk: &[u8],
        on_frame: &mut dyn FnMut(&SseFrame) -> Result<(), AiError>,
    ) -> Result<(), AiError> {
        self.buf.extend_from_slice(chunk);
        let frame = &mut self.frame;
        each_message(&mut self.buf, &mut |headers, payload| {
            let mut kind = Kind::default();
            visit_headers(headers, &mut |k, v| kind.note(k, v))?;
            let text =
                std::str::from_utf8(payload).map_err(|_| bad("has a payload that is not UTF-8"))?;
            match kind.message_type.unwrap_or("event") {
                "event" => {
                    frame.event.clear();
                    frame.event.push_str(kind.event_type.unwrap_or_default());
                    frame.data.clear();
                    frame.data.push_str(text);
                    on_frame(frame)
                }
                "exception" => Err(exception(kind.exception_type, text)),
                "error" => {
                    let code = kind.error_code.unwrap_or("UnknownError");
                    Err(AiError::Provider(
                        kind.error_message.unwrap_or(code).to_string(),
                    ))
                }
                other => Err(bad(format!("has an unknown :message-type `{other}`"))),
            }
        })
    }

    /// The body ended: bytes of an unfinished message are an error.
    pub fn finish(&mut self) -> Result<(), AiError> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let held = self.buf.len();
        self.buf.clear();
        Err(bad(format!(
            "was cut short: the stream ended {held} bytes into it"
        )))
    }
}

/// The headers that say what a message is.
#[derive(Default)]
struct Kind<'a> {
    message_type: Option<&'a str>,
    event_type: Option<&'a str>,
    exception_type: Option<&'a str>,
    error_code: Option<&'a str>,
    error_message: Option<&'a str>,
}

impl<'a> Kind<'a> {
    fn note(&mut self, name: &str, value: &'a str) {
        let slot = match name {
            ":message-type" => &mut self.message_type,
            ":event-type" => &mut self.event_type,
            ":exception-type" => &mut self.exception_type,
            ":error-code" => &mut self.error_code,
            ":error-message" => &mut self.error_message,
            _ => return,
        };
        *slot = Some(value);
    }
}

/// An `exception` message as the error it stands for.
fn exception(kind: Option<&str>, text: &str) -> AiError {
    let mut kind = kind.unwrap_or("UnknownException").to_string();
    if let Some(first) = kind.get_mut(..1) {
        first.make_ascii_uppercase();
    }
    let value: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
    let said = value
        .get("message")
        .or_else(|| value.get("Message"))
        .and_then(serde_json::Value::as_str)
        .map_or_else(|| text.trim().to_string(), str::to_string);
    AiError::Http {
        status: exception_status(&kind),
        body: serde_json::json!({"__type": kind, "message": said}).to_string(),
        retry_after: None,
    }
}

/// The HTTP status an AWS exception type stands for (Bedrock's documented codes), so an
/// exception in the stream is classified like the same answer before it.
pub fn exception_status(kind: &str) -> u16 {
    match kind
        .trim_end_matches("Exception")
        .to_ascii_lowercase()
        .as_str()
    {
        "throttling" | "servicequotaexceeded" | "toomanyrequests" => 429,
        "serviceunavailable" | "modelnotready" => 503,
        "validation" | "serialization" => 400,
        "accessdenied" => 403,
        "resourcenotfound" => 404,
        "modeltimeout" => 408,
        "conflict" => 409,
        "modelstreamerror" | "modelerror" => 424,
        _ => 500,
    }
}

/// Call `on_header` for each string header; other types are checked for length and skipped.
fn visit_headers<'a>(
    mut bytes: &'a [u8],
    on_header: &mut dyn FnMut(&'a str, &'a str),
) -> Result<(), AiError> {
    let short = || bad("has headers cut short");
    while !bytes.is_empty() {
        let name_len = usize::from(bytes[0]);
        let name = bytes.get(1..1 + name_len).ok_or_else(short)?;
        let name =
            std::str::from_utf8(name).map_err(|_| bad("has a header name that is not UTF-8"))?;
        let kind = *bytes.get(1 + name_len).ok_or_else(short)?;
        let value = &bytes[2 + name_len..];
        let fixed = |n: usize| {
            if value.len() >= n {
                Ok(n)
            } else {
                Err(short())
            }
        };
        let used = match kind {
            0 | 1 => 0,
            2 => fixed(1)?,
            3 => fixed(2)?,
            4 => fixed(4)?,
            5 | 8 => fixed(8)?,
            9 => fixed(16)?,
            6 | 7 => {
                let len_bytes = value.get(..2).ok_or_else(short)?;
                let len = usize::from(u16::from_be_bytes([len_bytes[0], len_bytes[1]]));
                let data = value.get(2..2 + len).ok_or_else(short)?;
                if kind == 7 {
                    let text = std::str::from_utf8(data)
                        .map_err(|_| bad(format!("has a header `{name}` that is not UTF-8")))?;
                    on_header(name, text);
                }
                2 + len
            }
            other => {
                return Err(bad(format!(
                    "has a header `{name}` of unknown type {other}"
                )));
            }
        };
        bytes = &value[used..];
    }
    Ok(())
}

/// Encode a message (tests and the benchmarks build streams with it).
pub fn encode_message(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut head = Vec::new();
    for (name, value) in headers {
        head.push(u8::try_from(name.len()).unwrap_or(u8::MAX));
        head.extend_from_slice(name.as_bytes());
        head.push(7);
        head.extend_from_slice(&u16::try_from(value.len()).unwrap_or(u16::MAX).to_be_bytes());
        head.extend_from_slice(value.as_bytes());
    }
    let total = PRELUDE + head.len() + payload.len() + 4;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&u32::try_from(total).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(&u32::try_from(head.len()).unwrap_or(u32::MAX).to_be_bytes());
    let prelude_crc = crc32fast::hash(&out);
    out.extend_from_slice(&prelude_crc.to_be_bytes());
    out.extend_from_slice(&head);
    out.extend_from_slice(payload);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

#[cfg(test)]
#[path = "eventstream_tests.rs"]
mod tests;
