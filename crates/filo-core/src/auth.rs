//! `auth.json`: stored API keys and OAuth tokens (pi spec §3.7).
//!
//! The file is pretty JSON keyed by provider, created with mode 0600. A write merges the one
//! changed provider into the file's current content, and a file that failed to parse is never
//! written. Key priority: runtime override → stored `api_key` → stored OAuth access token (while
//! unexpired) → environment → fallback (models.json provider `apiKey`).

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::CoreError;
use crate::json_file::{read_json_object, write_json_pretty};

/// How long a `!command` key may run (pi: 10 s).
pub const KEY_COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a `!command` key gave no key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyCommandError {
    #[error("the key command could not be started: {0}")]
    Spawn(String),
    #[error("the key command did not finish within {} ms and was killed", .0.as_millis())]
    TimedOut(Duration),
    #[error("the key command failed ({0})")]
    Failed(String),
    #[error("the key command printed nothing")]
    Empty,
}

/// What a `!command` key gave.
pub type KeyResult = Result<String, KeyCommandError>;

/// Runs `!command` key values as pi does: `sh -c`, trimmed stdout, a time limit, and one run per
/// command per process (failures are remembered too). Runs are moved off tokio's async worker
/// threads (`block_in_place`) so a slow command does not stall other tasks.
#[derive(Debug, Clone)]
pub struct KeyCommands {
    timeout: Duration,
    results: Arc<Mutex<HashMap<String, Arc<OnceLock<KeyResult>>>>>,
}

impl Default for KeyCommands {
    fn default() -> Self {
        KeyCommands::with_timeout(KEY_COMMAND_TIMEOUT)
    }
}

impl KeyCommands {
    pub fn with_timeout(timeout: Duration) -> Self {
        KeyCommands {
            timeout,
            results: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// The key the command prints (cached per command). The map lock is held only to find the
    /// command's slot; a caller that finds the command still running waits for it, off the async
    /// workers too.
    pub fn run(&self, command: &str) -> KeyResult {
        let slot = {
            let mut results = self.results.lock().unwrap_or_else(PoisonError::into_inner);
            results.entry(command.to_string()).or_default().clone()
        };
        if let Some(r) = slot.get() {
            return r.clone();
        }
        off_async_workers(|| {
            slot.get_or_init(|| run_key_command(command, self.timeout))
                .clone()
        })
    }
}

/// Run blocking work without holding an async worker thread of a multi-thread runtime.
fn off_async_workers<T>(f: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => tokio::task::block_in_place(f),
        _ => f(),
    }
}

fn kill_group(pid: u32) {
    use nix::sys::signal::{Signal, killpg};
    use nix::unistd::Pid;
    if let Ok(pid) = i32::try_from(pid) {
        // ESRCH (the group is already gone) is the normal case after a clean exit.
        let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
    }
}

fn run_key_command(command: &str, timeout: Duration) -> Result<String, KeyCommandError> {
    use std::os::unix::process::CommandExt;
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| KeyCommandError::Spawn(e.to_string()))?;
    let pid = child.id();
    let mut stdout = child.stdout.take();
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        stdout
            .as_mut()
            .map_or(Ok(0), |s| s.read_to_end(&mut buf))
            .map(|_| buf)
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) if Instant::now() >= deadline => {
                break Err(KeyCommandError::TimedOut(timeout));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => break Err(KeyCommandError::Failed(e.to_string())),
        }
    };
    // Whatever the outcome, nothing the command started outlives it (and holds the pipe open).
    kill_group(pid);
    let status: ExitStatus = match status {
        Ok(s) => s,
        Err(e) => {
            // Reap the killed shell; its exit status says nothing more than `e`.
            let _ = child.wait();
            return Err(e);
        }
    };
    let out = reader
        .join()
        .map_err(|_| KeyCommandError::Failed("reading its output failed".into()))?
        .map_err(|e| KeyCommandError::Failed(e.to_string()))?;
    if !status.success() {
        return Err(KeyCommandError::Failed(status.to_string()));
    }
    let key = String::from_utf8_lossy(&out).trim().to_string();
    if key.is_empty() {
        return Err(KeyCommandError::Empty);
    }
    Ok(key)
}

/// Resolve a configured key value the way pi does: `!cmd` runs a shell command and takes its
/// trimmed stdout; a value naming a set environment variable takes that variable; anything else
/// is the literal key.
pub fn resolve_key_value(
    raw: &str,
    env: &dyn Fn(&str) -> Option<String>,
    commands: &KeyCommands,
) -> Option<String> {
    if let Some(cmd) = raw.strip_prefix('!') {
        return commands.run(cmd).ok();
    }
    if let Some(v) = env(raw).filter(|v| !v.is_empty()) {
        return Some(v);
    }
    (!raw.is_empty()).then(|| raw.to_string())
}

/// Credentials from `auth.json` plus runtime overrides.
#[derive(Debug, Clone, Default)]
pub struct AuthStorage {
    /// Where credentials are written: always filo's own agent directory.
    path: Option<PathBuf>,
    /// Where they were read from, when that is another file (pi's `auth.json`, read-only).
    source: Option<PathBuf>,
    data: Map<String, Value>,
    runtime: BTreeMap<String, String>,
    unreadable: bool,
    commands: KeyCommands,
    /// Load problems, for the UI to show.
    pub errors: Vec<String>,
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
            Ok(Some(m)) => s.data = m,
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
        AuthStorage {
            data: data.as_object().cloned().unwrap_or_default(),
            ..AuthStorage::default()
        }
    }

    /// Use `commands` to run `!command` keys (shares its cache; sets its time limit).
    pub fn set_key_commands(&mut self, commands: KeyCommands) {
        self.commands = commands;
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
                        .and_then(|k| resolve_key_value(k, env, &self.commands))
                    {
                        return Some(k);
                    }
                }
                Some("oauth") => {
                    let expires = cred.get("expires").and_then(Value::as_i64).unwrap_or(0);
                    if let Some(access) = cred.get("access").and_then(Value::as_str)
                        && now_ms < expires
                    {
                        return Some(access.to_string());
                    }
                }
                _ => {}
            }
        }
        if let Some(k) = env_key_for(provider) {
            return Some(k);
        }
        fallback.and_then(|f| resolve_key_value(f, env, &self.commands))
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
                path: self.source.clone().unwrap_or(path),
                what: "credentials",
            });
        }
        let mut current = match (read_json_object(&path)?, &self.source) {
            (Some(m), _) => m,
            (None, Some(source)) => read_json_object(source)?.unwrap_or_default(),
            (None, None) => Map::new(),
        };
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
            "xai": {"type": "api_key", "key": "literal"},
            "groq": {"type": "api_key", "key": "!printf stored-cmd"}
        }));
        assert_eq!(
            a.api_key("groq", 0, &env, &env_for, None).as_deref(),
            Some("stored-cmd")
        );
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

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn key_commands_run_once_with_a_time_limit() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("runs");
        let cmd = format!("echo run >> {}; echo sk-from-cmd", log.display());
        let commands = KeyCommands::with_timeout(Duration::from_millis(300));
        assert_eq!(commands.run(&cmd).as_deref(), Ok("sk-from-cmd"));
        assert_eq!(commands.run(&cmd).as_deref(), Ok("sk-from-cmd"));
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "run\n", "cached");
        // A command that never finishes is killed (with what it started) at the limit.
        let pid_file = dir.path().join("pid");
        let hang = format!("sleep 30 & echo $! > {}; wait", pid_file.display());
        assert_eq!(
            commands.run(&hang),
            Err(KeyCommandError::TimedOut(Duration::from_millis(300)))
        );
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        let stat = format!("/proc/{}/stat", pid.trim());
        // Dead = gone or a zombie waiting for its new parent to reap it; SIGKILL lands at once,
        // the poll only covers the scheduler.
        let dead = || {
            std::fs::read_to_string(&stat).map_or(true, |s| {
                s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            })
        };
        for _ in 0..200 {
            if dead() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(dead(), "the command's child was left running");
        assert_eq!(
            commands.run("exit 3"),
            Err(KeyCommandError::Failed("exit status: 3".into()))
        );
        assert_eq!(commands.run("true"), Err(KeyCommandError::Empty));
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

    #[test]
    fn credentials_read_from_pi_are_written_to_filo_and_pi_stays_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let pi = dir.path().join("pi").join("auth.json");
        let own = dir.path().join("filo").join("agent").join("auth.json");
        std::fs::create_dir_all(pi.parent().unwrap()).unwrap();
        let pi_text = r#"{"groq":{"type":"api_key","key":"g-from-pi"}}"#;
        std::fs::write(&pi, pi_text).unwrap();
        let mut a = AuthStorage::load_from(&own, &pi);
        let key = |a: &AuthStorage, p: &str| a.api_key(p, 0, &no_env, &no_env, None);
        assert_eq!(key(&a, "groq").as_deref(), Some("g-from-pi"));
        a.set_api_key("openai", "sk-1").unwrap();
        a.remove("groq").unwrap();
        assert_eq!(std::fs::read_to_string(&pi).unwrap(), pi_text);
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&own).unwrap()).unwrap();
        assert_eq!(v, json!({"openai": {"type": "api_key", "key": "sk-1"}}));
        // A second storage seeded from pi after filo has its own file merges into filo's.
        let mut b = AuthStorage::load_from(&own, &pi);
        b.set_api_key("mistral", "m").unwrap();
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&own).unwrap()).unwrap();
        assert_eq!(v.as_object().unwrap().len(), 2, "{v}");
        assert_eq!(std::fs::read_to_string(&pi).unwrap(), pi_text);
    }

    #[test]
    fn an_unreadable_pi_file_is_named_and_nothing_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let pi = dir.path().join("pi-auth.json");
        let own = dir.path().join("own").join("auth.json");
        std::fs::write(&pi, "{broken").unwrap();
        let mut a = AuthStorage::load_from(&own, &pi);
        assert_eq!(a.errors.len(), 1);
        let err = a.set_api_key("openai", "sk").unwrap_err();
        assert!(
            matches!(&err, CoreError::UnreadableNotWritten { path, .. } if *path == pi),
            "{err}"
        );
        assert!(!own.exists());
        assert_eq!(std::fs::read_to_string(&pi).unwrap(), "{broken");
    }
}
