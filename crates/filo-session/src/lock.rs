//! One writer per session file across processes (embed design G2): an advisory lock on
//! `<session file>.lock`, held by whoever appends to the session for a whole turn (an embedded
//! run's attempt, a second gateway, the CLI).
//!
//! The lock is the operating system's (`flock` through [`std::fs::File::try_lock`]), so a
//! process that dies — crashed, killed, out of power — releases it with its last file handle:
//! there is no stale lock to guess about and nothing to clean up. The lock file itself stays
//! beside the session (removing it would let two processes lock two different files); it holds
//! the holder's pid and the time it took the lock, for the message another process shows while
//! it waits.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How often a waiting process tries again.
const RETRY_EVERY: Duration = Duration::from_millis(25);

/// Why the lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("{path}: {cause}")]
    Io {
        path: PathBuf,
        cause: std::io::Error,
    },
    /// Another process held the lock for the whole wait.
    #[error("{session}: another process is writing this session ({holder}); waited {waited:?}")]
    Busy {
        session: PathBuf,
        /// What the holder wrote into the lock file (`pid <n> since <ms>`), or `unknown holder`.
        holder: String,
        waited: Duration,
    },
}

/// The held lock of one session file; released when dropped.
#[derive(Debug)]
pub struct SessionLock {
    file: File,
    path: PathBuf,
}

/// `<session file>.lock`.
pub fn lock_path(session_file: &Path) -> PathBuf {
    let mut name = session_file.as_os_str().to_os_string();
    name.push(".lock");
    PathBuf::from(name)
}

impl SessionLock {
    /// Takes the lock of `session_file`, waiting up to `wait` while another process holds it.
    /// Blocking: call it off the async runtime's threads.
    pub fn acquire(session_file: &Path, wait: Duration, now_ms: i64) -> Result<Self, LockError> {
        let path = lock_path(session_file);
        let io = |cause| LockError::Io {
            path: path.clone(),
            cause,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut file = options.open(&path).map_err(io)?;
        let started = Instant::now();
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(TryLockError::WouldBlock) if started.elapsed() < wait => {
                    std::thread::sleep(RETRY_EVERY.min(wait.saturating_sub(started.elapsed())));
                }
                Err(TryLockError::WouldBlock) => {
                    return Err(LockError::Busy {
                        session: session_file.to_path_buf(),
                        holder: holder_of(&mut file),
                        waited: started.elapsed(),
                    });
                }
                Err(TryLockError::Error(cause)) => return Err(io(cause)),
            }
        }
        // Who holds it, for the others' messages; a failed note does not weaken the lock.
        let note = format!("pid {} since {now_ms}\n", std::process::id());
        let _note_is_informational = file
            .set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)))
            .and_then(|_| file.write_all(note.as_bytes()));
        Ok(Self { file, path })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for SessionLock {
    fn drop(&mut self) {
        // Closing the handle releases the lock as well; unlocking first makes it immediate
        // even while another clone of the handle lives.
        let _closing_releases_it_anyway = self.file.unlock();
    }
}

fn holder_of(file: &mut File) -> String {
    let mut text = String::new();
    let read = file
        .seek(SeekFrom::Start(0))
        .and_then(|_| file.take(200).read_to_string(&mut text));
    match read {
        Ok(_) if !text.trim().is_empty() => text.trim().to_owned(),
        _ => "unknown holder".to_owned(),
    }
}
