//! Skipping the start-up integrity scan of a memory file that is as filo left it.
//!
//! A hub refuses to write into a damaged database, and SQLite's `quick_check` (one pass over the
//! whole file) is how it finds out: ~0.1 s per 100 MB, paid by every process that opens the
//! memory, on a file that only grows. Most starts open the file exactly as the previous filo
//! process closed it. So when a hub closes a file it checked (or trusted) at open, it writes a
//! stamp beside it — `<db>-filo-verified`, like SQLite's own `-wal`/`-shm` siblings — with the
//! file's device, inode, length and modification time taken after the connection closed (the
//! write-ahead log checkpointed and gone). The next open skips the scan only when the file still
//! has exactly those and no write-ahead log is left: a write by any process (another agent, a
//! tool, a copy over the file) changes the time and the scan runs again. The stamp is a cache:
//! failing to read or write it only costs the scan.

use std::fs;
use std::path::{Path, PathBuf};

/// The stamp's format version; another first word never matches.
const VERSION: &str = "v1";

/// Where the stamp of `db` lives.
pub(crate) fn stamp_path(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push("-filo-verified");
    PathBuf::from(name)
}

/// The identity of `db` as it is now, when no write-ahead log is pending; `None` when there is
/// one (another connection is open, or a process stopped before its checkpoint) or the file
/// cannot be read.
fn identity(db: &Path) -> Option<String> {
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    if fs::metadata(PathBuf::from(wal)).is_ok_and(|m| m.len() > 0) {
        return None;
    }
    let m = fs::metadata(db).ok()?;
    let modified = m
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_nanos();
    Some(format!(
        "{VERSION} {} {} {modified}",
        device_and_inode(&m),
        m.len()
    ))
}

#[cfg(unix)]
fn device_and_inode(m: &fs::Metadata) -> String {
    use std::os::unix::fs::MetadataExt;
    format!("{} {}", m.dev(), m.ino())
}

#[cfg(not(unix))]
fn device_and_inode(_: &fs::Metadata) -> String {
    "- -".to_string()
}

/// Whether `db` is exactly as a hub that had verified it left it.
pub(crate) fn unchanged_since_verified(db: &Path) -> bool {
    let Some(now) = identity(db) else {
        return false;
    };
    fs::read_to_string(stamp_path(db)).is_ok_and(|s| s.trim_end() == now)
}

/// Record `db` as verified, as it is now. Called after the hub's connection closed.
pub(crate) fn record(db: &Path) {
    let stamp = stamp_path(db);
    match identity(db) {
        // A cache: when it cannot be written, the next open scans.
        Some(id) => fs::write(&stamp, format!("{id}\n")).unwrap_or(()),
        None => fs::remove_file(&stamp).unwrap_or(()),
    }
}

/// Forget any stamp of `db` (the file is about to be written while unverified, or was found
/// damaged).
pub(crate) fn forget(db: &Path) {
    fs::remove_file(stamp_path(db)).unwrap_or(());
}

/// Records the stamp when dropped, if armed. Declared after the store in [`super::hub::Core`],
/// so it runs once the connection is closed.
pub(crate) struct RecordOnClose {
    pub(crate) db: Option<PathBuf>,
}

impl Drop for RecordOnClose {
    fn drop(&mut self) {
        if let Some(db) = self.db.take() {
            record(&db);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_matches_only_the_file_as_it_was_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("playfilo.db");
        fs::write(&db, b"one").unwrap();
        assert!(!unchanged_since_verified(&db), "no stamp yet");
        record(&db);
        assert!(unchanged_since_verified(&db));

        // Any write moves the time or the length.
        std::thread::sleep(std::time::Duration::from_millis(5));
        fs::write(&db, b"two").unwrap();
        assert!(!unchanged_since_verified(&db));
        record(&db);
        assert!(unchanged_since_verified(&db));

        // A pending write-ahead log means another connection may be writing.
        fs::write(dir.path().join("playfilo.db-wal"), b"frames").unwrap();
        assert!(!unchanged_since_verified(&db));
        record(&db);
        assert!(
            !stamp_path(&db).exists(),
            "nothing recorded while a log is pending"
        );
        fs::write(dir.path().join("playfilo.db-wal"), b"").unwrap();
        assert!(!unchanged_since_verified(&db));
        record(&db);
        assert!(
            unchanged_since_verified(&db),
            "an empty log is no pending write"
        );

        // A file put in its place (new inode), and a stamp of another version or garbage.
        let copy = dir.path().join("copy.db");
        fs::copy(&db, &copy).unwrap();
        fs::rename(&copy, &db).unwrap();
        assert!(!unchanged_since_verified(&db));
        fs::write(stamp_path(&db), "v0 1 2 3 4\n").unwrap();
        assert!(!unchanged_since_verified(&db));
        forget(&db);
        assert!(!stamp_path(&db).exists());
    }
}
