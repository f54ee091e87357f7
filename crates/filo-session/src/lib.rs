//! pi-compatible JSONL session files: tree, leaf, migration, context building.
//!
//! Owns: reading (tolerantly) and writing session files, the entry tree, v1->v3 migration, build_session_context.
//!
//! Does not own: HTTP, the DAG, the agent loop.
