//! The crate's error type and its mapping onto the agent's [`ToolError`].
//!
//! Almost every failure of a built-in tool is model-facing: pi rejects with a message and the agent
//! turns it into an `isError` tool result. File-system errors are rendered the way Node.js renders
//! them (`ENOENT: no such file or directory, open '/abs/path'`), because that is the text models
//! have seen from pi.

use std::io;
use std::path::{Path, PathBuf};

use filo_agent::ToolError;

/// What went wrong inside a tool.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The call was cancelled before or while it ran.
    #[error("Operation aborted")]
    Aborted,
    /// A ready-made, model-facing message (pi's exact wording).
    #[error("{0}")]
    Message(String),
    /// An operating-system error on a path, shown in Node.js style.
    #[error("{}", node_message(.source, .syscall, .path))]
    Io {
        syscall: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    /// The arguments did not fit the tool's parameter types.
    #[error(
        "Validation failed for tool \"{tool}\":\n  - root: {message}\n\nReceived arguments:\n{received}"
    )]
    Arguments {
        tool: String,
        message: String,
        received: String,
    },
    /// A bug or a runtime failure that the model cannot fix (e.g. a worker thread panicked).
    #[error("{0}")]
    Internal(String),
}

impl Error {
    /// A model-facing message.
    pub fn message(text: impl Into<String>) -> Self {
        Error::Message(text.into())
    }

    /// An I/O error on `path` during `syscall` (`open`, `access`, `read`, `mkdir`, …).
    pub fn io(syscall: &'static str, path: &Path, source: io::Error) -> Self {
        Error::Io {
            syscall,
            path: path.to_path_buf(),
            source,
        }
    }

    /// Whether the model should see this as an `isError` result (as opposed to ending the turn).
    pub fn is_model_facing(&self) -> bool {
        match self {
            Error::Aborted | Error::Message(_) | Error::Io { .. } | Error::Arguments { .. } => true,
            Error::Internal(_) => false,
        }
    }
}

impl From<Error> for ToolError {
    fn from(error: Error) -> Self {
        if error.is_model_facing() {
            ToolError::Failed(error.to_string())
        } else {
            ToolError::Fatal(error.to_string())
        }
    }
}

/// libuv's code and description for an errno, as Node.js prints them.
fn errno_text(code: i32) -> Option<(&'static str, &'static str)> {
    use nix::errno::Errno;
    let text = match Errno::from_raw(code) {
        Errno::ENOENT => ("ENOENT", "no such file or directory"),
        Errno::EACCES => ("EACCES", "permission denied"),
        Errno::EPERM => ("EPERM", "operation not permitted"),
        Errno::EISDIR => ("EISDIR", "illegal operation on a directory"),
        Errno::ENOTDIR => ("ENOTDIR", "not a directory"),
        Errno::EEXIST => ("EEXIST", "file already exists"),
        Errno::ENOSPC => ("ENOSPC", "no space left on device"),
        Errno::EROFS => ("EROFS", "read-only file system"),
        Errno::ELOOP => ("ELOOP", "too many symbolic links encountered"),
        Errno::ENAMETOOLONG => ("ENAMETOOLONG", "name too long"),
        Errno::EMFILE => ("EMFILE", "too many open files"),
        Errno::EBUSY => ("EBUSY", "resource busy or locked"),
        Errno::ETXTBSY => ("ETXTBSY", "text file is busy"),
        Errno::EINVAL => ("EINVAL", "invalid argument"),
        _ => return None,
    };
    Some(text)
}

/// `CODE: description, syscall 'path'`, or the OS message when the code is unknown.
pub(crate) fn node_message(source: &io::Error, syscall: &str, path: &Path) -> String {
    match source.raw_os_error().and_then(errno_text) {
        Some((code, description)) => {
            format!("{code}: {description}, {syscall} '{}'", path.display())
        }
        None => format!("{source}, {syscall} '{}'", path.display()),
    }
}

/// The errno code name of an I/O error (`ENOENT`), if known; used for `spawn <file> ENOENT`.
pub(crate) fn errno_code(source: &io::Error) -> Option<&'static str> {
    source
        .raw_os_error()
        .and_then(errno_text)
        .map(|(code, _)| code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_read_like_node() {
        let err = Error::io(
            "open",
            Path::new("/nope/x.txt"),
            io::Error::from_raw_os_error(2),
        );
        assert_eq!(
            err.to_string(),
            "ENOENT: no such file or directory, open '/nope/x.txt'"
        );
        assert!(err.is_model_facing());
    }

    #[test]
    fn internal_errors_end_the_turn() {
        let err: ToolError = Error::Internal("worker panicked".into()).into();
        assert_eq!(err, ToolError::Fatal("worker panicked".into()));
    }
}
