//! pi 0.73's keyboard features in the terminal UI, end to end in a tmux pane against the mock:
//! `-r` (the session picker at start), `--theme`/`--no-themes`, `/clone`, `/import`, `/reload`,
//! `/scoped-models`, `/changelog`, `/resume`'s rename, delete, sort and named filter, `/tree`'s
//! labels, filters and folding, and the `/settings` items that change what the UI does.

use filo_testkit::{MockProvider, Turn};

use super::common::Home;
use super::tui::{launch, launch_with, quit, submit, tmux_or_return};

/// Two sessions of the project, made with `-p`: "alpha topic" (older) and "beta topic".
async fn two_sessions(home: &Home) {
    for prompt in ["alpha topic", "beta topic"] {
        let (code, _, err) = home.filo(&["-p", prompt]).await;
        assert_eq!(code, 0, "{err}");
    }
    assert_eq!(home.sessions().len(), 2);
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
    // The shell prints the exit code, then the terminal mode: wait for the last line.
    let screen = tmux.wait_for("MODE=").await;
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
pub(super) fn red_theme(path: &std::path::Path, name: &str) {
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
    // "sunset" is on the settings list already: wait for the theme list itself.
    let screen = tmux.wait_for("light").await;
    assert!(
        screen.contains("dark") && screen.contains("sunset"),
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clone_duplicates_the_session_and_changelog_shows_filos() {
    tmux_or_return!("clone_duplicates_the_session_and_changelog_shows_filos");
    let mock = MockProvider::start(vec![Turn::text("first answer")]).await;
    let home = Home::new(&mock);
    let tmux = launch(&home);
    tmux.wait_for("enter to send").await;
    submit(&tmux, "hello clone");
    tmux.wait_for("first answer").await;
    // The answer is drawn a moment before the run ends; /clone aborts a run still going.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    submit(&tmux, "/clone");
    let screen = tmux.wait_for("Cloned to new session").await;
    assert!(
        screen.contains("hello clone"),
        "the history stays:\n{screen}"
    );
    let sessions = home.sessions();
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    for s in &sessions {
        let text = std::fs::read_to_string(s).unwrap();
        assert!(
            text.contains("hello clone") && text.contains("first answer"),
            "{text}"
        );
    }
    submit(&tmux, "/changelog");
    let screen = tmux.wait_for("What's New").await;
    assert!(screen.contains("# Changelog"), "{screen}");
    assert!(
        screen.contains("filo 0.1.0 is the first version with a changelog"),
        "filo's own changelog:\n{screen}"
    );
    tmux.keys(&["Escape"]);
    quit(&tmux).await;
}

/// A session file of another machine: header, a user message and an answer.
fn session_file(path: &std::path::Path, question: &str, answer: &str) {
    let ts = "2026-01-01T00:00:00.000Z";
    let lines = [
        serde_json::json!({"type":"session","version":3,"id":"0190aaaa-0000-7000-8000-000000000001",
            "timestamp":ts,"cwd":"/elsewhere"}),
        serde_json::json!({"type":"message","id":"aaaa0001","parentId":null,"timestamp":ts,
            "message":{"role":"user","content":question,"timestamp":1}}),
        serde_json::json!({"type":"message","id":"aaaa0002","parentId":"aaaa0001","timestamp":ts,
            "message":{"role":"assistant","content":[{"type":"text","text":answer}],
            "api":"openai-completions","provider":"mock","model":"mock-model",
            "usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,
            "cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},
            "stopReason":"stop","timestamp":2}}),
    ];
    let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    std::fs::write(path, text.join("\n") + "\n").unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_asks_then_opens_a_copy_of_the_file() {
    tmux_or_return!("import_asks_then_opens_a_copy_of_the_file");
    let mock = MockProvider::start(Vec::new()).await;
    let home = Home::new(&mock);
    session_file(
        &home.project().join("saved.jsonl"),
        "imported question",
        "imported answer",
    );
    let tmux = launch(&home);
    tmux.wait_for("enter to send").await;
    submit(&tmux, "/import");
    tmux.wait_for("Usage: /import <path.jsonl>").await;
    submit(&tmux, "/import missing.jsonl");
    tmux.wait_for("replace current session with missing.jsonl?")
        .await;
    tmux.keys(&["Enter"]);
    tmux.wait_for("Failed to import session: File not found")
        .await;
    submit(&tmux, "/import saved.jsonl");
    tmux.wait_for("replace current session with saved.jsonl?")
        .await;
    tmux.keys(&["Down"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("Import cancelled").await;
    submit(&tmux, "/import saved.jsonl");
    tmux.wait_for("replace current session with saved.jsonl?")
        .await;
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("Session imported from: saved.jsonl").await;
    assert!(screen.contains("imported answer"), "{screen}");
    let copied: Vec<_> = home
        .sessions()
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n == "saved.jsonl"))
        .collect();
    assert_eq!(copied.len(), 1, "copied into the session directory");
    let original = std::fs::read_to_string(home.project().join("saved.jsonl")).unwrap();
    let copy = std::fs::read_to_string(&copied[0]).unwrap();
    assert!(
        copy.starts_with(&original),
        "the copy holds the file:\n{copy}"
    );
    assert_eq!(
        original,
        std::fs::read_to_string(home.project().join("saved.jsonl")).unwrap(),
        "the imported file itself is not written to"
    );
    quit(&tmux).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_picks_up_new_prompt_templates_and_settings() {
    tmux_or_return!("reload_picks_up_new_prompt_templates_and_settings");
    let mock = MockProvider::start(vec![Turn::text("greeted")]).await;
    let home = Home::new(&mock);
    let tmux = launch(&home);
    tmux.wait_for("enter to send").await;
    let prompts = home.project().join(".pi/prompts");
    std::fs::create_dir_all(&prompts).unwrap();
    std::fs::write(
        prompts.join("greet.md"),
        "---\ndescription: Say hello\n---\nPlease greet $1 warmly.",
    )
    .unwrap();
    home.write_settings(&serde_json::json!({"enableSkillCommands": false, "quietStartup": true}));
    submit(&tmux, "/reload");
    tmux.wait_for("Reloaded keybindings, skills, prompts, themes, context files and settings")
        .await;
    tmux.keys(&["-l", "/gre"]);
    tmux.wait_for("Say hello").await;
    tmux.keys(&["C-u"]);
    submit(&tmux, "/greet Ada");
    tmux.wait_for("greeted").await;
    let body = mock.last_request().unwrap().body.to_string();
    assert!(body.contains("Please greet Ada warmly."), "{body}");
    quit(&tmux).await;
    drop(tmux);
    // quietStartup (saved before the reload) drops the banner at the next start.
    let tmux = launch_with(&home, "--approve");
    let screen = tmux.wait_for("mock/mock-model").await;
    assert!(!screen.contains("enter to send"), "{screen}");
    quit(&tmux).await;
}

/// Three mock models, so ctrl+p has something to cycle.
fn three_models(home: &Home, mock: &MockProvider) {
    let models = serde_json::json!({"providers": {"mock": {
        "baseUrl": format!("{}/v1", mock.url()),
        "api": "openai-completions",
        "apiKey": "MOCK_API_KEY",
        "models": [
            {"id": "mock-a", "name": "Mock A", "contextWindow": 100000, "maxTokens": 1000},
            {"id": "mock-b", "name": "Mock B", "contextWindow": 100000, "maxTokens": 1000},
            {"id": "mock-c", "name": "Mock C", "contextWindow": 100000, "maxTokens": 1000}
        ]
    }}});
    std::fs::write(
        home.path().join(".filo/agent/models.json"),
        models.to_string(),
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scoped_models_limits_ctrl_p_and_is_saved_as_enabled_models() {
    tmux_or_return!("scoped_models_limits_ctrl_p_and_is_saved_as_enabled_models");
    let mock = MockProvider::start(Vec::new()).await;
    let home = Home::new(&mock);
    three_models(&home, &mock);
    let tmux = launch_with(&home, "--model mock/mock-a");
    tmux.wait_for("enter to send").await;
    submit(&tmux, "/scoped-models");
    let screen = tmux.wait_for("Model Configuration").await;
    assert!(screen.contains("all enabled"), "{screen}");
    assert!(screen.contains("mock-b [mock]"), "{screen}");
    // Only mock-a, then mock-c too.
    tmux.keys(&["Enter"]);
    tmux.wait_for("1/3 enabled").await;
    tmux.keys(&["Down", "Down", "Enter"]);
    let screen = tmux.wait_for("2/3 enabled").await;
    assert!(screen.contains("(unsaved)"), "{screen}");
    tmux.keys(&["C-s"]);
    tmux.keys(&["Escape"]);
    tmux.wait_for("Model selection saved to settings").await;
    let settings: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(home.path().join(".filo/agent/settings.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        settings["enabledModels"],
        serde_json::json!(["mock/mock-a", "mock/mock-c"])
    );
    // ctrl+p skips mock-b now.
    tmux.keys(&["C-p"]);
    tmux.wait_for("mock/mock-c").await;
    tmux.keys(&["C-p"]);
    let screen = tmux.wait_for("mock/mock-a").await;
    assert!(!screen.contains("mock/mock-b"), "{screen}");
    quit(&tmux).await;
    drop(tmux);
    // The next start reads enabledModels.
    let tmux = launch_with(&home, "--model mock/mock-c");
    tmux.wait_for("mock/mock-c").await;
    tmux.keys(&["C-p"]);
    tmux.wait_for("mock/mock-a").await;
    tmux.keys(&["C-p"]);
    tmux.wait_for("mock/mock-c").await;
    quit(&tmux).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_picker_renames_filters_sorts_and_deletes() {
    tmux_or_return!("resume_picker_renames_filters_sorts_and_deletes");
    let mock =
        MockProvider::start(vec![Turn::text("alpha answer"), Turn::text("beta answer")]).await;
    let home = Home::new(&mock);
    two_sessions(&home).await;
    let tmux = launch(&home);
    tmux.wait_for("enter to send").await;
    submit(&tmux, "/resume");
    let screen = tmux.wait_for("Resume Session (Current Folder)").await;
    assert!(screen.contains("ctrl+r rename"), "{screen}");
    // beta is first (newest): rename it.
    tmux.keys(&["C-r"]);
    tmux.wait_for("Rename Session").await;
    tmux.keys(&["-l", "Beta named"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("Beta named").await;
    tmux.keys(&["C-n"]);
    let screen = tmux.wait_for("Name: Named").await;
    assert!(!screen.contains("alpha topic"), "{screen}");
    tmux.keys(&["C-n"]);
    tmux.keys(&["C-s"]);
    tmux.wait_for("Sort: Recent").await;
    tmux.keys(&["C-s"]);
    tmux.wait_for("Sort: Fuzzy").await;
    tmux.keys(&["C-s"]);
    tmux.wait_for("Sort: Threaded").await;
    // Delete alpha (second row) after confirming.
    tmux.keys(&["Down"]);
    tmux.keys(&["C-d"]);
    tmux.wait_for("Delete session? enter confirm · esc cancel")
        .await;
    tmux.keys(&["Enter"]);
    // The delete runs after the key (through `trash` when there is one): wait for the row to go.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let screen = tmux.capture();
        if screen.contains("Beta named") && !screen.contains("alpha topic") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "alpha was never removed from the list:\n{screen}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    tmux.keys(&["Escape"]);
    quit(&tmux).await;
    let left: Vec<String> = home
        .sessions()
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    assert!(left.iter().all(|t| !t.contains("alpha topic")), "deleted");
    let named = left.iter().find(|t| t.contains("beta topic")).unwrap();
    assert!(named.contains("\"type\":\"session_info\"") && named.contains("Beta named"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_items_change_what_the_ui_does() {
    tmux_or_return!("settings_items_change_what_the_ui_does");
    let mock = MockProvider::start(vec![Turn::text("an answer")]).await;
    let home = Home::new(&mock);
    let skill = home.project().join(".pi/skills/demo");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: demo\ndescription: A demo skill\n---\nDo the demo.\n",
    )
    .unwrap();
    let tmux = launch_with(&home, "--approve");
    tmux.wait_for("enter to send").await;
    submit(&tmux, "hi");
    tmux.wait_for("an answer").await;
    submit(&tmux, "/settings");
    let screen = tmux.wait_for("hideThinkingBlock").await;
    for item in [
        "quietStartup",
        "doubleEscapeAction   tree",
        "enableSkillCommands  true",
        "images.autoResize",
        "images.blockImages   false",
    ] {
        assert!(screen.contains(item), "{item}:\n{screen}");
    }
    // Double Escape opens the fork selector instead of the tree.
    tmux.keys(&["-l", "double"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("doubleEscapeAction   fork").await;
    tmux.keys(&["Escape"]);
    tmux.wait_gone("hideThinkingBlock").await;
    // Two separate Escapes (sent together, a terminal reads them as one alt+escape).
    for _ in 0..2 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        tmux.keys(&["Escape"]);
    }
    tmux.wait_for("fork from message").await;
    tmux.keys(&["Escape"]);
    // The selector must be gone before the next keys: an Escape read together with the `/` after
    // it is one alt+/ to a terminal, and the selector would stay open and take the text.
    tmux.wait_gone("fork from message").await;
    // Skill commands off: /skill:demo is no longer offered.
    tmux.keys(&["-l", "/skill"]);
    tmux.wait_for("skill:demo").await;
    tmux.keys(&["C-u"]);
    submit(&tmux, "/settings");
    tmux.wait_for("hideThinkingBlock").await;
    tmux.keys(&["-l", "skill"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("enableSkillCommands  false").await;
    // Block images on: saved, and shown as on.
    tmux.keys(&["-l", "prevent"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("images.blockImages   true").await;
    tmux.keys(&["Escape"]);
    tmux.wait_gone("hideThinkingBlock").await;
    tmux.keys(&["-l", "/skil"]);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let screen = tmux.capture();
    assert!(!screen.contains("skill:demo"), "{screen}");
    tmux.keys(&["C-u"]);
    quit(&tmux).await;
    let settings: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(home.path().join(".filo/agent/settings.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(settings["doubleEscapeAction"], "fork");
    assert_eq!(settings["enableSkillCommands"], false);
    assert_eq!(settings["images"]["blockImages"], true);
}
