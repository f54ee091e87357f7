//! The interactive UI end to end: `filo` in a tmux pane (a real terminal) against the mock. Types
//! a prompt, sees the tool panel and the streamed answer, interrupts a stalled stream with Escape,
//! quits with Ctrl+C twice and checks the terminal was restored. Skipped when tmux is missing, except
//! in CI (`CI` set to anything but `false`/`0`/empty), where a missing tmux fails the test.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use filo_testkit::{Fault, MockProvider, Reply, Turn};
use serde_json::json;

use super::common::Home;

/// A private tmux server (own socket); killed on drop, so no pane outlives the test.
pub(super) struct Tmux {
    socket: String,
}

impl Tmux {
    fn available() -> bool {
        Command::new("tmux")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success())
    }

    pub(super) fn cmd(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .unwrap()
    }

    pub(super) fn capture(&self) -> String {
        String::from_utf8_lossy(&self.cmd(&["capture-pane", "-p", "-t", "filo"]).stdout)
            .into_owned()
    }

    /// The pane with its colours and attributes as escape sequences.
    pub(super) fn capture_escapes(&self) -> String {
        String::from_utf8_lossy(&self.cmd(&["capture-pane", "-p", "-e", "-t", "filo"]).stdout)
            .into_owned()
    }

    pub(super) fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "filo"];
        args.extend_from_slice(keys);
        assert!(self.cmd(&args).status.success());
    }

    /// Wait until the pane shows `needle`.
    pub(super) async fn wait_for(&self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.capture();
            if screen.contains(needle) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "the pane never showed {needle:?}; it shows:\n{screen}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Tmux {
    /// Wait until the pane no longer shows `needle` (an overlay closed, …): a key sent right
    /// after Escape could otherwise reach the terminal with it and be read as Alt+key.
    pub(super) async fn wait_gone(&self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.capture();
            if !screen.contains(needle) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "the pane still shows {needle:?}:\n{screen}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]);
    }
}

/// Whether a run without tmux may skip: only outside CI.
fn may_skip_without_tmux(ci: Option<&str>) -> bool {
    matches!(ci.map(str::trim), None | Some("" | "false" | "0"))
}

/// `true` to run the test; `false` to skip it when tmux is missing outside CI. In CI a missing
/// tmux is a failure: a test that cannot run must not pass.
pub(super) fn tmux_or_skip(test: &str) -> bool {
    if Tmux::available() {
        return true;
    }
    let ci = std::env::var("CI").ok();
    assert!(
        may_skip_without_tmux(ci.as_deref()),
        "{test} needs tmux, which is not installed (CI={ci:?}); .ci/run installs it"
    );
    false
}

#[test]
fn a_missing_tmux_fails_in_ci_and_skips_elsewhere() {
    assert!(may_skip_without_tmux(None));
    assert!(may_skip_without_tmux(Some("")));
    assert!(may_skip_without_tmux(Some("false")));
    assert!(may_skip_without_tmux(Some("0")));
    assert!(!may_skip_without_tmux(Some("true")));
    assert!(!may_skip_without_tmux(Some("1")));
}

/// Return from a test (after saying so) when tmux is missing outside CI; see [`tmux_or_skip`].
macro_rules! tmux_or_return {
    ($name:expr) => {
        if !$crate::suite::tui::tmux_or_skip($name) {
            eprintln!("SKIPPED {}: tmux is not installed", $name);
            return;
        }
    };
}
pub(super) use tmux_or_return;

/// Type `text` and press Enter.
pub(super) fn submit(tmux: &Tmux, text: &str) {
    tmux.keys(&["-l", text]);
    tmux.keys(&["Enter"]);
}

/// Ctrl+C until filo exits (the first may only clear the editor); the pane's last screen.
pub(super) async fn quit(tmux: &Tmux) -> String {
    tokio::time::sleep(Duration::from_millis(200)).await;
    for _ in 0..2 {
        tmux.keys(&["C-c"]);
        tokio::time::sleep(Duration::from_millis(200)).await;
        if tmux.capture().contains("again to exit") {
            break;
        }
    }
    tmux.keys(&["C-c"]);
    tmux.wait_for("FILO_EXIT=").await
}

/// The line of the pane that holds `needle`.
pub(super) fn line_with(screen: &str, needle: &str) -> String {
    screen
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?}:\n{screen}"))
        .to_string()
}

pub(super) fn shell_quote(p: &Path) -> String {
    format!("'{}'", p.to_string_lossy().replace('\'', "'\\''"))
}

/// `filo` in a new 100×30 pane; after it exits the shell prints its exit code and whether the
/// terminal is back in canonical (cooked) mode, then idles so the pane stays readable.
pub(super) fn launch(home: &Home) -> Tmux {
    launch_with(home, "")
}

static LAUNCHES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// [`launch`] with extra shell words after `filo`.
pub(super) fn launch_with(home: &Home, args: &str) -> Tmux {
    launch_env(home, "", args)
}

/// A new private tmux server for `home` (no pane yet).
pub(super) fn server(home: &Home) -> Tmux {
    Tmux {
        // The temp HOME's name is unique, so parallel tests get separate tmux servers; the
        // counter keeps a second pane of the same test off the first one's dying server.
        socket: format!(
            "filo-tui-test-{}-{}",
            home.path().file_name().unwrap().to_string_lossy(),
            LAUNCHES.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ),
    }
}

/// [`launch_with`] with extra `NAME=value` words for the environment (shell-quoted by the
/// caller).
pub(super) fn launch_env(home: &Home, env: &str, args: &str) -> Tmux {
    launch_sized(home, env, args, (100, 30))
}

/// [`launch_env`] in a pane of `(columns, rows)`.
pub(super) fn launch_sized(home: &Home, env: &str, args: &str, size: (u16, u16)) -> Tmux {
    let tmux = server(home);
    let (columns, rows) = (size.0.to_string(), size.1.to_string());
    let script = format!(
        "env -i HOME={home} PATH=\"$PATH\" MOCK_API_KEY=mock-secret TERM=xterm-256color {env} {bin} {args}; \
         echo FILO_EXIT=$?; stty -a | grep -o -- '-\\?icanon' | head -1 | sed 's/^/MODE=/'; \
         sleep 60",
        home = shell_quote(home.path()),
        bin = shell_quote(Path::new(env!("CARGO_BIN_EXE_filo"))),
    );
    let project = home.project();
    let out = tmux.cmd(&[
        "new-session",
        "-d",
        "-s",
        "filo",
        "-x",
        &columns,
        "-y",
        &rows,
        "-c",
        &project.to_string_lossy(),
        &script,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    tmux
}

/// The pid of the process running in the pane (the shell's only child: `env` execs `filo`).
fn filo_pid(tmux: &Tmux) -> String {
    let out = tmux.cmd(&["display-message", "-p", "-t", "filo", "#{pane_pid}"]);
    let shell = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let children = std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children")).unwrap();
    children.split_whitespace().next().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_restores_the_terminal() {
    if !tmux_or_skip("sigterm_restores_the_terminal") {
        eprintln!("SKIPPED sigterm_restores_the_terminal: tmux is not installed");
        return;
    }
    let mock = MockProvider::start(Vec::new()).await;
    let home = Home::new(&mock);
    let tmux = launch(&home);
    tmux.wait_for("enter to send").await;
    let status = Command::new("kill")
        .args(["-TERM", &filo_pid(&tmux)])
        .status()
        .unwrap();
    assert!(status.success());
    let screen = tmux.wait_for("MODE=").await;
    assert!(screen.contains("FILO_EXIT=0"), "{screen}");
    assert!(
        screen.contains("MODE=icanon"),
        "raw mode was turned off:\n{screen}"
    );
    let alt = tmux.cmd(&["display-message", "-p", "-t", "filo", "#{alternate_on}"]);
    assert_eq!(String::from_utf8_lossy(&alt.stdout).trim(), "0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interactive_prompt_tool_escape_and_quit() {
    if !tmux_or_skip("interactive_prompt_tool_escape_and_quit") {
        eprintln!("SKIPPED interactive_prompt_tool_escape_and_quit: tmux is not installed");
        return;
    }
    let mock = MockProvider::start(vec![
        Turn::tool_call("call_1", "bash", json!({"command": "echo tui-tool-output"})),
        Turn::text("The answer is **forty-two**."),
    ])
    .await;
    let home = Home::new(&mock);
    let tmux = launch(&home);
    tmux.wait_for("enter to send").await;
    let screen = tmux.capture();
    assert!(
        screen.contains("mock/mock-model"),
        "footer names the model:\n{screen}"
    );

    tmux.keys(&["-l", "run the tool"]);
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("The answer is forty-two.").await;
    assert!(screen.contains("run the tool"), "{screen}");
    assert!(
        screen.contains("✓ $ echo tui-tool-output"),
        "tool panel:\n{screen}"
    );
    assert!(
        screen.contains("  tui-tool-output"),
        "tool output:\n{screen}"
    );

    // The memory graph of this conversation, then one node of it, then back.
    tmux.keys(&["-l", "/life"]);
    tmux.keys(&["Enter"]);
    // Not just "HEAD": the command popup's own line ("/life  The memory graph around HEAD") can be
    // on screen before the Enter is handled.
    let screen = tmux.wait_for("life · PI_HEAD:").await;
    assert!(screen.contains("The answer is **forty-two**."), "{screen}");
    assert!(screen.contains("run the tool"), "{screen}");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("esc back").await;
    assert!(screen.contains("archived node content"), "{screen}");
    tmux.keys(&["Escape"]);
    tmux.wait_for("t travel here").await;

    // Travel back to the first prompt with a note: the memory jumps, the agent answers there.
    for _ in 0..3 {
        tmux.keys(&["Down"]);
    }
    let screen = tmux.capture();
    let row = screen
        .lines()
        .find(|l| l.contains("user") && l.contains("run the tool"))
        .unwrap();
    let short: String = row
        .split_whitespace()
        .find(|w| w.len() == 12 && w.chars().all(|c| c.is_ascii_hexdigit()))
        .unwrap()
        .to_string();
    mock.push(Reply::text("Back in the past."));
    tmux.keys(&["t"]);
    tmux.wait_for("carryover note").await;
    tmux.keys(&["-l", "try again"]);
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("Back in the past.").await;
    assert!(
        screen.contains(&format!("Time travel to {short}")),
        "{screen}"
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "one request, in the new timeline");
    let after = requests[2].body.to_string();
    assert!(
        after.contains("[SYSTEM / INCARNATION NOTE]: try again"),
        "{after}"
    );
    assert!(
        !after.contains("forty-two"),
        "the new timeline starts before the answer: {after}"
    );
    // The abandoned future is now a branch of the graph.
    tmux.keys(&["-l", "/life"]);
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("HEAD").await;
    assert!(screen.contains("├─"), "{screen}");
    tmux.keys(&["Escape"]);
    tmux.wait_for("enter to send").await;

    mock.push(Fault::Stall {
        after_events: 4,
        reply: Reply::text("Stalling words that never finish arriving here"),
        stall: Duration::from_secs(30),
    });

    tmux.keys(&["-l", "second question"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("Stalling").await;
    tmux.wait_for("esc to interrupt").await;
    tmux.keys(&["Escape"]);
    let screen = tmux.wait_for("Aborted").await;
    assert!(
        !screen.contains("never finish"),
        "the stalled rest never arrived:\n{screen}"
    );
    assert_eq!(mock.requests().len(), 4);

    tmux.keys(&["C-c"]);
    tmux.wait_for("again to exit").await;
    tmux.keys(&["C-c"]);
    let screen = tmux.wait_for("MODE=").await;
    assert!(screen.contains("FILO_EXIT=0"), "{screen}");
    assert!(
        screen.contains("MODE=icanon"),
        "raw mode was turned off:\n{screen}"
    );
    assert!(
        !screen.contains("enter to send"),
        "the alternate screen was left:\n{screen}"
    );
    let alt = tmux.cmd(&["display-message", "-p", "-t", "filo", "#{alternate_on}"]);
    assert_eq!(String::from_utf8_lossy(&alt.stdout).trim(), "0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_on_the_command_line_is_sent_at_start() {
    if !tmux_or_skip("a_prompt_on_the_command_line_is_sent_at_start") {
        eprintln!("SKIPPED a_prompt_on_the_command_line_is_sent_at_start: tmux is not installed");
        return;
    }
    let mock = MockProvider::start(vec![Turn::text("Started with it.")]).await;
    let home = Home::new(&mock);
    let tmux = launch_with(&home, "'first words'");
    let screen = tmux.wait_for("Started with it.").await;
    assert!(screen.contains("first words"), "{screen}");
    assert!(screen.contains("enter to send"), "{screen}");
    tmux.keys(&["C-d"]);
    let screen = tmux.wait_for("MODE=").await;
    assert!(screen.contains("FILO_EXIT=0"), "{screen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_theme_from_pis_directory_is_used_and_the_ui_says_so() {
    if !tmux_or_skip("a_theme_from_pis_directory_is_used_and_the_ui_says_so") {
        eprintln!(
            "SKIPPED a_theme_from_pis_directory_is_used_and_the_ui_says_so: tmux is not installed"
        );
        return;
    }
    let mock = MockProvider::start(Vec::new()).await;
    let home = Home::new(&mock);
    let pi = home.path().join(".pi/agent");
    std::fs::create_dir_all(pi.join("themes")).unwrap();
    std::fs::write(
        pi.join("themes/pi-night.json"),
        r##"{"name": "pi-night", "colors": {"accent": "#ff8800"}}"##,
    )
    .unwrap();
    std::fs::write(pi.join("settings.json"), r#"{"theme": "pi-night"}"#).unwrap();
    let tmux = launch(&home);
    tmux.wait_for("enter to send").await;
    let screen = tmux.wait_for("settings.json and themes/").await;
    assert!(screen.contains("from pi's agent"), "{screen}");
    // Read from pi's directory, the theme loaded: no error naming a theme file.
    assert!(!screen.contains("pi-night.json"), "{screen}");
    assert_eq!(
        std::fs::read_to_string(pi.join("settings.json")).unwrap(),
        r#"{"theme": "pi-night"}"#
    );
}
