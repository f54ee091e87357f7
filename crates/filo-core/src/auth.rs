//! `auth.json`: stored API keys and OAuth tokens (pi spec §3.7).
//!
//! The file is pretty JSON keyed by provider, created with mode 0600. A write merges the one
//! changed provider into the file's current content, and a file that failed to parse is never
//! written. Key priority: runtime override → stored `api_key` → stored OAuth access token (while
//! unexpired) → environment → fallback (models.json provider `apiKey`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Map, Value};

use crate::CoreError;
use crate::json_file::{read_json_object, write_json_pretty};

/// Resolve a configured key value the way pi does: `!cmd` runs a shell command and takes its
/// trimmed stdout; a value naming a set environment variable takes that variable; anything else
/// is the literal key.
pub fn resolve_key_value(raw: &str, env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    if let Some(cmd) = raw.strip_prefix('!') {
        let out = Command::new("sh").arg("-c").arg(cmd).output().ok()?;
        let s = String::from_utf8_lossy(&out.stdout).trim().to_string();
        return (!s.is_empty() && out.status.success()).then_some(s);
    }
    if let Some(v) = env(raw).filter(|v| !v.is_empty()) {
        return Some(v);
    }
    (!raw.is_empty()).then(|| raw.to_string())
}

/// Credentials from `auth.json` plus runtime overrides.
#[derive(Debug, Clone, Default)]
pub struct AuthStorage {
    path: Option<PathBuf>,
    data: Map<String, Value>,
    runtime: BTreeMap<String, String>,
    unreadable: bool,
    /// Load problems, for the UI to show.
    pub errors: Vec<String>,
}

impl AuthStorage {
    /// Load `path` (missing file = no credentials; it is created on first write).
    pub fn load(path: &Path) -> AuthStorage {
        let mut s = AuthStorage {
            path: Some(path.to_path_buf()),
            ..AuthStorage::default()
        };
        match read_json_object(path) {
            Ok(Some(m)) => s.data = m,
            Ok(None) => {}
            Err(e) => {
                s.unreadable = true;
                s.errors.push(e.to_string());
            }
        }
        s
    }

    /// Credentials held only in memory.
    pub fn in_memory(data: Value) -> AuthStorage {
        AuthStorage {
            data: data.as_object().cloned().unwrap_or_default(),
            ..AuthStorage::default()
        }
    }

    /// `--api-key`: wins over everything for this process, never written.
    pub fn set_runtime_api_key(&mut self, provider: &str, key: &str) {
        self.runtime.insert(provider.to_string(), key.to_string());
    }

    /// The stored credential object of a provider.
    pub fn get(&self, provider: &str) -> Option<&Value> {
        self.data.get(provider)
    }

    /// Providers with stored credentials.
    pub fn providers(&self) -> Vec<String> {
        self.data.keys().cloned().collect()
    }

    /// The key for `provider`. `env` looks up environment variables; `env_key_for` gives the
    /// provider's conventional variable value (e.g. `ANTHROPIC_API_KEY`); `fallback` is the
    /// models.json provider key, if any.
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
        if let Some(cred) = self.data.get(provider) {
            match cred.get("type").and_then(Value::as_str) {
                Some("api_key") => {
                    if let Some(k) = cred
                        .get("key")
                        .and_then(Value::as_str)
                        .and_then(|k| resolve_key_value(k, env))
                    {
                        return Some(k);
                    }
                }
                Some("oauth") => {
                    let expires = cred.get("expires").and_then(Value::as_i64).unwrap_or(0);
                    if let Some(access) = cred.get("access").and_then(Value::as_str) {
                        if now_ms < expires {
                            return Some(access.to_string());
                        }
                    }
                }
                _ => {}
            }
        }
        if let Some(k) = env_key_for(provider) {
            return Some(k);
        }
        fallback.and_then(|f| resolve_key_value(f, env))
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
        match &cred {
            Some(c) => self.data.insert(provider.to_string(), c.clone()),
            None => self.data.remove(provider),
        };
        let Some(path) = self.path.clone() else {
            return Ok(());
        };
        if self.unreadable {
            return Err(CoreError::UnreadableNotWritten {
                path,
                what: "credentials",
            });
        }
        let mut current = read_json_object(&path)?.unwrap_or_default();
        match cred {
            Some(c) => current.insert(provider.to_string(), c),
            None => current.remove(provider),
        };
        if let Some(dir) = path.parent() {
            create_private_dir(dir)?;
        }
        write_json_pretty(&path, &Value::Object(current), Some(0o600))
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
mod tests {
    use super::*;
    use serde_json::json;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn priority_runtime_stored_oauth_env_fallback() {
        let env = |k: &str| (k == "MY_KEY").then(|| "from-env-var".to_string());
        let env_for = |p: &str| (p == "openai").then(|| "sk-env".to_string());
        let mut a = AuthStorage::in_memory(json!({
            "anthropic": {"type": "api_key", "key": "MY_KEY"},
            "google": {"type": "oauth", "access": "tok", "refresh": "r", "expires": 1000},
            "xai": {"type": "api_key", "key": "literal"}
        }));
        assert_eq!(
            a.api_key("anthropic", 0, &env, &env_for, None).as_deref(),
            Some("from-env-var")
        );
        assert_eq!(
            a.api_key("xai", 0, &env, &env_for, None).as_deref(),
            Some("literal")
        );
        assert_eq!(
            a.api_key("google", 999, &env, &env_for, None).as_deref(),
            Some("tok")
        );
        assert_eq!(a.api_key("google", 1000, &env, &env_for, None), None);
        assert_eq!(
            a.api_key("openai", 0, &env, &env_for, None).as_deref(),
            Some("sk-env")
        );
        assert_eq!(
            a.api_key("custom", 0, &env, &env_for, Some("!echo cmd-key"))
                .as_deref(),
            Some("cmd-key")
        );
        a.set_runtime_api_key("xai", "override");
        assert_eq!(
            a.api_key("xai", 0, &no_env, &no_env, None).as_deref(),
            Some("override")
        );
    }

    #[test]
    fn writes_are_0600_and_merge_with_disk() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent").join("auth.json");
        let mut a = AuthStorage::load(&path);
        a.set_api_key("openai", "sk-1").unwrap();
        std::fs::write(
            &path,
            r#"{"openai":{"type":"api_key","key":"sk-1"},"groq":{"type":"api_key","key":"g"}}"#,
        )
        .unwrap();
        a.set_api_key("anthropic", "sk-a").unwrap();
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(v.as_object().unwrap().len(), 3, "external edit kept");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
    }
}
