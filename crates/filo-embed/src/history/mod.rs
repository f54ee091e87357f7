//! Transcript history handling for embedded runs.
//!
//! - [`limit`]: history limits per channel and DM (C17).
//! - [`repair`]: load-time repair of tool calls and results (C18).
//! - [`guard`]: the persist-time tool-result guard (C18).
//! - [`policy`]: transcript policy per provider and turn validation (C18).
//! - [`pruning`]: cache-TTL context pruning (C16).
//! - [`safeguard`]: the compaction safeguard (C15).

pub mod guard;
pub mod limit;
pub mod policy;
pub mod pruning;
pub mod repair;
pub mod safeguard;

#[cfg(test)]
mod fixtures;
