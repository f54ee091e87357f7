//! pi-compatible JSONL session files: tree, leaf, migration, context building.
//!
//! Owns: reading session files tolerantly (bad lines are skipped and reported, never repaired),
//! writing them append-only in pi's exact JSON shapes, the entry tree and its leaf, the v1→v3
//! migration (an atomic rewrite that keeps the original as a `.bak` and every line it does not
//! understand), `build_session_context`, listing and `--continue` discovery. Files and directories
//! filo creates are private (0600 / 0700); a write that fails is reported and retried, never hidden.
//!
//! Does not own: HTTP, the DAG, the agent loop, settings.
//!
//! An opened file is held lazily (`store`): its message lines as positions in the file, parsed
//! when first read; the context and tree walks parse only what they return.
//!
//! Invariants: a user's file is never truncated (an append that fails partway is cut back to the
//! length the file had before it, so only filo's partial line goes); every line filo writes is one whole JSON object
//! followed by `\n`; files filo writes are resumable by pi and pi's by filo (pi spec §9).

pub mod context;
pub mod entry;
pub mod file;
pub mod ids;
mod key;
mod line;
pub mod list;
pub mod lock;
pub mod manager;
pub mod migrate;
pub mod paths;
mod store;
pub mod write;

pub use context::{
    ModelRef, SessionContext, build_session_context, convert_to_llm, message_to_llm,
};
pub use entry::{
    BashExecution, CustomMessage, EntryError, EntryKind, SessionEntry, SessionHeader,
    SessionMessage,
};
pub use file::{LoadWarning, SessionError};
pub use list::{SessionInfo, list_all_sessions, list_sessions, most_recent_session};
pub use lock::{LockError, SessionLock};
pub use manager::{Entries, SessionManager};
