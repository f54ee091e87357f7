//! filo-mcp's integration tests (one binary; the cases live in `suite/`).

// Helpers outside #[test] functions unwrap and say why they skip: this whole binary is test code.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

mod suite;
