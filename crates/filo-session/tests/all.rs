//! Integration tests of filo-session (one test binary per crate).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
