//! Where sessions live (pi spec §3.1, §9 item 1), under filo's own home, and where pi keeps its
//! agent directory.

use std::path::{Path, PathBuf};

/// The agent directory: `FILO_AGENT_DIR` (with `~` expanded) or `<home>/.filo/agent`. Takes the
/// values instead of reading the environment, so callers and tests decide.
pub fn agent_dir(filo_agent_dir: Option<&str>, home: &Path) -> PathBuf {
    match filo_agent_dir.filter(|s| !s.is_empty()) {
        Some(dir) => expand_home(dir, home),
        None => home.join(".filo").join("agent"),
    }
}

/// pi's agent directory, as pi 0.73 finds it: `PI_CODING_AGENT_DIR` (with `~` expanded) or
/// `<home>/.pi/agent`. filo only reads from it (see filo-core's `agent_dirs`).
pub fn pi_agent_dir(pi_coding_agent_dir: Option<&str>, home: &Path) -> PathBuf {
    match pi_coding_agent_dir.filter(|s| !s.is_empty()) {
        Some(dir) => expand_home(dir, home),
        None => home.join(".pi").join("agent"),
    }
}

/// Expand a leading `~` or `~/`.
pub fn expand_home(path: &str, home: &Path) -> PathBuf {
    if path == "~" {
        home.to_path_buf()
    } else if let Some(rest) = path.strip_prefix("~/") {
        home.join(rest)
    } else {
        PathBuf::from(path)
    }
}

/// `--<cwd without one leading slash, with / \ : replaced by ->--`.
pub fn encode_cwd(cwd: &str) -> String {
    let trimmed = cwd.strip_prefix(['/', '\\']).unwrap_or(cwd);
    format!("--{}--", trimmed.replace(['/', '\\', ':'], "-"))
}

/// The default session directory for a working directory.
pub fn session_dir_for(agent_dir: &Path, cwd: &str) -> PathBuf {
    agent_dir.join("sessions").join(encode_cwd(cwd))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_like_pi() {
        assert_eq!(encode_cwd("/Users/a/proj"), "--Users-a-proj--");
        assert_eq!(encode_cwd("C:\\work\\x"), "--C--work-x--");
        let home = Path::new("/home/u");
        assert_eq!(agent_dir(None, home), PathBuf::from("/home/u/.filo/agent"));
        assert_eq!(agent_dir(Some("~/x"), home), PathBuf::from("/home/u/x"));
        assert_eq!(pi_agent_dir(None, home), PathBuf::from("/home/u/.pi/agent"));
        assert_eq!(
            pi_agent_dir(Some(""), home),
            PathBuf::from("/home/u/.pi/agent")
        );
        assert_eq!(
            pi_agent_dir(Some("~/pi"), home),
            PathBuf::from("/home/u/pi")
        );
        assert_eq!(
            pi_agent_dir(Some("/etc/pi"), home),
            PathBuf::from("/etc/pi")
        );
    }
}
