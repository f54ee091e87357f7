//! The auth profiles' rotation state shared by every host (`filo_gateway.auth_state`).
//!
//! A profile that hit a rate limit on one host cools down on all of them, and the last good
//! profile of a provider is the same everywhere. The credentials themselves (`profiles`,
//! `order`) stay in each host's `auth-profiles.json`: they are host configuration, like the
//! config file, and no secret is copied into the database. What is shared is what the runs
//! write: `usageStats` and `lastGood`.
//!
//! The first host to use an agent's state seeds the row from its own file (so cooldowns that
//! file held are kept). Every change runs in one transaction holding the agent's row lock
//! (`SELECT … FOR UPDATE`), so two hosts recording a failure at once lose neither.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use filo_dag::postgres::Client;
use filo_embed::auth::{AuthProfileFile, AuthProfiles, AuthStoreError, ProfileBacking};

/// One agent's profile store: credentials from its file, rotation state from the database.
pub struct SharedAuthState {
    url: String,
    shown: String,
    agent: String,
    file: AuthProfileFile,
    /// A connection of its own (the store is used from blocking code, outside the async pool).
    client: Mutex<Option<Client>>,
}

impl SharedAuthState {
    pub fn new(url: &str, agent: &str, file: AuthProfileFile) -> Self {
        Self {
            url: url.to_owned(),
            shown: filo_dag::redact(url),
            agent: agent.to_owned(),
            file,
            client: Mutex::new(None),
        }
    }

    fn fail(&self, reason: impl std::fmt::Display) -> AuthStoreError {
        AuthStoreError::Backend {
            store: format!("auth state of agent {:?} in {}", self.agent, self.shown),
            reason: reason.to_string(),
        }
    }

    /// Runs `f` on this store's connection (opened on first use, reopened after it closed),
    /// on a plain thread when called from an async worker (the client blocks on its own
    /// runtime). A kept connection the server dropped since (a restart) fails before the
    /// server sees the call: then `f` runs once more on a new connection.
    fn on_client<T: Send>(
        &self,
        mut f: impl FnMut(&mut Client) -> Result<T, AuthStoreError> + Send,
    ) -> Result<T, AuthStoreError> {
        let mut work = move || {
            let mut slot = self.client.lock().unwrap_or_else(PoisonError::into_inner);
            let mut kept = slot.take().filter(|c| !c.is_closed());
            loop {
                let was_kept = kept.is_some();
                let mut client = match kept.take() {
                    Some(c) => c,
                    None => filo_dag::connect_client(&self.url).map_err(|e| self.fail(e))?,
                };
                let out = f(&mut client);
                // A connection that broke is not kept (closed here, off the async workers);
                // the next call opens a new one.
                if out.is_ok() || super::alive(&mut client) {
                    *slot = Some(client);
                    return out;
                }
                drop(client);
                if !was_kept {
                    return out;
                }
            }
        };
        if tokio::runtime::Handle::try_current().is_ok() {
            std::thread::scope(|s| {
                s.spawn(work)
                    .join()
                    .unwrap_or_else(|_| Err(self.fail("the database thread panicked")))
            })
        } else {
            work()
        }
    }
}

/// The shared part of a store as JSON text: `{"lastGood": …, "usageStats": …}`.
fn state_text(store: &AuthProfiles) -> Result<String, serde_json::Error> {
    let state = AuthProfiles {
        last_good: store.last_good.clone(),
        usage_stats: store.usage_stats.clone(),
        ..AuthProfiles::default()
    };
    state.to_json_string()
}

/// Puts the shared state `text` into `store` (replacing the file's).
fn apply_state(store: &mut AuthProfiles, text: &str) -> Result<(), AuthStoreError> {
    let state = AuthProfiles::parse(text, Path::new("filo_gateway.auth_state"))?;
    store.last_good = state.last_good;
    store.usage_stats = state.usage_stats;
    Ok(())
}

/// Whether `a` and `b` differ in what the file keeps (everything but the shared state).
fn file_part_differs(a: &AuthProfiles, b: &AuthProfiles) -> bool {
    a.version != b.version || a.profiles != b.profiles || a.order != b.order || a.extra != b.extra
}

impl ProfileBacking for SharedAuthState {
    fn load(&self) -> Result<AuthProfiles, AuthStoreError> {
        let mut store = self.file.load()?;
        let agent = self.agent.clone();
        let shared: Option<String> = self.on_client(|c| {
            c.query_opt(
                "SELECT state FROM filo_gateway.auth_state WHERE agent = $1",
                &[&agent],
            )
            .map(|row| row.map(|r| r.get(0)))
            .map_err(|e| self.fail(filo_dag::DagError::from(e)))
        })?;
        // No row yet: nobody has written state for this agent; the file's own is what there is.
        if let Some(text) = shared {
            apply_state(&mut store, &text)?;
        }
        Ok(store)
    }

    fn update(
        &self,
        change: &mut (dyn FnMut(&mut AuthProfiles) + Send),
    ) -> Result<AuthProfiles, AuthStoreError> {
        let from_file = self.file.load()?;
        let seed = state_text(&from_file).map_err(|e| self.fail(e))?;
        let agent = self.agent.clone();
        let now = crate::run::now_ms();
        let pg = |e: filo_dag::postgres::Error| self.fail(filo_dag::DagError::from(e));
        self.on_client(|c| {
            let mut tx = c.transaction().map_err(pg)?;
            tx.execute(
                "INSERT INTO filo_gateway.auth_state (agent, state, updated_ms) \
                 VALUES ($1, $2, $3) ON CONFLICT (agent) DO NOTHING",
                &[&agent, &seed, &now],
            )
            .map_err(pg)?;
            let current: String = tx
                .query_one(
                    "SELECT state FROM filo_gateway.auth_state WHERE agent = $1 FOR UPDATE",
                    &[&agent],
                )
                .map_err(pg)?
                .get(0);
            let mut store = from_file.clone();
            apply_state(&mut store, &current)?;
            change(&mut store);
            if file_part_differs(&store, &from_file) {
                // Credentials or order changed: they belong to this host's file.
                let wanted = store.clone();
                self.file.update(|f| {
                    f.version = wanted.version;
                    f.profiles = wanted.profiles.clone();
                    f.order = wanted.order.clone();
                    f.extra = wanted.extra.clone();
                })?;
            }
            let text = state_text(&store).map_err(|e| self.fail(e))?;
            if text != current {
                tx.execute(
                    "UPDATE filo_gateway.auth_state SET state = $2, updated_ms = $3 \
                     WHERE agent = $1",
                    &[&agent, &text, &now],
                )
                .map_err(pg)?;
            }
            tx.commit().map_err(pg)?;
            Ok(store)
        })
    }
}

impl Drop for SharedAuthState {
    fn drop(&mut self) {
        // Closing a client blocks on its own runtime: never on an async worker.
        let client = self
            .client
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(client) = client {
            let closer = std::thread::spawn(move || drop(client));
            let _ = closer.join();
        }
    }
}

/// The backing [`filo_embed::Embedder::set_auth_backing`] takes: every agent's state in `url`.
pub fn backing(url: &str) -> filo_embed::AuthBacking {
    let url = url.to_owned();
    Arc::new(move |agent: &str, file: AuthProfileFile| {
        Arc::new(SharedAuthState::new(&url, agent, file)) as Arc<dyn ProfileBacking>
    })
}
