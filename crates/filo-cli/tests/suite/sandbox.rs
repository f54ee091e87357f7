//! The sandbox of the model's commands (`filo_tools::sandbox`) on this kernel (Landlock, user
//! namespaces): escape attempts through the helper the bash tool runs commands under, each
//! refused with nothing written outside the allowed roots, and the bash tool end to end with
//! `--sandbox`. The HOME of these tests lies outside the system temp folder, which a
//! `workspace-write` sandbox may write.

use std::path::Path;
use std::process::Command;

use filo_testkit::{MockProvider, Reply, Turn};
use serde_json::json;

use super::common::Home;

const FILO: &str = env!("CARGO_BIN_EXE_filo");

/// `bash -c script` in `mode` with `cwd` writable and HOME's secrets hidden: (exit code,
/// stdout, stderr).
fn confined(
    home: &Path,
    cwd: &Path,
    mode: &str,
    script: &str,
    env: &[(&str, &str)],
) -> (i32, String, String) {
    let mut c = Command::new(FILO);
    c.args(["__sandbox-exec", "--mode", mode, "--write"])
        .arg(cwd)
        .args(["--hide"])
        .arg(home.join(".filo"))
        .args(["--hide"])
        .arg(home.join(".pi"))
        .args(["--", "/bin/bash", "-c", script])
        .current_dir(cwd)
        .env("HOME", home)
        .env("OPENAI_API_KEY", "sk-secret-key")
        .env("FILO_GATEWAY_TOKEN", "gateway-secret");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

struct Box_ {
    _dir: tempfile::TempDir,
    home: std::path::PathBuf,
    ws: std::path::PathBuf,
}

fn sandbox_home() -> Box_ {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let home = dir.path().canonicalize().unwrap();
    let ws = home.join("ws");
    std::fs::create_dir_all(home.join(".filo/agent")).unwrap();
    std::fs::create_dir_all(home.join(".pi/agent")).unwrap();
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(home.join(".filo/agent/auth.json"), "filo-auth-secret").unwrap();
    std::fs::write(home.join(".pi/agent/auth.json"), "pi-auth-secret").unwrap();
    Box_ {
        _dir: dir,
        home,
        ws,
    }
}

#[test]
fn the_workspace_is_writable_and_home_secrets_and_network_are_not() {
    let b = sandbox_home();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!(
        "echo made > made.txt; cat made.txt; \
         echo evil >> \"$HOME/.bashrc\"; \
         cat \"$HOME/.filo/agent/auth.json\"; cat \"$HOME/.pi/agent/auth.json\"; \
         ln -s \"$HOME/.filo/agent/auth.json\" link; cat link; \
         ln -s \"$HOME\" up; echo evil > up/.profile; \
         cat /proc/self/root{home}/.filo/agent/auth.json; \
         curl -sS -m 5 http://127.0.0.1:{port}/; \
         echo hi > /dev/tcp/127.0.0.1/{port}; \
         env; echo END",
        home = b.home.display()
    );
    let (code, out, err) = confined(&b.home, &b.ws, "workspace-write", &script, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("made\n"), "{out}");
    assert!(out.ends_with("END\n"), "{out}");
    for secret in [
        "filo-auth-secret",
        "pi-auth-secret",
        "sk-secret-key",
        "gateway-secret",
    ] {
        assert!(!out.contains(secret), "{secret} leaked:\n{out}");
    }
    assert!(!b.home.join(".bashrc").exists(), "~/.bashrc was written");
    assert!(
        !b.home.join(".profile").exists(),
        "a symlink led out of the workspace"
    );
    assert!(b.ws.join("made.txt").exists());
    // Each attempt got an error of its own.
    assert!(err.contains(".bashrc: Permission denied"), "{err}");
    assert!(err.contains("auth.json: Permission denied"), "{err}");
    assert!(err.contains("link: Permission denied"), "{err}");
    assert!(
        err.contains("Couldn't connect") || err.contains("curl: (7)"),
        "{err}"
    );
    assert!(err.contains("/dev/tcp/127.0.0.1"), "{err}");
    listener.set_nonblocking(true).unwrap();
    assert!(listener.accept().is_err(), "a connection reached the host");
}

#[test]
fn read_only_writes_nowhere_and_other_processes_are_out_of_reach() {
    let b = sandbox_home();
    let me = std::process::id();
    let script = format!(
        "echo x > ws-file; echo x > /tmp/filo-sandbox-ro-$$; \
         cat /proc/{me}/environ; strace -p {me}; echo pid=$$"
    );
    let (code, out, err) = confined(&b.home, &b.ws, "read-only", &script, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(!b.ws.join("ws-file").exists());
    assert!(err.contains("ws-file: Permission denied"), "{err}");
    assert!(
        err.contains(&format!("/proc/{me}/environ: Permission denied")),
        "{err}"
    );
    assert!(err.contains("strace: attach"), "{err}");
    // The command is PID 1 of its own namespace.
    assert!(out.contains("pid=1"), "{out}");
}

#[test]
fn a_double_forked_child_dies_with_the_call() {
    let b = sandbox_home();
    let marker = b.ws.join("still-alive");
    let script = format!(
        "(setsid bash -c 'sleep 2; echo alive > {}' &) ; echo started",
        marker.display()
    );
    let (code, out, err) = confined(&b.home, &b.ws, "workspace-write", &script, &[]);
    assert_eq!((code, out.as_str()), (0, "started\n"), "{err}");
    std::thread::sleep(std::time::Duration::from_secs(3));
    assert!(!marker.exists(), "a child outlived the call");
}

#[test]
fn a_sandboxed_command_cannot_widen_its_own_rules() {
    let b = sandbox_home();
    let script = format!(
        "{FILO} __sandbox-exec --mode workspace-write --write \"$HOME\" -- /bin/bash -c 'echo x > \"$HOME/.bashrc\"'"
    );
    let (code, _, err) = confined(&b.home, &b.ws, "workspace-write", &script, &[]);
    assert_eq!(code, 126, "{err}");
    assert!(err.contains("refusing to run"), "{err}");
    assert!(!b.home.join(".bashrc").exists());
}

#[test]
fn without_landlock_a_confined_mode_refuses_and_runs_nothing() {
    let b = sandbox_home();
    let (code, out, err) = confined(
        &b.home,
        &b.ws,
        "workspace-write",
        "echo ran > ran.txt",
        &[("FILO_SANDBOX_SIMULATE_NO_LANDLOCK", "1")],
    );
    assert_eq!(code, 126);
    assert_eq!(out, "");
    assert_eq!(
        err.trim(),
        "filo sandbox: refusing to run in workspace-write mode: this kernel has no Landlock; nothing was run (use --sandbox danger-full-access to run commands unconfined)"
    );
    assert!(!b.ws.join("ran.txt").exists());
}

/// The bash tool's result the model was sent back (the second request's last message).
fn tool_result(mock: &MockProvider) -> String {
    let reqs = mock.requests();
    let messages = reqs[1].body["messages"].as_array().unwrap();
    messages.last().unwrap()["content"].to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bash_tool_runs_confined_with_the_sandbox_flag() {
    let mock = MockProvider::start(vec![
        Turn::Reply(Reply::tool_call(
            "call_1",
            "bash",
            json!({"command": "echo evil >> ~/.bashrc"}),
        )),
        Turn::Reply(Reply::text("done")),
    ])
    .await;
    let home = Home::outside_tmp(&mock);
    let args = [
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--sandbox",
        "workspace-write",
        "-p",
        "go",
    ];
    let (code, _, err) = home.filo(&args).await;
    assert_eq!(code, 0, "{err}");
    let result = tool_result(&mock);
    assert!(result.contains(".bashrc: Permission denied"), "{result}");
    assert!(result.contains("Command exited with code 1"), "{result}");
    assert!(!home.path().join(".bashrc").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bash_tool_refuses_without_landlock() {
    let mock = MockProvider::start(vec![
        Turn::Reply(Reply::tool_call(
            "call_1",
            "bash",
            json!({"command": "touch ran"}),
        )),
        Turn::Reply(Reply::text("done")),
    ])
    .await;
    let home = Home::outside_tmp(&mock);
    let args = [
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--sandbox",
        "read-only",
        "-p",
        "go",
    ];
    let (code, _, err) = home
        .filo_with_env(&args, &[("FILO_SANDBOX_SIMULATE_NO_LANDLOCK", "1")])
        .await;
    assert_eq!(code, 0, "{err}");
    let result = tool_result(&mock);
    assert!(
        result.contains("refusing to run in read-only mode: this kernel has no Landlock"),
        "{result}"
    );
    assert!(!home.project().join("ran").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_line_names_the_sandbox_mode() {
    use super::tui::{launch_with, quit, tmux_or_return};
    tmux_or_return!("the_status_line_names_the_sandbox_mode");
    let mock = MockProvider::start(Vec::new()).await;
    let home = Home::outside_tmp(&mock);
    let tmux = launch_with(&home, "--sandbox read-only");
    tmux.wait_for("• sandbox: read-only").await;
    quit(&tmux).await;
}
