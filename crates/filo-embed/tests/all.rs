//! filo-embed's end-to-end tests: the embedded runner against the scripted mock provider
//! (design §6, D1–D9).

// Helpers outside #[test] functions unwrap too: this whole binary is test code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
