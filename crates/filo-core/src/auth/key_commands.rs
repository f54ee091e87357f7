//! `!command` key values: run once per process, with a time limit, off the async workers.

use std::collections::HashMap;
use std::io::Read;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

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
pub(crate) fn off_async_workers<T>(f: impl FnOnce() -> T) -> T {
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
