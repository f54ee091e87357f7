//! The sandbox for commands the model runs (the bash tool, `!` commands, embedded exec).
//!
//! Modes, named for what they allow (after Codex's):
//! - `read-only`: read anywhere but the hidden paths, write nowhere (but `/dev/null`);
//! - `workspace-write`: as `read-only`, and write the working folder, the extra writable roots
//!   and the temp folder;
//! - `danger-full-access`: no confinement (filo's behaviour before the sandbox).
//!
//! The network is off in both confined modes unless the policy allows it.
//!
//! How (Linux): the command does not run under filo directly but under a helper, the filo binary
//! itself re-executed as `filo __sandbox-exec <policy> -- <shell> -c <command>` ([`wrap`]). The
//! helper, a fresh single-threaded process, confines itself and then starts the shell, which
//! inherits every restriction ([`exec::run`]):
//! 1. a new user, PID and (unless the network is allowed) network namespace (`unshare`): no
//!    interface but a down loopback, so no TCP, UDP or abstract Unix socket reaches anything; the
//!    shell is PID 1 of its namespace, so when it exits every process it left behind (a
//!    double-forked daemon included) is killed by the kernel;
//! 2. Landlock (required, ABI ≥ 1; TCP rules from ABI 4 and signal / abstract-socket scoping from
//!    ABI 6 when the kernel has them): reads beneath `/` except the hidden paths (filo's and pi's
//!    agent directories, the gateway state, SSH and cloud keys), writes beneath the writable
//!    roots only. Landlock also forbids `ptrace` of (and `/proc/<pid>/mem`, `environ` reads from)
//!    any process outside the sandbox, and a sandboxed process can only ever add rules;
//! 3. `no_new_privs` (set by Landlock's `restrict_self`): no set-uid escape.
//!
//! No `unsafe` is needed: the helper confines itself before it starts the shell, instead of a
//! `pre_exec` hook in the parent. Where the kernel has no Landlock (or namespaces fail), a
//! confined mode refuses to run the command and says why: never silently unconfined.
//!
//! The environment the shell starts with has no provider keys, tokens or secrets whatever
//! `FILO_BASH_KEEP_ENV` says ([`scrub_env`]).

pub mod exec;

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// The hidden subcommand of the filo binary that runs a command confined.
pub const HELPER_SUBCOMMAND: &str = "__sandbox-exec";

/// What the model's commands may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SandboxMode {
    ReadOnly,
    WorkspaceWrite,
    /// No confinement.
    #[default]
    DangerFullAccess,
}

impl SandboxMode {
    /// The mode's name (`read-only`, `workspace-write`, `danger-full-access`).
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::DangerFullAccess => "danger-full-access",
        }
    }

    /// Parse a mode name; the error names the valid ones.
    pub fn parse(s: &str) -> Result<SandboxMode, SandboxError> {
        match s {
            "read-only" => Ok(SandboxMode::ReadOnly),
            "workspace-write" => Ok(SandboxMode::WorkspaceWrite),
            "danger-full-access" => Ok(SandboxMode::DangerFullAccess),
            other => Err(SandboxError::Usage(format!(
                "unknown sandbox mode {other:?} (read-only, workspace-write or danger-full-access)"
            ))),
        }
    }

    /// Whether commands are confined at all.
    pub fn is_confined(self) -> bool {
        self != SandboxMode::DangerFullAccess
    }
}

/// Why a confined command could not run.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The kernel cannot confine it (no Landlock, no namespaces): refused, not run unconfined.
    #[error(
        "filo sandbox: refusing to run in {mode} mode: {why}; nothing was run (use --sandbox danger-full-access to run commands unconfined)"
    )]
    Unsupported { mode: &'static str, why: String },
    /// The helper's arguments are wrong.
    #[error("filo sandbox: {0}")]
    Usage(String),
    /// Setting up the sandbox failed.
    #[error("filo sandbox: {what}: {source}")]
    Setup {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

/// A sandbox for one session's commands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    pub mode: SandboxMode,
    /// Written besides the working folder and the temp folder (`workspace-write`).
    pub writable_roots: Vec<PathBuf>,
    /// Never readable, even though beneath `/` (unless beneath a writable root).
    pub hidden: Vec<PathBuf>,
    /// Whether the network stays reachable.
    pub network: bool,
    /// The filo binary that runs [`HELPER_SUBCOMMAND`].
    pub helper: PathBuf,
}

impl SandboxPolicy {
    /// A policy for `mode` whose helper is `helper` (normally `std::env::current_exe()` of the
    /// filo binary), hiding the usual secrets of `home` (see [`default_hidden`]).
    pub fn new(mode: SandboxMode, helper: PathBuf, home: Option<&Path>) -> SandboxPolicy {
        SandboxPolicy {
            mode,
            writable_roots: Vec::new(),
            hidden: home.map(default_hidden).unwrap_or_default(),
            network: false,
            helper,
        }
    }

    /// The policy for [`wrap`] to use: `None` when commands are not confined.
    pub fn confining(&self) -> Option<&SandboxPolicy> {
        self.mode.is_confined().then_some(self)
    }

    /// The helper's arguments for running `shell -c command` in `cwd`.
    pub fn helper_args(&self, cwd: &Path, shell: &Path, command: &str) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec![
            HELPER_SUBCOMMAND.into(),
            "--mode".into(),
            self.mode.as_str().into(),
        ];
        if self.mode == SandboxMode::WorkspaceWrite {
            for root in std::iter::once(cwd).chain(self.writable_roots.iter().map(PathBuf::as_path))
            {
                args.push("--write".into());
                args.push(root.into());
            }
        }
        for h in &self.hidden {
            args.push("--hide".into());
            args.push(h.into());
        }
        if self.network {
            args.push("--network".into());
        }
        args.extend(["--".into(), shell.into(), "-c".into(), command.into()]);
        args
    }
}

/// What a home directory holds that a sandboxed command must not read: filo's and pi's agent
/// directories (keys, sessions, trust), the Playfilo memory, SSH, GnuPG and cloud credentials.
pub fn default_hidden(home: &Path) -> Vec<PathBuf> {
    [
        ".filo",
        ".pi",
        ".playfilo",
        ".openclaw",
        ".ssh",
        ".gnupg",
        ".aws",
        ".azure",
        ".docker",
        ".netrc",
        ".git-credentials",
        ".config/gcloud",
        ".config/gh",
    ]
    .iter()
    .map(|p| home.join(p))
    .collect()
}

/// The parsed helper command line: the policy's parts and the command to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelperArgs {
    pub mode: SandboxMode,
    pub write: Vec<PathBuf>,
    pub hide: Vec<PathBuf>,
    pub network: bool,
    pub program: OsString,
    pub args: Vec<OsString>,
}

impl HelperArgs {
    /// Parse what follows [`HELPER_SUBCOMMAND`].
    pub fn parse(args: &[OsString]) -> Result<HelperArgs, SandboxError> {
        let mut mode = None;
        let (mut write, mut hide, mut network) = (Vec::new(), Vec::new(), false);
        let mut it = args.iter();
        let value = |it: &mut std::slice::Iter<'_, OsString>, flag: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| SandboxError::Usage(format!("{flag} needs a value")))
        };
        loop {
            let Some(a) = it.next() else {
                return Err(SandboxError::Usage("no command after --".into()));
            };
            match a.to_str() {
                Some("--mode") => {
                    let v = value(&mut it, "--mode")?;
                    mode = Some(SandboxMode::parse(&v.to_string_lossy())?);
                }
                Some("--write") => write.push(PathBuf::from(value(&mut it, "--write")?)),
                Some("--hide") => hide.push(PathBuf::from(value(&mut it, "--hide")?)),
                Some("--network") => network = true,
                Some("--") => break,
                _ => {
                    return Err(SandboxError::Usage(format!(
                        "unexpected argument {}",
                        a.to_string_lossy()
                    )));
                }
            }
        }
        let program = it
            .next()
            .cloned()
            .ok_or_else(|| SandboxError::Usage("no command after --".into()))?;
        Ok(HelperArgs {
            mode: mode.ok_or_else(|| SandboxError::Usage("--mode is required".into()))?,
            write,
            hide,
            network,
            program,
            args: it.cloned().collect(),
        })
    }
}

/// Whether an environment variable is a secret a sandboxed command never gets: provider keys
/// (`*_API_KEY`), tokens, secrets, passwords, credentials, AWS keys, filo's and OpenClaw's
/// gateway tokens.
pub fn is_secret_var(name: &OsStr) -> bool {
    let n = name.to_string_lossy().to_ascii_uppercase();
    ["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"]
        .iter()
        .any(|w| n.contains(w))
        || n.starts_with("AWS_")
        || crate::secrets::is_secret_name(&n)
}

/// `vars` without the secrets ([`is_secret_var`]).
pub fn scrub_env(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
    vars.into_iter()
        .filter(|(k, _)| !is_secret_var(k))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helper_args_round_trip() {
        let mut p = SandboxPolicy::new(
            SandboxMode::WorkspaceWrite,
            "/bin/filo".into(),
            Some(Path::new("/home/u")),
        );
        p.writable_roots.push("/extra".into());
        let args = p.helper_args(Path::new("/ws"), Path::new("/bin/bash"), "echo hi");
        assert_eq!(args[0], HELPER_SUBCOMMAND);
        let parsed = HelperArgs::parse(&args[1..]).unwrap();
        assert_eq!(parsed.mode, SandboxMode::WorkspaceWrite);
        assert_eq!(parsed.write, [PathBuf::from("/ws"), "/extra".into()]);
        assert!(parsed.hide.contains(&PathBuf::from("/home/u/.filo")));
        assert!(!parsed.network);
        assert_eq!(parsed.program, "/bin/bash");
        assert_eq!(parsed.args, [OsString::from("-c"), "echo hi".into()]);
        assert!(HelperArgs::parse(&["--mode".into(), "open".into()]).is_err());
    }

    #[test]
    fn secrets_are_scrubbed() {
        let kept = scrub_env([
            ("PATH".into(), "/bin".into()),
            ("OPENAI_API_KEY".into(), "sk".into()),
            ("FILO_GATEWAY_TOKEN".into(), "t".into()),
            ("OPENCLAW_GATEWAY_PASSWORD".into(), "p".into()),
            ("AWS_ACCESS_KEY_ID".into(), "a".into()),
            ("LANG".into(), "C".into()),
        ]);
        let names: Vec<_> = kept.iter().map(|(k, _)| k.clone()).collect();
        assert_eq!(names, [OsString::from("PATH"), "LANG".into()]);
    }
}
