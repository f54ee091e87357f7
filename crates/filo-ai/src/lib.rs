//! The unified LLM layer: messages, model catalog, HTTP transport, SSE, retry, one module per wire
//! protocol.
//!
//! Owns: message and content-block types (pi's JSON shapes), the model catalog and providers as
//! data (`data/catalog.json`, pi's `models.json`), API keys from an explicit environment map, the
//! wire codecs (Anthropic Messages, OpenAI Chat Completions, OpenAI Responses, Google
//! Generative AI, Azure OpenAI Responses, Google Vertex, Mistral, Amazon Bedrock with SigV4 and
//! AWS event-stream framing), the stream contract and its single accumulator, error
//! classification, retry with backoff and the idle timeout.
//!
//! Does not own: sessions, tools, the agent loop, auth storage and OAuth, running `!command`
//! values from models.json, anything on disk except the cloud credential files a protocol's
//! own SDK reads (Google Application Default Credentials, AWS shared credentials and config
//! files), at paths the passed-in environment names.
//!
//! Invariants: every stream yields `Start`, block events, then exactly one terminal `Done` or
//! `Error` and never panics; events are deltas (no event copies the partial message); retries
//! happen only before anything was yielded; signatures are carried byte for byte; no global
//! state (environment and catalogs are values passed in).

pub mod message;

pub use message::{
    AssistantMessage, ContentBlock, Context, Cost, ImageContent, Message, StopReason,
    SystemMessage, SystemState, TextContent, ThinkingContent, Tool, ToolCall, ToolResultMessage,
    Usage, UserContent, UserMessage,
};
pub mod event;
pub mod model;
pub mod partial_json;

pub use event::{Accumulator, AssistantEvent, AssistantStream};
pub use model::{
    Model, ModelCost, ThinkingLevel, ThinkingLevelMap, adjust_max_tokens_for_thinking,
    calculate_cost,
};
pub mod client;

pub use client::{
    CacheRetention, Client, DEFAULT_IDLE_TIMEOUT, ModelClient, StreamOptions, complete, now_ms,
};

pub mod anthropic;
pub mod aws_credentials;
pub mod aws_sigv4;
pub mod azure;
pub mod bedrock;
pub mod codec;
pub mod driver;
pub mod env;
pub mod error;
mod error_text;
pub mod eventstream;
pub mod form;
pub mod google;
pub mod google_vertex;
pub mod mistral;
mod models_json;
pub use models_json::SkippedProvider;
pub mod openai_completions;
pub mod openai_responses;
pub mod overflow;
pub mod registry;
mod responses_input;
pub mod sse;
pub mod transform;
pub mod transport;

#[cfg(test)]
mod testutil;

pub use codec::WireApi;
pub use driver::{CancelWatch, RetryPolicy};
pub use env::{Env, env_api_key};
pub use error::AiError;
pub use overflow::is_context_overflow;
pub use registry::{ProviderConfig, ProviderRegistry, RegistryError};
pub use transform::{transform_messages, transform_messages_borrowed};
#[cfg(any(test, feature = "testing"))]
pub use transport::{FixtureResponse, FixtureTransport};
pub use transport::{HttpRequest, ReqwestTransport, Transport};
