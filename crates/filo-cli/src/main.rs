//! The filo binary: argument parsing, modes (interactive, print, json, rpc) and filo dag commands.
//!
//! Owns: the command line, process exit codes, printing to the terminal.
//!
//! Does not own: library logic: everything real lives in the library crates.

fn main() {
    // Replaced by the real command line as the crates land.
    std::process::exit(0);
}
