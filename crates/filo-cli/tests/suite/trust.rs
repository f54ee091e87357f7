//! Project trust (pi 1.6.0's `docs/security.md`) end to end: a folder whose `.pi/settings.json`
//! would run code through `shellCommandPrefix` does not, in print mode, until `--approve` or a
//! saved decision says so; a decision pi 1.6.0 saved (recorded by `scripts/record-pi/trust.sh`)
//! is honoured; the start-up prompt and `/trust` in a real terminal.

use std::path::{Path, PathBuf};

use filo_testkit::{MockProvider, Reply, Turn};
use serde_json::json;

use super::common::Home;
use super::tui::{launch, quit, submit, tmux_or_return};

/// One bash call then an answer, `runs` times.
async fn bash_mock(runs: usize) -> MockProvider {
    let mut turns = Vec::new();
    for _ in 0..runs {
        turns.push(Turn::Reply(Reply::tool_call(
            "call_1",
            "bash",
            json!({"command": "echo ran"}),
        )));
        turns.push(Turn::Reply(Reply::text("done")));
    }
    MockProvider::start(turns).await
}

/// A `.pi/settings.json` in `project` whose `shellCommandPrefix` creates `marker`.
fn hostile_settings(project: &Path, marker: &Path) {
    std::fs::create_dir_all(project.join(".pi")).unwrap();
    std::fs::write(
        project.join(".pi/settings.json"),
        json!({"shellCommandPrefix": format!("touch '{}';", marker.display())}).to_string(),
    )
    .unwrap();
}

async fn print_run(home: &Home, cwd: &Path, extra: &[&str]) -> (i32, String) {
    let mut args = vec!["--provider", "mock", "--model", "mock-model", "-p"];
    args.extend_from_slice(extra);
    args.push("run it");
    let out = home
        .command(&args)
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn print_mode_skips_an_untrusted_projects_settings_and_approve_loads_them() {
    let mock = bash_mock(3).await;
    let home = Home::new(&mock);
    let marker = home.path().join("marker");
    hostile_settings(&home.project(), &marker);
    let (code, err) = print_run(&home, &home.project(), &[]).await;
    assert_eq!(code, 0, "{err}");
    assert!(!marker.exists(), "the untrusted prefix ran");
    assert!(
        err.contains(
            "Note: project not trusted: skipped .pi/settings.json (run with --approve, or save a decision with /trust)"
        ),
        "{err}"
    );
    // `--no-approve` is the same, said explicitly.
    let (code, err) = print_run(&home, &home.project(), &["-na"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(!marker.exists());
    let (code, err) = print_run(&home, &home.project(), &["--approve"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(marker.exists(), "the approved prefix did not run: {err}");
    assert!(!err.contains("not trusted"), "{err}");
    // A one-time decision is not saved.
    assert!(!home.path().join(".filo/agent/trust.json").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_project_trust_always_and_never_decide_without_a_prompt() {
    let mock = bash_mock(2).await;
    let home = Home::new(&mock);
    let marker = home.path().join("marker");
    hostile_settings(&home.project(), &marker);
    home.write_settings(&json!({"defaultProjectTrust": "never"}));
    let (code, err) = print_run(&home, &home.project(), &[]).await;
    assert_eq!(code, 0, "{err}");
    assert!(!marker.exists());
    // A project cannot trust itself: its own defaultProjectTrust is not read.
    std::fs::write(
        home.project().join(".pi/settings.json"),
        json!({"defaultProjectTrust": "always", "shellCommandPrefix": format!("touch '{}';", marker.display())}).to_string(),
    )
    .unwrap();
    home.write_settings(&json!({"defaultProjectTrust": "always"}));
    let (code, err) = print_run(&home, &home.project(), &[]).await;
    assert_eq!(code, 0, "{err}");
    assert!(marker.exists(), "{err}");
}

/// pi 1.6.0's own trust.json (the user answered "Trust parent folder" for `work/parent/child`
/// and "Trust" for `work/trusted`), with `@ROOT@` made this test's HOME.
fn pis_trust_json(home: &Home) -> PathBuf {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pi-1.6.0/trust/trust.json");
    let root = home.path().canonicalize().unwrap();
    let text = std::fs::read_to_string(fixture)
        .unwrap()
        .replace("@ROOT@", &root.to_string_lossy());
    let pi = home.path().join(".pi/agent");
    std::fs::create_dir_all(&pi).unwrap();
    std::fs::write(pi.join("trust.json"), &text).unwrap();
    root
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_pi_saved_is_honoured_for_the_folder_and_below() {
    let mock = bash_mock(3).await;
    let home = Home::new(&mock);
    let root = pis_trust_json(&home);
    let before = std::fs::read_to_string(home.path().join(".pi/agent/trust.json")).unwrap();
    let marker = home.path().join("marker");
    // Saved for the parent: the child below it is trusted.
    let child = root.join("work/parent/child/deeper");
    hostile_settings(&child, &marker);
    let (code, err) = print_run(&home, &child, &[]).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        marker.exists(),
        "pi's saved decision was not honoured: {err}"
    );
    std::fs::remove_file(&marker).unwrap();
    // The command line comes first.
    let (code, err) = print_run(&home, &child, &["--no-approve"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(!marker.exists());
    // A folder pi has no decision for is not trusted.
    let other = root.join("work/other");
    hostile_settings(&other, &marker);
    let (code, err) = print_run(&home, &other, &[]).await;
    assert_eq!(code, 0, "{err}");
    assert!(!marker.exists(), "{err}");
    // pi's file is only read.
    assert_eq!(
        std::fs::read_to_string(home.path().join(".pi/agent/trust.json")).unwrap(),
        before
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_terminal_asks_at_start_and_trust_saves_a_decision() {
    tmux_or_return!("the_terminal_asks_at_start_and_trust_saves_a_decision");
    let mock = bash_mock(1).await;
    let home = Home::new(&mock);
    let marker = home.path().join("marker");
    hostile_settings(&home.project(), &marker);
    let tmux = launch(&home);
    let screen = tmux.wait_for("Trust project folder?").await;
    let project = home.project().canonicalize().unwrap();
    assert!(
        screen.contains(&project.to_string_lossy().to_string()),
        "{screen}"
    );
    assert!(screen.contains("Trust (this session only)"), "{screen}");
    assert!(screen.contains("Do not trust"), "{screen}");
    tmux.keys(&["Enter"]);
    tmux.wait_for("enter to send").await;
    let saved = std::fs::read_to_string(home.path().join(".filo/agent/trust.json")).unwrap();
    assert_eq!(
        saved,
        format!("{{\n  \"{}\": true\n}}\n", project.display())
    );
    submit(&tmux, "run it");
    tmux.wait_for("done").await;
    assert!(marker.exists(), "the trusted prefix did not run");
    // `/trust` shows the saved decision; "Do not trust" replaces it.
    submit(&tmux, "/trust");
    tmux.wait_for("current session: trusted · saved decision: trusted")
        .await;
    tmux.keys(&["Down"]);
    tmux.keys(&["Down"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("Saved trust decision: untrusted").await;
    let screen = quit(&tmux).await;
    assert!(screen.contains("FILO_EXIT=0"), "{screen}");
    let saved = std::fs::read_to_string(home.path().join(".filo/agent/trust.json")).unwrap();
    assert_eq!(
        saved,
        format!("{{\n  \"{}\": false\n}}\n", project.display())
    );
    // The next start asks nothing and says what it skipped.
    let tmux = launch(&home);
    tmux.wait_for("project not trusted: skipped .pi/settings.json")
        .await;
    quit(&tmux).await;
}
