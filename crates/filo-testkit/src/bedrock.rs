//! Amazon Bedrock ConverseStream (`POST …/model/{modelId}/converse-stream`), pi 0.73's
//! `bedrock-converse-stream`, answered as an AWS event stream
//! (`application/vnd.amazon.eventstream`).
//!
//! Frames are built as [`SseFrame`]s whose `event` is the `:event-type` and whose `data` is the
//! JSON payload; [`encode_message`] turns each into a binary message (prelude with both lengths
//! and its CRC-32, string headers `:event-type`, `:content-type`, `:message-type`, the payload,
//! the message CRC-32). A frame whose `event` starts with [`EXCEPTION`] is an `exception` message
//! (`:exception-type` = the rest), as Bedrock sends `throttlingException` and friends mid-stream.
//!
//! The stream: `messageStart`; per block, in order, with `contentBlockIndex` = its position:
//! text as one `contentBlockDelta` `{"text"}` per word, thinking as one `reasoningContent.text`
//! per word then one `reasoningContent.signature`, a tool call as `contentBlockStart`
//! (`toolUse.toolUseId`/`name`) then `toolUse.input` fragments; each block closed by
//! `contentBlockStop`; then `messageStop` (`stopReason`) and `metadata` (`usage` with
//! `inputTokens`, `outputTokens`, `cacheReadInputTokens`, `cacheWriteInputTokens`,
//! `totalTokens`; `metrics.latencyMs`).

use serde_json::json;

use crate::frame::{SseFrame, StreamContext, split_fragments, split_words};
use crate::script::{Block, Reply, Stop};

/// The `event` prefix that marks an exception frame.
pub const EXCEPTION: &str = "exception:";

/// The frames of a complete reply.
pub(crate) fn frames(reply: &Reply, _ctx: &StreamContext) -> Vec<SseFrame> {
    let mut out = vec![SseFrame::named_json(
        "messageStart",
        &json!({"role": "assistant"}),
    )];
    let delta = |i: usize, delta: serde_json::Value| {
        SseFrame::named_json(
            "contentBlockDelta",
            &json!({"contentBlockIndex": i, "delta": delta}),
        )
    };
    for (i, block) in reply.blocks.iter().enumerate() {
        match block {
            Block::Text(text) => {
                out.extend(
                    split_words(text)
                        .into_iter()
                        .map(|w| delta(i, json!({"text": w}))),
                );
            }
            Block::Thinking { text, signature } => {
                out.extend(
                    split_words(text)
                        .into_iter()
                        .map(|w| delta(i, json!({"reasoningContent": {"text": w}}))),
                );
                if !signature.is_empty() {
                    out.push(delta(
                        i,
                        json!({"reasoningContent": {"signature": signature}}),
                    ));
                }
            }
            Block::ToolCall { .. } | Block::RawToolCall { .. } => {
                if let Some((id, name, args)) = block.tool_call_parts() {
                    out.push(SseFrame::named_json(
                        "contentBlockStart",
                        &json!({"contentBlockIndex": i, "start": {"toolUse": {"toolUseId": id, "name": name}}}),
                    ));
                    out.extend(
                        split_fragments(&args)
                            .into_iter()
                            .map(|f| delta(i, json!({"toolUse": {"input": f}}))),
                    );
                }
            }
        }
        out.push(SseFrame::named_json(
            "contentBlockStop",
            &json!({"contentBlockIndex": i}),
        ));
    }
    let stop = match reply.stop {
        Stop::Stop => "end_turn",
        Stop::Length => "max_tokens",
        Stop::ToolUse => "tool_use",
    };
    out.push(SseFrame::named_json(
        "messageStop",
        &json!({"stopReason": stop}),
    ));
    let u = reply.usage;
    out.push(SseFrame::named_json(
        "metadata",
        &json!({
            "usage": {
                "inputTokens": u.input,
                "outputTokens": u.output,
                "totalTokens": u.input + u.output + u.cache_read + u.cache_write,
                "cacheReadInputTokens": u.cache_read,
                "cacheWriteInputTokens": u.cache_write,
            },
            "metrics": {"latencyMs": 100},
        }),
    ));
    out
}

/// The mid-stream failure: a `serviceUnavailableException` message.
pub(crate) fn error_frame(message: &str) -> SseFrame {
    SseFrame::named_json(
        format!("{EXCEPTION}serviceUnavailableException"),
        &json!({"message": message}),
    )
}

/// A delta whose JSON stops in the middle of a string (with valid checksums).
pub(crate) fn malformed_frame() -> SseFrame {
    SseFrame::named(
        "contentBlockDelta",
        r#"{"contentBlockIndex":0,"delta":{"text":"cut sho"#,
    )
}

/// The exception type Bedrock names in `x-amzn-errortype` for an HTTP status.
pub(crate) fn error_type(status: u16) -> &'static str {
    match status {
        400 | 422 => "ValidationException",
        401 | 403 => "AccessDeniedException",
        404 => "ResourceNotFoundException",
        408 => "ModelTimeoutException",
        424 => "ModelErrorException",
        429 => "ThrottlingException",
        503 | 529 => "ServiceUnavailableException",
        _ => "InternalServerException",
    }
}

/// The JSON body of an HTTP error response: Bedrock's `{"message": …}`.
pub(crate) fn http_error_body(message: &str) -> String {
    json!({"message": message}).to_string()
}

/// One binary event-stream message with string headers.
pub fn encode_message(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut head = Vec::new();
    for (name, value) in headers {
        head.push(u8::try_from(name.len()).unwrap_or(u8::MAX));
        head.extend_from_slice(name.as_bytes());
        head.push(7);
        head.extend_from_slice(&u16::try_from(value.len()).unwrap_or(u16::MAX).to_be_bytes());
        head.extend_from_slice(value.as_bytes());
    }
    let total = 12 + head.len() + payload.len() + 4;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&u32::try_from(total).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(&u32::try_from(head.len()).unwrap_or(u32::MAX).to_be_bytes());
    let prelude = crc32fast::hash(&out);
    out.extend_from_slice(&prelude.to_be_bytes());
    out.extend_from_slice(&head);
    out.extend_from_slice(payload);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

/// The binary message for a frame (an exception when its `event` starts with [`EXCEPTION`]).
pub(crate) fn encode(frame: &SseFrame) -> Vec<u8> {
    let event = frame.event.as_deref().unwrap_or_default();
    match event.strip_prefix(EXCEPTION) {
        Some(kind) => encode_message(
            &[
                (":exception-type", kind),
                (":content-type", "application/json"),
                (":message-type", "exception"),
            ],
            frame.data.as_bytes(),
        ),
        None => encode_message(
            &[
                (":event-type", event),
                (":content-type", "application/json"),
                (":message-type", "event"),
            ],
            frame.data.as_bytes(),
        ),
    }
}

/// The model id of a `…/model/{id}/converse-stream` path, percent-decoded.
pub(crate) fn model_of(path: &str) -> Option<String> {
    let rest = path
        .trim_end_matches('/')
        .strip_suffix("/converse-stream")?;
    let (_, id) = rest.rsplit_once("/model/")?;
    if id.is_empty() || id.contains('/') {
        return None;
    }
    let bytes = id.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_ids_from_paths() {
        assert_eq!(
            model_of("/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0/converse-stream"),
            Some("us.anthropic.claude-sonnet-4-20250514-v1:0".into())
        );
        assert_eq!(
            model_of("/proxy/model/m/converse-stream/"),
            Some("m".into())
        );
        assert_eq!(model_of("/model//converse-stream"), None);
        assert_eq!(model_of("/model/m/converse"), None);
    }
}
