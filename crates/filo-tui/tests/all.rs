//! The filo-tui integration tests: one binary, modules under `suite/`.

// Helpers outside #[test] functions unwrap too: this whole binary is test code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
