//! Reading file contents safely: only regular files are opened (a FIFO would block the open, a
//! device like `/dev/zero` or `/dev/urandom` never ends), and no read goes past a size bound.

use std::fs::{File, Metadata};
use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use crate::error::Error;
use crate::truncate::format_size;

/// The most bytes any tool reads from one file (64 MiB).
pub const MAX_READ_BYTES: u64 = 64 * 1024 * 1024;

/// What was read from a file: at most the bound, and whether that was all of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contents {
    /// The bytes read (the whole file, or its first `limit` bytes).
    pub bytes: Vec<u8>,
    /// The file's size as the file system reported it when it was opened.
    pub file_size: u64,
    /// `false` when the file had more bytes than the bound.
    pub complete: bool,
}

/// What kind of non-regular file `meta` describes, for the error message.
pub fn kind(meta: &Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// The model-facing refusal for a path that is not a regular file.
pub fn not_regular(path: &Path, meta: &Metadata) -> Error {
    Error::message(format!(
        "Cannot read {}: it is {}, not a regular file. Only regular files can be read.",
        path.display(),
        kind(meta)
    ))
}

/// Refuse anything but a regular file (symlinks are followed), before it is opened: opening a
/// FIFO for reading blocks until a writer appears.
pub fn check_regular(path: &Path) -> Result<Metadata, Error> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io("access", path, e))?;
    if meta.is_file() {
        Ok(meta)
    } else {
        Err(not_regular(path, &meta))
    }
}

/// Read at most `limit` bytes of the regular file at `path` (blocking).
pub fn read_regular(path: &Path, limit: u64) -> Result<Contents, Error> {
    check_regular(path)?;
    let file = File::open(path).map_err(|e| Error::io("open", path, e))?;
    // The path may have been swapped between the check and the open: check what was opened.
    let meta = file.metadata().map_err(|e| Error::io("fstat", path, e))?;
    if !meta.is_file() {
        return Err(not_regular(path, &meta));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len().min(limit)).unwrap_or(0));
    // One byte past the bound tells whether there was more (a file may grow after the stat).
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io("read", path, e))?;
    let complete = bytes.len() as u64 <= limit;
    bytes.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    Ok(Contents {
        bytes,
        file_size: meta.len(),
        complete,
    })
}

/// [`read_regular`] on tokio's blocking pool.
pub async fn read_regular_async(path: &Path, limit: u64) -> Result<Contents, Error> {
    let owned = path.to_path_buf();
    tokio::task::spawn_blocking(move || read_regular(&owned, limit))
        .await
        .map_err(|e| Error::Internal(format!("file reader failed: {e}")))?
}

/// The whole regular file, or a model-facing error when it is larger than `limit` (for tools
/// that must see every byte, like edit).
pub async fn read_whole_regular(path: &Path, limit: u64) -> Result<Vec<u8>, Error> {
    let contents = read_regular_async(path, limit).await?;
    if !contents.complete {
        return Err(Error::message(format!(
            "{} is too large ({}; the limit is {}).",
            path.display(),
            format_size(usize::try_from(contents.file_size).unwrap_or(usize::MAX)),
            format_size(usize::try_from(limit).unwrap_or(usize::MAX))
        )));
    }
    Ok(contents.bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bounded_read_says_whether_it_saw_everything() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"0123456789").unwrap();
        let all = read_regular(&path, 10).unwrap();
        assert_eq!((all.bytes.len(), all.complete), (10, true));
        let part = read_regular(&path, 4).unwrap();
        assert_eq!(part.bytes, b"0123");
        assert!(!part.complete);
        assert_eq!(part.file_size, 10);
    }

    #[test]
    fn devices_and_directories_are_refused_without_reading() {
        let dir = tempfile::tempdir().unwrap();
        for path in [
            Path::new("/dev/zero"),
            Path::new("/dev/urandom"),
            dir.path(),
        ] {
            let err = read_regular(path, 16).unwrap_err().to_string();
            assert!(err.contains("not a regular file"), "{err}");
        }
    }
}
