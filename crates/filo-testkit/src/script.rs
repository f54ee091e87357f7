//! The script: what the mock model answers, one [`Turn`] per request.

use std::time::Duration;

use serde_json::Value;

/// What the scripted model does for one request.
#[derive(Debug, Clone)]
pub enum Turn {
    /// A complete, well-formed streamed answer.
    Reply(Reply),
    /// Something going wrong: an HTTP error, or a stream that breaks.
    Fault(Fault),
}

impl Turn {
    /// A plain text answer (`stop = Stop`).
    pub fn text(t: impl Into<String>) -> Turn {
        Turn::Reply(Reply::text(t))
    }

    /// A single tool call (`stop = ToolUse`).
    pub fn tool_call(id: &str, name: &str, args: Value) -> Turn {
        Turn::Reply(Reply::tool_call(id, name, args))
    }
}

impl From<Reply> for Turn {
    fn from(r: Reply) -> Turn {
        Turn::Reply(r)
    }
}

impl From<Fault> for Turn {
    fn from(f: Fault) -> Turn {
        Turn::Fault(f)
    }
}

/// One assistant answer: its content blocks, its usage and its stop reason.
#[derive(Debug, Clone, Default)]
pub struct Reply {
    /// Emitted in order, each framed the way the protocol frames it.
    pub blocks: Vec<Block>,
    /// Reported the way each protocol reports usage (see the protocol modules).
    pub usage: Usage,
    /// Set explicitly; the helper constructors set it (`tool_call` → `ToolUse`).
    pub stop: Stop,
}

/// One content block of a [`Reply`].
#[derive(Debug, Clone)]
pub enum Block {
    /// Visible text, streamed word by word.
    Text(String),
    /// Reasoning, streamed word by word, with the opaque signature the protocol carries:
    /// Anthropic `signature_delta`, Google `thoughtSignature`, Responses `encrypted_content`;
    /// for Chat Completions the signature names the delta field (see `completions`).
    Thinking {
        /// The reasoning text.
        text: String,
        /// The opaque signature.
        signature: String,
    },
    /// A tool call whose argument JSON is streamed in small fragments.
    ToolCall {
        /// The call id (Responses: `call_id|item_id` splits into both ids).
        id: String,
        /// The tool name.
        name: String,
        /// The arguments object.
        arguments: Value,
    },
    /// A tool call whose argument text is streamed verbatim, so it can be broken or cut JSON
    /// (a call the output limit truncated, a model that wrote invalid JSON). Google carries
    /// arguments as a JSON object, so there the text is put into the frame as is, and a frame
    /// with invalid text is itself malformed.
    RawToolCall {
        /// The call id (as for [`Block::ToolCall`]).
        id: String,
        /// The tool name.
        name: String,
        /// The argument text, sent as is.
        arguments: String,
    },
}

impl Block {
    /// A tool call's id, name and the argument text it sends, for either tool-call variant.
    pub(crate) fn tool_call_parts(&self) -> Option<(&str, &str, String)> {
        match self {
            Block::ToolCall {
                id,
                name,
                arguments,
            } => Some((id, name, arguments.to_string())),
            Block::RawToolCall {
                id,
                name,
                arguments,
            } => Some((id, name, arguments.clone())),
            Block::Text(_) | Block::Thinking { .. } => None,
        }
    }
}

/// Token usage, reported in each protocol's own shape.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Prompt tokens that were neither read from nor written to the cache.
    pub input: u64,
    /// Generated tokens.
    pub output: u64,
    /// Prompt tokens read from the cache.
    pub cache_read: u64,
    /// Prompt tokens written to the cache (Anthropic only; the others have no such figure).
    pub cache_write: u64,
}

impl Usage {
    /// Usage with only input and output tokens.
    pub fn new(input: u64, output: u64) -> Usage {
        Usage {
            input,
            output,
            cache_read: 0,
            cache_write: 0,
        }
    }

    /// The same usage with cache figures.
    pub fn with_cache(self, cache_read: u64, cache_write: u64) -> Usage {
        Usage {
            cache_read,
            cache_write,
            ..self
        }
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Stop {
    /// The model finished its answer.
    #[default]
    Stop,
    /// The output token limit was reached.
    Length,
    /// The model wants tool results.
    ToolUse,
}

/// A failure the mock produces instead of (or in the middle of) a reply.
///
/// `after_events` counts SSE frames (one `event:`/`data:` record ending in a blank line, pings
/// and `[DONE]` included) of the reply as [`crate::frames`] renders it for the request.
#[derive(Debug, Clone)]
pub enum Fault {
    /// Plain HTTP error response with a protocol-appropriate JSON error body (or `body`
    /// verbatim); optional `retry-after` header (seconds).
    Http {
        /// The HTTP status code.
        status: u16,
        /// Seconds for the `retry-after` header.
        retry_after: Option<u64>,
        /// A body sent verbatim instead of the protocol's error JSON.
        body: Option<String>,
    },
    /// A 200 stream that emits the reply's first `after_events` frames, then the protocol's error
    /// event, then ends.
    ErrorEvent {
        /// Frames of `reply` sent before the error.
        after_events: usize,
        /// The reply that is interrupted.
        reply: Reply,
        /// The error message carried by the error event.
        message: String,
    },
    /// Emit the first `after_events` frames of `reply`, then close the connection abruptly
    /// (no terminal frame, no end of the chunked body).
    Cut {
        /// Frames of `reply` sent before the cut.
        after_events: usize,
        /// The reply that is cut.
        reply: Reply,
    },
    /// Emit the first `after_events` frames, go silent for `stall` with the connection open,
    /// then send the remaining frames.
    Stall {
        /// Frames of `reply` sent before the silence.
        after_events: usize,
        /// The reply that stalls.
        reply: Reply,
        /// How long the stream stays silent.
        stall: Duration,
    },
    /// A response sent exactly as given: status, headers and body (an HTML page with status
    /// 200, a `retry-after` as an HTTP-date, a `retry-after-ms` header, …).
    Raw {
        /// The HTTP status code.
        status: u16,
        /// Response headers, in order.
        headers: Vec<(String, String)>,
        /// The body, sent in one piece.
        body: String,
    },
    /// Emit a syntactically broken data frame (invalid JSON) after `after_events` frames of
    /// `reply`, then the remaining frames.
    Malformed {
        /// Frames of `reply` sent before the broken frame.
        after_events: usize,
        /// The reply the broken frame is inserted into.
        reply: Reply,
    },
}

impl Fault {
    /// An HTTP error with the protocol's error body and no `retry-after`.
    pub fn http(status: u16) -> Fault {
        Fault::Http {
            status,
            retry_after: None,
            body: None,
        }
    }

    /// HTTP 429 with `retry-after: <secs>`.
    pub fn rate_limited(retry_after_secs: u64) -> Fault {
        Fault::Http {
            status: 429,
            retry_after: Some(retry_after_secs),
            body: None,
        }
    }

    /// A status-200 HTML page, as a captive portal or a misconfigured proxy answers.
    pub fn html_page() -> Fault {
        Fault::Raw {
            status: 200,
            headers: vec![("content-type".into(), "text/html; charset=utf-8".into())],
            body: "<!DOCTYPE html><html><head><title>Sign in</title></head><body>Please sign in to continue.</body></html>".into(),
        }
    }

    /// HTTP 529, Anthropic's "overloaded" status (its body carries `overloaded_error`).
    pub fn overloaded() -> Fault {
        Fault::http(529)
    }
}

impl Reply {
    /// A reply with no blocks, zero usage and `stop = Stop`.
    pub fn empty() -> Reply {
        Reply::default()
    }

    /// One text block (`stop = Stop`).
    pub fn text(t: impl Into<String>) -> Reply {
        Reply::empty().with_block(Block::Text(t.into()))
    }

    /// One thinking block with its signature (`stop = Stop`).
    pub fn thinking(text: impl Into<String>, signature: impl Into<String>) -> Reply {
        Reply::empty().with_thinking(text, signature)
    }

    /// One tool call (`stop = ToolUse`).
    pub fn tool_call(id: &str, name: &str, args: Value) -> Reply {
        Reply::empty()
            .with_tool_call(id, name, args)
            .with_stop(Stop::ToolUse)
    }

    /// Append a block.
    pub fn with_block(mut self, b: Block) -> Reply {
        self.blocks.push(b);
        self
    }

    /// Append a text block.
    pub fn with_text(self, t: impl Into<String>) -> Reply {
        self.with_block(Block::Text(t.into()))
    }

    /// Append a thinking block.
    pub fn with_thinking(self, text: impl Into<String>, signature: impl Into<String>) -> Reply {
        self.with_block(Block::Thinking {
            text: text.into(),
            signature: signature.into(),
        })
    }

    /// Append a tool call and set `stop = ToolUse`.
    pub fn with_tool_call(self, id: &str, name: &str, args: Value) -> Reply {
        self.with_block(Block::ToolCall {
            id: id.to_owned(),
            name: name.to_owned(),
            arguments: args,
        })
        .with_stop(Stop::ToolUse)
    }

    /// Append a tool call whose argument text is sent verbatim (see [`Block::RawToolCall`]) and
    /// set `stop = ToolUse`; set [`Stop::Length`] after it for a call the output limit cut off.
    pub fn with_raw_tool_call(self, id: &str, name: &str, arguments: &str) -> Reply {
        self.with_block(Block::RawToolCall {
            id: id.to_owned(),
            name: name.to_owned(),
            arguments: arguments.to_owned(),
        })
        .with_stop(Stop::ToolUse)
    }

    /// Set the usage.
    pub fn with_usage(mut self, u: Usage) -> Reply {
        self.usage = u;
        self
    }

    /// Set the stop reason.
    pub fn with_stop(mut self, s: Stop) -> Reply {
        self.stop = s;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn constructors_set_the_stop_reason() {
        assert_eq!(Reply::text("hi").stop, Stop::Stop);
        assert_eq!(Reply::tool_call("c1", "ls", json!({})).stop, Stop::ToolUse);
        let mixed = Reply::text("a").with_tool_call("c1", "ls", json!({}));
        assert_eq!(mixed.stop, Stop::ToolUse);
        assert_eq!(mixed.blocks.len(), 2);
        assert_eq!(Reply::text("a").with_stop(Stop::Length).stop, Stop::Length);
    }

    #[test]
    fn usage_builders_keep_the_other_fields() {
        let u = Usage::new(10, 5).with_cache(3, 2);
        assert_eq!(
            u,
            Usage {
                input: 10,
                output: 5,
                cache_read: 3,
                cache_write: 2
            }
        );
    }
}
