//! Test support only: the scripted mock provider, SSE frame builders and temporary homes.
//!
//! Owns: [`MockProvider`], an axum server on 127.0.0.1 serving the wire protocols
//! (Anthropic Messages, OpenAI Chat Completions, OpenAI Responses, Google Generative AI, Azure
//! OpenAI Responses, Google Vertex, Mistral, Amazon Bedrock's binary event stream) from a script of [`Turn`]s, framed the way the real services frame their streams, with faults
//! (HTTP errors, error events, cuts, stalls, malformed frames) and request recording; the frame
//! renderer [`frames`] so a parser can be driven without a server; [`TokenEndpoint`], a local
//! OAuth token service for credential refresh; a refresh-token exchange on the mock itself
//! (`POST …/token`, Google's OAuth shape); [`TempHome`].
//!
//! Does not own: anything compiled into filo itself. This crate is a dev-dependency only and
//! does not depend on `filo-ai`: it speaks raw JSON and SSE, so every crate can use it.
//!
//! Invariants: one request consumes exactly one turn, in arrival order, whatever its protocol;
//! the frames a reply is sent as are exactly [`frames`] of it (faults count `after_events` in
//! them); tool-call argument fragments always concatenate to the compact JSON of the arguments;
//! the server never leaves 127.0.0.1 and no task outlives the [`MockProvider`].

mod alone;
mod anthropic;
mod bedrock;
mod completions;
mod frame;
mod google;
mod google_token;
mod home;
mod mistral;
pub mod pg;
mod protocol;
mod responses;
mod script;
mod server;
mod token;

pub use alone::alone;
pub use bedrock::{EXCEPTION as BEDROCK_EXCEPTION, encode_message as eventstream_message};
pub use frame::{ARG_FRAGMENT_BYTES, SseFrame, StreamContext, split_fragments, split_words};
pub use google_token::TokenRequest;
pub use home::TempHome;
pub use protocol::{Protocol, encode, frames};
pub use script::{Block, Fault, Reply, Stop, Turn, Usage};
pub use server::{EXHAUSTED_BODY, MockProvider, RecordedRequest};
pub use token::{TokenCall, TokenConfig, TokenEndpoint};
