//! filo-mcp's integration tests (one binary; the cases live in `suite/`).

mod suite;
