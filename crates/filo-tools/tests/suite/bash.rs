use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use filo_agent::{AgentTool, ToolCallContext, ToolOutput};
use filo_tools::{BashTool, ToolSettings};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::{failure, run, settings, text};

fn bash(dir: &Path) -> BashTool {
    BashTool::with_settings(settings(dir))
}

/// Whether a process is gone: no `/proc/<pid>` entry, or only a zombie waiting to be reaped.
fn process_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Wait (up to 2 s, for the reaper) until none of `pids` is alive.
async fn assert_all_gone(pids: &[i32]) {
    for _ in 0..200 {
        if pids.iter().all(|&pid| process_gone(pid)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let alive: Vec<i32> = pids
        .iter()
        .copied()
        .filter(|&pid| !process_gone(pid))
        .collect();
    panic!("processes of the group survived: {alive:?}");
}

async fn wait_for_file(path: &Path) -> String {
    for _ in 0..200 {
        if let Some(text) = std::fs::read_to_string(path)
            .ok()
            .filter(|text| text.ends_with('\n'))
        {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{} never appeared", path.display());
}

#[tokio::test]
async fn simple_output_has_no_details() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&bash(dir.path()), json!({"command": "echo 'test output'"}))
        .await
        .unwrap();
    assert_eq!(text(&out), "test output\n");
    assert_eq!(out.details, None);
}

#[tokio::test]
async fn empty_output_reads_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&bash(dir.path()), json!({"command": "true"}))
        .await
        .unwrap();
    assert_eq!(text(&out), "(no output)");
}

#[tokio::test]
async fn stdout_and_stderr_are_merged_and_cwd_is_used() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("marker.txt"), "").unwrap();
    let out = run(&bash(dir.path()), json!({"command": "ls; echo err >&2"}))
        .await
        .unwrap();
    assert_eq!(text(&out), "marker.txt\nerr\n");
}

#[tokio::test]
async fn non_zero_exit_is_an_error_with_output() {
    let dir = tempfile::tempdir().unwrap();
    let message = failure(run(&bash(dir.path()), json!({"command": "exit 1"})).await);
    assert_eq!(message, "(no output)\n\nCommand exited with code 1");
    let message = failure(run(&bash(dir.path()), json!({"command": "echo out; exit 3"})).await);
    assert_eq!(message, "out\n\n\nCommand exited with code 3");
}

#[tokio::test]
async fn killed_by_a_signal_without_abort_is_success() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&bash(dir.path()), json!({"command": "kill -9 $$"}))
        .await
        .unwrap();
    assert_eq!(text(&out), "(no output)");
}

#[tokio::test]
async fn timeout_kills_and_rejects() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let message = failure(
        run(
            &bash(dir.path()),
            json!({"command": "echo before; sleep 5", "timeout": 0.3}),
        )
        .await,
    );
    assert_eq!(message, "before\n\n\nCommand timed out after 0.3 seconds");
    assert!(started.elapsed() < Duration::from_secs(4));
}

#[tokio::test]
async fn missing_cwd_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("missing");
    let tool = BashTool::with_settings(settings(&gone));
    let message = failure(run(&tool, json!({"command": "echo hi"})).await);
    assert_eq!(
        message,
        format!(
            "Working directory does not exist: {}\nCannot execute bash commands.",
            gone.display()
        )
    );
}

#[tokio::test]
async fn spawn_enoent_propagates() {
    let dir = tempfile::tempdir().unwrap();
    let s = ToolSettings::clone(&settings(dir.path())).with_shell_path("/nonexistent/shell/bash");
    let tool = BashTool::with_settings(Arc::new(s));
    let message = failure(run(&tool, json!({"command": "echo hi"})).await);
    assert_eq!(message, "spawn /nonexistent/shell/bash ENOENT");
}

#[tokio::test]
async fn command_prefix_applied_combined_and_absent() {
    let dir = tempfile::tempdir().unwrap();
    let with = |prefix: &str| {
        let s = ToolSettings::clone(&settings(dir.path())).with_command_prefix(prefix);
        BashTool::with_settings(Arc::new(s))
    };
    let out = run(
        &with("export TEST_VAR=hello"),
        json!({"command": "echo $TEST_VAR"}),
    )
    .await
    .unwrap();
    assert_eq!(text(&out), "hello\n");
    let out = run(
        &with("echo prefix-output"),
        json!({"command": "echo command-output"}),
    )
    .await
    .unwrap();
    assert_eq!(text(&out), "prefix-output\ncommand-output\n");
    let out = run(&bash(dir.path()), json!({"command": "echo no-prefix"}))
        .await
        .unwrap();
    assert_eq!(text(&out), "no-prefix\n");
}

#[tokio::test]
async fn bin_dir_is_prepended_to_path() {
    let dir = tempfile::tempdir().unwrap();
    let s = ToolSettings::clone(&settings(dir.path())).with_bin_dir("/opt/agent-bin");
    let tool = BashTool::with_settings(Arc::new(s));
    let out = run(&tool, json!({"command": "echo \"$PATH\" | cut -d: -f1"}))
        .await
        .unwrap();
    assert_eq!(text(&out), "/opt/agent-bin\n");
}

#[tokio::test]
async fn abort_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let tool = bash(dir.path());
    let command = "sleep 30 & echo $! > bg.pid; echo $$ > sh.pid; echo started; wait";
    let ctx = ToolCallContext::new("c", json!({"command": command}));
    let cancel = ctx.cancel.clone();
    let call = tokio::spawn(async move { tool.execute(ctx).await });
    let shell_pid: i32 = wait_for_file(&dir.path().join("sh.pid"))
        .await
        .trim()
        .parse()
        .unwrap();
    let bg_pid: i32 = wait_for_file(&dir.path().join("bg.pid"))
        .await
        .trim()
        .parse()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !process_gone(bg_pid),
        "the background sleep should be running before the abort"
    );
    let started = Instant::now();
    cancel.cancel();
    let message = failure(call.await.unwrap());
    assert_eq!(message, "started\n\n\nCommand aborted");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_all_gone(&[shell_pid, bg_pid]).await;
}

#[tokio::test]
async fn already_aborted_calls_do_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolCallContext::new("c", json!({"command": "touch ran"}));
    ctx.cancel.cancel();
    let message = failure(bash(dir.path()).execute(ctx).await);
    assert_eq!(message, "Command aborted");
    assert!(!dir.path().join("ran").exists());
}

#[tokio::test]
async fn updates_stream_the_accumulated_output() {
    let dir = tempfile::tempdir().unwrap();
    let seen: Arc<Mutex<Vec<ToolOutput>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let mut ctx = ToolCallContext::new("c", json!({"command": "echo one; sleep 0.2; echo two"}));
    ctx.updates = Arc::new(move |update| sink.lock().unwrap().push(update));
    let out = bash(dir.path()).execute(ctx).await.unwrap();
    assert_eq!(text(&out), "one\ntwo\n");
    let updates = seen.lock().unwrap();
    let texts: Vec<&str> = updates.iter().map(text).collect();
    assert_eq!(texts.first(), Some(&"one\n"));
    assert_eq!(texts.last(), Some(&"one\ntwo\n"));
    assert_eq!(updates[0].details, Some(json!({})));
}

#[tokio::test]
async fn large_output_spills_to_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let tool = bash(dir.path());
    let out = run(&tool, json!({"command": "seq 1 30000"})).await.unwrap();
    let details = out.details.clone().unwrap();
    let full = details["fullOutputPath"].as_str().unwrap().to_string();
    assert!(
        full.starts_with(&dir.path().join("pi-bash-").display().to_string()),
        "{full}"
    );
    assert!(full.ends_with(".log"));
    let expected: String = (1..=30000).map(|i| format!("{i}\n")).collect();
    assert_eq!(std::fs::read_to_string(&full).unwrap(), expected);
    let t = text(&out);
    assert!(t.starts_with("28002\n"), "{}", &t[..20]);
    assert!(
        t.ends_with(&format!(
            "30000\n\n\n[Showing lines 28002-30001 of 30001. Full output: {full}]"
        )),
        "{}",
        &t[t.len() - 120..]
    );
    assert_eq!(details["truncation"]["truncatedBy"], "lines");
    assert_eq!(details["truncation"]["totalLines"], 30001);
    drop(tool);
    assert!(!Path::new(&full).exists(), "removed with the tool");
}

/// Full-output files live as long as the tool (the session) and no longer; output that was not
/// truncated leaves no file at all.
#[tokio::test]
async fn full_output_files_live_until_the_tool_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let tool = bash(dir.path());
    let logs = || -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("pi-bash-"))
            .collect();
        names.sort();
        names
    };
    run(&tool, json!({"command": "seq 1 100"})).await.unwrap();
    assert!(logs().is_empty(), "no file for output that fits");
    let first = run(&tool, json!({"command": "seq 1 30000"})).await.unwrap();
    let failed = failure(run(&tool, json!({"command": "seq 1 30000; exit 3"})).await);
    assert!(failed.ends_with("Command exited with code 3"), "{failed}");
    let kept = tool.full_output_files();
    assert_eq!(kept.len(), 2, "{kept:?}");
    assert_eq!(logs().len(), 2);
    let path = first.details.unwrap()["fullOutputPath"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(kept[0].display().to_string(), path);
    let clone = tool.clone();
    drop(tool);
    assert_eq!(logs().len(), 2, "a clone still holds them");
    drop(clone);
    assert!(
        logs().is_empty(),
        "removed with the last clone: {:?}",
        logs()
    );
}

#[tokio::test]
async fn one_huge_line_shows_its_tail() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        &bash(dir.path()),
        json!({"command": "head -c 60000 /dev/zero | tr '\\0' a"}),
    )
    .await
    .unwrap();
    let details = out.details.clone().unwrap();
    let full = details["fullOutputPath"].as_str().unwrap();
    let t = text(&out);
    assert_eq!(&t[..51200], "a".repeat(51200));
    assert_eq!(
        &t[51200..],
        format!("\n\n[Showing last 50.0KB of line 1 (line is 58.6KB). Full output: {full}]")
    );
}

#[tokio::test]
async fn dropping_the_call_kills_the_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let tool = bash(dir.path());
    let command = "sleep 30 & echo $! > bg.pid; echo $$ > sh.pid; wait";
    let call = tokio::spawn(async move {
        tool.execute(ToolCallContext::new("c", json!({"command": command})))
            .await
    });
    let shell_pid: i32 = wait_for_file(&dir.path().join("sh.pid"))
        .await
        .trim()
        .parse()
        .unwrap();
    let bg_pid: i32 = wait_for_file(&dir.path().join("bg.pid"))
        .await
        .trim()
        .parse()
        .unwrap();
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    assert_all_gone(&[shell_pid, bg_pid]).await;
}

#[tokio::test]
async fn background_jobs_holding_the_pipe_do_not_block_the_result() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let command = "sleep 5 & echo $! > bg.pid; echo done";
    let out = run(&bash(dir.path()), json!({"command": command}))
        .await
        .unwrap();
    assert_eq!(text(&out), "done\n");
    assert!(started.elapsed() < Duration::from_secs(3));
    // The job was started on purpose and survives the call, as in pi; the test stops it.
    let bg_pid: i32 = wait_for_file(&dir.path().join("bg.pid"))
        .await
        .trim()
        .parse()
        .unwrap();
    assert!(!process_gone(bg_pid));
    let status = std::process::Command::new("kill")
        .args(["-KILL", &bg_pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert_all_gone(&[bg_pid]).await;
}

#[tokio::test]
async fn chatty_output_is_throttled_but_complete() {
    let dir = tempfile::tempdir().unwrap();
    let seen: Arc<Mutex<Vec<ToolOutput>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let command = "for i in $(seq 1 60); do echo $i; sleep 0.005; done";
    let mut ctx = ToolCallContext::new("c", json!({"command": command}));
    ctx.updates = Arc::new(move |update| sink.lock().unwrap().push(update));
    let out = bash(dir.path()).execute(ctx).await.unwrap();
    let expected: String = (1..=60).map(|i| format!("{i}\n")).collect();
    assert_eq!(text(&out), expected);
    let updates = seen.lock().unwrap();
    // 60 separate writes at least 5 ms apart, updates at most every 50 ms.
    assert!(
        updates.len() >= 2 && updates.len() <= 45,
        "{} updates",
        updates.len()
    );
    assert_eq!(updates.last().map(text), Some(expected.as_str()));
}
