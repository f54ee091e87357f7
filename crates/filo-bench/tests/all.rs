//! Integration tests of `filo-mock-server` (the real binary, driven over raw HTTP).

mod suite;
