//! The unified LLM layer: messages, model catalog, HTTP transport, SSE, retry, one module per wire protocol.
//!
//! Owns: message and content-block types (pi's JSON shapes), the model catalog and providers as data, the four wire codecs, the stream contract and its single accumulator, error classification and retry.
//!
//! Does not own: sessions, tools, the agent loop, anything on disk besides models.json parsing.

pub mod message;

pub use message::{
    AssistantMessage, ContentBlock, Context, Cost, ImageContent, Message, StopReason, TextContent,
    ThinkingContent, Tool, ToolCall, ToolResultMessage, Usage, UserContent, UserMessage,
};
pub mod event;
pub mod model;
pub mod partial_json;

pub use event::{Accumulator, AssistantEvent, AssistantStream};
pub use model::{Model, ModelCost, ThinkingLevel};
pub mod client;

pub use client::{ModelClient, StreamOptions};
