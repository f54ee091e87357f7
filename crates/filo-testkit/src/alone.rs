//! Running one test in a process of its own.
//!
//! A test that counts something process-wide (the threads of the process, its memory) sees
//! what other tests running beside it made: plain `cargo test` runs a binary's tests side by
//! side in one process. [`alone`] re-runs such a test by itself in a child process of the same
//! binary (nextest already gives each test its own process; the child costs a few ms there).

use std::process::Command;

/// Set in the child process [`alone`] starts.
const CHILD: &str = "FILO_TESTKIT_ALONE";

/// `true` in the child (run the test's body); otherwise runs `test` (its full path, e.g.
/// `suite::memory::the_test`) alone in a child process, panics unless it passed there, and
/// returns `false` (the caller returns without running its body).
pub fn alone(test: &str) -> bool {
    if std::env::var_os(CHILD).is_some() {
        return true;
    }
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => panic!("the test binary's path: {e}"),
    };
    let out = match Command::new(exe)
        .args(["--exact", test, "--test-threads=1", "--nocapture"])
        .env(CHILD, "1")
        .output()
    {
        Ok(o) => o,
        Err(e) => panic!("running {test} in a child process: {e}"),
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{test} in a process of its own:\n{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    false
}
