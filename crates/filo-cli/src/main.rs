//! The filo binary: argument parsing, modes (interactive, print, json, rpc) and filo dag commands.
//!
//! Owns: the command line, process exit codes, printing to the terminal.
//!
//! Does not own: library logic: everything real lives in the library crates.

mod agent;
mod dag;
mod gateway;
mod mcp;

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};

/// filo: a coding-agent runtime whose memory is a Playfilo DAG.
#[derive(Debug, Parser)]
#[command(
    name = "filo",
    about = "filo: a coding agent whose memory is a time-travelling conversation graph (Playfilo)",
    args_conflicts_with_subcommands = true,
    args_override_self = true,
    disable_version_flag = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    agent: agent::AgentArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Inspect the Playfilo memory graph (life, recall, trace, show, stats, fsck).
    Dag(dag::DagArgs),
    /// Serve agents over OpenClaw's gateway protocol (WebSocket) and an OpenAI-compatible HTTP API.
    Gateway(gateway::GatewayArgs),
    /// MCP servers in mcp.json: add, list, get, remove.
    Mcp(mcp::McpArgs),
}

fn main() -> ExitCode {
    // The sandbox helper (`filo __sandbox-exec …`) confines itself before anything else runs,
    // while this process still has one thread.
    let raw: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if raw
        .get(1)
        .is_some_and(|a| a == filo_tools::sandbox::HELPER_SUBCOMMAND)
    {
        return sandbox_exec(&raw[2..]);
    }
    let cli = Cli::parse_from(agent::args::expand_short_flags(std::env::args_os()));
    if cli.command.is_none() && cli.agent.version {
        let mut out = std::io::stdout().lock();
        return match writeln!(out, "{}", env!("CARGO_PKG_VERSION")) {
            Ok(()) => ExitCode::SUCCESS,
            Err(_) => ExitCode::FAILURE,
        };
    }
    let env = dag::Env::from_process();
    let result = match cli.command {
        Some(Command::Dag(args)) => dag::run(args, &env, &mut std::io::stdout().lock()),
        Some(Command::Gateway(args)) => {
            gateway::run(args, &filo_ai::Env::from_vars(std::env::vars()))
        }
        Some(Command::Mcp(args)) => mcp::run(args, &filo_ai::Env::from_vars(std::env::vars())),
        None => run_agent(cli.agent),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            let _ = std::io::stdout().flush();
            let _ = match err.downcast_ref::<agent::PiWords>() {
                Some(words) => writeln!(std::io::stderr(), "{words}"),
                None => writeln!(std::io::stderr(), "error: {err:#}"),
            };
            ExitCode::FAILURE
        }
    }
}

/// Run a command confined (see `filo_tools::sandbox`): its exit code, or 126 with the reason on
/// stderr when it cannot be confined (it is then not run at all).
fn sandbox_exec(args: &[std::ffi::OsString]) -> ExitCode {
    use filo_tools::sandbox::{HelperArgs, exec};
    let simulate = std::env::var_os(exec::SIMULATE_NO_LANDLOCK_VAR).is_some_and(|v| v == "1");
    match HelperArgs::parse(args).and_then(|a| exec::run(&a, !simulate)) {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(255)),
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "{e}");
            ExitCode::from(126)
        }
    }
}

/// The agent modes run on a tokio runtime; the environment and the working directory are read
/// once, here.
fn run_agent(args: agent::AgentArgs) -> anyhow::Result<ExitCode> {
    let env = filo_ai::Env::from_vars(std::env::vars());
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    // Print, JSON and RPC modes run on this thread alone: a streamed answer then moves from the
    // connection to the agent loop to stdout without waking another thread for every delta, which
    // cost three times the CPU of the whole run (`scripts/bench-vs-pi/stream.sh`). Blocking work
    // (file tools, key commands) still goes to the blocking pool. The interactive UI keeps a
    // worker pool, so drawing and input never wait behind a stream.
    // While the connection and the agent loop hand a stream's chunks to each other, both tasks
    // stay runnable and the default (a non-blocking poll of the sockets and timers every 61 task
    // polls) made ~600 `epoll_wait` calls that found nothing for one 20,000-delta answer: the
    // connection had already read what the socket held. Polling them every 255 task polls still
    // sees a socket or a timer within microseconds; an idle runtime waits on them as before.
    let mut builder = match args.output_mode() {
        Some(_) => {
            let mut b = tokio::runtime::Builder::new_current_thread();
            b.event_interval(255);
            b
        }
        None => tokio::runtime::Builder::new_multi_thread(),
    };
    let runtime = builder.enable_all().build()?;
    let result = runtime.block_on(agent::run(args, &env, cwd));
    // RPC mode reads stdin on a blocking thread that cannot be cancelled; do not wait for it.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    result
}
