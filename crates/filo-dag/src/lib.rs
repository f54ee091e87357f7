//! The Playfilo DAG store: schema V4, canonical hashing, refs, action log, life/recall/trace.
//!
//! Owns: the SQLite schema and migrations, canonical hashing bit-identical to the reference, blobs,
//! nodes, refs, the action log, lineage queries, recovery of pi entries, the life/recall/trace
//! renderers.
//!
//! Does not own: HTTP, session files on disk, the agent loop; the clock (callers pass it in).
//!
//! Two backends: an SQLite file (the reference's format, the default) and PostgreSQL (the schema
//! `playfilo`, for several hosts sharing one memory), behind the same [`Store`]; the same hashes,
//! outputs and semantics on both.
//!
//! Invariants: every write runs in one serialised transaction (`BEGIN IMMEDIATE`, or an advisory
//! lock on PostgreSQL); blobs and nodes are
//! immutable (`INSERT OR IGNORE`, first writer wins); ids are [`canon`] hashes identical to the
//! reference; nothing here reads the wall clock or the environment.

pub mod canon;
mod copy;
mod counts;
mod db;
mod diagnose;
mod error;
mod fsck;
#[cfg(feature = "golden")]
pub mod golden;
mod json_text;
mod model;
mod pg;
mod read;
mod recover;
mod recover_lines;
mod redact;
pub mod render;
mod sql;
mod store;
pub mod text;
mod walk;
mod write;

#[cfg(test)]
mod plan_tests;
#[cfg(test)]
mod test_support;

pub use copy::Copied;
pub use diagnose::{Diagnosis, diagnose};
pub use error::{DagError, Result};
pub use fsck::{FsckReport, PathEntry, Problem, Stats};
pub use model::{
    Action, Blob, Committed, Expect, NewAction, NewBlob, Node, NodeCommit, Parent, RefMove,
    action_type, blob_type, carryover_text, role, short_id,
};
pub use pg::{PG_LAYOUT_VERSION, connect_client, is_postgres_url, redact};
/// The PostgreSQL client crate the store uses (for [`connect_client`]'s callers).
pub use postgres;
pub use recover_lines::EntryLines;
pub use store::{Create, SCHEMA_VERSION, Store};
pub use walk::DEFAULT_MAX_DEPTH;
