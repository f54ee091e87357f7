//! The `skills` / `prompts` settings lists of global and project settings against what pi 0.73.1
//! did with the same files and settings (`tests/fixtures/pi073/resource-settings.json`, recorded
//! by `scripts/record-pi/record.py resource_settings_case`): plain paths (relative to the
//! agent dir or `<cwd>/.pi`, `~/`), globs, `!` excludes and `+` / `-` exact paths, as they reach
//! the model — the skills block of the system prompt and the expansion of `/template` prompts.
//!
//! pi's recording ran with HOME `<TMP>/home` and agent dir `<TMP>/home/agent`; filo's test HOME is
//! the temporary directory itself and its agent dir `.filo/agent`. Both are written `<AGENT>` /
//! `<HOME>` before comparing; the project is `<TMP>/project` on both sides.

use filo_testkit::{MockProvider, Turn};
use serde_json::Value;

use super::common::Home;
use super::pi073::fixture;

/// pi's recorded text with its agent dir named `<AGENT>`.
fn pi_text(text: &str) -> String {
    text.replace("<TMP>/home/agent", "<AGENT>")
        .replace("<TMP>/home", "<HOME>")
}

/// filo's text with its agent dir named `<AGENT>` and its temporary directory `<TMP>`.
fn filo_text(home: &Home, text: &str) -> String {
    let root = home.path().to_str().unwrap();
    text.replace(&format!("{root}/.filo/agent"), "<AGENT>")
        .replace(root, "<TMP>")
}

/// The fixture's files written under this HOME (`<AGENT>`, `<HOME>`, `<TMP>` made filo's).
fn write_files(home: &Home, files: &Value) {
    let root = home.path();
    for (key, text) in files.as_object().unwrap() {
        let (tag, rest) = key.split_once('/').unwrap();
        let dir = match tag {
            "<AGENT>" => root.join(".filo/agent"),
            "<HOME>" | "<TMP>" => root.to_path_buf(),
            other => panic!("unknown place {other}"),
        };
        let path = dir.join(rest);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text.as_str().unwrap()).unwrap();
    }
}

#[tokio::test]
async fn skills_and_prompts_settings_reach_the_model_as_pi_073() {
    let pi = fixture("resource-settings.json");
    let prompts: Vec<&str> = pi["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    let cases = pi["cases"].as_object().unwrap();
    assert_eq!(cases.len(), 8);
    for (name, recorded) in cases {
        let turns = prompts.iter().map(|_| Turn::text("ok")).collect();
        let mock = MockProvider::start(turns).await;
        let home = Home::new(&mock);
        write_files(&home, &pi["files"]);
        home.write_settings(&recorded["global"]);
        std::fs::write(
            home.project().join(".pi/settings.json"),
            recorded["project"].to_string(),
        )
        .unwrap();
        for (i, prompt) in prompts.iter().enumerate() {
            let args = [
                "--provider",
                "mock",
                "--model",
                "mock-model",
                "-p",
                "--no-session",
                "--no-dag",
                // pi 0.73.1 had no project trust; the project's files are approved.
                "--approve",
                prompt,
            ];
            let (code, _, err) = home.filo(&args).await;
            assert_eq!(code, 0, "{name} {prompt}: {err}");
            assert!(
                !err.contains("not applied"),
                "{name}: settings lists are applied, no warning: {err}"
            );
            let body = mock.last_request().unwrap().body;
            if i == 0 {
                let system = body["messages"][0]["content"].as_str().unwrap_or_default();
                let skills = system.find("\n\nThe following skills").map(|start| {
                    let end =
                        system.find("</available_skills>").unwrap() + "</available_skills>".len();
                    filo_text(&home, &system[start..end])
                });
                assert_eq!(
                    skills,
                    recorded["skills"].as_str().map(pi_text),
                    "{name}: skills block"
                );
            }
            let user = body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .rfind(|m| m["role"] == "user")
                .unwrap()["content"]
                .clone();
            let user: Value = serde_json::from_str(&filo_text(&home, &user.to_string())).unwrap();
            let want: Value =
                serde_json::from_str(&pi_text(&recorded["user"][i].to_string())).unwrap();
            assert_eq!(user, want, "{name}: {prompt}");
        }
    }
}

/// The `themes` settings list (pi's resolver, as for skills and prompts): a directory it names
/// provides the theme the `theme` setting picks, and its `!` entry hides a discovered theme from
/// the `/settings` theme list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn themes_setting_adds_and_hides_themes() {
    use super::tui::{launch, tmux_or_skip};
    use super::tui::{quit, submit};
    use super::tui_pi073::red_theme;
    if !tmux_or_skip("themes_setting_adds_and_hides_themes") {
        eprintln!("SKIPPED themes_setting_adds_and_hides_themes: tmux is not installed");
        return;
    }
    let mock = MockProvider::start(Vec::new()).await;
    let home = Home::new(&mock);
    red_theme(&home.project().join("my-themes/sunset.json"), "sunset");
    red_theme(&home.path().join(".filo/agent/themes/ocean.json"), "ocean");
    red_theme(
        &home.path().join(".filo/agent/themes/forest.json"),
        "forest",
    );
    // Relative to the agent dir `<HOME>/.filo/agent`.
    home.write_settings(&serde_json::json!({
        "theme": "sunset",
        "themes": ["../../project/my-themes", "!ocean.json"],
    }));
    let tmux = launch(&home);
    let screen = tmux.wait_for("enter to send").await;
    assert!(!screen.contains("unknown theme"), "{screen}");
    assert!(
        tmux.capture_escapes().contains("38;5;196"),
        "the sunset theme's red is on screen"
    );
    submit(&tmux, "/settings");
    tmux.wait_for("autoCompaction").await;
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("forest").await;
    assert!(screen.contains("sunset"), "{screen}");
    assert!(
        !screen.contains("ocean"),
        "`!ocean.json` hides it:\n{screen}"
    );
    tmux.keys(&["Escape"]);
    quit(&tmux).await;
}
