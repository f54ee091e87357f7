//! `filo gateway`: the embedded runner ([`filo_embed::Embedder`]) as a server on one port —
//! OpenClaw's gateway WebSocket protocol (version 4), so OpenClaw's own clients (`openclaw
//! agent`, `tui`, `health`, `status`) work unchanged, and an OpenAI-compatible HTTP API, so any
//! OpenAI SDK can use a filo agent as its model.
//!
//! Owns: the routing of a message (session key → `sessions.json` entry → a run, or the
//! follow-up queue when a run is active: steer, followup, collect, interrupt), idempotency
//! keys, the WebSocket connections (handshake, token, per-connection event `seq`, ticks,
//! bounded outboxes that coalesce partial replies), the HTTP routes (health, metrics, session
//! routes, `/v1/chat/completions`, `/v1/responses`), draining.
//!
//! Does not own: running a turn (filo-embed), the transcript format (filo-session), providers
//! (filo-ai). It is a library so tests and programs can start a gateway in-process; the binary
//! is `filo gateway` in filo-cli.
//!
//! Invariants: every accepted message ends with exactly one terminal event for its request id
//! (final, error or aborted) — queued ones too, when they are dropped, reset or drained; a
//! session key is validated before it names anything on disk, and nothing is written outside
//! the state directory; a `chat.send` ack and its terminal event never leave in the same write
//! (the terminal event waits `terminalGapMs` after the ack); no environment reads.

pub mod auth;
pub mod config;
pub mod core;
pub mod frames;
mod handoff;
mod http;
pub mod hub;
pub mod metrics;
mod openai;
pub mod outcome;
mod reply;
mod run;
mod server;
pub mod sessions;
pub mod shared;
pub mod store;
mod ws;

pub use config::{GatewayConfig, GatewayConfigError, Overrides};
pub use core::{Accepted, Core, Submit, SubmitError};
pub use outcome::{RunEvent, RunOutcome, RunStatus};
pub use server::{DrainReport, Gateway, RunningGateway, workspace_resolver};
