//! The background writer's commits: each entry under its session parent's node, waited for while
//! another process holds the database's write lock, and never placed under a wrong parent. An
//! entry that cannot be committed waits, together with every entry that descends from it (see
//! [`Unmirrored`]); they are tried again before the next commit and on each flush, and in any
//! case stay in the session file and are mirrored when the session resumes.

use std::time::{Duration, Instant};

use filo_dag::{DagError, Expect, NodeCommit};
use filo_session::{SessionEntry, SessionMessage};

use super::{Shared, entry_commit, lock, mirror};
use crate::agent_session::SessionEvent;
use crate::extension::EntryContext;

/// An entry of the session file that is not in the memory, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unmirrored {
    /// The session entry id (the node's external id would be `pi:<id>`).
    pub entry_id: String,
    /// Why it is not in the memory.
    pub cause: String,
}

/// An entry that could not be committed yet, with what it needs to be tried again.
pub(crate) struct Pending {
    pub entry: SessionEntry,
    pub ctx: EntryContext,
    pub cause: String,
}

/// Where an entry goes.
enum Placement {
    /// Under this node (`None`: a root).
    Under(Option<String>),
    /// Its session parent is not in the memory: committing it elsewhere would mis-parent it.
    Blocked(String),
}

impl Shared {
    /// The node a new entry hangs under: its session parent's node when known, else this
    /// session's head, else (a brand-new session) `PI_HEAD` — boot inheritance. An entry whose
    /// parent could not be committed is blocked.
    fn placement(&self, entry: &SessionEntry) -> Placement {
        let (known, head) = {
            let st = lock(&self.state);
            if let Some(p) = &entry.parent_id
                && st.pending.iter().any(|w| &w.entry.id == p)
            {
                return Placement::Blocked(p.clone());
            }
            let known = entry
                .parent_id
                .as_ref()
                .and_then(|p| st.nodes.get(p).cloned());
            (known, st.head.clone())
        };
        if known.is_some() || head.is_some() {
            return Placement::Under(known.or(head));
        }
        let store = self.store();
        // A parent mirrored by an earlier process (a fork of a mirrored session).
        if let Some(p) = &entry.parent_id
            && let Ok(Some(id)) = store.node_id_by_external_id(p)
        {
            return Placement::Under(Some(id));
        }
        if lock(&self.state).inherit {
            return Placement::Under(store.get_ref("PI_HEAD").ok().flatten());
        }
        Placement::Under(None)
    }

    /// Commit one entry from the writer's queue. Entries still waiting from an earlier failure
    /// go first, in order, so the session's entries reach the memory as a chain under their
    /// parents once the database can be written again.
    pub(crate) fn commit_entry(&self, entry: &SessionEntry, ctx: &EntryContext) {
        self.retry_pending();
        if let Err(cause) = self.try_commit(entry, ctx, true) {
            let first = lock(&self.state).pending.is_empty();
            self.hold_back(entry, ctx, cause.clone());
            // One warning per streak: the entries after it wait for it.
            if first {
                self.warn(format!(
                    "Playfilo: entry {} ({}) is not in the memory: {cause}. It and the entries after it stay in the session file; they are written when the database can be written again, or when the session is resumed.",
                    entry.id,
                    entry.kind.type_name()
                ));
            }
        }
    }

    /// One more attempt for the entries waiting from an earlier failure (no patience: the busy
    /// timeout bounds it). Called before each new commit and by a flush.
    pub(crate) fn retry_pending(&self) {
        let waiting = std::mem::take(&mut lock(&self.state).pending);
        if waiting.is_empty() {
            return;
        }
        let total = waiting.len();
        let mut rest = waiting.into_iter();
        while let Some(mut p) = rest.next() {
            if let Err(cause) = self.try_commit(&p.entry, &p.ctx, false) {
                p.cause = cause;
                let mut st = lock(&self.state);
                st.pending = std::iter::once(p).chain(rest).collect();
                return;
            }
        }
        self.warn(format!(
            "Playfilo: the memory can be written again; the {total} entries that waited are in it"
        ));
    }

    /// Place and commit `entry`; the cause when it cannot be (its parent is waiting, or the
    /// database failed or stayed locked).
    fn try_commit(
        &self,
        entry: &SessionEntry,
        ctx: &EntryContext,
        patient: bool,
    ) -> Result<(), String> {
        let parent = match self.placement(entry) {
            Placement::Under(p) => p,
            Placement::Blocked(p) => {
                return Err(format!("its parent entry {p} is not in the memory"));
            }
        };
        let commit = entry_commit(entry, ctx, parent.as_deref(), self.now());
        let committed = if patient {
            self.commit_patiently(&commit, parent.as_deref())
        } else {
            self.commit_moving_heads(commit, parent.as_deref())
        };
        let id = committed.map_err(|e| e.to_string())?;
        lock(&self.state).nodes.insert(entry.id.clone(), id.clone());
        if let Some(SessionMessage::Llm(filo_ai::Message::Assistant(_))) = entry.message() {
            let ids = mirror::tool_call_ids(entry);
            lock(&self.state).last_assistant = Some((entry.id.clone(), id, ids));
        }
        Ok(())
    }

    fn hold_back(&self, entry: &SessionEntry, ctx: &EntryContext, cause: String) {
        // The writer tries it again by itself while it waits (see `hub::RETRY_WAITING`).
        self.hub.note_waiting(&self.me);
        let mut st = lock(&self.state);
        st.errors += 1;
        st.pending.push(Pending {
            entry: entry.clone(),
            ctx: ctx.clone(),
            cause,
        });
    }

    fn warn(&self, message: String) {
        if let Some(s) = self.session() {
            s.emit(&SessionEvent::Warning { message });
        }
    }

    /// Commit, retrying while another process holds the write lock, for up to the configured
    /// patience (SQLite's busy timeout applies within each attempt).
    fn commit_patiently(
        &self,
        commit: &NodeCommit,
        parent: Option<&str>,
    ) -> filo_dag::Result<String> {
        let start = Instant::now();
        let mut delay = Duration::from_millis(20);
        let mut told = false;
        loop {
            match self.commit_moving_heads(commit.clone(), parent) {
                Err(e) if e.is_busy() && start.elapsed() < self.hub.config.lock_patience => {
                    if !told {
                        told = true;
                        self.warn_waiting();
                    }
                    let left = self
                        .hub
                        .config
                        .lock_patience
                        .saturating_sub(start.elapsed());
                    std::thread::sleep(delay.min(left));
                    delay = (delay * 2).min(Duration::from_secs(1));
                }
                other => return other,
            }
        }
    }

    fn warn_waiting(&self) {
        if let Some(s) = self.session() {
            s.emit(&SessionEvent::Warning {
                message: format!(
                    "Playfilo: the memory database is locked by another process; waiting up to {} s to write",
                    self.hub.config.lock_patience.as_secs()
                ),
            });
        }
    }

    /// Commit a node and move this session's head and `PI_HEAD` to it in the same transaction.
    /// `PI_HEAD` moves only while it still holds what this session last saw; if another agent
    /// moved it, the node and the session head are committed without it, and that is reported.
    pub(crate) fn commit_moving_heads(
        &self,
        commit: NodeCommit,
        inherited: Option<&str>,
    ) -> filo_dag::Result<String> {
        let (head_ref, expected, lost) = {
            let st = lock(&self.state);
            let expected = st
                .pi_head_seen
                .clone()
                .or_else(|| inherited.map(str::to_string));
            (st.head_ref.clone(), expected, st.warned_pi_head)
        };
        let with_head = commit.move_ref(head_ref, Expect::Any);
        let attempt = if lost {
            Err(None)
        } else {
            let both = with_head
                .clone()
                .move_ref("PI_HEAD", Expect::Value(expected));
            self.store().commit_node(&both).map_err(Some)
        };
        let committed = match attempt {
            Ok(c) => {
                lock(&self.state).pi_head_seen = Some(c.id.clone());
                c
            }
            Err(Some(DagError::RefConflict { .. })) | Err(None) => {
                let c = self.store().commit_node(&with_head)?;
                self.warn_pi_head_moved();
                c
            }
            Err(Some(e)) => return Err(e),
        };
        lock(&self.state).head = Some(committed.id.clone());
        Ok(committed.id)
    }
}
