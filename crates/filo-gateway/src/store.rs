//! The session stores (`sessions.json`, one per agent) as the gateway uses them: read once, kept
//! in memory, changed in memory, and written back by group commit — one write (under the
//! cross-process lock, merged with what other writers put on disk) covers every change made
//! while the previous write was running. A caller that needs its change on disk awaits
//! [`AgentStore::durable`]; nothing is acknowledged as written before it is.
//!
//! Without this, every run rewrote the whole file twice, one run after another: with 1,000
//! sessions that was ~3 ms of parsing and writing per update, serialised.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use filo_embed::EmbedPaths;
use filo_embed::session_store::{SessionEntry, SessionStore, SessionStoreFile};
use tokio::sync::watch;

use crate::core::lock;

#[derive(Default)]
struct State {
    store: SessionStore,
    loaded: bool,
    /// Keys changed in memory since the write in progress took its snapshot.
    dirty: BTreeSet<String>,
    /// Bumped by every change.
    generation: u64,
    flushing: bool,
}

/// How far the file has caught up: the generation written last, and the error of the last
/// write if it failed.
#[derive(Debug, Clone, Default)]
struct Flushed {
    generation: u64,
    error: Option<(u64, String)>,
}

/// One agent's `sessions.json`.
pub struct AgentStore {
    file: SessionStoreFile,
    state: Mutex<State>,
    flushed: watch::Sender<Flushed>,
}

/// A change waiting to reach the disk.
#[derive(Debug, Clone, Copy)]
pub struct Ticket(u64);

impl AgentStore {
    fn new(file: SessionStoreFile) -> Arc<Self> {
        Arc::new(Self {
            file,
            state: Mutex::new(State::default()),
            flushed: watch::channel(Flushed::default()).0,
        })
    }

    pub fn path(&self) -> &std::path::Path {
        self.file.path()
    }

    /// Reads the file the first time (a blocking read; callers are on blocking threads or
    /// accept one read per agent per process).
    fn ensure_loaded(&self, st: &mut State) -> Result<(), String> {
        if !st.loaded {
            st.store = self.file.load().map_err(|e| error_chain(&e))?;
            st.loaded = true;
        }
        Ok(())
    }

    /// The entry of `key` if the store is in memory already (never reads the file).
    pub fn peek(&self, key: &str) -> Option<SessionEntry> {
        let st = lock(&self.state);
        st.loaded
            .then(|| st.store.entries.get(key).cloned())
            .flatten()
    }

    /// The entry of `key`, if any.
    pub async fn get(self: &Arc<Self>, key: &str) -> Result<Option<SessionEntry>, String> {
        let key = key.to_owned();
        self.read(move |s| s.entries.get(&key).cloned()).await
    }

    /// Reads the in-memory store.
    pub async fn read<R: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&SessionStore) -> R + Send + 'static,
    ) -> Result<R, String> {
        let this = self.clone();
        blocking(move || {
            let mut st = lock(&this.state);
            this.ensure_loaded(&mut st)?;
            Ok(f(&st.store))
        })
        .await
    }

    /// Changes `key`'s entry in memory (`change` may only touch that key) and starts a write when
    /// the entry changed; returns `change`'s value and a ticket for [`AgentStore::durable`].
    pub async fn update<R: Send + 'static>(
        self: &Arc<Self>,
        key: &str,
        change: impl FnOnce(&mut SessionStore) -> R + Send + 'static,
    ) -> Result<(R, Ticket), String> {
        let this = self.clone();
        let key = key.to_owned();
        blocking(move || {
            let mut st = lock(&this.state);
            this.ensure_loaded(&mut st)?;
            let before = st.store.entries.get(&key).cloned();
            let value = change(&mut st.store);
            if st.store.entries.get(&key) == before.as_ref() {
                // Nothing to write: durable once what is pending for the key is.
                let pending = st.dirty.contains(&key) || st.flushing;
                return Ok((value, Ticket(if pending { st.generation } else { 0 })));
            }
            st.dirty.insert(key);
            st.generation += 1;
            let ticket = Ticket(st.generation);
            let start = !st.flushing;
            st.flushing = true;
            drop(st);
            if start {
                let writer = this.clone();
                tokio::task::spawn_blocking(move || writer.write_loop());
            }
            Ok((value, ticket))
        })
        .await
    }

    /// Waits until the change of `ticket` is on disk; the write's error if it failed.
    pub async fn durable(&self, ticket: Ticket) -> Result<(), String> {
        let mut rx = self.flushed.subscribe();
        let seen = rx
            .wait_for(|f| {
                f.generation >= ticket.0 || f.error.as_ref().is_some_and(|(g, _)| *g >= ticket.0)
            })
            .await
            .map_err(|_| "the session store writer stopped".to_owned())?;
        match &seen.error {
            Some((g, e)) if *g >= ticket.0 && seen.generation < ticket.0 => Err(e.clone()),
            _ => Ok(()),
        }
    }

    /// Writes what changed until nothing is left (one thread at a time per store).
    fn write_loop(&self) {
        loop {
            let (keys, changes, generation) = {
                let mut st = lock(&self.state);
                if st.dirty.is_empty() {
                    st.flushing = false;
                    return;
                }
                let keys = std::mem::take(&mut st.dirty);
                let changes: Vec<(String, SessionEntry)> = keys
                    .iter()
                    .filter_map(|k| st.store.entries.get(k).cloned().map(|e| (k.clone(), e)))
                    .collect();
                (keys, changes, st.generation)
            };
            let written = self.file.update(|disk| {
                for (k, e) in changes {
                    disk.entries.insert(k, e);
                }
            });
            match written {
                Ok(((), disk)) => {
                    // Other writers' entries come in; keys changed meanwhile keep ours.
                    let mut st = lock(&self.state);
                    for (k, e) in disk.entries {
                        if !st.dirty.contains(&k) {
                            st.store.entries.insert(k, e);
                        }
                    }
                    drop(st);
                    self.flushed.send_modify(|f| f.generation = generation);
                }
                Err(e) => {
                    let message = format!(
                        "cannot write {}: {}",
                        self.path().display(),
                        error_chain(&e)
                    );
                    // The changes stay pending: the next change tries again.
                    let mut st = lock(&self.state);
                    st.dirty.extend(keys);
                    st.flushing = false;
                    drop(st);
                    self.flushed
                        .send_modify(|f| f.error = Some((generation, message)));
                    return;
                }
            }
        }
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| Err(format!("session store task failed: {e}")))
}

/// Every agent's store, opened on first use.
pub struct Stores {
    paths: EmbedPaths,
    by_agent: Mutex<HashMap<String, Arc<AgentStore>>>,
}

impl Stores {
    pub fn new(paths: EmbedPaths) -> Self {
        Self {
            paths,
            by_agent: Mutex::new(HashMap::new()),
        }
    }

    /// The store of `agent` (normalised id).
    pub fn agent(&self, agent: &str) -> Arc<AgentStore> {
        lock(&self.by_agent)
            .entry(agent.to_owned())
            .or_insert_with(|| AgentStore::new(SessionStoreFile::for_agent(&self.paths, agent)))
            .clone()
    }

    /// The transcript path of `key`'s entry in `agent`'s store.
    pub fn transcript_path(
        &self,
        agent: &str,
        key: &str,
        entry: &SessionEntry,
    ) -> Result<std::path::PathBuf, String> {
        SessionStoreFile::for_agent(&self.paths, agent)
            .transcript_path(key, entry)
            .map_err(|e| error_chain(&e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use filo_embed::clock::SystemClock;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn changes_reach_the_disk_in_batches_and_merge_with_other_writers() {
        let dir = tempfile::tempdir().unwrap();
        let paths = EmbedPaths::new(
            Some(dir.path().to_path_buf()),
            dir.path().into(),
            dir.path().into(),
        );
        let stores = Stores::new(paths.clone());
        let s = stores.agent("main");
        // Another writer's entry already on disk.
        SessionStoreFile::for_agent(&paths, "main")
            .update(|st| {
                st.get_or_create("agent:main:other", &SystemClock);
            })
            .unwrap();
        let mut tickets = Vec::new();
        for i in 0..50 {
            let key = format!("agent:main:k{i}");
            let (_, t) = s
                .update(&key.clone(), move |st| {
                    st.get_or_create(&key, &SystemClock).0.label = Some(format!("l{i}"));
                })
                .await
                .unwrap();
            tickets.push(t);
        }
        for t in tickets {
            s.durable(t).await.unwrap();
        }
        let disk = SessionStoreFile::for_agent(&paths, "main").load().unwrap();
        assert_eq!(disk.entries.len(), 51);
        assert_eq!(disk.entries["agent:main:k49"].label.as_deref(), Some("l49"));
        assert!(
            s.get("agent:main:other").await.unwrap().is_some(),
            "the other writer's entry is seen"
        );
    }

    #[tokio::test]
    async fn a_failed_write_is_reported_to_the_waiter() {
        let dir = tempfile::tempdir().unwrap();
        // The sessions directory is a file: nothing can be written under it.
        let state = dir.path().join("state");
        std::fs::create_dir_all(state.join("agents/main")).unwrap();
        std::fs::write(state.join("agents/main/sessions"), "not a directory").unwrap();
        let paths = EmbedPaths::new(Some(state), dir.path().into(), dir.path().into());
        let s = Stores::new(paths).agent("main");
        let r = s
            .update("agent:main:x", |st| {
                st.get_or_create("agent:main:x", &SystemClock);
            })
            .await;
        match r {
            Err(e) => assert!(e.contains("sessions"), "{e}"),
            Ok((_, t)) => {
                let e = s.durable(t).await.unwrap_err();
                assert!(e.contains("cannot write"), "{e}");
            }
        }
    }
}
