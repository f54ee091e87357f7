//! filo-gateway's end-to-end tests: the gateway over the scripted mock provider (design §6,
//! D10–D11, hostile clients, 100 sessions, draining).

// Helpers outside #[test] functions unwrap too: this whole binary is test code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
