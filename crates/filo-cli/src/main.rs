//! The filo binary: argument parsing, modes (interactive, print, json, rpc) and filo dag commands.
//!
//! Owns: the command line, process exit codes, printing to the terminal.
//!
//! Does not own: library logic: everything real lives in the library crates.

mod dag;

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// filo: a coding-agent runtime whose memory is a Playfilo DAG.
#[derive(Debug, Parser)]
#[command(name = "filo", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Inspect the Playfilo memory graph (life, recall, trace, show, stats, fsck).
    Dag(dag::DagArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let env = dag::Env::from_process();
    let mut stdout = std::io::stdout().lock();
    let result = match cli.command {
        Command::Dag(args) => dag::run(args, &env, &mut stdout),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            let _ = stdout.flush();
            let _ = writeln!(std::io::stderr(), "error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
