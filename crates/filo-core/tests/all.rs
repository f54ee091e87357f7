//! Integration tests of filo-core (one test binary per crate).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
