//! The streaming subscriber (C19, spec §8): agent events in, reply callbacks out.
//!
//! - [`machine`]: the event state machine (partials, block replies, reasoning, tool summaries and
//!   outputs, flush-before-tool, lifecycle and compaction events);
//! - [`dispatch`]: ordered, awaited delivery to the sink with the flush barrier;
//! - [`tool_events`], [`tool_state`], [`tool_meta`]: tool-event helpers, the last-tool-error rule
//!   and the tool summary format (C19a, spec §8.6).
//!
//! Think/final tag stripping, directives and block chunking plug in through
//! [`machine::TextShaper`] and [`machine::Chunker`] (implemented by the `stream` modules).

pub mod dispatch;
pub mod machine;
pub mod shaping;
pub mod tool_events;
pub mod tool_meta;
pub mod tool_state;
