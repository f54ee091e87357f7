//! The wire protocols: which request path selects which, and dispatch to their framers.

use crate::frame::{SseFrame, StreamContext};
use crate::script::Reply;
use crate::{anthropic, bedrock, completions, google, mistral, responses};

/// A wire protocol the mock serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// `POST …/v1/messages`.
    AnthropicMessages,
    /// `POST …/chat/completions`.
    OpenAiCompletions,
    /// `POST …/responses`.
    OpenAiResponses,
    /// `POST …/models/{model}:streamGenerateContent`.
    GoogleGenerativeAi,
    /// `POST …/openai/v1/responses?api-version=…`: the Responses stream, as an Azure OpenAI
    /// resource serves it (the model in the body is the deployment name).
    AzureOpenAiResponses,
    /// `POST …/publishers/google/models/{model}:streamGenerateContent`: Gemini's stream, as
    /// Vertex AI serves it (also under `…/projects/{p}/locations/{l}/`).
    GoogleVertex,
    /// `POST …/mistral/v1/chat/completions`: Mistral's chat stream (pi's
    /// `mistral-conversations`). The mock tells it from OpenAI's by the `/mistral` prefix its
    /// [`Protocol::base_path`] adds.
    MistralConversations,
    /// `POST …/model/{modelId}/converse-stream`: Amazon Bedrock's ConverseStream, answered as a
    /// binary AWS event stream (see the `bedrock` module).
    BedrockConverseStream,
}

impl Protocol {
    /// Every protocol, in declaration order.
    pub const ALL: [Protocol; 8] = [
        Protocol::AnthropicMessages,
        Protocol::OpenAiCompletions,
        Protocol::OpenAiResponses,
        Protocol::GoogleGenerativeAi,
        Protocol::AzureOpenAiResponses,
        Protocol::GoogleVertex,
        Protocol::MistralConversations,
        Protocol::BedrockConverseStream,
    ];

    /// The protocols that answer with server-sent events (all but Bedrock's event stream).
    pub const SSE: [Protocol; 7] = [
        Protocol::AnthropicMessages,
        Protocol::OpenAiCompletions,
        Protocol::OpenAiResponses,
        Protocol::GoogleGenerativeAi,
        Protocol::AzureOpenAiResponses,
        Protocol::GoogleVertex,
        Protocol::MistralConversations,
    ];

    /// Whether the protocol's stream is SSE text (else a binary AWS event stream).
    pub fn is_sse(self) -> bool {
        self != Protocol::BedrockConverseStream
    }

    /// The protocol a request path (without its query) selects, if any.
    pub fn from_path(path: &str) -> Option<Protocol> {
        let path = path.trim_end_matches('/');
        if bedrock::model_of(path).is_some() {
            Some(Protocol::BedrockConverseStream)
        } else if path.ends_with("/v1/messages") {
            Some(Protocol::AnthropicMessages)
        } else if path.ends_with("/mistral/v1/chat/completions") {
            Some(Protocol::MistralConversations)
        } else if path.ends_with("/chat/completions") {
            Some(Protocol::OpenAiCompletions)
        } else if path.ends_with("/openai/v1/responses") {
            Some(Protocol::AzureOpenAiResponses)
        } else if path.ends_with("/responses") {
            Some(Protocol::OpenAiResponses)
        } else if google_model(path).is_some() && path.contains("/publishers/google/models/") {
            Some(Protocol::GoogleVertex)
        } else if google_model(path).is_some() {
            Some(Protocol::GoogleGenerativeAi)
        } else {
            None
        }
    }

    /// pi's name for the protocol (its `api` value).
    pub fn api_name(self) -> &'static str {
        match self {
            Protocol::AnthropicMessages => "anthropic-messages",
            Protocol::OpenAiCompletions => "openai-completions",
            Protocol::OpenAiResponses => "openai-responses",
            Protocol::GoogleGenerativeAi => "google-generative-ai",
            Protocol::AzureOpenAiResponses => "azure-openai-responses",
            Protocol::GoogleVertex => "google-vertex",
            Protocol::MistralConversations => "mistral-conversations",
            Protocol::BedrockConverseStream => "bedrock-converse-stream",
        }
    }

    /// What a client appends to [`crate::MockProvider::url`] to get a model's base URL.
    pub fn base_path(self) -> &'static str {
        match self {
            Protocol::AnthropicMessages
            | Protocol::GoogleVertex
            | Protocol::BedrockConverseStream => "",
            Protocol::OpenAiCompletions | Protocol::OpenAiResponses => "/v1",
            Protocol::GoogleGenerativeAi => "/v1beta",
            Protocol::AzureOpenAiResponses => "/openai/v1",
            Protocol::MistralConversations => "/mistral",
        }
    }

    /// The request path a client posts to for `model`, relative to the server root.
    pub fn request_path(self, model: &str) -> String {
        match self {
            Protocol::AnthropicMessages => "/v1/messages".to_owned(),
            Protocol::OpenAiCompletions => "/v1/chat/completions".to_owned(),
            Protocol::OpenAiResponses => "/v1/responses".to_owned(),
            Protocol::GoogleGenerativeAi => {
                format!("/v1beta/models/{model}:streamGenerateContent?alt=sse")
            }
            Protocol::AzureOpenAiResponses => "/openai/v1/responses?api-version=v1".to_owned(),
            Protocol::GoogleVertex => {
                format!("/v1/publishers/google/models/{model}:streamGenerateContent?alt=sse")
            }
            Protocol::MistralConversations => "/mistral/v1/chat/completions".to_owned(),
            Protocol::BedrockConverseStream => {
                format!("/model/{}/converse-stream", model.replace(':', "%3A"))
            }
        }
    }

    /// The line ending the protocol's SSE frames use.
    pub fn line_end(self) -> &'static str {
        match self {
            Protocol::GoogleGenerativeAi | Protocol::GoogleVertex => "\r\n",
            Protocol::AnthropicMessages
            | Protocol::OpenAiCompletions
            | Protocol::OpenAiResponses
            | Protocol::AzureOpenAiResponses
            | Protocol::MistralConversations
            | Protocol::BedrockConverseStream => "\n",
        }
    }

    /// The `content-type` of the protocol's streaming responses.
    pub(crate) fn stream_content_type(self) -> &'static str {
        match self {
            Protocol::GoogleGenerativeAi | Protocol::GoogleVertex => "text/event-stream",
            Protocol::AnthropicMessages
            | Protocol::OpenAiCompletions
            | Protocol::OpenAiResponses
            | Protocol::AzureOpenAiResponses => "text/event-stream; charset=utf-8",
            Protocol::MistralConversations => "text/event-stream",
            Protocol::BedrockConverseStream => "application/vnd.amazon.eventstream",
        }
    }

    /// The mid-stream error frame, as frame number `position` of the stream.
    pub(crate) fn error_frame(
        self,
        message: &str,
        ctx: &StreamContext,
        position: usize,
    ) -> SseFrame {
        match self {
            Protocol::AnthropicMessages => anthropic::error_frame(message),
            Protocol::OpenAiCompletions => completions::error_frame(message),
            Protocol::OpenAiResponses | Protocol::AzureOpenAiResponses => {
                responses::error_frame(message, ctx, position)
            }
            Protocol::GoogleGenerativeAi | Protocol::GoogleVertex => google::error_frame(message),
            Protocol::MistralConversations => mistral::error_frame(message),
            Protocol::BedrockConverseStream => bedrock::error_frame(message),
        }
    }

    /// A frame shaped like the protocol's deltas whose JSON is cut short.
    pub(crate) fn malformed_frame(self) -> SseFrame {
        match self {
            Protocol::AnthropicMessages => anthropic::malformed_frame(),
            Protocol::OpenAiCompletions => completions::malformed_frame(),
            Protocol::OpenAiResponses | Protocol::AzureOpenAiResponses => {
                responses::malformed_frame()
            }
            Protocol::GoogleGenerativeAi | Protocol::GoogleVertex => google::malformed_frame(),
            Protocol::MistralConversations => mistral::malformed_frame(),
            Protocol::BedrockConverseStream => bedrock::malformed_frame(),
        }
    }

    /// The JSON body of an HTTP error response.
    pub(crate) fn http_error_body(self, status: u16, retry_after: Option<u64>) -> String {
        let message = format!("mock provider: HTTP {status}");
        match self {
            Protocol::AnthropicMessages => anthropic::http_error_body(status, &message),
            Protocol::OpenAiCompletions
            | Protocol::OpenAiResponses
            | Protocol::AzureOpenAiResponses => completions::http_error_body(status, &message),
            Protocol::GoogleGenerativeAi | Protocol::GoogleVertex => {
                google::http_error_body(status, &message, retry_after)
            }
            Protocol::MistralConversations => mistral::http_error_body(status, &message),
            Protocol::BedrockConverseStream => bedrock::http_error_body(&message),
        }
    }

    /// Headers an HTTP error response carries besides `content-type` (Bedrock names the
    /// exception in `x-amzn-errortype`).
    pub(crate) fn http_error_headers(self, status: u16) -> Vec<(&'static str, String)> {
        match self {
            Protocol::BedrockConverseStream => vec![(
                "x-amzn-errortype",
                format!(
                    "{}:http://internal.amazon.com/coral/com.amazon.bedrock/",
                    bedrock::error_type(status)
                ),
            )],
            Protocol::AnthropicMessages
            | Protocol::OpenAiCompletions
            | Protocol::OpenAiResponses
            | Protocol::GoogleGenerativeAi
            | Protocol::AzureOpenAiResponses
            | Protocol::GoogleVertex
            | Protocol::MistralConversations => Vec::new(),
        }
    }

    /// The bytes of one frame as the protocol puts it on the wire: SSE text, or a binary
    /// event-stream message.
    pub fn encode_frame(self, frame: &SseFrame) -> Vec<u8> {
        if self.is_sse() {
            frame.encode(self.line_end()).into_bytes()
        } else {
            bedrock::encode(frame)
        }
    }
}

/// The model named in a Google path `…/models/{model}:streamGenerateContent`.
pub(crate) fn google_model(path: &str) -> Option<&str> {
    let (_, rest) = path.rsplit_once("/models/")?;
    let model = rest.strip_suffix(":streamGenerateContent")?;
    (!model.is_empty() && !model.contains('/')).then_some(model)
}

/// The SSE frames of a complete `reply` in `protocol`, exactly as the mock sends them.
/// Faults count their `after_events` in these frames.
pub fn frames(protocol: Protocol, reply: &Reply, ctx: &StreamContext) -> Vec<SseFrame> {
    match protocol {
        Protocol::AnthropicMessages => anthropic::frames(reply, ctx),
        Protocol::OpenAiCompletions => completions::frames(reply, ctx),
        Protocol::OpenAiResponses | Protocol::AzureOpenAiResponses => responses::frames(reply, ctx),
        Protocol::GoogleGenerativeAi | Protocol::GoogleVertex => google::frames(reply, ctx),
        Protocol::MistralConversations => mistral::frames(reply, ctx),
        Protocol::BedrockConverseStream => bedrock::frames(reply, ctx),
    }
}

/// The bytes of `frames` as the protocol puts them on the wire.
pub fn encode(protocol: Protocol, frames: &[SseFrame]) -> Vec<u8> {
    frames
        .iter()
        .flat_map(|f| protocol.encode_frame(f))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_select_protocols() {
        let cases = [
            ("/v1/messages", Some(Protocol::AnthropicMessages)),
            ("/proxy/v1/messages/", Some(Protocol::AnthropicMessages)),
            ("/v1/chat/completions", Some(Protocol::OpenAiCompletions)),
            (
                "/api/v1/chat/completions",
                Some(Protocol::OpenAiCompletions),
            ),
            ("/v1/responses", Some(Protocol::OpenAiResponses)),
            (
                "/backend-api/codex/responses",
                Some(Protocol::OpenAiResponses),
            ),
            ("/openai/v1/responses", Some(Protocol::AzureOpenAiResponses)),
            (
                "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
                Some(Protocol::GoogleGenerativeAi),
            ),
            ("/v1beta/models/:streamGenerateContent", None),
            (
                "/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-flash:streamGenerateContent",
                Some(Protocol::GoogleVertex),
            ),
            ("/v1beta/models/gemini:generateContent", None),
            (
                "/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0/converse-stream",
                Some(Protocol::BedrockConverseStream),
            ),
            ("/v1/models", None),
            ("/", None),
        ];
        for (path, want) in cases {
            assert_eq!(Protocol::from_path(path), want, "{path}");
        }
    }

    #[test]
    fn request_paths_round_trip() {
        for p in Protocol::ALL {
            let path = p.request_path("m-1");
            let bare = path.split('?').next().unwrap_or_default();
            assert_eq!(Protocol::from_path(bare), Some(p));
        }
        assert_eq!(
            google_model("/v1beta/models/m-1:streamGenerateContent"),
            Some("m-1")
        );
    }
}
