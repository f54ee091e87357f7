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
