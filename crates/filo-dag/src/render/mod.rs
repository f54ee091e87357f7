//! The `life`, `recall` and `trace` tool outputs (spec §7), byte-identical to the reference
//! except where a doc comment names a fixed reference bug. Every renderer takes its clock or
//! time zone as a parameter.

mod life;
mod preview;
mod recall;
mod trace;

pub use life::{LifeOptions, age, life};
pub use preview::FilterMode;
pub(crate) use preview::truthy as preview_truthy;
pub use recall::{RecallOptions, recall};
pub use trace::{FixedOffset, LocalOffset, TraceMode, TraceOptions, trace};
