//! The filo-dag integration tests: one binary, modules under `suite/`.

mod suite;
