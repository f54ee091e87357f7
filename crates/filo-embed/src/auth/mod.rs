//! Auth profiles (C9): several credentials per provider, their order, cooldowns and billing
//! backoff, persisted in `auth-profiles.json` and shared safely between processes.
//!
//! - [`store`]: the data model and the file (lock, re-read, atomic replace).
//! - [`usage`]: cooldown and backoff arithmetic (pure, clock value in).
//! - [`order`]: which profile to try first.
//! - [`AuthProfileStore`]: a backing (the file, or one an embedding program supplies) plus a
//!   clock plus config, with an in-memory copy refreshed from every write and at every run.

pub mod order;
pub mod store;
pub mod usage;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde::Deserialize;

use crate::clock::Clock;
pub use order::resolve_auth_profile_order;
pub use store::{
    AuthProfileFile, AuthProfiles, AuthStoreError, Credential, CredentialKind, ProfileUsageStats,
};
pub use usage::{CooldownConfig, FailureReason};

/// Canonical provider id: trimmed, lower-case, with OpenClaw's aliases.
pub fn normalize_provider_id(provider: &str) -> String {
    let p = provider.trim().to_lowercase();
    match p.as_str() {
        "z.ai" | "z-ai" => "zai".into(),
        "opencode-zen" => "opencode".into(),
        "qwen" => "qwen-portal".into(),
        "kimi-code" => "kimi-coding".into(),
        _ => p,
    }
}

/// A profile declared in config (`auth.profiles.<id>`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ProfileConfig {
    pub provider: String,
    /// `api_key`, `token` or `oauth`.
    pub mode: String,
}

/// The `auth` section of the embed config.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthConfig {
    /// Rotation order per provider (the store's own `order` wins over this).
    #[serde(default)]
    pub order: BTreeMap<String, Vec<String>>,
    /// Declared profiles; ids in declaration order are the base order when no order is given.
    #[serde(default, deserialize_with = "ordered_profiles")]
    pub profiles: Vec<(String, ProfileConfig)>,
    #[serde(default)]
    pub cooldowns: CooldownConfig,
}

fn ordered_profiles<'de, D>(de: D) -> Result<Vec<(String, ProfileConfig)>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    // serde_json's map keeps file order, which is the declared rotation order.
    let map = serde_json::Map::<String, serde_json::Value>::deserialize(de)?;
    map.into_iter()
        .map(|(id, v)| {
            serde_json::from_value(v)
                .map(|p| (id.clone(), p))
                .map_err(|e| serde::de::Error::custom(format!("auth.profiles.{id}: {e}")))
        })
        .collect()
}

/// Where a profile store lives. [`AuthProfileFile`] is the default; an embedding program can
/// supply another (the gateway keeps the rotation state of several hosts in PostgreSQL).
pub trait ProfileBacking: Send + Sync {
    /// The store as it is now.
    fn load(&self) -> Result<AuthProfiles, AuthStoreError>;
    /// Calls `change` exactly once on the current store, atomically with respect to every other
    /// writer of the same store (other threads, processes, hosts), and returns the store as
    /// written.
    fn update(
        &self,
        change: &mut (dyn FnMut(&mut AuthProfiles) + Send),
    ) -> Result<AuthProfiles, AuthStoreError>;
}

impl ProfileBacking for AuthProfileFile {
    fn load(&self) -> Result<AuthProfiles, AuthStoreError> {
        AuthProfileFile::load(self)
    }

    fn update(
        &self,
        change: &mut (dyn FnMut(&mut AuthProfiles) + Send),
    ) -> Result<AuthProfiles, AuthStoreError> {
        AuthProfileFile::update(self, change).map(|((), written)| written)
    }
}

/// A profile store with a clock and the auth config. Clones share the in-memory copy.
#[derive(Clone)]
pub struct AuthProfileStore {
    file: Arc<dyn ProfileBacking>,
    clock: Arc<dyn Clock>,
    config: Arc<AuthConfig>,
    cache: Arc<Mutex<AuthProfiles>>,
}

impl AuthProfileStore {
    /// Opens the store (reading it once; a malformed file is an error here, not later).
    pub fn open(
        file: AuthProfileFile,
        clock: Arc<dyn Clock>,
        config: Arc<AuthConfig>,
    ) -> Result<Self, AuthStoreError> {
        Self::open_backing(Arc::new(file), clock, config)
    }

    /// Opens a store kept in `backing`.
    pub fn open_backing(
        file: Arc<dyn ProfileBacking>,
        clock: Arc<dyn Clock>,
        config: Arc<AuthConfig>,
    ) -> Result<Self, AuthStoreError> {
        let current = file.load()?;
        Ok(Self {
            file,
            clock,
            config,
            cache: Arc::new(Mutex::new(current)),
        })
    }

    /// The clock cooldowns are measured with.
    pub fn clock(&self) -> &dyn Clock {
        self.clock.as_ref()
    }

    /// The last state read or written.
    pub fn snapshot(&self) -> AuthProfiles {
        self.cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Re-reads the store (other processes and hosts change it).
    pub fn reload(&self) -> Result<AuthProfiles, AuthStoreError> {
        let current = self.file.load()?;
        *self.cache.lock().unwrap_or_else(PoisonError::into_inner) = current.clone();
        Ok(current)
    }

    /// Applies `change` under the file lock to the freshly read file, writes it, and refreshes
    /// the in-memory copy from what was written.
    pub fn update<R: Send>(
        &self,
        change: impl FnOnce(&mut AuthProfiles, i64) -> R + Send,
    ) -> Result<R, AuthStoreError> {
        let now = self.clock.now_ms();
        let mut change = Some(change);
        let mut value = None;
        let written = self.file.update(&mut |s| {
            if let Some(f) = change.take() {
                value = Some(f(s, now));
            }
        })?;
        *self.cache.lock().unwrap_or_else(PoisonError::into_inner) = written;
        value.ok_or_else(|| AuthStoreError::Backend {
            store: "auth profile store".into(),
            reason: "the backing did not apply the change".into(),
        })
    }

    /// Candidate profile ids for `provider`, best first.
    pub fn order(&self, provider: &str, preferred: Option<&str>) -> Vec<String> {
        let store = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        resolve_auth_profile_order(
            &self.config,
            &store,
            provider,
            preferred,
            self.clock.now_ms(),
        )
    }

    /// Records a failed call with `id` (and model, for per-model cooldowns).
    pub fn mark_failure(
        &self,
        id: &str,
        reason: FailureReason,
        model: Option<&str>,
    ) -> Result<(), AuthStoreError> {
        let cooldowns = self.config.cooldowns.clone();
        self.update(|s, now| usage::mark_failure(s, id, reason, &cooldowns, model, now))
    }

    /// Records a successful call with `id`.
    pub fn mark_used(&self, id: &str, model: Option<&str>) -> Result<(), AuthStoreError> {
        self.update(|s, now| usage::mark_used(s, id, model, now))
    }

    /// Remembers `id` as the last good profile of its provider.
    pub fn mark_good(&self, id: &str) -> Result<(), AuthStoreError> {
        self.update(|s, _| usage::mark_good(s, id))
    }

    /// Whether `id` (optionally for `model`) is cooling down now.
    pub fn is_in_cooldown(&self, id: &str, model: Option<&str>) -> bool {
        let store = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        usage::is_in_cooldown(&store, id, model, self.clock.now_ms())
    }
}

#[cfg(test)]
#[path = "auth_tests.rs"]
mod tests;
