//! The run (design §3 C1–C3, C11, C14). So far: payload building (C11), which is pure.

pub mod payloads;
