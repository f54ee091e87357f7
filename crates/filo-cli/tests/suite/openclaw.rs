//! Opt-in (`FILO_E2E_OPENCLAW=<npm prefix holding openclaw 2026.9.6>`, `FILO_E2E_NODE=<directory
//! of a node ≥ 24.16>`; `scripts/openclaw-clients.sh` installs both and runs this): the real
//! OpenClaw command-line clients, unchanged, against `filo gateway` on a free port and the
//! scripted mock model — `openclaw agent`, `openclaw health`, `openclaw status`, and, when tmux
//! is installed, `openclaw tui` driven through a private tmux server (streamed reply, idle, a
//! second message, Esc abort, `/reset`, `/exit`). Every process started here is stopped here:
//! each client runs in its own process group that must be empty once it exits, the TUI's tmux
//! server is killed on the way out, and the gateway must drain and exit 0 on SIGTERM.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use filo_testkit::{MockProvider, Protocol, Turn};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

pub(super) const TOKEN: &str = "filo-e2e-openclaw-token";
const AGENT_ANSWER: &str = "Hello from the filo mock, through the real openclaw agent.";

/// The OpenClaw install under test.
pub(super) struct Install {
    pub node: PathBuf,
    pub entry: PathBuf,
    path: String,
}

/// The install `FILO_E2E_OPENCLAW` names, `None` when it is unset (the test is skipped); a
/// variable that names no install fails the test rather than skipping it.
fn install() -> Option<Install> {
    let prefix = PathBuf::from(std::env::var_os("FILO_E2E_OPENCLAW")?);
    let entry = prefix.join("node_modules/openclaw/openclaw.mjs");
    assert!(
        entry.is_file(),
        "FILO_E2E_OPENCLAW: {} is not there",
        entry.display()
    );
    let node_dir = std::env::var_os("FILO_E2E_NODE").map(PathBuf::from);
    let node = node_dir
        .as_ref()
        .map(|d| d.join("node"))
        .unwrap_or_else(|| PathBuf::from("node"));
    let mut path = node_dir
        .map(|d| format!("{}:", d.display()))
        .unwrap_or_default();
    path.push_str("/usr/local/bin:/usr/bin:/bin");
    Some(Install { node, entry, path })
}

/// Every directory of the run, inside one temporary directory.
struct Dirs {
    root: tempfile::TempDir,
}

impl Dirs {
    fn new(mock: &MockProvider) -> Dirs {
        let d = Dirs {
            root: tempfile::tempdir().unwrap(),
        };
        for sub in [
            "home",
            "filo-state",
            "filo-agent",
            "oc-home",
            "oc-state",
            "tmp",
        ] {
            std::fs::create_dir_all(d.at(sub)).unwrap();
        }
        let models = json!({"providers": {"mock": {
            "baseUrl": mock.base_url(Protocol::OpenAiCompletions), "api": "openai-completions",
            "apiKey": "MOCK_API_KEY",
            "models": [{"id": "mock-model", "contextWindow": 100000, "maxTokens": 1000}]}}});
        std::fs::write(d.at("filo-agent/models.json"), models.to_string()).unwrap();
        let embed = json!({"agents": {"defaults": {"model": {"primary": "mock/mock-model"}}},
            "memory": {"db": d.at("filo-state/playfilo.db")}});
        std::fs::write(d.at("filo-state/filo-embed.json"), embed.to_string()).unwrap();
        // `openclaw status` skips its gateway probe on a "cold start" (no config file); the
        // client's own log goes here instead of /tmp/openclaw.
        let oc = json!({"logging": {"file": d.at("oc-state/openclaw.log")}});
        std::fs::write(d.at("oc-state/openclaw.json"), oc.to_string()).unwrap();
        d
    }

    fn at(&self, sub: &str) -> PathBuf {
        self.root.path().join(sub)
    }

    /// The environment of every OpenClaw client (nothing else from the test's).
    fn client_env(&self, inst: &Install, port: u16) -> Vec<(String, String)> {
        let s = |p: PathBuf| p.display().to_string();
        vec![
            ("PATH".into(), inst.path.clone()),
            ("HOME".into(), s(self.at("oc-home"))),
            ("TMPDIR".into(), s(self.at("tmp"))),
            ("OPENCLAW_STATE_DIR".into(), s(self.at("oc-state"))),
            (
                "OPENCLAW_GATEWAY_URL".into(),
                format!("ws://127.0.0.1:{port}"),
            ),
            ("OPENCLAW_GATEWAY_TOKEN".into(), TOKEN.into()),
            ("LANG".into(), "C.UTF-8".into()),
            ("NO_COLOR".into(), "1".into()),
        ]
    }
}

/// `filo gateway` on a free port.
struct Gateway {
    child: tokio::process::Child,
    port: u16,
    log: Arc<Mutex<String>>,
}

impl Gateway {
    async fn start(dirs: &Dirs) -> Gateway {
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_filo"))
            .args(["gateway", "--bind", "127.0.0.1:0", "--token", TOKEN])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", dirs.at("home"))
            .env("TMPDIR", dirs.at("tmp"))
            .env("FILO_STATE_DIR", dirs.at("filo-state"))
            .env("FILO_AGENT_DIR", dirs.at("filo-agent"))
            .env("MOCK_API_KEY", "mock-secret")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let log = Arc::new(Mutex::new(String::new()));
        let port = tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                log.lock().unwrap().push_str(&format!("{line}\n"));
                if let Some(rest) = line.strip_prefix("filo gateway listening on 127.0.0.1:") {
                    return rest.split(' ').next().unwrap().parse::<u16>().unwrap();
                }
            }
            panic!("filo gateway ended: {}", log.lock().unwrap());
        })
        .await
        .expect("filo gateway did not listen within 30 s");
        let sink = log.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                sink.lock().unwrap().push_str(&format!("{line}\n"));
            }
        });
        Gateway { child, port, log }
    }

    /// SIGTERM, then the drain: the gateway must exit 0.
    async fn stop(mut self) {
        let pid = self.child.id().unwrap().to_string();
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        assert!(sent.success());
        let status = tokio::time::timeout(Duration::from_secs(30), self.child.wait())
            .await
            .expect("filo gateway did not stop within 30 s of SIGTERM")
            .unwrap();
        assert!(status.success(), "{status}: {}", self.log.lock().unwrap());
    }
}

/// Whether `pid` has exited and waits to be reaped.
pub(super) fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let (_, rest) = stat.rsplit_once(')')?;
            Some(rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

/// The pids whose process group is `pgid`.
fn group_members(pgid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // After "(comm)": state, ppid, pgrp.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() > 2 && fields[0] != "Z" && fields[2] == pgid.to_string() {
            out.push(pid);
        }
    }
    out
}

/// Waits (bounded) for a process group to empty; kills what is left and fails if anything was.
pub(super) async fn assert_group_gone(pgid: u32, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if group_members(pgid).is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let left = group_members(pgid);
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &format!("-{pgid}")])
        .status();
    panic!("{what} left processes behind: {left:?}");
}

/// One OpenClaw command, in its own process group: (exit code, stdout, stderr).
async fn openclaw(
    inst: &Install,
    env: &[(String, String)],
    args: &[&str],
) -> (i32, String, String) {
    let child = tokio::process::Command::new(&inst.node)
        .arg(&inst.entry)
        .args(args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pgid = child.id().unwrap();
    let out = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("openclaw {args:?} did not finish within 120 s"))
        .unwrap();
    assert_group_gone(pgid, &format!("openclaw {args:?}")).await;
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `openclaw agent --message hi --session-id test1` prints the mock's answer, exits 0 and
/// leaves the turn in filo's transcript named by that session id.
async fn agent(inst: &Install, env: &[(String, String)], dirs: &Dirs, mock: &MockProvider) {
    mock.push(Turn::text(AGENT_ANSWER));
    let args = ["agent", "--message", "hi", "--session-id", "test1"];
    let (code, out, err) = openclaw(inst, env, &args).await;
    assert_eq!(
        (code, out.trim(), err.trim()),
        (0, AGENT_ANSWER, ""),
        "openclaw agent"
    );
    let sent = mock.last_request().unwrap();
    assert!(sent.body.to_string().contains("\"hi\""), "{}", sent.body);
    assert!(
        dirs.at("filo-state/agents/main/sessions/test1.jsonl")
            .is_file()
    );
}

/// `openclaw health` names the agent and filo's session store with the one session in it.
async fn health(inst: &Install, env: &[(String, String)], dirs: &Dirs) {
    let (code, out, err) = openclaw(inst, env, &["health"]).await;
    assert_eq!((code, err.trim()), (0, ""), "openclaw health:\n{out}");
    let store = dirs.at("filo-state/agents/main/sessions/sessions.json");
    for line in [
        "Agents: main (default)".to_owned(),
        format!("Session store (main): {} (1 entries)", store.display()),
        "- agent:main:explicit:test1 (".to_owned(),
    ] {
        assert!(
            out.contains(&line),
            "openclaw health lacks {line:?}:\n{out}"
        );
    }
}

/// `openclaw status` probes the gateway: reachable, token auth.
async fn status(inst: &Install, env: &[(String, String)], port: u16) {
    let (code, out, err) = openclaw(inst, env, &["status"]).await;
    assert_eq!((code, err.trim()), (0, ""), "openclaw status:\n{out}");
    let url = format!("ws://127.0.0.1:{port}");
    let row = out
        .lines()
        .find(|l| l.contains(&url))
        .unwrap_or_else(|| panic!("openclaw status shows no {url}:\n{out}"));
    assert!(
        row.contains("· reachable") && row.contains("auth token"),
        "openclaw status: {row}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_openclaw_clients_work_against_filo_gateway() {
    let Some(inst) = install() else {
        println!(
            "skipped: set FILO_E2E_OPENCLAW (and FILO_E2E_NODE) or run scripts/openclaw-clients.sh"
        );
        return;
    };
    let mock = MockProvider::start(vec![]).await;
    let dirs = Dirs::new(&mock);
    let gw = Gateway::start(&dirs).await;
    let env = dirs.client_env(&inst, gw.port);
    agent(&inst, &env, &dirs, &mock).await;
    health(&inst, &env, &dirs).await;
    status(&inst, &env, gw.port).await;
    let tui = super::openclaw_tui::run(
        &inst,
        &env,
        &mock,
        &dirs.at("tmp"),
        &dirs.at("oc-state/openclaw.log"),
    )
    .await;
    if let Err(why) = tui {
        println!("openclaw tui skipped: {why}");
    }
    assert_eq!(mock.remaining(), 0, "every scripted turn was asked for");
    gw.stop().await;
    mock.shutdown().await;
}
