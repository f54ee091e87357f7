//! The embedded runner (OpenClaw layer): run one turn for one session key with callbacks,
//! robustly, on top of filo-core's `AgentSession`.
//!
//! Owns (so far): error classification and user-facing error copy (`classify`), the
//! thinking-level fallback (`classify::thinking`), and the pure streaming text tools of the
//! reply path (`stream`): code-fence-safe block chunking, think/final tag stripping, reply
//! directives, `MEDIA:` lines, silent replies and messaging-tool duplicate suppression.
//! Later: run loop, lanes, auth profiles, failover, transcript hygiene, tool policy, gateway.
//!
//! Does not own: the agent loop itself, providers' wire formats, session files (filo-agent,
//! filo-ai, filo-session).
//!
//! Invariants: every function in `classify` and `stream` is pure (no IO, no clock, no global
//! mutable state — compiled regexes are immutable and built once); text lengths count `char`s,
//! never bytes, and no output ever splits a char; classification matches are exhaustive over
//! [`classify::FailoverReason`], so a new reason forces a decision at every use.

pub mod classify;
pub mod error;
mod pattern;
pub mod run;
pub mod stream;
