//! The lifetime of bash's full-output files (`<tmpdir>/pi-bash-<hex>.log`).
//!
//! A file exists only when the output was truncated (the result names it so the model can read
//! the rest). Each file the bash tool creates is registered here and lives while the session
//! does: when the registry is dropped, or its owner calls [`SpillFiles::remove_all`] at the end
//! of the session (the `filo` binary does on every exit it controls, signals included), every
//! registered file is removed. A `kill -9` leaves them to the system's temp cleaning. While the session runs the files together
//! stay under [`TOTAL_CAP`]: past it the oldest files are removed first. A single file stops
//! growing at [`crate::output::SPILL_FILE_CAP`].

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The most bytes all of one session's full-output files may hold together (256 MiB).
pub const TOTAL_CAP: u64 = 256 * 1024 * 1024;

/// The full-output files of one bash tool, oldest first, removed on drop.
#[derive(Debug)]
pub struct SpillFiles {
    cap: u64,
    files: Mutex<VecDeque<(PathBuf, u64)>>,
}

impl Default for SpillFiles {
    fn default() -> Self {
        SpillFiles::with_cap(TOTAL_CAP)
    }
}

impl SpillFiles {
    /// A registry whose files together stay under `cap` bytes.
    pub fn with_cap(cap: u64) -> Self {
        SpillFiles {
            cap,
            files: Mutex::new(VecDeque::new()),
        }
    }

    /// Take ownership of `path` (removed when this registry is dropped); older files are
    /// removed while the total is over the cap. The newest file is always kept.
    pub fn register(&self, path: &Path) {
        let size = std::fs::metadata(path).map_or(0, |m| m.len());
        let mut files = self.lock();
        files.push_back((path.to_path_buf(), size));
        let mut total: u64 = files.iter().map(|(_, s)| s).sum();
        while total > self.cap && files.len() > 1 {
            if let Some((old, old_size)) = files.pop_front() {
                remove(&old);
                total -= old_size;
            }
        }
    }

    /// Remove every registered file now (the session is over). Called on drop too; call it
    /// directly where the tool may outlive the session (an `Arc` cycle, a process exit).
    pub fn remove_all(&self) {
        for (path, _) in self.lock().drain(..) {
            remove(&path);
        }
    }

    /// The files currently kept, oldest first.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.lock().iter().map(|(p, _)| p.clone()).collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<(PathBuf, u64)>> {
        // A panic while holding the lock leaves a consistent list; keep using it.
        self.files
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Remove a temp file; one that is already gone (the user or tmp cleaning removed it) is fine.
fn remove(path: &Path) {
    drop(std::fs::remove_file(path));
}

impl Drop for SpillFiles {
    fn drop(&mut self) {
        self.remove_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(dir: &Path, name: &str, len: usize) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, vec![b'x'; len]).unwrap();
        path
    }

    #[test]
    fn files_are_removed_on_drop_and_the_oldest_go_first_past_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let spills = SpillFiles::with_cap(250);
        let a = file(dir.path(), "a", 100);
        let b = file(dir.path(), "b", 100);
        let c = file(dir.path(), "c", 100);
        spills.register(&a);
        spills.register(&b);
        assert!(a.exists() && b.exists());
        spills.register(&c);
        assert!(!a.exists(), "the oldest file went to stay under the cap");
        assert_eq!(spills.paths(), [b.clone(), c.clone()]);
        let huge = file(dir.path(), "huge", 1000);
        spills.register(&huge);
        assert_eq!(
            spills.paths(),
            std::slice::from_ref(&huge),
            "the newest file is always kept"
        );
        drop(spills);
        assert!(!huge.exists() && !b.exists() && !c.exists());
    }
}
