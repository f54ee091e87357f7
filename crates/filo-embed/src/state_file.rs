//! A JSON state file that several processes update (`auth-profiles.json`, `sessions.json`): each
//! update runs under an advisory lock on `<file>.lock` and replaces the file by rename, so readers
//! need no lock and see either the old or the new content, and no update is lost.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// What failed, on which file.
#[derive(Debug)]
pub struct StateIoError {
    pub file: PathBuf,
    pub op: &'static str,
    pub source: io::Error,
}

fn failed(op: &'static str, file: &Path) -> impl FnOnce(io::Error) -> StateIoError {
    let file = file.to_path_buf();
    move |source| StateIoError { file, op, source }
}

/// `path`'s lock file: `<path>.lock`.
pub fn lock_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// Run `body` holding the cross-process lock of `path` (its directory is created first).
pub fn with_lock<T, E: From<StateIoError>>(
    path: &Path,
    body: impl FnOnce() -> Result<T, E>,
) -> Result<T, E> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(failed("create the directory of", path))?;
    let lock_path = lock_path(path);
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(failed("open", &lock_path))?;
    // `File::lock` (std since Rust 1.89, the workspace's rust-version): an advisory lock.
    lock.lock().map_err(failed("lock", &lock_path))?;
    let outcome = body();
    // Closing the handle releases the lock as well; an explicit unlock makes the release
    // independent of when `lock` is dropped.
    let unlocked = lock.unlock().map_err(failed("unlock", &lock_path));
    let result = outcome?;
    unlocked?;
    Ok(result)
}

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// The file a state path stands for: a symbolic link is followed (a user who linked
/// `auth-profiles.json` or `sessions.json` elsewhere meant that file to be written), up to 40
/// links deep; anything else is the path itself.
fn link_target(path: &Path) -> PathBuf {
    let mut current = path.to_path_buf();
    for _ in 0..40 {
        let is_link = fs::symlink_metadata(&current).is_ok_and(|m| m.file_type().is_symlink());
        if !is_link {
            return current;
        }
        let Ok(target) = fs::read_link(&current) else {
            return current;
        };
        current = match current.parent() {
            Some(dir) if target.is_relative() => dir.join(target),
            _ => target,
        };
    }
    current
}

/// Replace `path` with `text`: a private (0600) temporary file beside it, synced, then renamed
/// over it. On failure the original is untouched and the temporary copy is removed. When
/// `path` is a symbolic link, the file it points to is replaced and the link kept.
pub fn replace_atomically(path: &Path, text: &str) -> Result<(), StateIoError> {
    let path = &link_target(path);
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let n = TMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!(".{name}.{}.{n}.tmp", std::process::id()));
    let renamed = write_private(&tmp, text)
        .map_err(failed("write", &tmp))
        .and_then(|()| fs::rename(&tmp, path).map_err(failed("replace", path)));
    // The temporary file holds a copy only; the write error is what the caller must see, so a
    // failed clean-up does not replace it.
    if renamed.is_err() && tmp.exists() && fs::remove_file(&tmp).is_err() {
        return renamed;
    }
    renamed
}

fn write_private(path: &Path, text: &str) -> io::Result<()> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file: File = options.open(path)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A linked state file: the link's target gets the new text, the link stays a link.
    #[test]
    fn a_symlinked_state_file_is_written_through_its_link() {
        let dir = tempfile::tempdir().unwrap();
        let secrets = dir.path().join("secrets");
        fs::create_dir_all(&secrets).unwrap();
        let target = secrets.join("auth-profiles.json");
        fs::write(&target, "{}").unwrap();
        let link = dir.path().join("auth-profiles.json");
        std::os::unix::fs::symlink("secrets/auth-profiles.json", &link).unwrap();
        replace_atomically(&link, "{\"version\":1}").unwrap();
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read_to_string(&target).unwrap(), "{\"version\":1}");
        assert_eq!(fs::read_to_string(&link).unwrap(), "{\"version\":1}");
        // No temporary file left next to the link or the target.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
        assert_eq!(fs::read_dir(&secrets).unwrap().count(), 1);
    }
}
