//! pi 0.73's keyboard features in the terminal UI, end to end in a tmux pane against the mock:
//! `-r` (the session picker at start), `--theme`/`--no-themes`, `/clone`, `/import`, `/reload`,
//! `/scoped-models`, `/changelog`, `/resume`'s rename, delete, sort and named filter, `/tree`'s
//! labels, filters and folding, and the `/settings` items that change what the UI does.

use filo_testkit::{MockProvider, Turn};

use super::common::Home;
use super::tui::{Tmux, launch, launch_with, tmux_or_skip};

macro_rules! tmux_or_return {
    ($name:expr) => {
        if !tmux_or_skip($name) {
            eprintln!("SKIPPED {}: tmux is not installed", $name);
            return;
        }
    };
}

/// Two sessions of the project, made with `-p`: "alpha topic" (older) and "beta topic".
async fn two_sessions(home: &Home) {
    for prompt in ["alpha topic", "beta topic"] {
        let (code, _, err) = home.filo(&["-p", prompt]).await;
        assert_eq!(code, 0, "{err}");
    }
    assert_eq!(home.sessions().len(), 2);
}

async fn quit(tmux: &Tmux) -> String {
    tmux.keys(&["C-c"]);
    tmux.keys(&["C-c"]);
    tmux.wait_for("FILO_EXIT=").await
}

/// Type `text` and press Enter.
fn submit(tmux: &Tmux, text: &str) {
    tmux.keys(&["-l", text]);
    tmux.keys(&["Enter"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_flag_picks_a_session_at_start() {
    tmux_or_return!("resume_flag_picks_a_session_at_start");
    let mock =
        MockProvider::start(vec![Turn::text("alpha answer"), Turn::text("beta answer")]).await;
    let home = Home::new(&mock);
    two_sessions(&home).await;
    let tmux = launch_with(&home, "-r");
    let screen = tmux.wait_for("Resume Session (Current Folder)").await;
    assert!(screen.contains("◉ Current Folder | ○ All"), "{screen}");
    assert!(screen.contains("Sort: Threaded"), "{screen}");
    let beta = screen.find("beta topic").expect(&screen);
    let alpha = screen.find("alpha topic").expect(&screen);
    assert!(beta < alpha, "the newest first:\n{screen}");
    // -r offers no rename (pi's picker at start has none).
    assert!(!screen.contains("ctrl+r rename"), "{screen}");
    tmux.keys(&["-l", "alpha"]);
    let screen = tmux.wait_for("> alpha").await;
    assert!(!screen.contains("beta topic"), "{screen}");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("alpha answer").await;
    assert!(screen.contains("mock/mock-model"), "the UI runs:\n{screen}");
    submit(&tmux, "/session");
    let screen = tmux.wait_for("messages").await;
    let alpha_file = home
        .sessions()
        .into_iter()
        .find(|p| std::fs::read_to_string(p).unwrap().contains("alpha topic"))
        .unwrap();
    let name = alpha_file
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(screen.contains(&name[..20]), "{name}\n{screen}");
    tmux.keys(&["Escape"]);
    let screen = quit(&tmux).await;
    assert!(screen.contains("FILO_EXIT=0"), "{screen}");
    assert_eq!(home.sessions().len(), 2, "no new session was made");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_flag_escape_quits_without_a_session() {
    tmux_or_return!("resume_flag_escape_quits_without_a_session");
    let mock =
        MockProvider::start(vec![Turn::text("alpha answer"), Turn::text("beta answer")]).await;
    let home = Home::new(&mock);
    two_sessions(&home).await;
    let tmux = launch_with(&home, "--resume");
    tmux.wait_for("beta topic").await;
    tmux.keys(&["Escape"]);
    let screen = tmux.wait_for("FILO_EXIT=").await;
    assert!(screen.contains("No session selected"), "{screen}");
    assert!(screen.contains("FILO_EXIT=0"), "{screen}");
    assert!(screen.contains("MODE=icanon"), "{screen}");
    // With -p there is no terminal to pick in: a clear error.
    let (code, _, err) = home.filo(&["-r", "-p", "hi"]).await;
    assert_eq!(code, 1);
    assert!(
        err.contains("--resume picks a session in the terminal"),
        "{err}"
    );
}

/// A theme file whose accent colour is pure red (ANSI-256 index 196 in this pane).
fn red_theme(path: &std::path::Path, name: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let theme =
        serde_json::json!({"name": name, "colors": {"accent": "#ff0000", "border": "#ff0000"}});
    std::fs::write(path, theme.to_string()).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn theme_flag_files_are_used_and_listed_no_themes_skips_the_directory() {
    tmux_or_return!("theme_flag_files_are_used_and_listed_no_themes_skips_the_directory");
    let mock = MockProvider::start(Vec::new()).await;
    let home = Home::new(&mock);
    red_theme(&home.project().join("my-themes/sunset.json"), "sunset");
    red_theme(&home.path().join(".filo/agent/themes/ocean.json"), "ocean");
    home.write_settings(&serde_json::json!({"theme": "sunset"}));

    let tmux = launch_with(&home, "--theme my-themes/sunset.json --no-themes");
    tmux.wait_for("enter to send").await;
    assert!(
        tmux.capture_escapes().contains("38;5;196"),
        "the sunset theme's red is on screen"
    );
    submit(&tmux, "/settings");
    tmux.wait_for("autoCompaction").await;
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("sunset").await;
    assert!(
        screen.contains("dark") && screen.contains("light"),
        "{screen}"
    );
    assert!(!screen.contains("ocean"), "--no-themes:\n{screen}");
    tmux.keys(&["Escape"]);
    quit(&tmux).await;
    drop(tmux);

    // Without --no-themes the agent directory's theme is listed too, and can be chosen.
    let tmux = launch_with(&home, "--theme my-themes/sunset.json");
    tmux.wait_for("enter to send").await;
    submit(&tmux, "/settings");
    tmux.wait_for("autoCompaction").await;
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("ocean").await;
    assert!(screen.contains("sunset"), "{screen}");
    tmux.keys(&["-l", "ocean"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("autoCompaction").await;
    tmux.keys(&["Escape"]);
    quit(&tmux).await;
    let settings: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(home.path().join(".filo/agent/settings.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(settings["theme"], "ocean");
    drop(tmux);

    // A theme setting naming no theme of the run: a warning, and the dark theme.
    let tmux = launch_with(&home, "--no-themes");
    let screen = tmux.wait_for("unknown theme").await;
    assert!(screen.contains("ocean"), "{screen}");
    quit(&tmux).await;
}
