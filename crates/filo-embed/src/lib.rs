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
//! guard (`tools`), usage accounting (`usage`). Later: the run loop, lanes, the failover chain,
//! transcript hygiene, the gateway.
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
pub mod error;
pub mod history;
pub mod paths;
mod pattern;
pub mod run;
pub mod session_key;
pub mod stream;
pub mod tools;
pub mod usage;
