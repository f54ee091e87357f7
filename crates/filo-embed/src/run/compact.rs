//! Compaction outside a turn (C14, spec §5.1): the loop's explicit compaction after an overflow
//! the attempt could not recover from, and [`crate::Embedder::compact`].

use std::path::PathBuf;
use std::sync::Arc;

use filo_ai::{Model, ThinkingLevel};

use crate::embedder::Inner;
use crate::error::RunError;
use crate::memory::{flush_memory, open_memory};
use crate::run::session::{
    SessionSetup, create_session, lock_session, open_session, safeguard_for,
};

/// What a compaction did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactResult {
    pub ok: bool,
    pub compacted: bool,
    /// Why nothing was compacted, or the error.
    pub reason: Option<String>,
    pub summary: Option<String>,
    pub first_kept_entry_id: Option<String>,
    pub tokens_before: Option<u64>,
    /// What could not be kept: the compaction entry not in the session file, not in the memory,
    /// or a memory that would not open (the entry is then mirrored on the next resume).
    pub warnings: Vec<String>,
}

impl CompactResult {
    pub(crate) fn failed(reason: impl Into<String>) -> Self {
        Self {
            ok: false,
            compacted: false,
            reason: Some(reason.into()),
            summary: None,
            first_kept_entry_id: None,
            tokens_before: None,
            warnings: Vec::new(),
        }
    }
}

/// `EMBEDDED_COMPACTION_TIMEOUT_MS`.
pub const COMPACTION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// Compacts the session in `session_file` with `model` and `api_key`.
pub(crate) async fn compact_file(
    inner: &Inner,
    session_file: PathBuf,
    workspace: PathBuf,
    model: Model,
    api_key: String,
    custom_instructions: Option<&str>,
) -> Result<CompactResult, RunError> {
    let cwd = workspace.to_string_lossy().into_owned();
    let _lock = lock_session(inner, &session_file, COMPACTION_TIMEOUT).await?;
    // Nothing to compact in a missing file: no session id is needed to start one.
    let manager = open_session(session_file, None, cwd).await?;
    let has_conversation = manager
        .build_context()
        .messages
        .iter()
        .any(|m| matches!(m.role(), "user" | "assistant"));
    if !has_conversation {
        return Ok(CompactResult {
            ok: true,
            compacted: false,
            reason: Some("no real conversation messages".into()),
            ..CompactResult::failed("")
        });
    }
    // The compaction entry is mirrored like any other (a memory that cannot be opened does not
    // stop the compaction: the entry is mirrored when the session next resumes with it).
    let mut warnings = Vec::new();
    let memory = match open_memory(
        &inner.memory,
        &inner.config().memory,
        &inner.paths,
        inner.clock.clone(),
    ) {
        Ok(m) => m,
        Err(w) => {
            warnings.push(w);
            None
        }
    };
    let extensions = safeguard_for(inner, &model)
        .into_iter()
        .chain(
            memory
                .iter()
                .map(|m| m.clone() as Arc<dyn filo_core::Extension>),
        )
        .collect();
    let session = create_session(
        inner,
        SessionSetup {
            workspace,
            model,
            api_key,
            think_level: ThinkingLevel::Off,
            tools: Vec::new(),
            manager,
            extensions,
        },
    )?;
    let outcome =
        tokio::time::timeout(COMPACTION_TIMEOUT, session.compact(custom_instructions)).await;
    if let Some(u) = session.unsaved() {
        warnings.push(u.to_string());
    }
    if let Some(m) = &memory {
        warnings.extend(flush_memory(m));
    }
    let mut result = match outcome {
        Err(_) => {
            session.abort().await;
            CompactResult::failed("timeout")
        }
        Ok(Err(e)) => CompactResult::failed(e.to_string()),
        Ok(Ok(r)) => CompactResult {
            ok: true,
            compacted: true,
            reason: None,
            summary: Some(r.summary),
            first_kept_entry_id: Some(r.first_kept_entry_id),
            tokens_before: Some(r.tokens_before),
            warnings: Vec::new(),
        },
    };
    result.warnings = warnings;
    Ok(result)
}
