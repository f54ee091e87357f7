//! SIGINT, SIGTERM and SIGHUP in the non-interactive modes (print, JSON, RPC): abort the run (which
//! kills the bash tool's process group and a user `!command`'s), let the session and the memory
//! flush through the session's shutdown, remove the run's temp files, then exit with 128 + the
//! signal number (130, 143, 129). A second signal while that happens stops waiting.

use std::future::Future;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use filo_core::AgentSession;
use tokio::signal::unix::{Signal, SignalKind, signal};

/// How often a run that started after the signal arrived is aborted again.
const ABORT_AGAIN: Duration = Duration::from_millis(100);

/// A signal that ends the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caught {
    Interrupt,
    Terminate,
    Hangup,
}

impl Caught {
    /// The shell convention: 128 + the signal number.
    pub fn exit_code(self) -> u8 {
        match self {
            Caught::Interrupt => 130,
            Caught::Terminate => 143,
            Caught::Hangup => 129,
        }
    }
}

/// The handlers, installed for the rest of the process.
pub struct Signals {
    interrupt: Signal,
    terminate: Signal,
    hangup: Signal,
}

impl Signals {
    pub fn install() -> std::io::Result<Signals> {
        Ok(Signals {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
            hangup: signal(SignalKind::hangup())?,
        })
    }

    /// The next signal.
    pub async fn recv(&mut self) -> Caught {
        tokio::select! {
            _ = self.interrupt.recv() => Caught::Interrupt,
            _ = self.terminate.recv() => Caught::Terminate,
            _ = self.hangup.recv() => Caught::Hangup,
        }
    }
}

/// Set once a signal arrived: the print modes send no further prompt.
#[derive(Debug, Clone, Default)]
pub struct Stop(Arc<AtomicBool>);

impl Stop {
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    fn set(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Abort every kind of work the session may be doing, without waiting.
fn abort_now(session: &AgentSession) {
    session.abort_bash();
    session.abort_retry();
    session.agent().abort();
}

/// Run a print or JSON mode (`work`, which stops sending prompts once `stop` is set). On a
/// signal: abort, let `work` finish what it was writing (the aborted turn is saved), shut the
/// session down (extensions flush the memory) and exit 128 + signal.
pub async fn run_print<F>(
    session: &AgentSession,
    signals: &mut Signals,
    stop: &Stop,
    work: F,
) -> anyhow::Result<ExitCode>
where
    F: Future<Output = anyhow::Result<ExitCode>>,
{
    tokio::pin!(work);
    let caught = tokio::select! {
        result = &mut work => {
            session.shutdown().await;
            return result;
        }
        caught = signals.recv() => caught,
    };
    stop.set();
    abort_now(session);
    loop {
        tokio::select! {
            _ = &mut work => break,
            () = tokio::time::sleep(ABORT_AGAIN) => abort_now(session),
            _ = signals.recv() => {
                // A second signal: stop waiting for the run; dropping `work` drops the tool calls
                // it still drives, which kills their process groups.
                break;
            }
        }
    }
    session.shutdown().await;
    Ok(ExitCode::from(caught.exit_code()))
}

/// Run RPC mode (`work` serves stdin until it ends). On a signal: abort everything, shut the
/// session down and exit 128 + signal without waiting for more input.
pub async fn run_rpc<F>(
    session: &AgentSession,
    signals: &mut Signals,
    work: F,
) -> anyhow::Result<ExitCode>
where
    F: Future<Output = anyhow::Result<ExitCode>>,
{
    let caught = tokio::select! {
        result = work => return result,
        caught = signals.recv() => caught,
    };
    abort_now(session);
    session.shutdown().await;
    Ok(ExitCode::from(caught.exit_code()))
}
