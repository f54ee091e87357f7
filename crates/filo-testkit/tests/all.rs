//! Integration tests of the mock provider, driven by a raw HTTP/1.1 client over TCP.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
