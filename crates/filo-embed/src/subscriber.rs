//! Parts of the streaming subscriber (C19, spec §8) that stand on their own: the ordered
//! block-reply dispatcher with its flush-before-tool barrier, tool-event helpers (name
//! normalisation, result sanitising, error tracking, output payloads) and the tool summary
//! format (C19a, spec §8.6).
//!
//! The text path of the subscriber (block chunking, think/final tags, directives, media and
//! messaging dedupe) uses the `stream` modules and is assembled where both are present.

pub mod dispatch;
pub mod tool_events;
pub mod tool_meta;
pub mod tool_state;
