//! Integration tests of `filo-mock-server` (the real binary, driven over raw HTTP).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
