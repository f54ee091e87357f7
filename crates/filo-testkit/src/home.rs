//! Temporary home directories laid out the way filo expects them.

use std::io;
use std::path::{Path, PathBuf};

use tempfile::TempDir;

/// A temporary directory standing in for `$HOME`, with `.filo/agent` and `.playfilo` created.
/// Removed when dropped.
#[derive(Debug)]
pub struct TempHome {
    dir: TempDir,
}

impl TempHome {
    /// Create the directory and its `.filo/agent` and `.playfilo` subdirectories.
    pub fn new() -> io::Result<TempHome> {
        let dir = tempfile::Builder::new().prefix("filo-home-").tempdir()?;
        std::fs::create_dir_all(dir.path().join(".filo").join("agent"))?;
        std::fs::create_dir_all(dir.path().join(".playfilo"))?;
        Ok(TempHome { dir })
    }

    /// The home directory itself.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `<home>/.filo/agent`, filo's agent directory.
    pub fn agent_dir(&self) -> PathBuf {
        self.path().join(".filo").join("agent")
    }

    /// `<home>/.playfilo`, the shared Playfilo directory.
    pub fn playfilo_dir(&self) -> PathBuf {
        self.path().join(".playfilo")
    }

    /// Write `contents` to `relative` (a path inside the home), creating parent directories.
    /// Returns the absolute path written. An absolute or escaping `relative` is refused.
    pub fn write(
        &self,
        relative: impl AsRef<Path>,
        contents: impl AsRef<[u8]>,
    ) -> io::Result<PathBuf> {
        let relative = relative.as_ref();
        let inside = relative.components().all(|c| {
            matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        });
        if !inside {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} is not a relative path inside the home",
                    relative.display()
                ),
            ));
        }
        let path = self.path().join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, contents)?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_exists_and_is_removed_on_drop() {
        let home = TempHome::new().unwrap();
        assert!(home.agent_dir().is_dir());
        assert!(home.playfilo_dir().is_dir());
        let written = home.write(".filo/agent/settings.json", "{}").unwrap();
        assert_eq!(std::fs::read_to_string(&written).unwrap(), "{}");
        assert!(home.write("../escape", "x").is_err());
        assert!(home.write("/etc/x", "x").is_err());
        let root = home.path().to_path_buf();
        drop(home);
        assert!(!root.exists());
    }
}
