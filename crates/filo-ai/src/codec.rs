//! What the wire codecs share: the wire-protocol enum, request inputs, header merging and
//! small conversion helpers. Protocol specifics live in one module per protocol.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::client::StreamOptions;
use crate::driver::Decoder;
use crate::env::Env;
use crate::error::AiError;
use crate::message::Context;
use crate::model::Model;
use crate::transport::HttpRequest;

/// The wire protocols. Every vendor is one of these plus data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WireApi {
    AnthropicMessages,
    OpenAiCompletions,
    OpenAiResponses,
    GoogleGenerativeAi,
    /// OpenAI Responses on an Azure OpenAI resource (`api-key` header, `api-version` query).
    AzureOpenAiResponses,
    /// Gemini on Vertex AI (API key, or Application Default Credentials).
    GoogleVertex,
    /// Mistral's chat stream, as the Mistral SDK speaks it.
    MistralConversations,
    /// Amazon Bedrock's ConverseStream (SigV4 or a bearer token; an AWS event stream).
    BedrockConverseStream,
}

impl WireApi {
    /// The protocol for pi's `api` string.
    pub fn parse(api: &str) -> Result<Self, AiError> {
        match api {
            "anthropic-messages" => Ok(WireApi::AnthropicMessages),
            "openai-completions" => Ok(WireApi::OpenAiCompletions),
            "openai-responses" => Ok(WireApi::OpenAiResponses),
            "google-generative-ai" => Ok(WireApi::GoogleGenerativeAi),
            "azure-openai-responses" => Ok(WireApi::AzureOpenAiResponses),
            "google-vertex" => Ok(WireApi::GoogleVertex),
            "mistral-conversations" => Ok(WireApi::MistralConversations),
            "bedrock-converse-stream" => Ok(WireApi::BedrockConverseStream),
            other => Err(AiError::UnknownApi { api: other.into() }),
        }
    }

    /// pi's `api` string.
    pub fn as_str(self) -> &'static str {
        match self {
            WireApi::AnthropicMessages => "anthropic-messages",
            WireApi::OpenAiCompletions => "openai-completions",
            WireApi::OpenAiResponses => "openai-responses",
            WireApi::GoogleGenerativeAi => "google-generative-ai",
            WireApi::AzureOpenAiResponses => "azure-openai-responses",
            WireApi::GoogleVertex => "google-vertex",
            WireApi::MistralConversations => "mistral-conversations",
            WireApi::BedrockConverseStream => "bedrock-converse-stream",
        }
    }
}

/// Inputs of one request.
#[derive(Debug, Clone, Copy)]
pub struct RequestInput<'a> {
    pub model: &'a Model,
    pub context: &'a Context,
    pub options: &'a StreamOptions,
    /// The resolved key; `None` for keyless local servers.
    pub api_key: Option<&'a str>,
    /// Headers of the provider record (models.json), applied before the model's.
    pub provider_headers: &'a BTreeMap<String, String>,
    /// Request time in ms, used for synthetic tool results.
    pub now_ms: i64,
    /// The environment, for the settings some protocols read from it (Azure's base URL and
    /// API version, Vertex's project and location, AWS credentials).
    pub env: &'a Env,
}

impl RequestInput<'_> {
    /// `options.max_tokens`, else `min(model.max_tokens, 32000)` (pi's `buildBaseOptions`).
    pub fn base_max_tokens(&self) -> u64 {
        self.options.max_tokens.unwrap_or_else(|| {
            if self.model.max_tokens == 0 {
                32000
            } else {
                self.model.max_tokens.min(32000)
            }
        })
    }

    /// Finish a request: merge headers (codec defaults, then provider, model and option
    /// headers; later wins, names compared case-insensitively).
    pub fn request(
        &self,
        url: String,
        defaults: Vec<(String, String)>,
        body: Value,
    ) -> HttpRequest {
        let mut headers: Vec<(String, String)> = Vec::new();
        let layers = defaults.into_iter().chain(
            self.provider_headers
                .iter()
                .chain(self.model.headers.iter().flatten())
                .chain(self.options.headers.iter())
                .map(|(k, v)| (k.clone(), v.clone())),
        );
        for (name, value) in layers {
            let name = name.to_ascii_lowercase();
            match headers.iter_mut().find(|(k, _)| *k == name) {
                Some(slot) => slot.1 = value,
                None => headers.push((name, value)),
            }
        }
        HttpRequest { url, headers, body }
    }
}

/// Build the request for a model's protocol. Fails when a protocol's required settings are
/// missing (Azure's base URL, …).
pub(crate) fn build_request(
    api: WireApi,
    input: &RequestInput<'_>,
) -> Result<HttpRequest, AiError> {
    match api {
        WireApi::AnthropicMessages => Ok(crate::anthropic::build_request(input)),
        WireApi::OpenAiCompletions => Ok(crate::openai_completions::build_request(input)),
        WireApi::OpenAiResponses => Ok(crate::openai_responses::build_request(input)),
        WireApi::GoogleGenerativeAi => Ok(crate::google::build_request(input)),
        WireApi::AzureOpenAiResponses => crate::azure::build_request(input),
        WireApi::GoogleVertex => crate::google_vertex::build_request(input),
        WireApi::MistralConversations => Ok(crate::mistral::build_request(input)),
        WireApi::BedrockConverseStream => crate::bedrock::build_request(input),
    }
}

/// What a protocol must do before each attempt: Vertex without an API key fetches an access
/// token from Application Default Credentials; Bedrock signs with SigV4; the others send the
/// request as built.
pub(crate) fn prepare(
    api: WireApi,
    model: &Model,
    api_key: Option<&str>,
    env: &Env,
    tokens: &std::sync::Arc<crate::google_vertex::AccessTokens>,
) -> Result<Option<crate::driver::Prepare>, AiError> {
    match api {
        WireApi::GoogleVertex if crate::google_vertex::usable_key(api_key).is_none() => {
            crate::google_vertex::adc_prepare(env, tokens.clone()).map(Some)
        }
        WireApi::BedrockConverseStream => crate::bedrock::prepare(model, env),
        WireApi::GoogleVertex
        | WireApi::AnthropicMessages
        | WireApi::OpenAiCompletions
        | WireApi::OpenAiResponses
        | WireApi::GoogleGenerativeAi
        | WireApi::AzureOpenAiResponses
        | WireApi::MistralConversations => Ok(None),
    }
}

/// A fresh decoder for a model's protocol.
pub(crate) fn new_decoder(api: WireApi, model: &Model, context: &Context) -> Box<dyn Decoder> {
    match api {
        WireApi::AnthropicMessages => Box::new(crate::anthropic::AnthropicDecoder::new(
            context
                .tools
                .iter()
                .flatten()
                .map(|t| t.name.clone())
                .collect(),
        )),
        WireApi::OpenAiCompletions => {
            Box::new(crate::openai_completions::CompletionsDecoder::default())
        }
        WireApi::OpenAiResponses | WireApi::AzureOpenAiResponses => {
            Box::new(crate::openai_responses::ResponsesDecoder::default())
        }
        WireApi::GoogleGenerativeAi | WireApi::GoogleVertex => {
            Box::new(crate::google::GoogleDecoder::new(model))
        }
        WireApi::MistralConversations => Box::new(crate::mistral::MistralDecoder::default()),
        WireApi::BedrockConverseStream => Box::new(crate::bedrock::BedrockDecoder::default()),
    }
}

/// Join a base URL and a path with exactly one `/`.
pub fn join_url(base: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

/// Whether text is empty or whitespace only.
pub fn is_blank(text: &str) -> bool {
    text.trim().is_empty()
}

/// pi's `parseStreamingJson` for a finished tool call: blank → `{}`, JSON, repaired partial
/// JSON, else `{}`.
pub fn parse_arguments(text: &str) -> Value {
    if is_blank(text) {
        return Value::Object(Default::default());
    }
    crate::partial_json::parse_partial(text).unwrap_or_else(|| Value::Object(Default::default()))
}

/// Decode a frame's JSON, turning a syntax error into a decode error that quotes the frame.
pub fn parse_frame<'a, T: serde::Deserialize<'a>>(data: &'a str) -> Result<T, AiError> {
    serde_json::from_str(data).map_err(|e| {
        let mut end = data.len().min(200);
        while !data.is_char_boundary(end) {
            end -= 1;
        }
        AiError::Decode(format!("{e} in `{}`", &data[..end]))
    })
}

/// A string field that reads as `None` when it holds anything but a string (an id a server
/// spells as a number or `null` must not make the whole frame unreadable). Borrows when it can.
pub fn str_or_none<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<std::borrow::Cow<'de, str>>, D::Error> {
    use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
    use std::borrow::Cow;
    struct Lenient;
    impl<'de> Visitor<'de> for Lenient {
        type Value = Option<Cow<'de, str>>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Borrowed(v)))
        }
        fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v.to_string())))
        }
        fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v)))
        }
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(None)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(None)
        }
    }
    deserializer.deserialize_any(Lenient)
}

/// [`str_or_none`], owned.
pub fn string_or_none<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    Ok(str_or_none(deserializer)?.map(std::borrow::Cow::into_owned))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_api_round_trip() {
        for api in [
            WireApi::AnthropicMessages,
            WireApi::OpenAiCompletions,
            WireApi::OpenAiResponses,
            WireApi::GoogleGenerativeAi,
            WireApi::AzureOpenAiResponses,
            WireApi::GoogleVertex,
            WireApi::MistralConversations,
            WireApi::BedrockConverseStream,
        ] {
            assert_eq!(WireApi::parse(api.as_str()), Ok(api));
        }
        assert_eq!(
            WireApi::parse("openai-codex-responses")
                .unwrap_err()
                .to_string(),
            "No API provider registered for api: openai-codex-responses"
        );
    }

    #[test]
    fn helpers() {
        assert_eq!(join_url("http://h/v1/", "/chat"), "http://h/v1/chat");
        assert_eq!(parse_arguments(""), serde_json::json!({}));
        assert_eq!(parse_arguments("{\"a\":1"), serde_json::json!({"a":1}));
        assert_eq!(parse_arguments("nonsense"), serde_json::json!({}));
        assert!(parse_frame::<Value>("{oops").is_err());
    }

    #[test]
    fn ids_that_are_not_strings_read_as_none() {
        #[derive(serde::Deserialize)]
        struct Frame<'a> {
            #[serde(default, borrow, deserialize_with = "str_or_none")]
            id: Option<std::borrow::Cow<'a, str>>,
            #[serde(default, deserialize_with = "string_or_none")]
            owned: Option<String>,
        }
        let f: Frame<'_> = parse_frame(r#"{"id":"chatcmpl-1","owned":"a\"b"}"#).unwrap();
        assert!(matches!(
            f.id,
            Some(std::borrow::Cow::Borrowed("chatcmpl-1"))
        ));
        assert_eq!(f.owned.as_deref(), Some("a\"b"));
        for odd in ["7", "null", "true", "[1,[2]]", r#"{"a":{"b":1}}"#, "1.5"] {
            let text = format!(r#"{{"id":{odd},"owned":{odd}}}"#);
            let f: Frame<'_> = parse_frame(&text).unwrap();
            assert_eq!((f.id, f.owned), (None, None), "{odd}");
        }
        let f: Frame<'_> = parse_frame("{}").unwrap();
        assert_eq!((f.id, f.owned), (None, None));
    }
}

/// A JSON array decoded without a heap allocation when it has at most one element (the common
/// case for `choices`, `candidates`, `parts` and `tool_calls` in a stream chunk).
#[derive(Debug)]
pub struct FewVec<T> {
    first: Option<T>,
    rest: Vec<T>,
}

impl<T> Default for FewVec<T> {
    fn default() -> Self {
        FewVec {
            first: None,
            rest: Vec::new(),
        }
    }
}

impl<T> FewVec<T> {
    pub fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    /// At most one element.
    pub fn from_first(first: Option<T>) -> Self {
        FewVec {
            first,
            rest: Vec::new(),
        }
    }

    /// The first element.
    pub fn into_first(self) -> Option<T> {
        self.first
    }
}

impl<T> IntoIterator for FewVec<T> {
    type Item = T;
    type IntoIter = std::iter::Chain<std::option::IntoIter<T>, std::vec::IntoIter<T>>;

    fn into_iter(self) -> Self::IntoIter {
        self.first.into_iter().chain(self.rest)
    }
}

impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for FewVec<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit<T>(std::marker::PhantomData<T>);
        impl<'de, T: serde::Deserialize<'de>> serde::de::Visitor<'de> for Visit<T> {
            type Value = FewVec<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<FewVec<T>, A::Error> {
                let mut out = FewVec {
                    first: seq.next_element()?,
                    rest: Vec::new(),
                };
                if out.first.is_some() {
                    while let Some(item) = seq.next_element()? {
                        out.rest.push(item);
                    }
                }
                Ok(out)
            }
            fn visit_unit<E>(self) -> Result<FewVec<T>, E> {
                Ok(FewVec::default())
            }
        }
        deserializer.deserialize_any(Visit(std::marker::PhantomData))
    }
}
