//! filo-ai's integration tests: the conformance grid every wire codec passes against the
//! `filo-testkit` mock provider, request-body snapshots per codec, and cross-codec handoff.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
