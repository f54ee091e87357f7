//! The lock on `auth.json` that pi takes (npm `proper-lockfile`): a directory `<file>.lock`
//! created with `mkdir` (atomic), whose modification time the holder keeps fresh; a lock whose
//! time is older than the stale limit belongs to a process that died and is removed. filo takes
//! the same lock, so filo and pi processes never refresh the same credential at once.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

/// A lock untouched for this long is stale (pi's refresh lock: 30 s).
pub const STALE_AFTER: Duration = Duration::from_secs(30);
/// How often the holder refreshes the lock's time (pi's sync lock counts 10 s as stale).
const KEEP_FRESH_EVERY: Duration = Duration::from_secs(2);
/// The longest wait for another holder (more than [`STALE_AFTER`], so a dead holder's lock is
/// always cleared within it).
pub const WAIT_AT_MOST: Duration = Duration::from_secs(45);

/// Why the lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("{} is held by another process (waited {} s)", .path.display(), .waited.as_secs())]
    Busy { path: PathBuf, waited: Duration },
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// The held lock; dropping it releases it.
#[derive(Debug)]
pub struct FileLock {
    dir: PathBuf,
    keeper: Option<(Sender<()>, JoinHandle<()>)>,
}

/// `<file>.lock`.
pub fn lock_path(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

fn touch(dir: &Path) -> io::Result<()> {
    File::open(dir)?.set_modified(SystemTime::now())
}

fn is_stale(dir: &Path) -> io::Result<bool> {
    let modified = fs::metadata(dir)?.modified()?;
    Ok(SystemTime::now()
        .duration_since(modified)
        .is_ok_and(|age| age > STALE_AFTER))
}

impl FileLock {
    /// Take the lock on `file`, waiting up to `wait` for another holder (blocking; call it off
    /// the async workers).
    pub fn acquire(file: &Path, wait: Duration) -> Result<FileLock, LockError> {
        let dir = lock_path(file);
        let io_err = |source| LockError::Io {
            path: dir.clone(),
            source,
        };
        let started = std::time::Instant::now();
        let mut pause = Duration::from_millis(10);
        loop {
            match fs::create_dir(&dir) {
                Ok(()) => break,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(io_err(e)),
            }
            match is_stale(&dir) {
                // A dead holder's lock: remove it and try again at once. Another waiter may have
                // removed it first (NotFound), which is as good.
                Ok(true) => match fs::remove_dir(&dir) {
                    Ok(()) => continue,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(io_err(e)),
                },
                Ok(false) => {}
                // Released between our mkdir and stat.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io_err(e)),
            }
            let waited = started.elapsed();
            if waited >= wait {
                return Err(LockError::Busy { path: dir, waited });
            }
            std::thread::sleep(pause.min(wait - waited));
            pause = (pause * 2).min(Duration::from_millis(250));
        }
        // Mark it fresh now and every few seconds until released.
        let _ = touch(&dir);
        let (stop, stopped) = mpsc::channel::<()>();
        let keep = dir.clone();
        let keeper = std::thread::Builder::new()
            .name("auth-lock".into())
            .spawn(move || {
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(KEEP_FRESH_EVERY) {
                    let _ = touch(&keep);
                }
            })
            .ok()
            .map(|h| (stop, h));
        Ok(FileLock { dir, keeper })
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        if let Some((stop, handle)) = self.keeper.take() {
            drop(stop);
            let _ = handle.join();
        }
        // Gone already only if someone judged it stale; nothing more to do then.
        let _ = fs::remove_dir(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_at_a_time_and_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("auth.json");
        let held = FileLock::acquire(&file, Duration::ZERO).unwrap();
        assert!(dir.path().join("auth.json.lock").is_dir());
        let err = FileLock::acquire(&file, Duration::from_millis(50)).unwrap_err();
        assert!(matches!(err, LockError::Busy { .. }), "{err}");
        drop(held);
        assert!(!dir.path().join("auth.json.lock").exists());
        drop(FileLock::acquire(&file, Duration::ZERO).unwrap());
    }

    #[test]
    fn a_waiter_gets_the_lock_when_the_holder_releases_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("auth.json");
        let held = FileLock::acquire(&file, Duration::ZERO).unwrap();
        let f = file.clone();
        let waiter = std::thread::spawn(move || FileLock::acquire(&f, WAIT_AT_MOST).map(drop));
        std::thread::sleep(Duration::from_millis(100));
        assert!(!waiter.is_finished());
        drop(held);
        waiter.join().unwrap().unwrap();
    }

    #[test]
    fn a_stale_lock_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("auth.json");
        let stale = lock_path(&file);
        fs::create_dir(&stale).unwrap();
        let old = SystemTime::now() - STALE_AFTER - Duration::from_secs(5);
        File::open(&stale).unwrap().set_modified(old).unwrap();
        let lock = FileLock::acquire(&file, Duration::ZERO).unwrap();
        let age = SystemTime::now()
            .duration_since(fs::metadata(&stale).unwrap().modified().unwrap())
            .unwrap_or_default();
        assert!(age < STALE_AFTER, "the new holder marks it fresh");
        drop(lock);
    }
}
