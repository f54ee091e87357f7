//! Files that never end or block on open (devices, FIFOs), directories and huge files: every tool
//! that reads file contents refuses them or stops at a bound, and never hangs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;

use super::{failure, run, settings, text};
use filo_agent::{AgentTool, ToolError, ToolOutput};
use filo_tools::fileread::MAX_READ_BYTES;
use filo_tools::{EditTool, ReadTool};

/// A hang guard, not a time limit: a tool blocked on a FIFO would otherwise block the test forever.
const HANG_GUARD: Duration = Duration::from_secs(60);

fn mkfifo(dir: &Path) -> PathBuf {
    let path = dir.join("pipe");
    let status = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success());
    path
}

/// Run the tool; if it hangs, open the FIFO (if any) for reading and writing, which releases a
/// reader or a writer blocked on it, then fail.
async fn run_guarded(
    tool: &dyn AgentTool,
    args: serde_json::Value,
    fifo: Option<&Path>,
) -> Result<ToolOutput, ToolError> {
    let call = run(tool, args);
    tokio::pin!(call);
    match tokio::time::timeout(HANG_GUARD, &mut call).await {
        Ok(result) => result,
        Err(_) => {
            if let Some(fifo) = fifo {
                drop(
                    std::fs::OpenOptions::new()
                        .read(true)
                        .write(true)
                        .open(fifo),
                );
            }
            drop(call.await);
            panic!("the tool hung");
        }
    }
}

#[tokio::test]
async fn read_refuses_devices_and_fifos_without_reading_them() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = mkfifo(dir.path());
    let tool = ReadTool::with_settings(settings(dir.path()));
    // The FIFO first: on code without the check it fails (after the hang guard) before the
    // endless devices could exhaust memory.
    for (path, kind) in [
        (fifo.clone(), "a FIFO (named pipe)"),
        (PathBuf::from("/dev/zero"), "a character device"),
        (PathBuf::from("/dev/urandom"), "a character device"),
    ] {
        let args = json!({"path": path.to_string_lossy()});
        let message = failure(run_guarded(&tool, args, Some(&fifo)).await);
        assert_eq!(
            message,
            format!(
                "Cannot read {}: it is {kind}, not a regular file. Only regular files can be read.",
                path.display()
            )
        );
    }
}

#[tokio::test]
async fn read_of_a_directory_is_pis_eisdir_error() {
    let dir = tempfile::tempdir().unwrap();
    let tool = ReadTool::with_settings(settings(dir.path()));
    let message = failure(run(&tool, json!({"path": "."})).await);
    assert_eq!(message, "EISDIR: illegal operation on a directory, read");
}

#[tokio::test]
async fn edit_refuses_devices_and_fifos() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = mkfifo(dir.path());
    let tool = EditTool::with_settings(settings(dir.path()));
    for path in [fifo.clone(), PathBuf::from("/dev/zero")] {
        let args = json!({"path": path.to_string_lossy(), "oldText": "a", "newText": "b"});
        let message = failure(run_guarded(&tool, args, Some(&fifo)).await);
        assert!(message.contains("not a regular file"), "{message}");
    }
}

/// A sparse file past the bound: read shows whole lines of the first 64 MiB and says how to go on.
#[tokio::test]
async fn read_of_a_huge_file_stops_at_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.log");
    let head = "line\n".repeat(10);
    std::fs::write(&path, &head).unwrap();
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(MAX_READ_BYTES + 1024 * 1024).unwrap();
    drop(file);
    let tool = ReadTool::with_settings(settings(dir.path()));
    let out = run_guarded(&tool, json!({"path": "huge.log", "limit": 5}), None)
        .await
        .unwrap();
    let t = text(&out);
    assert!(t.starts_with("line\nline\nline\nline\nline\n\n["), "{t}");
    assert!(
        t.ends_with(
            "[File is 65.0MB; only its first 64.0MB (10 whole lines) were read. Use bash to read on from line 11: sed -n '11,+1999p' huge.log]"
        ),
        "{t}"
    );
    let past = failure(run(&tool, json!({"path": "huge.log", "offset": 20})).await);
    assert!(
        past.starts_with("Offset 20 is beyond the part of the file that was read."),
        "{past}"
    );
    let edit = EditTool::with_settings(settings(dir.path()));
    let args = json!({"path": "huge.log", "oldText": "line", "newText": "x"});
    let refused = failure(run(&edit, args).await);
    assert!(
        refused.contains("is too large (65.0MB; the limit is 64.0MB)"),
        "{refused}"
    );
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        MAX_READ_BYTES + 1024 * 1024
    );
}

/// grep streams files, but one line longer than the read bound is not held in memory: that file
/// is skipped (as ripgrep skips a file it cannot search) and the others are still searched.
#[tokio::test]
async fn grep_skips_a_file_whose_line_passes_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let huge = "needle".to_string() + &"a".repeat(MAX_READ_BYTES as usize + 1024);
    std::fs::write(dir.path().join("huge.txt"), huge).unwrap();
    std::fs::write(dir.path().join("small.txt"), "a needle here\n").unwrap();
    let tool = filo_tools::GrepTool::with_settings(settings(dir.path()));
    let out = run(&tool, json!({"pattern": "needle"})).await.unwrap();
    assert_eq!(text(&out), "small.txt:1: a needle here");
}

#[tokio::test]
async fn write_refuses_a_fifo_instead_of_blocking_on_it() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = mkfifo(dir.path());
    let tool = filo_tools::WriteTool::with_settings(settings(dir.path()));
    let args = json!({"path": "pipe", "content": "x"});
    let message = failure(run_guarded(&tool, args, Some(&fifo)).await);
    assert_eq!(
        message,
        format!(
            "Cannot write {}: it is a FIFO (named pipe), not a regular file.",
            fifo.display()
        )
    );
}
