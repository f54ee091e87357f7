//! The embedded runner (OpenClaw layer): run one turn for one session key with callbacks,
//! robustly, on top of filo-core's `AgentSession`.
//!
//! Owns (so far, the pure half): error classification and `FailoverError` (`classify`,
//! `error`), user-facing error copy and reply payloads (`classify::copy`, `run::payloads`), the
//! thinking-level fallback (`classify::thinking`), the streaming text tools of the reply path
//! (`stream`): code-fence-safe block chunking, think/final tag stripping, reply directives,
//! `MEDIA:` lines, silent replies and messaging-tool duplicate suppression; auth profiles with
//! their persisted, cross-process state (`auth`), session keys and state paths (`session_key`,
//! `paths`), history limits (`history`), tool policy, schema normalisation and the sandbox path
//! guard (`tools`), usage accounting (`usage`), per-session and global lanes (`lanes`), the
//! active-run registry (`registry`), the `sessions.json` store and the session cache
//! (`session_store`), transcript hygiene (`history::{guard, repair, policy}`) and the streaming
//! subscriber that turns agent events into reply events (`subscriber`). Later: the run loop and
//! its public `Embedder` API, the failover chain, the gateway.
//!
//! Does not own: the agent loop itself, providers' wire formats, session files (filo-agent,
//! filo-ai, filo-session).
//!
//! Invariants: every function in `classify`, `stream` and `run::payloads` is pure (no IO, no
//! clock, no global mutable state — compiled regexes are immutable and built once); text lengths
//! count `char`s, never bytes, and no output ever splits a char; matches over
//! [`classify::FailoverReason`] are exhaustive, so a new reason forces a decision at every use.

pub mod auth;
pub mod classify;
pub mod clock;
pub mod config;
mod embedder;
pub mod error;
pub mod failover;
pub mod history;
pub mod lanes;
pub mod memory;
pub mod paths;
mod pattern;
pub mod registry;
pub mod run;
pub mod session_key;
pub mod session_store;
pub mod sink;
pub mod state_file;
pub mod stream;
pub mod subscriber;
pub mod tools;
pub mod usage;

pub use config::EmbedConfig;
pub use embedder::{CompactParams, EmbedDeps, Embedder, RunTask, ToolContext, ToolFactory};
pub use error::{FailoverError, RunError};
pub use failover::{FallbackAttempt, FallbackResult};
pub use paths::EmbedPaths;
pub use run::compact::CompactResult;
pub use run::params::{RunParams, RunResult};
pub use sink::{BlockReply, ChannelSink, NullSink, PartialReply, ReplyEvent, ReplySink};
