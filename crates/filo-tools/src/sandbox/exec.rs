//! The helper side: confine this process, then run the command as its child and return its exit
//! code. Runs in a fresh process (the filo binary's `__sandbox-exec`), before any other thread
//! exists: `unshare(CLONE_NEWUSER)` refuses a multi-threaded caller.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
};
use nix::sched::{CloneFlags, unshare};

use super::{HelperArgs, SandboxError, SandboxMode, scrub_env};

/// The newest Landlock ABI asked for; older kernels get what they support (but at least ABI 1).
const ABI_WANTED: ABI = ABI::V6;

/// Test hook: set to `1` in the helper's environment to act as on a kernel without Landlock.
pub const SIMULATE_NO_LANDLOCK_VAR: &str = "FILO_SANDBOX_SIMULATE_NO_LANDLOCK";

/// Confine this process as `args` say and run the command; its exit code (128 + the signal when
/// a signal ended it). `landlock_available` is false to simulate a kernel without Landlock.
pub fn run(args: &HelperArgs, landlock_available: bool) -> Result<i32, SandboxError> {
    let mode = args.mode;
    let unsupported = |why: String| SandboxError::Unsupported {
        mode: mode.as_str(),
        why,
    };
    if mode.is_confined() {
        if !landlock_available {
            return Err(unsupported("this kernel has no Landlock".into()));
        }
        enter_namespaces(args.network).map_err(|e| unsupported(e.to_string()))?;
        confine(args)?;
    }
    let env = scrub_env(std::env::vars_os());
    let status = Command::new(&args.program)
        .args(&args.args)
        .env_clear()
        .envs(env)
        .status()
        .map_err(|e| SandboxError::Setup {
            what: format!("cannot run {}", args.program.to_string_lossy()),
            source: e,
        })?;
    use std::os::unix::process::ExitStatusExt;
    Ok(status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)))
}

/// New user and PID namespaces (the command becomes PID 1 of its own: everything it leaves
/// behind dies with it) and, without network, a network namespace with no way out. The user's
/// ids map to themselves.
fn enter_namespaces(network: bool) -> Result<(), SandboxError> {
    let (uid, gid) = (nix::unistd::getuid(), nix::unistd::getgid());
    let mut flags = CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWPID;
    if !network {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    unshare(flags).map_err(|e| SandboxError::Setup {
        what: "cannot create the sandbox's namespaces (unprivileged user namespaces disabled?)"
            .into(),
        source: std::io::Error::from(e),
    })?;
    let write = |file: &str, text: String| {
        std::fs::write(file, text).map_err(|e| SandboxError::Setup {
            what: format!("cannot write {file}"),
            source: e,
        })
    };
    write("/proc/self/setgroups", "deny".into())?;
    write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1"))?;
    Ok(())
}

/// The Landlock domain: read beneath `/` but the hidden paths, write the writable roots (and
/// the null devices), no TCP, no signals or abstract sockets out of the sandbox.
fn confine(args: &HelperArgs) -> Result<(), SandboxError> {
    let fail = |what: &str, e: landlock::RulesetError| SandboxError::Setup {
        what: what.into(),
        source: std::io::Error::other(e.to_string()),
    };
    let abi = ABI_WANTED;
    let hidden: Vec<PathBuf> = args.hide.iter().map(|h| canonical(h)).collect();
    let readable = readable_roots(Path::new("/"), &hidden);
    let mut writable: Vec<PathBuf> = Vec::new();
    if args.mode == SandboxMode::WorkspaceWrite {
        writable.extend(args.write.iter().map(|p| canonical(p)));
        writable.push(canonical(&std::env::temp_dir()));
        writable.push(PathBuf::from("/tmp"));
        writable.push(PathBuf::from("/dev/shm"));
    }
    // A hidden path beneath a writable root (the agent directory inside the working folder, a
    // HOME under /tmp) stays hidden: the root is opened up entry by entry around it.
    let writable: Vec<PathBuf> = writable
        .iter()
        .filter(|p| p.exists())
        .flat_map(|root| readable_roots(root, &hidden))
        .collect();
    let devices = ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"]
        .map(PathBuf::from)
        .into_iter()
        .filter(|p| p.exists());
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))
        .map_err(|e| fail("Landlock file-system rules", e))?;
    if !args.network {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .map_err(|e| fail("Landlock network rules", e))?;
    }
    let status = ruleset
        .scope(Scope::from_all(abi))
        .map_err(|e| fail("Landlock scopes", e))?
        .create()
        .map_err(|e| fail("Landlock ruleset", e))?
        .add_rules(path_beneath_rules(&readable, AccessFs::from_read(abi)))
        .map_err(|e| fail("Landlock read rules", e))?
        .add_rules(path_beneath_rules(&writable, AccessFs::from_all(abi)))
        .map_err(|e| fail("Landlock write rules", e))?
        .add_rules(path_beneath_rules(
            devices,
            AccessFs::ReadFile | AccessFs::WriteFile,
        ))
        .map_err(|e| fail("Landlock device rules", e))?
        .restrict_self()
        .map_err(|e| fail("Landlock restrict_self", e))?;
    if status.ruleset == RulesetStatus::NotEnforced || !status.no_new_privs {
        return Err(SandboxError::Unsupported {
            mode: args.mode.as_str(),
            why: "this kernel does not enforce Landlock".into(),
        });
    }
    Ok(())
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// The paths to allow reading so that everything beneath `dir` is readable except `hidden`:
/// `dir` itself when nothing hidden is beneath it, else each of its entries the same way
/// (symbolic links skipped: their targets are reached through their own entries).
pub fn readable_roots(dir: &Path, hidden: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    walk(dir, hidden, &mut out);
    out
}

fn walk(dir: &Path, hidden: &[PathBuf], out: &mut Vec<PathBuf>) {
    if hidden.iter().any(|h| h == dir) {
        return;
    }
    if !hidden.iter().any(|h| h.starts_with(dir)) {
        out.push(dir.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if e.file_type().is_ok_and(|t| t.is_symlink()) {
            continue;
        }
        walk(&e.path(), hidden, out);
    }
}

/// The helper's arguments as the filo binary received them (after the subcommand).
pub fn parse_os_args(args: &[OsString]) -> Result<HelperArgs, SandboxError> {
    HelperArgs::parse(args)
}
