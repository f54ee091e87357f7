//! SSE frame builders and the deterministic splitting every protocol module uses.

use serde_json::Value;

/// Longest tool-argument fragment, in bytes (a longer character gets a fragment of its own).
pub const ARG_FRAGMENT_BYTES: usize = 7;

/// One server-sent event: an optional `event:` name and its `data:` payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseFrame {
    /// The `event:` field, when the protocol names its events.
    pub event: Option<String>,
    /// The `data:` payload (JSON, or `[DONE]`, or deliberately broken JSON).
    pub data: String,
}

impl SseFrame {
    /// A frame with only a `data:` field.
    pub fn data(data: impl Into<String>) -> SseFrame {
        SseFrame {
            event: None,
            data: data.into(),
        }
    }

    /// A frame with `event:` and `data:` fields.
    pub fn named(event: impl Into<String>, data: impl Into<String>) -> SseFrame {
        SseFrame {
            event: Some(event.into()),
            data: data.into(),
        }
    }

    /// A `data:` frame holding compact JSON.
    pub fn json(value: &Value) -> SseFrame {
        SseFrame::data(value.to_string())
    }

    /// A named frame holding compact JSON.
    pub fn named_json(event: impl Into<String>, value: &Value) -> SseFrame {
        SseFrame::named(event, value.to_string())
    }

    /// The data parsed as JSON, if it is JSON.
    pub fn json_data(&self) -> Option<Value> {
        serde_json::from_str(&self.data).ok()
    }

    /// The wire text of the frame, each line ended by `eol` (`"\n"` or `"\r\n"`), closed by an
    /// empty line. Multi-line data becomes several `data:` lines, as SSE requires.
    pub fn encode(&self, eol: &str) -> String {
        let mut out = String::with_capacity(self.data.len() + 32);
        if let Some(event) = &self.event {
            out.push_str("event: ");
            out.push_str(event);
            out.push_str(eol);
        }
        for line in self.data.split('\n') {
            out.push_str("data: ");
            out.push_str(line);
            out.push_str(eol);
        }
        out.push_str(eol);
        out
    }
}

/// What a stream needs to know about the request it answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamContext {
    /// The model named by the request (body `model`, or the Google path segment).
    pub model: String,
    /// Chat Completions `stream_options.include_usage`: whether the final usage chunk is sent.
    pub include_usage: bool,
    /// 1-based arrival number of the request; ids in the stream are derived from it.
    pub request_number: usize,
}

impl StreamContext {
    /// A context for `model` answering the first request, without the usage chunk.
    pub fn new(model: impl Into<String>) -> StreamContext {
        StreamContext {
            model: model.into(),
            include_usage: false,
            request_number: 1,
        }
    }

    /// The same context with `include_usage` set.
    pub fn with_include_usage(self, include_usage: bool) -> StreamContext {
        StreamContext {
            include_usage,
            ..self
        }
    }
}

/// Split text the way models stream it: one piece per word, each word keeping the whitespace
/// that follows it (leading whitespace stays with the first word). Empty text gives no piece.
pub fn split_words(text: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut seen_word = false;
    let mut in_space = false;
    for (i, c) in text.char_indices() {
        let space = c.is_whitespace();
        if !space && in_space && seen_word {
            pieces.push(&text[start..i]);
            start = i;
        }
        seen_word |= !space;
        in_space = space;
    }
    if start < text.len() {
        pieces.push(&text[start..]);
    }
    pieces
}

/// Split a tool call's argument JSON into fragments of at most [`ARG_FRAGMENT_BYTES`] bytes,
/// cut on character boundaries only. Concatenated, the fragments are the input.
pub fn split_fragments(json: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    for (i, c) in json.char_indices() {
        if i > start && i + c.len_utf8() - start > ARG_FRAGMENT_BYTES {
            pieces.push(&json[start..i]);
            start = i;
        }
    }
    if start < json.len() {
        pieces.push(&json[start..]);
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn words_keep_their_trailing_whitespace() {
        assert_eq!(
            split_words("Hello world,  how\nare"),
            vec!["Hello ", "world,  ", "how\n", "are"]
        );
        assert_eq!(split_words("  lead"), vec!["  lead"]);
        assert_eq!(split_words("one"), vec!["one"]);
        assert!(split_words("").is_empty());
        assert_eq!(split_words("   "), vec!["   "]);
    }

    #[test]
    fn fragments_concatenate_to_the_input_and_respect_char_boundaries() {
        let text = json!({"path": "/tmp/é€😀x", "n": [1, 2, 3]}).to_string();
        let pieces = split_fragments(&text);
        assert!(pieces.len() > 3);
        assert_eq!(pieces.concat(), text);
        assert!(pieces.iter().all(|p| p.len() <= ARG_FRAGMENT_BYTES));
        assert!(split_fragments("").is_empty());
        assert_eq!(split_fragments("{}"), vec!["{}"]);
    }

    #[test]
    fn frames_encode_with_event_names_and_line_ends() {
        let f = SseFrame::named_json("ping", &json!({"type": "ping"}));
        assert_eq!(f.encode("\n"), "event: ping\ndata: {\"type\":\"ping\"}\n\n");
        assert_eq!(
            SseFrame::data("[DONE]").encode("\r\n"),
            "data: [DONE]\r\n\r\n"
        );
        assert_eq!(SseFrame::data("a\nb").encode("\n"), "data: a\ndata: b\n\n");
        assert_eq!(f.json_data(), Some(json!({"type": "ping"})));
        assert_eq!(SseFrame::data("{broken").json_data(), None);
    }
}
