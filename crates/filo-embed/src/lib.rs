//! The embedded runner and gateway (OpenClaw layer).
//!
//! Owns: running one turn per session key with callbacks, lanes, auth profile rotation, fallback, error classification, block chunking, reply directives, tool policy, the gateway server.
//!
//! Does not own: the agent loop itself, providers' wire formats.

pub mod auth;
pub mod clock;
pub mod history;
pub mod lanes;
pub mod paths;
pub mod registry;
pub mod session_key;
pub mod session_store;
pub mod subscriber;
pub mod tools;
pub mod usage;
