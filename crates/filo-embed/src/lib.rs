//! The embedded runner (OpenClaw layer): run one turn for one session key with callbacks,
//! robustly, on top of filo-core's `AgentSession`.
//!
//! Owns: the [`Embedder`] — `run`, `run_streaming`, `run_with_fallback`, `compact`, `runs()`,
//! `lanes()`, `shutdown` — with the run loop and one attempt (`run`): profile rotation with
//! cooldowns (`auth`), the model fallback chain (`failover`), thinking-level fallback, overflow →
//! compaction → retry, the compaction safeguard and cache-TTL context pruning
//! (`history::{safeguard, pruning}`), error classification and user-facing copy (`classify`,
//! `error`, `run::payloads`); per-session and global lanes (`lanes`), the active-run registry
//! (`registry`), session keys, paths and the `sessions.json` store (`session_key`, `paths`,
//! `session_store`), the idle-session cache, the cross-process session lock, transcript hygiene
//! (`history::{guard, repair, policy, limit}`), the streaming subscriber and its reply sinks
//! (`subscriber`, `sink`), the reply text tools (`stream`: code-fence-safe block chunking,
//! think/final tags, directives, `MEDIA:` lines, silent replies, duplicate suppression), tool
//! policy, schema normalisation and the sandbox guard (`tools`), usage (`usage`), the Playfilo
//! memory of embedded sessions (`memory`) and the config file (`config`). The gateway that serves
//! it is `filo-gateway`.
//!
//! Does not own: the agent loop itself, providers' wire formats, session files (filo-agent,
//! filo-ai, filo-session).
//!
//! Invariants: no global state and no environment reads — everything comes in through
//! [`EmbedDeps`]; a turn that could not be kept is named in its result's warnings; every function
//! in `classify`, `stream` and `run::payloads` is pure (no IO, no
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
pub mod prompt;
pub mod queue;
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
pub use embedder::{
    AuthBacking, CompactParams, EmbedDeps, Embedder, RunTask, ToolContext, ToolFactory,
};
pub use error::{FailoverError, RunError};
pub use failover::{FallbackAttempt, FallbackResult};
pub use paths::EmbedPaths;
pub use run::compact::CompactResult;
pub use run::params::{RunParams, RunResult};
pub use sink::{BlockReply, ChannelSink, NullSink, PartialReply, ReplyEvent, ReplySink};
