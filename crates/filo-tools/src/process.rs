//! Child processes for bash: shell resolution, spawning into a fresh process group, and killing
//! the whole group (SIGKILL to `-pgid`) on timeout, abort or drop.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::{Child, Command};

use crate::error::{Error, errno_code};

/// pi's shell rule: the configured shell, else `/bin/bash`, else `bash` on `PATH`, else `sh`.
pub fn resolve_shell(custom: Option<&Path>, path_var: Option<&OsStr>) -> PathBuf {
    if let Some(shell) = custom {
        return shell.to_path_buf();
    }
    let bin_bash = Path::new("/bin/bash");
    if bin_bash.is_file() {
        return bin_bash.to_path_buf();
    }
    path_var
        .into_iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("bash"))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| PathBuf::from("sh"))
}

/// `PATH` with `dir` in front.
pub fn prepend_path(dir: &Path, path_var: Option<&OsStr>) -> std::ffi::OsString {
    let mut dirs = vec![dir.to_path_buf()];
    dirs.extend(path_var.into_iter().flat_map(std::env::split_paths));
    std::env::join_paths(dirs).unwrap_or_else(|_| dir.as_os_str().to_os_string())
}

/// What to run.
#[derive(Debug, Clone)]
pub struct ShellCommand<'a> {
    pub shell: &'a Path,
    pub command: &'a str,
    pub cwd: &'a Path,
    pub path_env: Option<std::ffi::OsString>,
    /// The whole environment the shell starts with; `None` inherits this process's.
    pub env: Option<&'a [(std::ffi::OsString, std::ffi::OsString)]>,
    /// Run the shell confined ([`crate::sandbox`]): under the sandbox helper, which confines
    /// itself and then starts the shell. `None` (or `danger-full-access`) runs it directly.
    pub sandbox: Option<&'a crate::sandbox::SandboxPolicy>,
}

/// Spawn `<shell> -c <command>` in its own process group, stdin closed, stdout/stderr piped.
pub fn spawn_shell(cmd: &ShellCommand<'_>) -> Result<(Child, ProcessGroup), Error> {
    spawn_shell_without(cmd, &[])
}

/// [`spawn_shell`] with the variables named in `remove` taken out of the inherited environment.
pub fn spawn_shell_without(
    cmd: &ShellCommand<'_>,
    remove: &[String],
) -> Result<(Child, ProcessGroup), Error> {
    let confined = cmd.sandbox.and_then(|p| p.confining());
    let mut command = match confined {
        Some(policy) => {
            let mut c = Command::new(&policy.helper);
            c.args(policy.helper_args(cmd.cwd, cmd.shell, cmd.command));
            c
        }
        None => {
            let mut c = Command::new(cmd.shell);
            c.arg("-c").arg(cmd.command);
            c
        }
    };
    command
        .current_dir(cmd.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(vars) = cmd.env {
        command.env_clear();
        command.envs(vars.iter().map(|(k, v)| (k, v)));
    }
    if let Some(path) = &cmd.path_env {
        command.env("PATH", path);
    }
    for name in remove {
        command.env_remove(name);
    }
    let child = command.spawn().map_err(|err| {
        let shell = cmd.shell.display();
        match errno_code(&err) {
            Some(code) => Error::message(format!("spawn {shell} {code}")),
            None => Error::message(format!("spawn {shell}: {err}")),
        }
    })?;
    let pgid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .ok_or_else(|| Error::Internal("spawned shell has no process id".into()))?;
    Ok((child, ProcessGroup { pgid, armed: true }))
}

/// A process group that is killed when this guard is dropped while still armed.
#[derive(Debug)]
pub struct ProcessGroup {
    pgid: i32,
    armed: bool,
}

impl ProcessGroup {
    /// The group id (= the shell's pid).
    pub fn id(&self) -> i32 {
        self.pgid
    }

    /// SIGKILL every process in the group. A group that is already gone is not an error.
    pub fn kill(&self) {
        // ESRCH (no such group) just means everything has exited already.
        let _ = killpg(Pid::from_raw(self.pgid), Signal::SIGKILL);
    }

    /// Leave the group alone on drop (the command finished normally; background jobs it started
    /// on purpose keep running, as in pi).
    pub fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        if self.armed {
            self.kill();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_shell_wins_and_fallback_is_sh() {
        assert_eq!(
            resolve_shell(Some(Path::new("/x/zsh")), None),
            PathBuf::from("/x/zsh")
        );
        let found = resolve_shell(None, Some(OsStr::new("/nonexistent")));
        assert!(found == Path::new("/bin/bash") || found == Path::new("sh"));
    }

    #[test]
    fn path_is_prepended() {
        let joined = prepend_path(Path::new("/agent/bin"), Some(OsStr::new("/usr/bin:/bin")));
        assert_eq!(joined, OsStr::new("/agent/bin:/usr/bin:/bin"));
    }
}
