//! Writing session files: whole-line appends that either land or leave the file as it was, the
//! atomic rewrite of a migration, and the backup kept beside a migrated file.
//!
//! Files filo creates are private (0600) and so are the directories it creates for them (0700);
//! directories that already exist keep their permissions.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::file::SessionError;

/// Create `dir` and any missing parents as private directories (0700 on Unix). Existing
/// directories are left as they are.
pub fn create_private_dir(dir: &Path) -> Result<(), SessionError> {
    if dir.as_os_str().is_empty() || dir.is_dir() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir).map_err(|e| SessionError::io(dir, e))
}

fn private_options() -> OpenOptions {
    let mut o = OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    o
}

/// Append `text` (whole lines, each ending in `\n`) to `path`, creating it (0600) and its
/// directory (0700) when missing. One write of the whole text; when it fails partway (a full
/// disk, a file size limit) the file is cut back to its length before the append, so an append
/// either lands whole or leaves the file as it was — never a torn line in the middle of the file.
pub fn append_lines(path: &Path, text: &str) -> Result<(), SessionError> {
    if let Some(dir) = path.parent() {
        create_private_dir(dir)?;
    }
    let existed = path.exists();
    let mut f: File = private_options()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| SessionError::io(path, e))?;
    let before = f.metadata().map_err(|e| SessionError::io(path, e))?.len();
    let written = f.write_all(text.as_bytes()).and_then(|()| f.flush());
    let Err(cause) = written else {
        return Ok(());
    };
    match f.set_len(before) {
        Ok(()) if !existed => {
            // The append created the file: as it was means no file. Should removing it fail, an
            // empty file is left, which readers treat as a session not yet written.
            drop(f);
            let _left_empty = std::fs::remove_file(path);
            Err(SessionError::io(path, cause))
        }
        Ok(()) => Err(SessionError::io(path, cause)),
        Err(rollback) => Err(SessionError::TornAppend {
            path: path.to_path_buf(),
            cause,
            rollback,
        }),
    }
}

/// Replace `path` with `contents` atomically: write a temp file (0600) in the same directory,
/// sync it, give it the old file's permissions, then rename it over the original.
pub fn write_atomic(path: &Path, contents: &[u8]) -> Result<(), SessionError> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| SessionError::io(dir, e))?;
    tmp.write_all(contents)
        .map_err(|e| SessionError::io(path, e))?;
    tmp.as_file()
        .sync_all()
        .map_err(|e| SessionError::io(path, e))?;
    if let Ok(meta) = std::fs::metadata(path) {
        std::fs::set_permissions(tmp.path(), meta.permissions())
            .map_err(|e| SessionError::io(tmp.path(), e))?;
    }
    tmp.persist(path)
        .map_err(|e| SessionError::io(path, e.error))?;
    Ok(())
}

/// Copy `path` to `<file name>.<tag>.bak` beside it, or — when that exists — to the first free
/// `<file name>.<tag>.<n>.bak`. An existing file is never overwritten. Returns the backup's path.
pub fn backup_copy(path: &Path, tag: &str) -> Result<PathBuf, SessionError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let mut source = File::open(path).map_err(|e| SessionError::io(path, e))?;
    for n in 0..1000u32 {
        let candidate = match n {
            0 => dir.join(format!("{name}.{tag}.bak")),
            _ => dir.join(format!("{name}.{tag}.{n}.bak")),
        };
        let mut target = match private_options()
            .write(true)
            .create_new(true)
            .open(&candidate)
        {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(SessionError::io(&candidate, e)),
        };
        let copied = std::io::copy(&mut source, &mut target).and_then(|_| target.sync_all());
        if let Err(e) = copied {
            // Do not leave a partial backup that looks complete.
            let _removed = std::fs::remove_file(&candidate);
            return Err(SessionError::io(&candidate, e));
        }
        return Ok(candidate);
    }
    Err(SessionError::io(
        path,
        std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!("no free backup name {name}.{tag}.<n>.bak"),
        ),
    ))
}
