//! Catching the DAG up with the session file on resume.
//!
//! The session file is the user's record and is written first; the DAG copy is queued for a
//! background writer. An abrupt exit (a signal, `kill -9`, a database that stayed locked) can
//! leave the last entries of the file without their nodes. Before the DAG is asked where to
//! resume, those entries are mirrored, each under its session parent's node, so a resume never
//! loses what the file holds.

use filo_dag::{DagError, Expect};
use filo_session::{SessionEntry, SessionManager};

use super::{Shared, lock};
use crate::extension::{EntryContext, SessionInfo};

/// What catching up did.
pub(crate) struct Caught {
    /// Entries mirrored now.
    pub mirrored: usize,
}

/// The context recorded with a node mirrored after the fact: the live context of the turn that
/// wrote the entry is gone, so the node carries no model, prompt or tool list (none of them is
/// part of the lineage).
fn late_context(manager: &SessionManager) -> EntryContext {
    EntryContext {
        session: SessionInfo {
            session_id: manager.session_id().to_string(),
            session_file: manager.session_file().map(std::path::Path::to_path_buf),
            cwd: std::path::PathBuf::from(manager.cwd()),
        },
        model: None,
        thinking_level: filo_ai::ThinkingLevel::default(),
        system_prompt: String::new(),
        tools: Vec::new(),
    }
}

/// Mirror the entries on the file's current path that follow its last mirrored entry, when the
/// session's head is still that entry's node (no jump moved it since) or the session has no head.
/// A file none of whose path is in the DAG and whose session has no head (a brand-new session
/// killed before its first commit landed, or a file filo never mirrored) is mirrored whole, from
/// a root of its own.
pub(crate) fn mirror_missing(
    shared: &Shared,
    manager: &SessionManager,
) -> Result<Caught, DagError> {
    // The common case costs one lookup: the file's leaf is in the DAG, so nothing follows it.
    let Some(leaf) = manager.leaf_id() else {
        return Ok(Caught { mirrored: 0 });
    };
    if shared.store().node_id_by_external_id(leaf)?.is_some() {
        return Ok(Caught { mirrored: 0 });
    }
    let path: Vec<SessionEntry> = manager.branch_path(None).into_iter().cloned().collect();
    let head_ref = lock(&shared.state).head_ref.clone();
    let (found, head) = {
        let store = shared.store();
        let found = store.node_ids_by_external_ids(path.iter().map(|e| e.id.as_str()))?;
        (found, store.get_ref(&head_ref)?)
    };
    let last = path.iter().rposition(|e| found.contains_key(&e.id));
    let tail = match last {
        Some(k) if k + 1 == path.len() => return Ok(Caught { mirrored: 0 }),
        Some(k) => {
            let node = &found[&path[k].id];
            if head.as_ref().is_some_and(|h| h != node) {
                return Ok(Caught { mirrored: 0 });
            }
            lock(&shared.state)
                .nodes
                .insert(path[k].id.clone(), node.clone());
            &path[k + 1..]
        }
        None if head.is_none() => &path[..],
        None => return Ok(Caught { mirrored: 0 }),
    };
    let ctx = late_context(manager);
    for entry in tail {
        let parent = entry
            .parent_id
            .as_ref()
            .and_then(|p| lock(&shared.state).nodes.get(p).cloned());
        // Only the session's head moves here; `PI_HEAD` follows when the resume boots.
        let commit = super::entry_commit(entry, &ctx, parent.as_deref(), shared.now())
            .move_ref(head_ref.clone(), Expect::Any);
        let id = shared.store().commit_node(&commit)?.id;
        let mut st = lock(&shared.state);
        st.head = Some(id.clone());
        st.nodes.insert(entry.id.clone(), id);
    }
    Ok(Caught {
        mirrored: tail.len(),
    })
}
