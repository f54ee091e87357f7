//! The `openclaw tui` part of the opt-in OpenClaw test: the real TUI in a private tmux server
//! (its own socket, no user config), driven with `send-keys` and read with `capture-pane`.
//! It must render the streamed reply and go idle, take a second message (never "agent is
//! busy"), abort a stalled run on Esc, reset the session on `/reset` (the next request carries
//! none of the earlier turns) and exit 0 on `/exit`. The tmux server is killed on the way out,
//! also when an assertion fails, and the TUI's process group must be gone.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use filo_testkit::{Fault, MockProvider, Reply, Turn};

use super::openclaw::{Install, assert_group_gone};

const FIRST: &str = "First answer in the TUI.";
const SECOND: &str = "Second answer, not busy.";
const STALLED: &str = "Streaming partial answer that stalls here and never ends.";
const AFTER_RESET: &str = "Fresh answer after the reset.";

/// A tmux server of our own; killed on drop.
struct Tmux {
    sock: PathBuf,
    conf: PathBuf,
    /// The OpenClaw client's own log (`logging.file`), shown when a step fails.
    client_log: PathBuf,
}

impl Tmux {
    fn command(&self) -> tokio::process::Command {
        let mut c = tokio::process::Command::new("tmux");
        c.arg("-S").arg(&self.sock).arg("-f").arg(&self.conf);
        c
    }

    async fn run(&self, args: &[&str]) -> String {
        let out = self.command().args(args).output().await.unwrap();
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Types `text` literally, waits until the editor shows it, then presses Enter and waits
    /// until the editor has taken it.
    async fn line(&self, text: &str) {
        self.run(&["send-keys", "-t", "tui", "-l", text]).await;
        self.wait(&format!("{text:?} in the editor"), |p| {
            editor(p).contains(text)
        })
        .await;
        self.run(&["send-keys", "-t", "tui", "Enter"]).await;
        self.wait(&format!("{text:?} submitted"), |p| {
            !editor(p).contains(text)
        })
        .await;
    }

    /// The whole pane, history included, wrapped lines joined.
    async fn pane(&self) -> String {
        self.run(&["capture-pane", "-p", "-J", "-t", "tui", "-S", "-"])
            .await
    }

    /// Polls the pane until `ready` accepts it (60 s at most).
    async fn wait(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let pane = self.pane().await;
            if ready(&pane) {
                return pane;
            }
            assert!(
                Instant::now() < deadline,
                "openclaw tui never showed {what}:\n{pane}\n{}",
                self.log_tail()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The end of the client's log, for a failure message.
    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.client_log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(40)..].join("\n");
        format!("--- {} (last 40 lines):\n{tail}", self.client_log.display())
    }

    /// How the TUI's pane ended (`pane_dead_status`, else `signal N`), once it has.
    async fn ended(&self) -> Option<String> {
        let s = self
            .run(&[
                "display-message",
                "-p",
                "-t",
                "tui",
                "#{pane_dead}|#{pane_dead_status}|#{pane_dead_signal}",
            ])
            .await;
        match s.trim().split('|').collect::<Vec<_>>()[..] {
            ["1", status, _] if !status.is_empty() => Some(status.to_owned()),
            ["1", _, signal] if !signal.is_empty() => Some(format!("signal {signal}")),
            _ => None,
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        // Ends the server and with it the TUI (SIGHUP); nothing is left to report to.
        let _ = std::process::Command::new("tmux")
            .arg("-S")
            .arg(&self.sock)
            .arg("kill-server")
            .status();
    }
}

/// The status line: the last line naming the connection (`gateway connected | idle`,
/// `⠙ streaming • 2s | connected`, `connected | aborted`).
fn status(pane: &str) -> &str {
    pane.lines()
        .rev()
        .find(|l| l.contains("connected"))
        .unwrap_or("")
        .trim()
}

/// What the editor holds: the lines between the last two horizontal rules.
fn editor(pane: &str) -> String {
    let lines: Vec<&str> = pane.lines().collect();
    let rules: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].trim_start().starts_with('─'))
        .collect();
    match rules[..] {
        [.., a, b] => lines[a + 1..b].join("\n"),
        _ => String::new(),
    }
}

fn idle(pane: &str) -> bool {
    status(pane).ends_with("| idle")
}

/// Runs the TUI part; `Err` (a reason to skip) when tmux is not installed.
pub(super) async fn run(
    inst: &Install,
    env: &[(String, String)],
    mock: &MockProvider,
    tmp: &Path,
    client_log: &Path,
) -> Result<(), String> {
    let probe = tokio::process::Command::new("tmux")
        .arg("-V")
        .output()
        .await;
    if !probe.is_ok_and(|o| o.status.success()) {
        return Err("tmux is not installed".into());
    }
    let (tmux, pid) = open(inst, env, tmp, client_log).await;
    converse(&tmux, mock).await;
    exit(&tmux, pid).await;
    drop(tmux);
    assert_group_gone(pid, "openclaw tui").await;
    Ok(())
}

/// Starts `openclaw tui --url … --token … --session tui1` in a new tmux server; returns it
/// and the TUI's pid once the TUI shows itself connected and idle.
async fn open(
    inst: &Install,
    env: &[(String, String)],
    tmp: &Path,
    client_log: &Path,
) -> (Tmux, u32) {
    let conf = tmp.join("tmux.conf");
    std::fs::write(
        &conf,
        "set -g remain-on-exit on\nset -g history-limit 10000\n",
    )
    .unwrap();
    let tmux = Tmux {
        sock: tmp.join("tmux.sock"),
        conf,
        client_log: client_log.to_owned(),
    };
    let url = env
        .iter()
        .find(|(k, _)| k == "OPENCLAW_GATEWAY_URL")
        .map(|(_, v)| v.clone())
        .unwrap();
    let mut argv: Vec<String> = ["new-session", "-d", "-s", "tui", "-x", "120", "-y", "50"]
        .map(str::to_owned)
        .to_vec();
    argv.extend(["env".into(), "-i".into()]);
    argv.extend(env.iter().map(|(k, v)| format!("{k}={v}")));
    argv.push("TERM=xterm-256color".into());
    argv.push(inst.node.display().to_string());
    argv.push(inst.entry.display().to_string());
    let token = super::openclaw::TOKEN;
    argv.extend(["tui", "--url", &url, "--token", token, "--session", "tui1"].map(str::to_owned));
    let args: Vec<&str> = argv.iter().map(String::as_str).collect();
    tmux.run(&args).await;
    let pid: u32 = tmux
        .run(&["display-message", "-p", "-t", "tui", "#{pane_pid}"])
        .await
        .trim()
        .parse()
        .unwrap();
    tmux.wait("the connected, idle start screen", idle).await;
    (tmux, pid)
}

/// Two messages, an Esc abort, `/reset` and a message in the new session.
async fn converse(tmux: &Tmux, mock: &MockProvider) {
    mock.push(Turn::text(FIRST));
    tmux.line("hello tui").await;
    tmux.wait("the first reply, then idle", |p| {
        p.contains(FIRST) && idle(p)
    })
    .await;

    mock.push(Turn::text(SECOND));
    tmux.line("second message").await;
    tmux.wait("the second reply, then idle", |p| {
        p.contains(SECOND) && idle(p)
    })
    .await;

    // Three words arrive, then the stream goes silent: Esc aborts it.
    mock.push(Fault::Stall {
        after_events: 4,
        reply: Reply::text(STALLED),
        stall: Duration::from_secs(120),
    });
    tmux.line("please stall").await;
    tmux.wait("the start of the stalled reply", |p| {
        p.contains("Streaming partial answer")
    })
    .await;
    tmux.run(&["send-keys", "-t", "tui", "Escape"]).await;
    tmux.wait("run aborted", |p| {
        p.contains("run aborted") && status(p).ends_with("| aborted")
    })
    .await;

    tmux.line("/reset").await;
    tmux.wait("the reset notice", |p| {
        p.contains("session agent:main:tui1 reset")
    })
    .await;
    mock.push(Turn::text(AFTER_RESET));
    tmux.line("after reset").await;
    let pane = tmux
        .wait("the reply after the reset, then idle", |p| {
            p.contains(AFTER_RESET) && idle(p)
        })
        .await;
    let sent = mock.last_request().unwrap().body.to_string();
    assert!(
        sent.contains("after reset") && !sent.contains("hello tui"),
        "the request after /reset carried the old session: {sent}"
    );
    for bad in [
        "agent is busy",
        "gateway event gap",
        "send failed",
        "history failed",
    ] {
        assert!(!pane.contains(bad), "openclaw tui showed {bad:?}:\n{pane}");
    }
}

/// `/exit`: the TUI must end with status 0.
async fn exit(tmux: &Tmux, pid: u32) {
    tmux.line("/exit").await;
    let server: u32 = tmux
        .run(&["display-message", "-p", "#{pid}"])
        .await
        .trim()
        .parse()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let ended = loop {
        if let Some(how) = tmux.ended().await {
            break how;
        }
        // tmux 3.3a now and then misses the SIGCHLD of a pane's exit: the TUI stays a zombie
        // and the pane alive until the server gets another one (seen here, about one run in
        // five). A zombie TUI has exited; another SIGCHLD makes the server reap it and record
        // the status.
        if super::openclaw::is_zombie(pid) {
            let _ = std::process::Command::new("kill")
                .args(["-CHLD", &server.to_string()])
                .status();
        }
        assert!(
            Instant::now() < deadline,
            "openclaw tui did not exit on /exit:\n{}\n{}",
            tmux.pane().await,
            tmux.log_tail()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(ended, "0", "how openclaw tui ended:\n{}", tmux.pane().await);
}
