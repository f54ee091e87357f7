//! What every tool is constructed with: the working directory and the few environment facts the
//! tools depend on, passed explicitly (no global state; tests build their own).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::secrets::{EnvPolicy, KEEP_ENV_VAR};

/// Per-session tool configuration (pi's `createXTool(cwd, options)` arguments, gathered).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSettings {
    /// The session's working directory; relative paths resolve against it.
    pub cwd: PathBuf,
    /// The home directory used for `~` expansion; `None` leaves `~` untouched.
    pub home: Option<PathBuf>,
    /// pi's `shellPath` setting; `None` → `/bin/bash`, then `bash` on `PATH`, then `sh`.
    pub shell_path: Option<PathBuf>,
    /// pi's `shellCommandPrefix` setting: prepended (plus `\n`) to every bash command.
    pub command_prefix: Option<String>,
    /// A directory prepended to `PATH` for bash (pi's `<agentDir>/bin`).
    pub bin_dir: Option<PathBuf>,
    /// Where bash spills full output past 50 KiB (`<tmpdir>/pi-bash-<hex>.log`).
    pub temp_dir: PathBuf,
    /// pi's `images.autoResize` (default on): fit images into 2000×2000 and 4.5 MiB.
    pub auto_resize_images: bool,
    /// What bash's shell inherits: by default provider keys and filo's tokens are removed
    /// (see [`crate::secrets`]); `FILO_BASH_KEEP_ENV` opts out.
    pub bash_env: EnvPolicy,
    /// The environment bash's shell starts from (then `bash_env` removes secrets from it);
    /// `None` is this process's. An embedder passes its own, so nothing below its `main` reads
    /// the process environment.
    pub shell_env: Option<std::sync::Arc<Vec<(OsString, OsString)>>>,
    /// The sandbox bash's commands run in ([`crate::sandbox`]); `None`: unconfined.
    pub sandbox: Option<std::sync::Arc<crate::sandbox::SandboxPolicy>>,
}

impl ToolSettings {
    /// Settings for `cwd`, with `HOME`, the temp directory and the bash environment policy
    /// (`FILO_BASH_KEEP_ENV`) taken from this process.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        let keep = std::env::var_os(KEEP_ENV_VAR);
        Self::from_env(cwd, std::env::var_os("HOME"), std::env::temp_dir())
            .with_bash_env(EnvPolicy::from_keep_var(keep.as_deref()))
    }

    /// Settings for `cwd` from explicit environment values (`HOME`, temp directory).
    pub fn from_env(cwd: impl Into<PathBuf>, home: Option<OsString>, temp_dir: PathBuf) -> Self {
        ToolSettings {
            cwd: cwd.into(),
            home: home.filter(|h| !h.is_empty()).map(PathBuf::from),
            shell_path: None,
            command_prefix: None,
            bin_dir: None,
            temp_dir,
            auto_resize_images: true,
            bash_env: EnvPolicy::default(),
            shell_env: None,
            sandbox: None,
        }
    }

    /// What bash's shell inherits from this process's environment.
    pub fn with_bash_env(mut self, policy: EnvPolicy) -> Self {
        self.bash_env = policy;
        self
    }

    /// Start bash's shell from exactly these variables instead of this process's environment.
    pub fn with_shell_env(mut self, vars: std::sync::Arc<Vec<(OsString, OsString)>>) -> Self {
        self.shell_env = Some(vars);
        self
    }

    /// Replace the home directory.
    pub fn with_home(mut self, home: impl AsRef<Path>) -> Self {
        self.home = Some(home.as_ref().to_path_buf());
        self
    }

    /// Run bash's commands in this sandbox.
    pub fn with_sandbox(mut self, policy: crate::sandbox::SandboxPolicy) -> Self {
        self.sandbox = Some(std::sync::Arc::new(policy));
        self
    }

    /// Use this shell for bash.
    pub fn with_shell_path(mut self, shell: impl Into<PathBuf>) -> Self {
        self.shell_path = Some(shell.into());
        self
    }

    /// Prepend this text (plus a newline) to every bash command.
    pub fn with_command_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.command_prefix = Some(prefix.into());
        self
    }

    /// Prepend this directory to bash's `PATH`.
    pub fn with_bin_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.bin_dir = Some(dir.into());
        self
    }

    /// Spill bash output into this directory.
    pub fn with_temp_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.temp_dir = dir.into();
        self
    }

    /// Turn image auto-resizing on or off.
    pub fn with_auto_resize_images(mut self, on: bool) -> Self {
        self.auto_resize_images = on;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_home_means_no_home() {
        let s = ToolSettings::from_env("/w", Some(OsString::new()), PathBuf::from("/tmp"));
        assert_eq!(s.home, None);
        let s = ToolSettings::from_env("/w", Some("/h".into()), PathBuf::from("/tmp"));
        assert_eq!(s.home, Some(PathBuf::from("/h")));
        assert!(s.auto_resize_images);
    }
}
