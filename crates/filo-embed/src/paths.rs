//! Where embedded state lives (C4 file rules). Values in, no environment reads:
//! `<state_dir>/agents/<agentId>/` is an agent's directory (its `auth-profiles.json`), and
//! `<state_dir>/agents/<agentId>/sessions/` holds `sessions.json` and `<sessionId>.jsonl`
//! (forum topics: `<sessionId>-topic-<urlencoded topic>.jsonl`).
//!
//! Nothing derived from a session key or a stored path may leave the state directory: agent ids
//! are normalised to `[a-z0-9_-]`, session ids are validated, and stored session file paths are
//! confined to the sessions directory.

use std::path::{Component, Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

use crate::session_key::{agent_id_from_session_key, normalize_agent_id};

static SESSION_ID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^[a-z0-9][a-z0-9._-]{0,127}$")
        .unwrap_or_else(|e| unreachable!("invalid built-in session id pattern: {e}"))
});

/// A session id or session file path that is not acceptable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionPathError {
    #[error("Invalid session ID: {0}")]
    InvalidSessionId(String),
    #[error("Session file path must not be empty")]
    EmptySessionFile,
    #[error("Session file path must be within sessions directory")]
    OutsideSessionsDir,
}

/// The embedder's directories.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbedPaths {
    pub state_dir: PathBuf,
    pub home: PathBuf,
    pub temp: PathBuf,
}

impl EmbedPaths {
    /// Paths with `state_dir` default `<home>/.filo`.
    pub fn new(state_dir: Option<PathBuf>, home: PathBuf, temp: PathBuf) -> Self {
        let state_dir = state_dir.unwrap_or_else(|| home.join(".filo"));
        Self {
            state_dir,
            home,
            temp,
        }
    }

    /// `<state_dir>/agents/<normalised agent id>`.
    pub fn agent_dir(&self, agent_id: &str) -> PathBuf {
        self.state_dir
            .join("agents")
            .join(normalize_agent_id(agent_id))
    }

    /// The directory of the agent a session key belongs to (`main` for keys without an agent).
    /// Whatever the key holds, the result is one directory below `<state_dir>/agents`.
    pub fn agent_dir_for_key(&self, session_key: &str) -> PathBuf {
        self.agent_dir(&agent_id_from_session_key(session_key))
    }

    /// `<agent dir>/sessions`.
    pub fn sessions_dir(&self, agent_id: &str) -> PathBuf {
        self.agent_dir(agent_id).join("sessions")
    }

    /// `<sessions dir>/sessions.json`.
    pub fn session_store_file(&self, agent_id: &str) -> PathBuf {
        self.sessions_dir(agent_id).join("sessions.json")
    }

    /// The transcript of `session_id` (validated) for `agent_id`, optionally for a topic.
    pub fn session_file(
        &self,
        agent_id: &str,
        session_id: &str,
        topic_id: Option<&str>,
    ) -> Result<PathBuf, SessionPathError> {
        default_session_file(&self.sessions_dir(agent_id), session_id, topic_id)
    }
}

/// The trimmed session id when it matches `^[a-z0-9][a-z0-9._-]{0,127}$` (case-insensitive);
/// rejects anything that could name another directory (`..`, `/`, `\`, empty).
pub fn validate_session_id(session_id: &str) -> Result<&str, SessionPathError> {
    let trimmed = session_id.trim();
    if SESSION_ID.is_match(trimmed) {
        Ok(trimmed)
    } else {
        Err(SessionPathError::InvalidSessionId(session_id.to_owned()))
    }
}

/// `<sessions_dir>/<id>.jsonl`, or `<id>-topic-<encoded topic>.jsonl`.
pub fn default_session_file(
    sessions_dir: &Path,
    session_id: &str,
    topic_id: Option<&str>,
) -> Result<PathBuf, SessionPathError> {
    let id = validate_session_id(session_id)?;
    let name = match topic_id {
        Some(topic) => format!("{id}-topic-{}.jsonl", encode_uri_component(topic)),
        None => format!("{id}.jsonl"),
    };
    Ok(sessions_dir.join(name))
}

/// A stored `sessionFile` confined to `sessions_dir`: relative paths are joined, absolute ones
/// must lie inside it; `..` may not climb out. Purely lexical (the file need not exist).
pub fn confine_session_file(
    stored: &str,
    sessions_dir: &Path,
) -> Result<PathBuf, SessionPathError> {
    let trimmed = stored.trim();
    if trimmed.is_empty() {
        return Err(SessionPathError::EmptySessionFile);
    }
    let path = Path::new(trimmed);
    let relative = if path.is_absolute() {
        let base = lexical_normalize(sessions_dir).ok_or(SessionPathError::OutsideSessionsDir)?;
        let full = lexical_normalize(path).ok_or(SessionPathError::OutsideSessionsDir)?;
        full.strip_prefix(&base)
            .map_err(|_| SessionPathError::OutsideSessionsDir)?
            .to_path_buf()
    } else {
        lexical_normalize(path).ok_or(SessionPathError::OutsideSessionsDir)?
    };
    if relative.as_os_str().is_empty() {
        return Err(SessionPathError::OutsideSessionsDir);
    }
    Ok(sessions_dir.join(relative))
}

/// The transcript path for a store entry: its stored `sessionFile` when that is acceptable, else
/// the default `<sessionId>.jsonl` (stale metadata must not break a handler). The session id
/// itself must be valid.
pub fn resolve_session_file(
    session_id: &str,
    stored: Option<&str>,
    sessions_dir: &Path,
) -> Result<PathBuf, SessionPathError> {
    let default = default_session_file(sessions_dir, session_id, None)?;
    Ok(stored
        .and_then(|s| confine_session_file(s, sessions_dir).ok())
        .unwrap_or(default))
}

/// Resolves `.` and `..` without touching the file system; None when `..` climbs above the start
/// of a relative path or above the root of an absolute one.
pub(crate) fn lexical_normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    let mut depth = 0usize;
    for c in path.components() {
        match c {
            Component::Prefix(_) | Component::RootDir => out.push(c.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                if depth == 0 {
                    return None;
                }
                out.pop();
                depth -= 1;
            }
            Component::Normal(n) => {
                out.push(n);
                depth += 1;
            }
        }
    }
    Some(out)
}

/// JavaScript's `encodeURIComponent`: everything but `A-Z a-z 0-9 - _ . ! ~ * ' ( )` is
/// percent-encoded as UTF-8 bytes.
pub fn encode_uri_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths() -> EmbedPaths {
        EmbedPaths::new(None, PathBuf::from("/home/u"), PathBuf::from("/tmp"))
    }

    #[test]
    fn layout() {
        let p = paths();
        assert_eq!(p.state_dir, PathBuf::from("/home/u/.filo"));
        assert_eq!(
            p.agent_dir("Ops Team"),
            PathBuf::from("/home/u/.filo/agents/ops-team")
        );
        assert_eq!(
            p.agent_dir("../../etc"),
            PathBuf::from("/home/u/.filo/agents/etc")
        );
        assert_eq!(
            p.session_store_file("main"),
            PathBuf::from("/home/u/.filo/agents/main/sessions/sessions.json")
        );
        assert_eq!(
            p.session_file("main", "abc-123", None).unwrap(),
            PathBuf::from("/home/u/.filo/agents/main/sessions/abc-123.jsonl")
        );
        assert_eq!(
            p.session_file("main", "abc", Some("42/x y")).unwrap(),
            PathBuf::from("/home/u/.filo/agents/main/sessions/abc-topic-42%2Fx%20y.jsonl")
        );
        let custom = EmbedPaths::new(
            Some(PathBuf::from("/srv/state")),
            PathBuf::from("/h"),
            PathBuf::from("/t"),
        );
        assert_eq!(
            custom.agent_dir(""),
            PathBuf::from("/srv/state/agents/main")
        );
    }

    #[test]
    fn hostile_session_keys_stay_inside_the_state_dir() {
        let p = paths();
        let agents = p.state_dir.join("agents");
        for key in [
            "agent:../../etc:x",
            "agent:..:main",
            "agent:/abs/path:main",
            "agent:a\\b:c",
            "agent:%2e%2e:x",
            "agent:.:x",
            "../../../etc/passwd",
            "agent::::",
            "",
        ] {
            let dir = p.agent_dir_for_key(key);
            assert_eq!(
                dir.parent(),
                Some(agents.as_path()),
                "{key}: {}",
                dir.display()
            );
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            assert!(
                crate::session_key::is_valid_agent_id(&name),
                "{key}: {name}"
            );
        }
        assert_eq!(
            p.agent_dir_for_key("agent:Ops:telegram:dm:1"),
            agents.join("ops")
        );
    }

    #[test]
    fn session_id_table() {
        for (id, ok) in [
            ("abc", true),
            (" 3f1e-AB.c_d ", true),
            (&"a".repeat(128), true),
            (&"a".repeat(129), false),
            ("", false),
            ("..", false),
            ("../x", false),
            (".hidden", false),
            ("a/b", false),
            ("a\\b", false),
            ("-x", false),
            ("a b", false),
        ] {
            assert_eq!(validate_session_id(id).is_ok(), ok, "{id}");
        }
        assert_eq!(
            validate_session_id("../x").unwrap_err().to_string(),
            "Invalid session ID: ../x"
        );
        assert!(
            paths()
                .session_file("main", "../../../etc/passwd", None)
                .is_err()
        );
    }

    #[test]
    fn stored_session_file_table() {
        let dir = Path::new("/s/agents/main/sessions");
        let ok = |p: &str| confine_session_file(p, dir).map(|p| p.display().to_string());
        assert_eq!(ok("x.jsonl").unwrap(), "/s/agents/main/sessions/x.jsonl");
        assert_eq!(
            ok("./sub/../x.jsonl").unwrap(),
            "/s/agents/main/sessions/x.jsonl"
        );
        assert_eq!(
            ok("/s/agents/main/sessions/y.jsonl").unwrap(),
            "/s/agents/main/sessions/y.jsonl"
        );
        assert_eq!(
            ok("/s/agents/main/sessions/a/../y.jsonl").unwrap(),
            "/s/agents/main/sessions/y.jsonl"
        );
        for bad in [
            "../x.jsonl",
            "/etc/passwd",
            "/s/agents/main/sessions/../x",
            "a/../../x",
            "/s/agents/main/sessions",
            ".",
        ] {
            assert_eq!(ok(bad), Err(SessionPathError::OutsideSessionsDir), "{bad}");
        }
        assert_eq!(ok("  "), Err(SessionPathError::EmptySessionFile));
        assert_eq!(
            SessionPathError::OutsideSessionsDir.to_string(),
            "Session file path must be within sessions directory"
        );
        // resolve falls back to the default path on a bad stored path, never on a bad id
        let default = PathBuf::from("/s/agents/main/sessions/id1.jsonl");
        assert_eq!(
            resolve_session_file("id1", Some("../../x"), dir).unwrap(),
            default
        );
        assert_eq!(resolve_session_file("id1", Some(""), dir).unwrap(), default);
        assert_eq!(resolve_session_file("id1", None, dir).unwrap(), default);
        assert_eq!(
            resolve_session_file("id1", Some("t.jsonl"), dir).unwrap(),
            dir.join("t.jsonl")
        );
        assert!(resolve_session_file("../id1", Some("t.jsonl"), dir).is_err());
    }

    #[test]
    fn uri_component_encoding() {
        for (input, want) in [
            ("abc-_.!~*'()", "abc-_.!~*'()"),
            ("a b/c", "a%20b%2Fc"),
            ("é", "%C3%A9"),
            ("..", ".."),
        ] {
            assert_eq!(encode_uri_component(input), want);
        }
    }
}
