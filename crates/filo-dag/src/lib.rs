//! The Playfilo DAG store: schema V4, canonical hashing, refs, action log, life/recall/trace.
//!
//! Owns: the SQLite schema and migrations, canonical hashing bit-identical to the reference, blobs,
//! nodes, refs, the action log, lineage queries, recovery of pi entries, the life/recall/trace
//! renderers.
//!
//! Does not own: HTTP, session files on disk, the agent loop; the clock (callers pass it in).
//!
//! Invariants: every write runs in one `BEGIN IMMEDIATE` transaction; blobs and nodes are
//! immutable (`INSERT OR IGNORE`, first writer wins); ids are [`canon`] hashes identical to the
//! reference; nothing here reads the wall clock or the environment.

pub mod canon;
mod diagnose;
mod error;
mod fsck;
#[cfg(feature = "golden")]
pub mod golden;
mod model;
mod read;
mod recover;
pub mod render;
mod sql;
mod store;
pub mod text;
mod walk;
mod write;

#[cfg(test)]
mod plan_tests;

pub use diagnose::{Diagnosis, diagnose};
pub use error::{DagError, Result};
pub use fsck::{FsckReport, PathEntry, Problem, Stats};
pub use model::{
    Action, Blob, Committed, Expect, NewAction, NewBlob, Node, NodeCommit, Parent, RefMove,
    action_type, blob_type, carryover_text, role, short_id,
};
pub use store::{Create, SCHEMA_VERSION, Store};
