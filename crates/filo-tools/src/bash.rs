//! `bash`: run a command in the session cwd, stream the output tail as updates, spill large
//! output to a file, kill the whole process group on timeout or abort.

use std::sync::Arc;
use std::time::Duration;

use filo_agent::{AgentTool, Concurrency, ToolCallContext, ToolError, ToolOutput, UpdateSink};
use filo_ai::ContentBlock;
use futures::FutureExt;
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Child;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::args::{js_number, parse_args};
use crate::error::Error;
use crate::output::{OutputAccumulator, Snapshot};
use crate::paths::display;
use crate::process::{
    ProcessGroup, ShellCommand, prepend_path, resolve_shell, spawn_shell_without,
};
use crate::settings::ToolSettings;
use crate::spill::SpillFiles;
use crate::support::text_output;
use crate::truncate::{DEFAULT_MAX_BYTES, TruncatedBy, format_size};

const DESCRIPTION: &str = "Execute a bash command in the current working directory. Returns stdout and stderr. Output is truncated to last 2000 lines or 50KB (whichever is hit first). If truncated, full output is saved to a temp file. Optionally provide a timeout in seconds.";
/// After the shell exits, how long to wait for more output from pipes that background
/// processes may still hold open.
const DRAIN_GRACE: Duration = Duration::from_millis(50);
/// Shortest gap between two streamed updates (a command printing byte by byte would otherwise
/// send one 50 KB snapshot per byte).
const UPDATE_INTERVAL: Duration = Duration::from_millis(50);

#[derive(Debug, Deserialize)]
struct BashArgs {
    command: String,
    #[serde(default, deserialize_with = "crate::args::lenient_number")]
    timeout: Option<f64>,
}

/// How the command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    Exited(Option<i32>),
    Aborted,
    TimedOut,
}

/// The `bash` tool. Clones share the full-output files, which are removed when the last clone is
/// dropped (see [`crate::spill`]).
#[derive(Debug, Clone)]
pub struct BashTool {
    settings: Arc<ToolSettings>,
    spills: Arc<SpillFiles>,
}

impl BashTool {
    /// A bash tool for `cwd` with default settings.
    pub fn new(cwd: impl Into<std::path::PathBuf>) -> Self {
        Self::with_settings(Arc::new(ToolSettings::new(cwd)))
    }

    /// A bash tool with explicit settings.
    pub fn with_settings(settings: Arc<ToolSettings>) -> Self {
        Self::with_spill_files(settings, Arc::new(SpillFiles::default()))
    }

    /// A bash tool whose full-output files are registered in `spills` (the caller removes them
    /// when the session ends, with [`SpillFiles::remove_all`]).
    pub fn with_spill_files(settings: Arc<ToolSettings>, spills: Arc<SpillFiles>) -> Self {
        BashTool { settings, spills }
    }

    /// The full-output files this tool keeps (oldest first); they go when the tool does.
    pub fn full_output_files(&self) -> Vec<std::path::PathBuf> {
        self.spills.paths()
    }
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

/// Rate-limits updates: the first chunk after a quiet spell is sent at once, later ones at most
/// every [`UPDATE_INTERVAL`], and whatever is pending is flushed at the end. Each update still
/// carries the full accumulated tail, so none is lost by skipping.
#[derive(Debug, Default)]
struct Throttle {
    last: Option<tokio::time::Instant>,
    dirty: bool,
}

impl Throttle {
    fn changed(&mut self, updates: &UpdateSink, output: &OutputAccumulator) {
        let due = self.last.is_none_or(|t| t.elapsed() >= UPDATE_INTERVAL);
        self.dirty = true;
        if due {
            self.flush(updates, output);
        }
    }

    fn flush_at(&self) -> Option<tokio::time::Instant> {
        match (self.dirty, self.last) {
            (true, Some(t)) => Some(t + UPDATE_INTERVAL),
            _ => None,
        }
    }

    fn flush(&mut self, updates: &UpdateSink, output: &OutputAccumulator) {
        if self.dirty {
            send_update(updates, &output.snapshot());
            self.dirty = false;
            self.last = Some(tokio::time::Instant::now());
        }
    }
}

fn send_update(updates: &UpdateSink, snapshot: &Snapshot) {
    updates(ToolOutput {
        content: vec![ContentBlock::text(snapshot.truncation.content.clone())],
        details: Some(Value::Object(snapshot.details())),
    });
}

/// The final text: tail content (or `empty`) plus pi's truncation notice.
fn render(snapshot: &Snapshot, last_line_bytes: usize, empty: &str) -> String {
    let t = &snapshot.truncation;
    let mut text = if t.content.is_empty() {
        empty.to_string()
    } else {
        t.content.clone()
    };
    if t.truncated {
        let full = snapshot
            .full_output_path
            .as_deref()
            .map(display)
            .unwrap_or_default();
        let end = t.total_lines;
        let start = end + 1 - t.output_lines.min(end);
        if t.last_line_partial {
            text.push_str(&format!(
                "\n\n[Showing last {} of line {end} (line is {}). Full output: {full}]",
                format_size(t.output_bytes),
                format_size(last_line_bytes)
            ));
        } else if t.truncated_by == Some(TruncatedBy::Lines) {
            text.push_str(&format!(
                "\n\n[Showing lines {start}-{end} of {end}. Full output: {full}]"
            ));
        } else {
            text.push_str(&format!(
                "\n\n[Showing lines {start}-{end} of {end} ({} limit). Full output: {full}]",
                format_size(DEFAULT_MAX_BYTES)
            ));
        }
    }
    text
}

fn with_status(text: String, status: &str) -> String {
    if text.is_empty() {
        status.to_string()
    } else {
        format!("{text}\n\n{status}")
    }
}

impl BashTool {
    async fn run(
        &self,
        args: BashArgs,
        cancel: &CancellationToken,
        updates: &UpdateSink,
    ) -> Result<ToolOutput, Error> {
        let s = &self.settings;
        validate_timeout(args.timeout)?;
        let command = match &s.command_prefix {
            Some(prefix) => format!("{prefix}\n{}", args.command),
            None => args.command,
        };
        if !s.cwd.is_dir() {
            return Err(Error::message(format!(
                "Working directory does not exist: {}\nCannot execute bash commands.",
                display(&s.cwd)
            )));
        }
        if cancel.is_cancelled() {
            return Err(Error::message("Command aborted"));
        }
        let given = s.shell_env.as_deref();
        let path_var = match given {
            Some(vars) => vars
                .iter()
                .find(|(k, _)| k == "PATH")
                .map(|(_, v)| v.clone()),
            None => std::env::var_os("PATH"),
        };
        let shell = resolve_shell(s.shell_path.as_deref(), path_var.as_deref());
        let vars: Vec<std::ffi::OsString> = match given {
            Some(vars) => vars.iter().map(|(k, _)| k.clone()).collect(),
            None => std::env::vars_os().map(|(k, _)| k).collect(),
        };
        let remove = s.bash_env.removed(vars.iter().map(|k| k.as_os_str()));
        let shell_command = ShellCommand {
            shell: &shell,
            command: &command,
            cwd: &s.cwd,
            path_env: s
                .bin_dir
                .as_deref()
                .map(|dir| prepend_path(dir, path_var.as_deref())),
            env: given.map(Vec::as_slice),
            sandbox: s.sandbox.as_deref(),
        };
        let (mut child, mut group) = spawn_shell_without(&shell_command, &remove)?;
        let mut output = OutputAccumulator::new(&s.temp_dir);
        let timeout = args.timeout.filter(|t| t.is_finite() && *t > 0.0);
        let ending = supervise(
            &mut child,
            &mut group,
            timeout,
            cancel,
            updates,
            &mut output,
        )
        .await;
        let finished = ending.and_then(|ending| output.finish().map(|()| ending));
        // Registered whatever happened, so the file is removed with the tool.
        if let Some(path) = output.full_output_path() {
            self.spills.register(path);
        }
        conclude(finished?, &output, timeout)
    }
}

/// The longest timeout pi 1.6 takes: Node's largest timer delay, in seconds (2147483.647).
const MAX_TIMEOUT_MS: f64 = 2_147_483_647.0;

/// pi 1.6's timeout check: a timeout, when given, is a positive finite number of seconds no
/// longer than Node's largest timer.
fn validate_timeout(timeout: Option<f64>) -> Result<(), Error> {
    let Some(t) = timeout else {
        return Ok(());
    };
    if !t.is_finite() || t <= 0.0 {
        return Err(Error::message(
            "Invalid timeout: must be a finite number of seconds",
        ));
    }
    if t * 1000.0 > MAX_TIMEOUT_MS {
        return Err(Error::message(format!(
            "Invalid timeout: maximum is {} seconds",
            js_number(MAX_TIMEOUT_MS / 1000.0)
        )));
    }
    Ok(())
}

/// Pump output into `output` (with updates) until the shell exits, the timeout fires or the
/// call is cancelled; on timeout or cancel the whole group is killed.
async fn supervise(
    child: &mut Child,
    group: &mut ProcessGroup,
    timeout: Option<f64>,
    cancel: &CancellationToken,
    updates: &UpdateSink,
    output: &mut OutputAccumulator,
) -> Result<Ending, Error> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut readers = Vec::new();
    if let Some(out) = child.stdout.take() {
        readers.push(forward(out, tx.clone()));
    }
    if let Some(err) = child.stderr.take() {
        readers.push(forward(err, tx.clone()));
    }
    drop(tx);
    let deadline = timeout.map(|t| tokio::time::Instant::now() + Duration::from_secs_f64(t));
    let timer = async {
        match deadline {
            Some(at) => tokio::time::sleep_until(at).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(timer);
    let mut open = true;
    let mut throttle = Throttle::default();
    let ending = loop {
        let flush_at = throttle.flush_at();
        tokio::select! {
            biased;
            () = cancel.cancelled() => break Ending::Aborted,
            () = &mut timer => break Ending::TimedOut,
            chunk = rx.recv(), if open => match chunk {
                Some(chunk) => {
                    output.push(&chunk)?;
                    throttle.changed(updates, output);
                }
                None => open = false,
            },
            () = tokio::time::sleep_until(flush_at.unwrap_or_else(tokio::time::Instant::now)), if flush_at.is_some() => {
                throttle.flush(updates, output);
            }
            status = child.wait() => {
                let status = status.map_err(|e| Error::Internal(format!("waiting for bash failed: {e}")))?;
                break Ending::Exited(status.code());
            }
        }
    };
    if matches!(ending, Ending::Exited(_)) {
        group.disarm();
    } else {
        group.kill();
        // Reap the shell; SIGKILL makes this immediate.
        let _ = child.wait().await;
    }
    // Whatever is still buffered in the pipes; stop early if a background job holds them open.
    while let Ok(Some(chunk)) = tokio::time::timeout(DRAIN_GRACE, rx.recv()).await {
        output.push(&chunk)?;
        throttle.changed(updates, output);
    }
    throttle.flush(updates, output);
    for reader in readers {
        reader.abort();
    }
    Ok(ending)
}

/// pi's result for each ending: success text, or a rejection with the output and a status.
fn conclude(
    ending: Ending,
    output: &OutputAccumulator,
    timeout: Option<f64>,
) -> Result<ToolOutput, Error> {
    let snapshot = output.snapshot();
    let last_line = output.last_line_bytes();
    let fail = |empty: &str, status: String| {
        Err(Error::message(with_status(
            render(&snapshot, last_line, empty),
            &status,
        )))
    };
    match ending {
        Ending::Aborted => fail("", "Command aborted".to_string()),
        Ending::TimedOut => {
            let secs = js_number(timeout.unwrap_or_default());
            fail("", format!("Command timed out after {secs} seconds"))
        }
        Ending::Exited(Some(code)) if code != 0 => {
            fail("(no output)", format!("Command exited with code {code}"))
        }
        Ending::Exited(_) => {
            let details = if snapshot.truncation.truncated {
                snapshot.details()
            } else {
                serde_json::Map::new()
            };
            Ok(text_output(
                render(&snapshot, last_line, "(no output)"),
                details,
            ))
        }
    }
}

impl AgentTool for BashTool {
    fn name(&self) -> &str {
        "bash"
    }

    fn label(&self) -> &str {
        "bash"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "Shell command to execute"},
                "timeout": {"type": "number", "description": "Timeout in seconds (optional, no default timeout)"}
            },
            "required": ["command"]
        })
    }

    fn concurrency(&self) -> Concurrency {
        Concurrency::Exclusive
    }

    fn execute(&self, ctx: ToolCallContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        async move {
            let args: BashArgs = parse_args("bash", &ctx.args)?;
            Ok(self.run(args, &ctx.cancel, &ctx.updates).await?)
        }
        .boxed()
    }
}
