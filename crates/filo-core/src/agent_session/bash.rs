//! User bash (pi's `!cmd` and the RPC `bash` command, `bash-executor.ts`): run a command in the
//! session's directory in its own process group, clean its output for a model to read, and record
//! it as a `bashExecution` message.
//!
//! Output is decoded as a stream: ANSI escape sequences are dropped (by a `vte` parser, so a
//! sequence split across reads is still recognised), every control character except tab and
//! newline is removed (carriage returns included), and so are U+FFF9–U+FFFB. The cleaned text
//! goes into filo-tools' accumulator: a rolling tail for the result and, past 50 KiB, the whole
//! output in `<tmpdir>/pi-bash-<hex>.log`; the result is the tail-truncated view.

use std::path::{Path, PathBuf};
use std::time::Duration;

use filo_session::{BashExecution, EntryKind, SessionMessage};
use filo_tools::output::OutputAccumulator;
use filo_tools::process::{ShellCommand, resolve_shell, spawn_shell};
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{AgentSession, lock};
use crate::CoreError;

/// After the shell exits, how long to wait for output still buffered in pipes that a background
/// job may hold open.
const DRAIN_GRACE: Duration = Duration::from_millis(50);

/// What a user bash command produced (pi's `BashResult`; the RPC `bash` response data).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BashResult {
    /// The cleaned output, tail-truncated when `truncated`.
    pub output: String,
    /// The exit code; `None` when the command was cancelled or killed by a signal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    pub cancelled: bool,
    pub truncated: bool,
    /// The whole output, once it passed 50 KiB.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub full_output_path: Option<String>,
}

/// Streaming output cleaner: bytes in, text without escape sequences or control characters out.
struct Sanitizer {
    parser: vte::Parser,
    text: Keep,
}

struct Keep(String);

impl vte::Perform for Keep {
    fn print(&mut self, c: char) {
        if !matches!(c, '\u{FFF9}'..='\u{FFFB}') {
            self.0.push(c);
        }
    }

    fn execute(&mut self, byte: u8) {
        if matches!(byte, b'\t' | b'\n') {
            self.0.push(char::from(byte));
        }
    }
}

impl Sanitizer {
    fn new() -> Sanitizer {
        Sanitizer {
            parser: vte::Parser::new(),
            text: Keep(String::new()),
        }
    }

    /// Clean one chunk; state (a half-read sequence or character) carries over to the next.
    fn clean(&mut self, chunk: &[u8]) -> String {
        self.parser.advance(&mut self.text, chunk);
        std::mem::take(&mut self.text.0)
    }
}

/// Where and how to run a user command.
struct BashSpec<'a> {
    cwd: &'a Path,
    shell: Option<PathBuf>,
    command: String,
    temp_dir: PathBuf,
}

fn forward<R: AsyncRead + Unpin + Send + 'static>(
    mut reader: R,
    tx: mpsc::UnboundedSender<Vec<u8>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut buf = vec![0u8; 16 * 1024];
        while let Ok(n) = reader.read(&mut buf).await {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    })
}

fn tool_err(e: filo_tools::Error) -> CoreError {
    CoreError::Tool(e)
}

/// Run the command until it exits or `cancel` fires (then its whole group is killed); every
/// cleaned chunk of output is also handed to `on_chunk` as it arrives.
async fn run_user_bash(
    spec: BashSpec<'_>,
    cancel: CancellationToken,
    on_chunk: &mut (dyn FnMut(&str) + Send),
) -> Result<BashResult, CoreError> {
    let path_var = std::env::var_os("PATH");
    let shell = resolve_shell(spec.shell.as_deref(), path_var.as_deref());
    let (mut child, mut group) = spawn_shell(&ShellCommand {
        shell: &shell,
        command: &spec.command,
        cwd: spec.cwd,
        path_env: None,
        // The user's own `!command`: their environment.
        env: None,
        sandbox: None,
    })
    .map_err(tool_err)?;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut readers = Vec::new();
    if let Some(out) = child.stdout.take() {
        readers.push(forward(out, tx.clone()));
    }
    if let Some(err) = child.stderr.take() {
        readers.push(forward(err, tx.clone()));
    }
    drop(tx);
    let mut acc = OutputAccumulator::new(&spec.temp_dir);
    let mut clean = Sanitizer::new();
    let mut open = true;
    let status = loop {
        tokio::select! {
            biased;
            () = cancel.cancelled() => break None,
            chunk = rx.recv(), if open => match chunk {
                Some(c) => {
                    let text = clean.clean(&c);
                    if !text.is_empty() {
                        on_chunk(&text);
                    }
                    acc.push(text.as_bytes()).map_err(tool_err)?;
                }
                None => open = false,
            },
            status = child.wait() => {
                let status = status.map_err(|e| CoreError::io(&shell, e))?;
                break Some(status);
            }
        }
    };
    match status {
        Some(_) => group.disarm(),
        None => {
            group.kill();
            let _ = child.wait().await;
        }
    }
    while let Ok(Some(chunk)) = tokio::time::timeout(DRAIN_GRACE, rx.recv()).await {
        let text = clean.clean(&chunk);
        if !text.is_empty() {
            on_chunk(&text);
        }
        acc.push(text.as_bytes()).map_err(tool_err)?;
    }
    for r in readers {
        r.abort();
    }
    let snap = acc.snapshot();
    Ok(BashResult {
        output: snap.truncation.content,
        exit_code: status.and_then(|s| s.code()),
        cancelled: status.is_none(),
        truncated: snap.truncation.truncated,
        full_output_path: snap
            .full_output_path
            .map(|p| p.to_string_lossy().into_owned()),
    })
}

impl AgentSession {
    /// Run a user command (pi's `executeBash`) and record it as a `bashExecution` message: queued
    /// until the next prompt while the agent streams, else appended to the agent and the session
    /// now. `exclude_from_context` keeps it out of what the model sees (`!!cmd`).
    pub async fn execute_bash(
        &self,
        command: &str,
        exclude_from_context: bool,
    ) -> Result<BashResult, CoreError> {
        self.execute_bash_streaming(command, exclude_from_context, None)
            .await
    }

    /// [`AgentSession::execute_bash`] that also sends every chunk of output to listeners as it
    /// arrives, as a `bash_execution_update` carrying `id` (pi 1.6's RPC `bash`).
    pub async fn execute_bash_streaming(
        &self,
        command: &str,
        exclude_from_context: bool,
        id: Option<serde_json::Value>,
    ) -> Result<BashResult, CoreError> {
        let cancel = CancellationToken::new();
        let seq = {
            let mut st = lock(&self.inner.state);
            st.bash_seq += 1;
            st.bash_cancel = Some((st.bash_seq, cancel.clone()));
            st.bash_seq
        };
        let spec = {
            let s = lock(&self.inner.settings);
            BashSpec {
                cwd: &self.inner.cwd,
                shell: s.values().shell_path.clone(),
                command: s.values().prefixed_command(command),
                temp_dir: std::env::temp_dir(),
            }
        };
        let mut on_chunk = |delta: &str| {
            self.emit(&super::SessionEvent::BashExecutionUpdate {
                id: id.clone(),
                delta: delta.to_string(),
            });
        };
        let result = run_user_bash(spec, cancel, &mut on_chunk).await;
        {
            let mut st = lock(&self.inner.state);
            if st.bash_cancel.as_ref().is_some_and(|(s, _)| *s == seq) {
                st.bash_cancel = None;
            }
        }
        let result = result?;
        self.record_bash_result(command, &result, exclude_from_context);
        Ok(result)
    }

    /// Cancel the running user command, if any.
    pub fn abort_bash(&self) {
        if let Some((_, c)) = &lock(&self.inner.state).bash_cancel {
            c.cancel();
        }
    }

    /// Whether a user command is running.
    pub fn is_bash_running(&self) -> bool {
        lock(&self.inner.state).bash_cancel.is_some()
    }

    /// How many `bashExecution` messages wait for the next prompt.
    pub fn pending_bash_count(&self) -> usize {
        lock(&self.inner.state).pending_bash.len()
    }

    fn record_bash_result(&self, command: &str, result: &BashResult, exclude: bool) {
        let message = BashExecution {
            command: command.to_string(),
            output: result.output.clone(),
            exit_code: result.exit_code.map(i64::from),
            cancelled: result.cancelled,
            truncated: result.truncated,
            full_output_path: result.full_output_path.clone(),
            timestamp: filo_agent::now_ms(),
            exclude_from_context: exclude.then_some(true),
        };
        if self.is_streaming() {
            lock(&self.inner.state).pending_bash.push(message);
        } else {
            self.append_bash_message(message);
        }
    }

    fn append_bash_message(&self, message: BashExecution) {
        let m = SessionMessage::BashExecution(message);
        self.inner
            .agent
            .append_message(crate::convert::to_agent(&m));
        self.append_entry(EntryKind::Message(m));
    }

    /// Append the queued `bashExecution` messages (done at the start of each prompt).
    pub(crate) fn flush_pending_bash(&self) {
        let pending = std::mem::take(&mut lock(&self.inner.state).pending_bash);
        for m in pending {
            self.append_bash_message(m);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitizer_drops_escapes_and_controls_across_chunks() {
        let mut s = Sanitizer::new();
        let mut out = s.clean(b"a\x1b[3");
        out.push_str(&s.clean(b"1mred\x1b[0m\tb\r\n\x07c\xe2\x82"));
        out.push_str(&s.clean(b"\xac\x1b]0;title\x07d\xef\xbf\xb9e"));
        assert_eq!(out, "ared\tb\nc\u{20ac}de");
    }

    #[tokio::test]
    async fn runs_a_command_and_reports_its_exit_code() {
        let dir = tempfile::tempdir().unwrap();
        let spec = BashSpec {
            cwd: dir.path(),
            shell: None,
            command: "printf 'one\\033[1m two\\n'; echo err >&2; exit 3".into(),
            temp_dir: dir.path().to_path_buf(),
        };
        let r = run_user_bash(spec, CancellationToken::new(), &mut |_| {})
            .await
            .unwrap();
        assert!(r.output.contains("one two\n"), "{:?}", r.output);
        assert!(r.output.contains("err\n"));
        assert_eq!(r.exit_code, Some(3));
        assert!(!r.cancelled && !r.truncated);
        assert_eq!(r.full_output_path, None);
    }

    #[tokio::test]
    async fn cancel_kills_the_group_and_reports_no_exit_code() {
        let dir = tempfile::tempdir().unwrap();
        let spec = BashSpec {
            cwd: dir.path(),
            shell: None,
            command: "echo started; sleep 30".into(),
            temp_dir: dir.path().to_path_buf(),
        };
        let cancel = CancellationToken::new();
        let c = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            c.cancel();
        });
        let started = std::time::Instant::now();
        let mut seen = String::new();
        let r = run_user_bash(spec, cancel, &mut |d| seen.push_str(d))
            .await
            .unwrap();
        assert_eq!(seen, "started\n");
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(r.cancelled);
        assert_eq!(r.exit_code, None);
        assert_eq!(r.output, "started\n");
    }

    #[tokio::test]
    async fn large_output_spills_to_a_file_and_keeps_the_tail() {
        let dir = tempfile::tempdir().unwrap();
        let spec = BashSpec {
            cwd: dir.path(),
            shell: None,
            command: "seq 1 30000".into(),
            temp_dir: dir.path().to_path_buf(),
        };
        let r = run_user_bash(spec, CancellationToken::new(), &mut |_| {})
            .await
            .unwrap();
        assert!(r.truncated);
        assert!(r.output.ends_with("29999\n30000\n"));
        let path = r.full_output_path.unwrap();
        let full = std::fs::read_to_string(path).unwrap();
        assert!(full.starts_with("1\n2\n3\n"));
        assert!(full.ends_with("30000\n"));
    }
}
