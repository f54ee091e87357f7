//! `auth.json`: stored API keys and OAuth tokens (pi spec §3.7).
//!
//! The file is pretty JSON keyed by provider, created with mode 0600. Every write happens under
//! pi's lock on the file ([`lock`]), merges the one changed provider into the file's current
//! content and replaces the file atomically (temporary file + rename), so other providers'
//! entries and unknown fields survive; a file that failed to parse is never written. Key
//! priority (pi's): runtime override → stored `api_key` → stored OAuth credential → environment
//! → fallback (models.json provider `apiKey`).
//!
//! An OAuth credential whose `expires` has passed is refreshed under the lock: the file is read
//! again first, and when another process (filo or pi) refreshed it meanwhile, its result is
//! used and no request is made. A refresh that fails leaves the file as it was; the problem is
//! kept for [`AuthStorage::problem`] and the provider has no key.

mod key_commands;
pub mod lock;
pub mod oauth;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::CoreError;
use crate::json_file::{read_json_object, write_json_private};
use key_commands::off_async_workers;
pub use key_commands::{
    KEY_COMMAND_TIMEOUT, KeyCommandError, KeyCommands, KeyResult, resolve_key_value,
};
use lock::{FileLock, WAIT_AT_MOST};
use oauth::{OAuthProvider, TokenEndpoints};

/// After a failed refresh, a provider's key is not asked for again before this long.
const RETRY_REFRESH_AFTER: Duration = Duration::from_secs(10);

/// What every clone of one [`AuthStorage`] sees: the credentials as last read or written, and
/// the last refresh failure per provider.
#[derive(Debug, Default)]
struct Shared {
    data: Map<String, Value>,
    problems: BTreeMap<String, (String, Instant)>,
}

/// Credentials from `auth.json` plus runtime overrides. Clones share the credentials, so a
/// token refreshed through one is used by all.
#[derive(Debug, Clone, Default)]
pub struct AuthStorage {
    /// Where credentials are written: always filo's own agent directory.
    path: Option<PathBuf>,
    /// Where they were read from, when that is another file (pi's `auth.json`, read-only).
    source: Option<PathBuf>,
    shared: Arc<Mutex<Shared>>,
    runtime: BTreeMap<String, String>,
    unreadable: bool,
    commands: KeyCommands,
    endpoints: TokenEndpoints,
    /// Load problems, for the UI to show.
    pub errors: Vec<String>,
}

fn expires_of(cred: &Value) -> i64 {
    match cred.get("expires") {
        Some(Value::Number(n)) => n
            .as_i64()
            .or_else(|| {
                #[allow(clippy::cast_possible_truncation)]
                n.as_f64().map(|f| f as i64)
            })
            .unwrap_or(0),
        _ => 0,
    }
}

fn access_of(cred: &Value) -> Option<String> {
    cred.get("access")
        .and_then(Value::as_str)
        .map(str::to_string)
}

fn is_oauth(cred: &Value) -> bool {
    cred.get("type").and_then(Value::as_str) == Some("oauth")
}

impl AuthStorage {
    /// Load `path` (missing file = no credentials; it is created on first write).
    pub fn load(path: &Path) -> AuthStorage {
        AuthStorage::load_from(path, path)
    }

    /// Credentials read from `source` (pi's `auth.json` when filo has none) and written to
    /// `path`. `source` is never written: the first write creates `path` from its content plus
    /// the change, and later writes merge into `path` as usual.
    pub fn load_from(path: &Path, source: &Path) -> AuthStorage {
        let mut s = AuthStorage {
            path: Some(path.to_path_buf()),
            source: (source != path).then(|| source.to_path_buf()),
            ..AuthStorage::default()
        };
        match read_json_object(source) {
            Ok(Some(m)) => s.shared().data = m,
            Ok(None) => {}
            Err(e) => {
                s.unreadable = true;
                s.errors.push(crate::error_chain(&e));
            }
        }
        s
    }

    /// Credentials held only in memory.
    pub fn in_memory(data: Value) -> AuthStorage {
        let s = AuthStorage::default();
        s.shared().data = data.as_object().cloned().unwrap_or_default();
        s
    }

    fn shared(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Use `commands` to run `!command` keys (shares its cache; sets its time limit).
    pub fn set_key_commands(&mut self, commands: KeyCommands) {
        self.commands = commands;
    }

    /// Where OAuth refresh requests go (the providers' token services by default).
    pub fn set_token_endpoints(&mut self, endpoints: TokenEndpoints) {
        self.endpoints = endpoints;
    }

    /// `--api-key`: wins over everything for this process, never written.
    pub fn set_runtime_api_key(&mut self, provider: &str, key: &str) {
        self.runtime.insert(provider.to_string(), key.to_string());
    }

    /// The stored credential object of a provider (as last read or refreshed).
    pub fn get(&self, provider: &str) -> Option<Value> {
        self.shared().data.get(provider).cloned()
    }

    /// Providers with stored credentials.
    pub fn providers(&self) -> Vec<String> {
        self.shared().data.keys().cloned().collect()
    }

    /// Why `provider`'s stored OAuth credential gave no key the last time it was asked for
    /// (naming the provider), if it did not.
    pub fn problem(&self, provider: &str) -> Option<String> {
        self.shared().problems.get(provider).map(|(m, _)| m.clone())
    }

    /// The key for `provider`. `env` looks up environment variables; `env_key_for` gives the
    /// provider's conventional variable value (e.g. `ANTHROPIC_API_KEY`); `fallback` is the
    /// models.json provider key, if any. An expired OAuth credential is refreshed first
    /// (blocking, off the async workers); when that fails the provider has no key, as in pi.
    pub fn api_key(
        &self,
        provider: &str,
        now_ms: i64,
        env: &dyn Fn(&str) -> Option<String>,
        env_key_for: &dyn Fn(&str) -> Option<String>,
        fallback: Option<&str>,
    ) -> Option<String> {
        if let Some(k) = self.runtime.get(provider) {
            return Some(k.clone());
        }
        let cred = self.get(provider);
        match cred
            .as_ref()
            .and_then(|c| c.get("type"))
            .and_then(Value::as_str)
        {
            Some("api_key") => {
                let key = cred
                    .as_ref()
                    .and_then(|c| c.get("key"))
                    .and_then(Value::as_str)
                    .and_then(|k| resolve_key_value(k, env, &self.commands));
                if key.is_some() {
                    return key;
                }
            }
            Some("oauth") => {
                let cred = cred.as_ref()?;
                if now_ms < expires_of(cred) {
                    return access_of(cred);
                }
                return self.refreshed_access(provider, now_ms);
            }
            _ => {}
        }
        if let Some(k) = env_key_for(provider) {
            return Some(k);
        }
        fallback.and_then(|f| resolve_key_value(f, env, &self.commands))
    }

    /// The access token of `provider`'s expired OAuth credential after a refresh, or `None`
    /// with the reason kept for [`AuthStorage::problem`].
    fn refreshed_access(&self, provider: &str, now_ms: i64) -> Option<String> {
        if let Some((_, at)) = self.shared().problems.get(provider)
            && at.elapsed() < RETRY_REFRESH_AFTER
        {
            return None;
        }
        match off_async_workers(|| self.refresh_under_lock(provider, now_ms)) {
            Ok(access) => {
                self.shared().problems.remove(provider);
                Some(access)
            }
            Err(reason) => {
                // Like pi: another process may have refreshed it even though this one could
                // not (a lock held too long, a refresh token already rotated by the winner).
                let on_disk = self.own_file().and_then(|p| read_json_object(&p).ok()?);
                if let Some(cred) = on_disk.as_ref().and_then(|m| m.get(provider))
                    && is_oauth(cred)
                    && now_ms < expires_of(cred)
                {
                    self.shared()
                        .data
                        .insert(provider.to_string(), cred.clone());
                    self.shared().problems.remove(provider);
                    return access_of(cred);
                }
                let message = format!("Failed to refresh OAuth token for {provider}: {reason}");
                self.shared()
                    .problems
                    .insert(provider.to_string(), (message, Instant::now()));
                None
            }
        }
    }

    /// filo's own file, when the credentials come from it (not from pi's directory).
    fn own_file(&self) -> Option<PathBuf> {
        let path = self.path.clone()?;
        match &self.source {
            Some(_) if !path.exists() => None,
            _ => Some(path),
        }
    }

    /// Take the lock, read the file again, and refresh unless another process already did;
    /// write the new credential into the file's current content.
    fn refresh_under_lock(&self, provider: &str, now_ms: i64) -> Result<String, String> {
        let Some(kind) = OAuthProvider::from_id(provider) else {
            return Err("filo does not know how to refresh this provider's tokens".into());
        };
        let Some(path) = self.path.clone() else {
            // In-memory credentials: refresh, keep the result in memory.
            let cred = self.get(provider).and_then(|c| c.as_object().cloned());
            let cred = cred.ok_or("the credential is gone")?;
            let next =
                oauth::refresh_blocking(kind, &cred, &self.endpoints).map_err(|e| e.to_string())?;
            let access = access_of(&Value::Object(next.clone())).unwrap_or_default();
            self.shared().data.insert(provider.into(), next.into());
            return Ok(access);
        };
        if let Some(source) = self.source.as_ref().filter(|_| !path.exists()) {
            return Err(format!(
                "the credential is read from pi's {} and filo never writes there (a refresh would also invalidate pi's copy); run pi once to refresh it, or log in with filo",
                source.display()
            ));
        }
        if self.unreadable {
            return Err(format!("{} could not be read", path.display()));
        }
        let _lock = FileLock::acquire(&path, WAIT_AT_MOST).map_err(|e| e.to_string())?;
        let mut current = read_json_object(&path)
            .map_err(|e| crate::error_chain(&e))?
            .unwrap_or_default();
        let cred = current
            .get(provider)
            .filter(|c| is_oauth(c))
            .and_then(Value::as_object)
            .cloned()
            .ok_or_else(|| format!("{} no longer holds its OAuth credential", path.display()))?;
        let on_disk = Value::Object(cred.clone());
        if now_ms < expires_of(&on_disk) {
            let access = access_of(&on_disk).ok_or("the stored credential has no access token")?;
            self.shared().data = current;
            return Ok(access);
        }
        let next =
            oauth::refresh_blocking(kind, &cred, &self.endpoints).map_err(|e| e.to_string())?;
        let access = access_of(&Value::Object(next.clone())).unwrap_or_default();
        current.insert(provider.to_string(), Value::Object(next));
        write_json_private(&path, &Value::Object(current.clone()))
            .map_err(|e| crate::error_chain(&e))?;
        self.shared().data = current;
        Ok(access)
    }

    /// Store an API key for `provider` and write the file (merged into its current content).
    pub fn set_api_key(&mut self, provider: &str, key: &str) -> Result<(), CoreError> {
        let cred = serde_json::json!({"type": "api_key", "key": key});
        self.set(provider, Some(cred))
    }

    /// Remove a provider's credential.
    pub fn remove(&mut self, provider: &str) -> Result<(), CoreError> {
        self.set(provider, None)
    }

    fn set(&mut self, provider: &str, cred: Option<Value>) -> Result<(), CoreError> {
        {
            let mut shared = self.shared();
            match &cred {
                Some(c) => shared.data.insert(provider.to_string(), c.clone()),
                None => shared.data.remove(provider),
            };
            shared.problems.remove(provider);
        }
        let Some(path) = self.path.clone() else {
            return Ok(());
        };
        if self.unreadable {
            return Err(CoreError::UnreadableNotWritten {
                path: self.source.clone().unwrap_or(path),
                what: "credentials",
            });
        }
        if let Some(dir) = path.parent() {
            create_private_dir(dir)?;
        }
        let _lock = off_async_workers(|| FileLock::acquire(&path, WAIT_AT_MOST)).map_err(|e| {
            CoreError::io(
                &lock::lock_path(&path),
                std::io::Error::other(e.to_string()),
            )
        })?;
        let mut current = match (read_json_object(&path)?, &self.source) {
            (Some(m), _) => m,
            (None, Some(source)) => read_json_object(source)?.unwrap_or_default(),
            (None, None) => Map::new(),
        };
        match cred {
            Some(c) => current.insert(provider.to_string(), c),
            None => current.remove(provider),
        };
        write_json_private(&path, &Value::Object(current))
    }
}

fn create_private_dir(dir: &Path) -> Result<(), CoreError> {
    if dir.exists() {
        return Ok(());
    }
    std::fs::create_dir_all(dir).map_err(|e| CoreError::io(dir, e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| CoreError::io(dir, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
