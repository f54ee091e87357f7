//! Project trust, as pi 1.6 defines it (`docs/security.md`, "Understand project trust").
//!
//! A working folder may carry files that change what filo runs or says: `.pi/settings.json`
//! (`shellPath`, `shellCommandPrefix` decide what every bash call executes), skills, prompt
//! templates, themes, `SYSTEM.md`. Those *protected resources* load only after a decision, taken
//! in pi's order: the command line (`--approve` / `--no-approve`), then the saved decision for
//! the folder or its closest parent (`trust.json`), then the `defaultProjectTrust` setting of the
//! agent directory (`ask`, `always`, `never`). `ask` shows a prompt where there is a terminal UI;
//! print, JSON and RPC modes have none, and skip the resources.
//!
//! Decisions are kept in pi's format: one JSON object mapping canonical folder paths to `true`
//! or `false`, keys sorted, two-space indent. filo writes `~/.filo/agent/trust.json` and reads
//! pi's `~/.pi/agent/trust.json` when its own file has no decision for the folder, so a folder a
//! pi user trusted is trusted by filo too. pi's file is never written. A file that cannot be read
//! is reported and never overwritten.
//!
//! Context files (`AGENTS.md`, `CLAUDE.md`) are not protected (pi loads them regardless), and
//! the project's `sessionDir` setting is read before trust is decided (pi's documented exception).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::CoreError;
use crate::json_file::{read_json_object, write_json_pretty};

/// The entries of a project's `.pi` (and filo's `.filo`) folder that need a trust decision.
pub const PROTECTED_CONFIG_ENTRIES: [&str; 8] = [
    "settings.json",
    "mcp.json",
    "extensions",
    "skills",
    "prompts",
    "themes",
    "SYSTEM.md",
    "APPEND_SYSTEM.md",
];

/// The project configuration folders whose entries are protected: pi's, and filo's own.
pub const PROJECT_CONFIG_DIRS: [&str; 2] = [".pi", ".filo"];

/// The `defaultProjectTrust` setting (agent directory only; a project cannot trust itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DefaultProjectTrust {
    /// Ask in the terminal UI; skip without one.
    #[default]
    Ask,
    /// Load protected resources without asking.
    Always,
    /// Skip them without asking.
    Never,
}

/// The protected resources present for `cwd`, as paths relative to `cwd` for the notice
/// (`.pi/settings.json`, `../.agents/skills`, …). `home`'s own `~/.agents/skills` is the user's,
/// not the project's, and is left out even when `cwd` is `home`.
pub fn protected_resources(cwd: &Path, home: &Path) -> Vec<PathBuf> {
    let cwd = canonical(cwd);
    let user_agents = canonical(home).join(".agents").join("skills");
    let mut found = Vec::new();
    for dir in PROJECT_CONFIG_DIRS {
        for entry in PROTECTED_CONFIG_ENTRIES {
            let rel = Path::new(dir).join(entry);
            if cwd.join(&rel).exists() {
                found.push(rel);
            }
        }
    }
    let mut rel_up = PathBuf::new();
    for dir in cwd.ancestors() {
        let skills = dir.join(".agents").join("skills");
        if skills != user_agents && skills.exists() {
            found.push(rel_up.join(".agents").join("skills"));
        }
        rel_up.push("..");
    }
    found
}

/// The path a decision is saved under: the folder with symlinks resolved (pi's canonical path),
/// or as given when it cannot be resolved.
pub fn canonical(path: &Path) -> PathBuf {
    fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// A saved decision and the folder it was saved for (the folder itself or a parent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedDecision {
    pub path: PathBuf,
    pub trusted: bool,
    /// Read from pi's `trust.json` (filo's own had none for the folder).
    pub from_pi: bool,
}

/// One change to the store: a decision for `path`, or `None` to forget the folder's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustUpdate {
    pub path: PathBuf,
    pub decision: Option<bool>,
}

/// The saved decisions: filo's `trust.json` (read and written) and pi's (read only).
#[derive(Debug, Clone)]
pub struct TrustStore {
    path: PathBuf,
    pi_path: Option<PathBuf>,
}

/// The decisions of one file. A missing file has none; a damaged one is an error.
fn read_decisions(path: &Path) -> Result<BTreeMap<String, Option<bool>>, CoreError> {
    let Some(map) = read_json_object(path)? else {
        return Ok(BTreeMap::new());
    };
    let mut out = BTreeMap::new();
    for (k, v) in map {
        let v = match v {
            Value::Bool(b) => Some(b),
            Value::Null => None,
            _ => {
                return Err(CoreError::Refused(format!(
                    "Invalid trust store {}: value for {k:?} must be true, false, or null",
                    path.display()
                )));
            }
        };
        out.insert(k, v);
    }
    Ok(out)
}

/// The decision for `cwd` or its closest parent in `data`.
fn nearest(data: &BTreeMap<String, Option<bool>>, cwd: &Path) -> Option<(PathBuf, bool)> {
    cwd.ancestors().find_map(|dir| {
        let key = dir.to_string_lossy();
        data.get(key.as_ref())
            .copied()
            .flatten()
            .map(|b| (dir.to_path_buf(), b))
    })
}

impl TrustStore {
    /// filo's file in `agent_dir`, pi's in `pi_agent_dir` (when it is another directory).
    pub fn new(agent_dir: &Path, pi_agent_dir: Option<&Path>) -> TrustStore {
        let path = agent_dir.join("trust.json");
        let pi_path = pi_agent_dir
            .map(|d| d.join("trust.json"))
            .filter(|p| *p != path);
        TrustStore { path, pi_path }
    }

    /// Where decisions are written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The saved decision that applies to `cwd`: the closest in filo's file, else the closest
    /// in pi's. A file that cannot be read is an error (the caller reports it and asks or skips).
    pub fn get(&self, cwd: &Path) -> Result<Option<SavedDecision>, CoreError> {
        let cwd = canonical(cwd);
        if let Some((path, trusted)) = nearest(&read_decisions(&self.path)?, &cwd) {
            return Ok(Some(SavedDecision {
                path,
                trusted,
                from_pi: false,
            }));
        }
        let Some(pi) = &self.pi_path else {
            return Ok(None);
        };
        Ok(
            nearest(&read_decisions(pi)?, &cwd).map(|(path, trusted)| SavedDecision {
                path,
                trusted,
                from_pi: true,
            }),
        )
    }

    /// Apply `updates` to filo's file under its lock (pi's `trust.json.lock` convention), keys
    /// sorted as pi writes them. A file that cannot be read is left as it is and reported.
    pub fn set_many(&self, updates: &[TrustUpdate]) -> Result<(), CoreError> {
        let dir = self.path.parent().unwrap_or_else(|| Path::new("."));
        fs::create_dir_all(dir).map_err(|e| CoreError::io(dir, e))?;
        // pi's lock on the file (`proper-lockfile`: `trust.json.lock`), as for `auth.json`.
        let _lock = crate::auth::lock::FileLock::acquire(&self.path, Duration::from_secs(1))
            .map_err(|e| CoreError::Refused(format!("{e}; the trust decision was not saved")))?;
        let mut data = read_decisions(&self.path)?;
        for u in updates {
            let key = canonical(&u.path).to_string_lossy().into_owned();
            match u.decision {
                Some(b) => data.insert(key, Some(b)),
                None => data.remove(&key),
            };
        }
        let mut out = Map::new();
        for (k, v) in data {
            out.insert(k, v.map_or(Value::Null, Value::Bool));
        }
        write_json_pretty(&self.path, &Value::Object(out), None)
    }

    /// Save one decision for `cwd`.
    pub fn set(&self, cwd: &Path, trusted: bool) -> Result<(), CoreError> {
        self.set_many(&[TrustUpdate {
            path: cwd.to_path_buf(),
            decision: Some(trusted),
        }])
    }
}

/// Where a decision came from (said in the notice and by `/trust`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustSource {
    /// `--approve` / `--no-approve`.
    CommandLine,
    /// The folder has no protected resources.
    NothingProtected,
    /// A saved decision for the folder or a parent.
    Saved(SavedDecision),
    /// `defaultProjectTrust` (`always` or `never`, or `ask` without a prompt to show).
    Default(DefaultProjectTrust),
    /// The user's answer to the prompt.
    Prompt,
}

/// The outcome of [`resolve`]: decided, or ask the user (interactive mode only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    Decided { trusted: bool, source: TrustSource },
    Ask,
}

/// What [`resolve`] needs to know.
#[derive(Debug, Clone)]
pub struct TrustQuery<'a> {
    pub cwd: &'a Path,
    pub home: &'a Path,
    /// `Some(true)` for `--approve`, `Some(false)` for `--no-approve`.
    pub command_line: Option<bool>,
    pub default: DefaultProjectTrust,
    /// A terminal UI can show the prompt.
    pub can_prompt: bool,
}

/// pi's decision order. A store that cannot be read counts as no saved decision; its error is
/// returned beside the outcome for the caller to report.
pub fn resolve(store: &TrustStore, q: &TrustQuery<'_>) -> (Resolution, Option<CoreError>) {
    if let Some(trusted) = q.command_line {
        return (
            Resolution::Decided {
                trusted,
                source: TrustSource::CommandLine,
            },
            None,
        );
    }
    let (saved, error) = match store.get(q.cwd) {
        Ok(s) => (s, None),
        Err(e) => (None, Some(e)),
    };
    if protected_resources(q.cwd, q.home).is_empty() {
        // pi: a folder with nothing protected is trusted unless a decision says otherwise.
        let resolution = match saved {
            Some(s) => Resolution::Decided {
                trusted: s.trusted,
                source: TrustSource::Saved(s),
            },
            None => Resolution::Decided {
                trusted: true,
                source: TrustSource::NothingProtected,
            },
        };
        return (resolution, error);
    }
    let resolution = match (saved, q.default) {
        (Some(s), _) => Resolution::Decided {
            trusted: s.trusted,
            source: TrustSource::Saved(s),
        },
        (None, DefaultProjectTrust::Always) => Resolution::Decided {
            trusted: true,
            source: TrustSource::Default(DefaultProjectTrust::Always),
        },
        (None, DefaultProjectTrust::Ask) if q.can_prompt => Resolution::Ask,
        (None, d) => Resolution::Decided {
            trusted: false,
            source: TrustSource::Default(d),
        },
    };
    (resolution, error)
}

/// The one-line notice for a folder whose protected resources were skipped, naming them.
pub fn skipped_notice(cwd: &Path, home: &Path) -> Option<String> {
    let found = protected_resources(cwd, home);
    if found.is_empty() {
        return None;
    }
    let names: Vec<String> = found.iter().map(|p| p.display().to_string()).collect();
    Some(format!(
        "project not trusted: skipped {} (run with --approve, or save a decision with /trust)",
        names.join(", ")
    ))
}

/// One choice of the prompt and of `/trust` (pi's `getProjectTrustOptions`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustOption {
    pub label: String,
    pub trusted: bool,
    pub updates: Vec<TrustUpdate>,
    /// The folder whose saved decision this option is (none for "this session only").
    pub saved_path: Option<PathBuf>,
}

/// pi's choices for `cwd`: trust, trust the parent folder, (trust for this session only), do
/// not trust, (do not trust for this session only).
pub fn trust_options(cwd: &Path, include_session_only: bool) -> Vec<TrustOption> {
    let here = canonical(cwd);
    let mut out = vec![TrustOption {
        label: "Trust".into(),
        trusted: true,
        updates: vec![TrustUpdate {
            path: here.clone(),
            decision: Some(true),
        }],
        saved_path: Some(here.clone()),
    }];
    if let Some(parent) = here.parent() {
        out.push(TrustOption {
            label: format!("Trust parent folder ({})", parent.display()),
            trusted: true,
            updates: vec![
                TrustUpdate {
                    path: parent.to_path_buf(),
                    decision: Some(true),
                },
                TrustUpdate {
                    path: here.clone(),
                    decision: None,
                },
            ],
            saved_path: Some(parent.to_path_buf()),
        });
    }
    let session_only = |label: &str, trusted| TrustOption {
        label: label.into(),
        trusted,
        updates: Vec::new(),
        saved_path: None,
    };
    if include_session_only {
        out.push(session_only("Trust (this session only)", true));
    }
    out.push(TrustOption {
        label: "Do not trust".into(),
        trusted: false,
        updates: vec![TrustUpdate {
            path: here.clone(),
            decision: Some(false),
        }],
        saved_path: Some(here),
    });
    if include_session_only {
        out.push(session_only("Do not trust (this session only)", false));
    }
    out
}

/// pi's prompt title.
pub fn prompt_title(cwd: &Path) -> String {
    format!(
        "Trust project folder?\n{}\n\nThis allows filo to load .pi settings and resources, and to run what they configure (shellPath, shellCommandPrefix).",
        cwd.display()
    )
}

#[cfg(test)]
#[path = "trust_tests.rs"]
mod tests;
