//! Test support only: scripted mock provider server, SSE builders, temp homes.
//!
//! Owns: the scripted mock provider speaking every wire protocol on 127.0.0.1, request recording, test fixtures.
//!
//! Does not own: anything compiled into filo itself: this crate is a dev-dependency only.
