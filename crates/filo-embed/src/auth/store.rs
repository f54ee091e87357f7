//! `auth-profiles.json`: the profile store's data model, its lossless JSON form, and the file
//! discipline that lets several processes share it (C9).
//!
//! Every update takes an advisory lock on `<file>.lock`, re-reads the file, applies the change
//! and replaces the file atomically (temporary file in the same directory, then rename), so two
//! processes updating at once lose no update. A file that cannot be parsed is reported with the
//! file name and the offending key and is never written.

use crate::state_file;
use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// File name of the store inside an agent directory.
pub const AUTH_PROFILES_FILE: &str = "auth-profiles.json";
/// Store format version written by this code.
pub const AUTH_STORE_VERSION: u64 = 1;

/// Failure to read or write the profile store.
#[derive(Debug, thiserror::Error)]
pub enum AuthStoreError {
    /// The file exists but does not hold a valid store; it is left untouched.
    #[error("{}: invalid auth profile store at `{key}`: {reason}", file.display())]
    Malformed {
        file: PathBuf,
        key: String,
        reason: String,
    },
    /// An I/O operation on the store, its lock or its temporary file failed.
    #[error("cannot {op} {}", file.display())]
    Io {
        file: PathBuf,
        op: &'static str,
        #[source]
        source: io::Error,
    },
    /// A store kept elsewhere (a database) could not be read or written.
    #[error("{store}: {reason}")]
    Backend { store: String, reason: String },
}

/// The kind of a stored credential (`type` in JSON).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialKind {
    ApiKey,
    Token,
    OAuth,
    /// A type this code does not know; kept verbatim, never selected.
    Other(String),
}

impl CredentialKind {
    fn parse(s: &str) -> Self {
        match s {
            "api_key" => Self::ApiKey,
            "token" => Self::Token,
            "oauth" => Self::OAuth,
            other => Self::Other(other.to_owned()),
        }
    }

    /// The JSON spelling.
    pub fn as_str(&self) -> &str {
        match self {
            Self::ApiKey => "api_key",
            Self::Token => "token",
            Self::OAuth => "oauth",
            Self::Other(s) => s,
        }
    }
}

/// One stored credential. All JSON fields are kept (unknown ones included) so a rewrite loses
/// nothing; the typed accessors read the fields the runner needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Credential {
    kind: CredentialKind,
    provider: String,
    fields: Map<String, Value>,
}

impl Credential {
    /// An `api_key` credential.
    pub fn api_key(provider: &str, key: &str) -> Self {
        Self::with_fields(
            CredentialKind::ApiKey,
            provider,
            [("key", Value::from(key))],
        )
    }

    /// A static bearer `token` credential, optionally expiring at `expires` (ms epoch).
    pub fn token(provider: &str, token: &str, expires: Option<i64>) -> Self {
        let mut c = Self::with_fields(
            CredentialKind::Token,
            provider,
            [("token", Value::from(token))],
        );
        if let Some(ms) = expires {
            c.fields.insert("expires".into(), Value::from(ms));
        }
        c
    }

    /// An `oauth` credential.
    pub fn oauth(provider: &str, access: &str, refresh: &str, expires: i64) -> Self {
        Self::with_fields(
            CredentialKind::OAuth,
            provider,
            [
                ("access", Value::from(access)),
                ("refresh", Value::from(refresh)),
                ("expires", Value::from(expires)),
            ],
        )
    }

    fn with_fields<const N: usize>(
        kind: CredentialKind,
        provider: &str,
        pairs: [(&str, Value); N],
    ) -> Self {
        let fields = pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        Self {
            kind,
            provider: provider.to_owned(),
            fields,
        }
    }

    pub fn kind(&self) -> &CredentialKind {
        &self.kind
    }

    pub fn provider(&self) -> &str {
        &self.provider
    }

    /// A string field (`key`, `token`, `access`, `refresh`, `email`, …).
    pub fn str_field(&self, name: &str) -> Option<&str> {
        self.fields.get(name).and_then(Value::as_str)
    }

    /// `expires` as milliseconds since the epoch, when it is a finite number.
    pub fn expires(&self) -> Option<f64> {
        self.fields
            .get("expires")
            .and_then(Value::as_f64)
            .filter(|v| v.is_finite())
    }

    fn from_json(id: &str, value: Value, file: &Path) -> Result<Self, AuthStoreError> {
        let key = format!("profiles.{id}");
        let bad = |reason: String| AuthStoreError::Malformed {
            file: file.to_path_buf(),
            key: key.clone(),
            reason,
        };
        let Value::Object(mut fields) = value else {
            return Err(bad("expected an object".into()));
        };
        let kind = match fields.remove("type") {
            Some(Value::String(s)) => CredentialKind::parse(&s),
            _ => return Err(bad("`type` must be a string".into())),
        };
        let provider = match fields.remove("provider") {
            Some(Value::String(s)) => s,
            _ => return Err(bad("`provider` must be a string".into())),
        };
        for name in ["key", "token", "access", "refresh", "email", "clientId"] {
            if fields
                .get(name)
                .is_some_and(|v| !v.is_string() && !v.is_null())
            {
                return Err(bad(format!("`{name}` must be a string")));
            }
        }
        if fields
            .get("expires")
            .is_some_and(|v| !v.is_number() && !v.is_null())
        {
            return Err(bad("`expires` must be a number".into()));
        }
        Ok(Self {
            kind,
            provider,
            fields,
        })
    }

    fn to_json(&self) -> Value {
        let mut out = Map::new();
        out.insert("type".into(), Value::from(self.kind.as_str()));
        out.insert("provider".into(), Value::from(self.provider.as_str()));
        for (k, v) in &self.fields {
            out.insert(k.clone(), v.clone());
        }
        Value::Object(out)
    }
}

/// Per-profile (or per profile and model) health, `usageStats[<id>]` in JSON.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProfileUsageStats {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cooldown_until: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled_until: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_count: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_counts: Option<BTreeMap<String, u32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_failure_at: Option<i64>,
    /// Fields written by other versions, kept on rewrite.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The whole store. Profile order is the file's order (it is the fallback rotation order).
#[derive(Debug, Clone, PartialEq)]
pub struct AuthProfiles {
    pub version: u64,
    pub profiles: Vec<(String, Credential)>,
    /// Per-provider rotation order set by the user (`order`), in file order.
    pub order: Vec<(String, Vec<String>)>,
    pub last_good: BTreeMap<String, String>,
    pub usage_stats: BTreeMap<String, ProfileUsageStats>,
    /// Top-level fields this code does not know.
    pub extra: Map<String, Value>,
}

impl Default for AuthProfiles {
    fn default() -> Self {
        Self {
            version: AUTH_STORE_VERSION,
            profiles: Vec::new(),
            order: Vec::new(),
            last_good: BTreeMap::new(),
            usage_stats: BTreeMap::new(),
            extra: Map::new(),
        }
    }
}

impl AuthProfiles {
    /// The credential stored under `id`.
    pub fn profile(&self, id: &str) -> Option<&Credential> {
        self.profiles.iter().find(|(k, _)| k == id).map(|(_, c)| c)
    }

    /// Adds or replaces the credential `id` (a new one goes last).
    pub fn upsert_profile(&mut self, id: &str, credential: Credential) {
        match self.profiles.iter_mut().find(|(k, _)| k == id) {
            Some(slot) => slot.1 = credential,
            None => self.profiles.push((id.to_owned(), credential)),
        }
    }

    /// Parses the JSON text of a store; `file` only names the source in errors.
    pub fn parse(text: &str, file: &Path) -> Result<Self, AuthStoreError> {
        let bad = |key: &str, reason: String| AuthStoreError::Malformed {
            file: file.to_path_buf(),
            key: key.to_owned(),
            reason,
        };
        let root: Value =
            serde_json::from_str(text).map_err(|e| bad("(document)", e.to_string()))?;
        let Value::Object(mut root) = root else {
            return Err(bad("(document)", "expected a JSON object".into()));
        };
        let mut store = Self::default();
        match root.remove("version") {
            None | Some(Value::Null) => {}
            Some(v) => {
                store.version = v
                    .as_u64()
                    .ok_or_else(|| bad("version", "expected a number".into()))?
            }
        }
        for (id, v) in take_object(&mut root, "profiles", file)? {
            store
                .profiles
                .push((id.clone(), Credential::from_json(&id, v, file)?));
        }
        for (provider, v) in take_object(&mut root, "order", file)? {
            let ids: Vec<String> = serde_json::from_value(v)
                .map_err(|e| bad(&format!("order.{provider}"), e.to_string()))?;
            store.order.push((provider, ids));
        }
        for (provider, v) in take_object(&mut root, "lastGood", file)? {
            let Value::String(id) = v else {
                return Err(bad(
                    &format!("lastGood.{provider}"),
                    "expected a string".into(),
                ));
            };
            store.last_good.insert(provider, id);
        }
        for (id, v) in take_object(&mut root, "usageStats", file)? {
            let stats = serde_json::from_value(v)
                .map_err(|e| bad(&format!("usageStats.{id}"), e.to_string()))?;
            store.usage_stats.insert(id, stats);
        }
        store.extra = root;
        Ok(store)
    }

    /// The JSON form (pretty, trailing newline). Empty optional sections are omitted.
    pub fn to_json_string(&self) -> Result<String, serde_json::Error> {
        let mut root = Map::new();
        root.insert("version".into(), Value::from(self.version));
        let profiles = self
            .profiles
            .iter()
            .map(|(k, c)| (k.clone(), c.to_json()))
            .collect();
        root.insert("profiles".into(), Value::Object(profiles));
        if !self.order.is_empty() {
            let order = self
                .order
                .iter()
                .map(|(k, ids)| (k.clone(), Value::from(ids.clone())));
            root.insert("order".into(), Value::Object(order.collect()));
        }
        if !self.last_good.is_empty() {
            root.insert("lastGood".into(), serde_json::to_value(&self.last_good)?);
        }
        if !self.usage_stats.is_empty() {
            root.insert(
                "usageStats".into(),
                serde_json::to_value(&self.usage_stats)?,
            );
        }
        for (k, v) in &self.extra {
            root.insert(k.clone(), v.clone());
        }
        let mut text = serde_json::to_string_pretty(&Value::Object(root))?;
        text.push('\n');
        Ok(text)
    }
}

fn take_object(
    root: &mut Map<String, Value>,
    key: &str,
    file: &Path,
) -> Result<Map<String, Value>, AuthStoreError> {
    match root.remove(key) {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(map)) => Ok(map),
        Some(_) => Err(AuthStoreError::Malformed {
            file: file.to_path_buf(),
            key: key.to_owned(),
            reason: "expected an object".into(),
        }),
    }
}

/// The store file of one agent directory, shared safely between threads and processes.
#[derive(Debug, Clone)]
pub struct AuthProfileFile {
    path: PathBuf,
}

impl AuthProfileFile {
    /// `<agent_dir>/auth-profiles.json`.
    pub fn in_agent_dir(agent_dir: &Path) -> Self {
        Self {
            path: agent_dir.join(AUTH_PROFILES_FILE),
        }
    }

    /// A store at an explicit path.
    pub fn at(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn io(&self, op: &'static str, file: &Path) -> impl FnOnce(io::Error) -> AuthStoreError {
        let file = file.to_path_buf();
        move |source| AuthStoreError::Io { file, op, source }
    }

    /// Reads the store; a missing file is an empty store. Readers need no lock: writers replace
    /// the file by rename, so a reader sees either the old or the new content.
    pub fn load(&self) -> Result<AuthProfiles, AuthStoreError> {
        Ok(self.read()?.unwrap_or_default())
    }

    fn read(&self) -> Result<Option<AuthProfiles>, AuthStoreError> {
        match fs::read_to_string(&self.path) {
            Ok(text) => AuthProfiles::parse(&text, &self.path).map(Some),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.io("read", &self.path)(e)),
        }
    }

    /// Applies `change` to the current on-disk store under the cross-process lock and writes the
    /// result atomically. Returns `change`'s value and the store as written. When the change
    /// leaves an existing file's content equal, nothing is written.
    pub fn update<R>(
        &self,
        change: impl FnOnce(&mut AuthProfiles) -> R,
    ) -> Result<(R, AuthProfiles), AuthStoreError> {
        state_file::with_lock(&self.path, || {
            let before = self.read()?;
            let existed = before.is_some();
            let mut store = before.clone().unwrap_or_default();
            let value = change(&mut store);
            if existed && before.as_ref() == Some(&store) {
                return Ok((value, store));
            }
            let text = store
                .to_json_string()
                .map_err(|e| AuthStoreError::Malformed {
                    file: self.path.clone(),
                    key: "(document)".into(),
                    reason: e.to_string(),
                })?;
            state_file::replace_atomically(&self.path, &text)?;
            Ok((value, store))
        })
    }
}

impl From<state_file::StateIoError> for AuthStoreError {
    fn from(e: state_file::StateIoError) -> Self {
        AuthStoreError::Io {
            file: e.file,
            op: e.op,
            source: e.source,
        }
    }
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
