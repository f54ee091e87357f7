//! SIGINT, SIGTERM and SIGHUP to `filo` in print, JSON and RPC mode while the bash tool runs a
//! process tree: filo exits 130 / 143 / 129, no process of the tree survives, and the session
//! file holds the turn up to the tool call.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use filo_testkit::{MockProvider, Reply, Turn};
use serde_json::json;

use super::common::{Home, jsonl};

/// Whether a process is gone: no `/proc/<pid>` entry, or a zombie waiting to be reaped.
fn process_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// A pid the command wrote to `path` (waits for it, bounded).
async fn read_pid(path: &Path) -> i32 {
    for _ in 0..3000 {
        if let Some(pid) = std::fs::read_to_string(path)
            .ok()
            .and_then(|text| text.trim().parse().ok())
        {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{} never appeared", path.display());
}

/// Kill whatever survived, so a failing test leaves nothing behind.
fn kill_leftovers(pids: &[i32]) {
    for pid in pids {
        if !process_gone(*pid) {
            drop(
                std::process::Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status(),
            );
        }
    }
}

async fn assert_gone(pids: &[i32]) {
    for _ in 0..500 {
        if pids.iter().all(|&pid| process_gone(pid)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    kill_leftovers(pids);
    panic!("the bash tool's processes survived filo: {pids:?}");
}

/// Run filo with `args` (the model calls bash with a process tree), send `signal` once the tree
/// runs, and check the exit code, the processes and the session file.
async fn signal_during_bash(mode: &[&str], signal: &str, expected: i32) {
    let command = "sleep 300 & echo $! > bg.pid; echo $$ > sh.pid; sleep 300";
    let mock = MockProvider::start(vec![
        Turn::Reply(Reply::tool_call(
            "call_1",
            "bash",
            json!({"command": command}),
        )),
        Turn::Reply(Reply::text("should not be reached")),
    ])
    .await;
    let home = Home::new(&mock);
    let mut args = vec!["--provider", "mock", "--model", "mock-model"];
    args.extend_from_slice(mode);
    let rpc = mode.contains(&"rpc");
    // Print and JSON modes read piped stdin to its end first: give them none.
    let input = if rpc { Stdio::piped() } else { Stdio::null() };
    let mut child = home
        .command(&args)
        .stdin(input)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take();
    if let Some(stdin) = &mut stdin {
        use tokio::io::AsyncWriteExt;
        let line = json!({"id": "p1", "type": "prompt", "message": "start the tree"});
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
    }
    let pids = [
        read_pid(&home.project().join("sh.pid")).await,
        read_pid(&home.project().join("bg.pid")).await,
    ];
    let filo = child.id().unwrap().to_string();
    let sent = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &filo])
        .status()
        .unwrap();
    assert!(sent.success());
    // A hang guard, not a time limit: filo must exit on its own.
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output()).await;
    let Ok(out) = out else {
        kill_leftovers(&pids);
        panic!("filo did not exit after SIG{signal}");
    };
    let out = out.unwrap();
    drop(stdin);
    assert_gone(&pids).await;
    assert_eq!(
        out.status.code(),
        Some(expected),
        "SIG{signal} in {mode:?}; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let files = home.sessions();
    assert_eq!(files.len(), 1, "{files:?}");
    let lines = jsonl(&files[0]);
    let user = lines.iter().find(|l| l["message"]["role"] == "user");
    assert!(user.is_some(), "the prompt was saved: {lines:?}");
    let call = lines.iter().any(|l| {
        l["message"]["role"] == "assistant"
            && l["message"]["content"].as_array().is_some_and(|c| {
                c.iter()
                    .any(|b| b["type"] == "toolCall" && b["id"] == "call_1")
            })
    });
    assert!(call, "the tool call was saved: {lines:?}");
    assert_eq!(mock.requests().len(), 1, "no turn after the signal");
    // The memory was flushed: the prompt and the tool call are nodes in the DAG.
    let stats = home.filo(&["dag", "stats"]).await;
    assert_eq!(stats.0, 0, "{}", stats.2);
    let role = |name: &str| {
        stats.1.lines().find_map(|l| {
            l.trim()
                .strip_prefix(&format!("{name}: "))
                .and_then(|n| n.parse::<u64>().ok())
        })
    };
    assert!(role("user") >= Some(1), "{}", stats.1);
    assert!(role("assistant") >= Some(1), "{}", stats.1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_in_print_mode_kills_the_tool_tree_and_exits_130() {
    signal_during_bash(&["-p", "start the tree"], "INT", 130).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_in_print_mode_kills_the_tool_tree_and_exits_143() {
    signal_during_bash(&["-p", "start the tree"], "TERM", 143).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_in_print_mode_kills_the_tool_tree_and_exits_129() {
    signal_during_bash(&["-p", "start the tree"], "HUP", 129).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_in_json_mode_kills_the_tool_tree_and_exits_143() {
    signal_during_bash(&["--mode", "json", "start the tree"], "TERM", 143).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_in_json_mode_kills_the_tool_tree_and_exits_130() {
    signal_during_bash(&["--mode", "json", "start the tree"], "INT", 130).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_in_rpc_mode_kills_the_tool_tree_and_exits_143() {
    signal_during_bash(&["--mode", "rpc"], "TERM", 143).await;
}

/// Later prompts of `-p a b c` are not sent after a signal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_further_prompt_is_sent_after_a_signal() {
    signal_during_bash(&["-p", "start the tree", "second prompt"], "INT", 130).await;
}
