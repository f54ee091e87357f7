//! The run (design §3 C1–C3, C11, C14): parameters and result, the loop, one attempt, payloads
//! and compaction outside a turn.

pub mod attempt;
pub mod compact;
mod events;
pub mod params;
pub mod payloads;
pub(crate) mod prompt_text;
pub mod resolve;
pub mod run_loop;
pub(crate) mod session;
