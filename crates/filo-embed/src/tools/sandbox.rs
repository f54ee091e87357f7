//! Sandbox (C26, spec §13; OpenClaw `sandbox-paths.ts`): when a session is sandboxed, the path
//! guard that keeps file tools inside the sandbox root, and the exec policy.
//!
//! OpenClaw's Docker backend is out of scope; the exec policy here decides whether a command
//! may run at all (`full`, `allowlist` of safe binaries, `deny`).

use std::io;
use std::path::{Component, Path, PathBuf};

use super::policy::{ToolPolicy, expand_tool_groups};
use crate::paths::lexical_normalize;

/// Where sandboxed tools see their workspace.
pub const SANDBOX_CONTAINER_WORKDIR: &str = "/workspace";

/// `agents.defaults.sandbox.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SandboxMode {
    #[default]
    Off,
    NonMain,
    All,
}

impl SandboxMode {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "off" => Some(Self::Off),
            "non-main" => Some(Self::NonMain),
            "all" => Some(Self::All),
            _ => None,
        }
    }

    /// Whether a session is sandboxed: `non-main` sandboxes every session whose key differs from
    /// the agent's main session key (pass `global` as the main key when `session.scope` is
    /// global).
    pub fn applies_to(self, session_key: &str, main_session_key: &str) -> bool {
        match self {
            Self::Off => false,
            Self::All => true,
            Self::NonMain => !session_key
                .trim()
                .eq_ignore_ascii_case(main_session_key.trim()),
        }
    }
}

/// A path that is not acceptable inside the sandbox.
#[derive(Debug, thiserror::Error)]
pub enum SandboxPathError {
    #[error(
        "Path escapes sandbox root ({root}): {input}. Use a path under {SANDBOX_CONTAINER_WORKDIR}/ instead."
    )]
    Escapes { root: String, input: String },
    #[error("Path escapes sandbox root through a link ({root}): {input}")]
    LinkEscapes { root: String, input: String },
    #[error("Hard-linked file not allowed in the sandbox root: {input}")]
    HardLink { input: String },
    #[error("cannot inspect {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("data: URLs are not supported for media. Use buffer instead.")]
    DataUrl,
}

/// A path inside the sandbox root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPath {
    /// Absolute, lexically normalised.
    pub resolved: PathBuf,
    /// Relative to the root; empty for the root itself.
    pub relative: PathBuf,
}

fn is_unicode_space(c: char) -> bool {
    matches!(
        c,
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}'
    )
}

/// A leading `@` dropped, Unicode spaces made ASCII, `~` and `~/` expanded against `home`.
pub fn expand_input_path(file_path: &str, home: &Path) -> PathBuf {
    let stripped = file_path.strip_prefix('@').unwrap_or(file_path);
    let spaced: String = stripped
        .chars()
        .map(|c| if is_unicode_space(c) { ' ' } else { c })
        .collect();
    if spaced == "~" {
        return home.to_path_buf();
    }
    match spaced.strip_prefix("~/") {
        Some(rest) => home.join(rest),
        None => PathBuf::from(spaced),
    }
}

fn short_path(path: &Path, home: &Path) -> String {
    match path.strip_prefix(home) {
        Ok(rest) if !home.as_os_str().is_empty() => {
            if rest.as_os_str().is_empty() {
                "~".to_owned()
            } else {
                format!("~/{}", rest.display())
            }
        }
        _ => path.display().to_string(),
    }
}

/// Resolves `file_path` (relative to `cwd`) and requires it to lie inside `root`. Lexical only;
/// [`assert_sandbox_path`] also checks links on disk.
pub fn resolve_sandbox_path(
    file_path: &str,
    cwd: &Path,
    root: &Path,
    home: &Path,
) -> Result<SandboxPath, SandboxPathError> {
    let expanded = expand_input_path(file_path, home);
    let joined = if expanded.is_absolute() {
        expanded
    } else {
        cwd.join(expanded)
    };
    let root_resolved = lexical_normalize(root).unwrap_or_else(|| root.to_path_buf());
    let escapes = || SandboxPathError::Escapes {
        root: short_path(&root_resolved, home),
        input: file_path.to_owned(),
    };
    let resolved = lexical_normalize(&joined).ok_or_else(escapes)?;
    let relative = resolved
        .strip_prefix(&root_resolved)
        .map_err(|_| escapes())?
        .to_path_buf();
    Ok(SandboxPath { resolved, relative })
}

/// [`resolve_sandbox_path`] plus a walk over the existing part of the path: no directory or
/// file on the way may be a symlink that leads outside the root, and the target may not be a
/// hard-linked file (a final symlink or hard link is accepted when the caller only unlinks it).
pub fn assert_sandbox_path(
    file_path: &str,
    cwd: &Path,
    root: &Path,
    home: &Path,
    allow_final_link_for_unlink: bool,
) -> Result<SandboxPath, SandboxPathError> {
    let resolved = resolve_sandbox_path(file_path, cwd, root, home)?;
    let io_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| SandboxPathError::Io { path, source }
    };
    let canonical_root = match root.canonicalize() {
        Ok(p) => p,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(resolved),
        Err(e) => return Err(io_err(root)(e)),
    };
    let link_escapes = || SandboxPathError::LinkEscapes {
        root: short_path(root, home),
        input: file_path.to_owned(),
    };
    let parts: Vec<Component<'_>> = resolved.relative.components().collect();
    let mut current = canonical_root.clone();
    for (i, part) in parts.iter().enumerate() {
        current.push(part.as_os_str());
        let last = i + 1 == parts.len();
        let meta = match current.symlink_metadata() {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => break,
            Err(e) => return Err(io_err(&current)(e)),
        };
        if meta.file_type().is_symlink() {
            if last && allow_final_link_for_unlink {
                break;
            }
            match current.canonicalize() {
                Ok(target) if target.starts_with(&canonical_root) => current = target,
                // A dangling link or one that leaves the root.
                _ => return Err(link_escapes()),
            }
        } else if last
            && meta.is_file()
            && hard_link_count(&meta) > 1
            && !allow_final_link_for_unlink
        {
            return Err(SandboxPathError::HardLink {
                input: file_path.to_owned(),
            });
        }
    }
    Ok(resolved)
}

#[cfg(unix)]
fn hard_link_count(meta: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    meta.nlink()
}

#[cfg(not(unix))]
fn hard_link_count(_meta: &std::fs::Metadata) -> u64 {
    1
}

/// `/workspace` and `/workspace/…` (also `file:///workspace/…`) mapped onto the sandbox root,
/// for media paths the model wrote as the container sees them. None for other paths.
pub fn map_container_workspace_path(candidate: &str, sandbox_root: &Path) -> Option<PathBuf> {
    let trimmed = candidate.trim();
    let path = match trimmed.get(..7) {
        Some(scheme) if scheme.eq_ignore_ascii_case("file://") => trimmed
            .get(7..)?
            .strip_prefix("localhost")
            .unwrap_or(&trimmed[7..]),
        _ => trimmed,
    };
    let normalized = path.replace('\\', "/");
    if normalized == SANDBOX_CONTAINER_WORKDIR {
        return Some(sandbox_root.to_path_buf());
    }
    let rest = normalized.strip_prefix("/workspace/")?;
    let mapped = rest
        .split('/')
        .filter(|s| !s.is_empty())
        .fold(sandbox_root.to_path_buf(), |p, s| p.join(s));
    // `..` segments must not climb out of the root.
    let normal = lexical_normalize(&mapped)?;
    normal.starts_with(sandbox_root).then_some(normal)
}

/// Media given as `data:` URLs are refused.
pub fn assert_media_not_data_url(media: &str) -> Result<(), SandboxPathError> {
    let raw = media.trim();
    if raw
        .get(..5)
        .is_some_and(|p| p.eq_ignore_ascii_case("data:"))
    {
        return Err(SandboxPathError::DataUrl);
    }
    Ok(())
}

/// The directory of a sandbox copy: `<state_dir>/sandboxes/<slug>-<hash>`; the slug keeps the key
/// readable, the hash keeps keys that slug alike apart.
pub fn sandbox_workspace_dir(state_dir: &Path, scope_key: &str) -> PathBuf {
    let slug: String = scope_key
        .trim()
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .take(48)
        .collect();
    let slug = slug.trim_matches('-');
    let slug = if slug.is_empty() { "sandbox" } else { slug };
    state_dir.join("sandboxes").join(format!(
        "{slug}-{:016x}",
        fnv1a64(scope_key.trim().as_bytes())
    ))
}

fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

impl SandboxMode {
    /// The config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::NonMain => "non-main",
            Self::All => "all",
        }
    }
}

/// Where a sandbox session runs and which config keys set its tool policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxContext<'a> {
    pub mode: SandboxMode,
    pub session_key: &'a str,
    pub main_session_key: &'a str,
    pub policy: &'a ToolPolicy,
    /// Config key of the deny list in effect (e.g. `tools.sandbox.tools.deny`).
    pub deny_key: &'a str,
    /// Config key of the allow list in effect.
    pub allow_key: &'a str,
}

/// The explanation shown when the sandbox tool policy blocks `tool` (exact names after group
/// expansion, as OpenClaw's explanation does); None when the session is not sandboxed or the
/// tool is not blocked by the sandbox lists.
pub fn sandbox_blocked_message(tool: &str, ctx: &SandboxContext<'_>) -> Option<String> {
    let tool = tool.trim().to_lowercase();
    if tool.is_empty() || !ctx.mode.applies_to(ctx.session_key, ctx.main_session_key) {
        return None;
    }
    let deny = ctx
        .policy
        .deny
        .as_deref()
        .map(expand_tool_groups)
        .unwrap_or_default();
    let allow = ctx
        .policy
        .allow
        .as_deref()
        .map(expand_tool_groups)
        .unwrap_or_default();
    let by_deny = deny.contains(&tool);
    let by_allow = !allow.is_empty() && !allow.contains(&tool);
    if !by_deny && !by_allow {
        return None;
    }
    let mut reasons = Vec::new();
    let mut fixes = Vec::new();
    if by_deny {
        reasons.push("deny list");
        fixes.push(format!("Remove \"{tool}\" from {}.", ctx.deny_key));
    }
    if by_allow {
        reasons.push("allow list");
        fixes.push(format!(
            "Add \"{tool}\" to {} (or set it to [] to allow all).",
            ctx.allow_key
        ));
    }
    let session = if ctx.session_key.trim().is_empty() {
        "(unknown)"
    } else {
        ctx.session_key
    };
    let mut lines = vec![
        format!(
            "Tool \"{tool}\" blocked by sandbox tool policy (mode={}).",
            ctx.mode.as_str()
        ),
        format!("Session: {session}"),
        format!("Reason: {}", reasons.join(" + ")),
        "Fix:".to_owned(),
        "- agents.defaults.sandbox.mode=off (disable sandbox)".to_owned(),
    ];
    lines.extend(fixes.into_iter().map(|f| format!("- {f}")));
    if ctx.mode == SandboxMode::NonMain {
        lines.push(format!(
            "- Use main session key (direct): {}",
            ctx.main_session_key
        ));
    }
    lines.push(format!(
        "- See: filo sandbox explain --session {}",
        ctx.session_key
    ));
    Some(lines.join("\n"))
}

#[cfg(test)]
#[path = "sandbox_tests.rs"]
mod tests;

pub mod exec;
