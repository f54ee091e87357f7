//! The Playfilo DAG store: schema V4, canonical hashing, refs, action log, life/recall/trace.
//!
//! Owns: the SQLite schema and migrations, canonical hashing bit-identical to the reference, blobs, nodes, refs, the action log, lineage queries, recovery of pi entries, the life/recall/trace renderers.
//!
//! Does not own: HTTP, session files on disk, the agent loop; the clock (callers pass it in).
