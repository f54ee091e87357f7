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

/// Replace `path` with `text`: a private (0600) temporary file beside it, synced, then renamed
/// over it. On failure the original is untouched and the temporary copy is removed.
pub fn replace_atomically(path: &Path, text: &str) -> Result<(), StateIoError> {
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
