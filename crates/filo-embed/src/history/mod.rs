//! Transcript history handling for embedded runs.
//!
//! - [`limit`]: history limits per channel and DM (C17).

pub mod limit;
