//! pi 0.73's terminal and editor settings in the terminal UI, end to end in a tmux pane against
//! the mock: `editorPaddingX`, `autocompleteMaxVisible`, `showHardwareCursor`,
//! `markdown.codeBlockIndent`, `terminal.clearOnShrink`, `terminal.showTerminalProgress` and
//! `branchSummary.skipPrompt`, each with and without the setting (escape sequences read from
//! the pane's raw output), and the same items changed from `/settings`.

use std::path::Path;
use std::time::Duration;

use filo_testkit::{MockProvider, Turn};
use serde_json::{Value, json};

use super::common::Home;
use super::tui::{Tmux, launch, line_with, quit, shell_quote, submit, tmux_or_return};

/// filo with `settings`, the UI up.
async fn with_settings(mock: &MockProvider, settings: Value) -> (Home, Tmux) {
    let home = Home::new(mock);
    home.write_settings(&settings);
    let tmux = launch(&home);
    tmux.wait_for("enter to send").await;
    (home, tmux)
}

/// From now on, everything filo writes to the pane, raw, goes to `path`.
fn record_output(tmux: &Tmux, path: &Path) {
    let cmd = format!("cat >> {}", shell_quote(path));
    assert!(
        tmux.cmd(&["pipe-pane", "-o", "-t", "filo", &cmd])
            .status
            .success()
    );
}

fn recorded(path: &Path) -> String {
    String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default()).into_owned()
}

/// Wait until the pane no longer shows `needle`.
async fn gone(tmux: &Tmux, needle: &str) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        let screen = tmux.capture();
        if !screen.contains(needle) {
            return screen;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the pane still shows {needle:?}:\n{screen}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn editor_padding_and_autocomplete_rows_follow_the_settings() {
    tmux_or_return!("editor_padding_and_autocomplete_rows_follow_the_settings");
    let mock = MockProvider::start(Vec::new()).await;
    for (settings, pad, rows) in [
        (json!({}), "", 5),
        (
            json!({"editorPaddingX": 3, "autocompleteMaxVisible": 3}),
            "   ",
            3,
        ),
    ] {
        let (_home, tmux) = with_settings(&mock, settings.clone()).await;
        tmux.keys(&["-l", "/"]);
        let screen = tmux.wait_for("/model").await;
        let items = screen
            .lines()
            .filter(|l| l.starts_with("  /") && !l.contains("FILO"))
            .count();
        assert_eq!(items, rows, "{settings}:\n{screen}");
        // pi's scroll line under a list with rows hidden.
        assert!(
            screen
                .lines()
                .any(|l| l.trim_start().starts_with("(1/") && l.trim_end().ends_with(')')),
            "{screen}"
        );
        tmux.keys(&["BSpace"]);
        tmux.keys(&["-l", "hello padding"]);
        let screen = tmux.wait_for("hello padding").await;
        let line = line_with(&screen, "hello padding");
        assert!(
            line.starts_with(&format!("{pad}hello padding")),
            "{settings}: {line:?}"
        );
        quit(&tmux).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hardware_cursor_is_hidden_unless_the_setting_shows_it() {
    tmux_or_return!("the_hardware_cursor_is_hidden_unless_the_setting_shows_it");
    let mock = MockProvider::start(Vec::new()).await;
    for (settings, visible) in [(json!({}), "0"), (json!({"showHardwareCursor": true}), "1")] {
        let (_home, tmux) = with_settings(&mock, settings.clone()).await;
        tmux.keys(&["-l", "abc"]);
        tmux.wait_for("abc").await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        let flag = tmux.cmd(&["display-message", "-p", "-t", "filo", "#{cursor_flag}"]);
        let flag = String::from_utf8_lossy(&flag.stdout).trim().to_string();
        assert_eq!(flag, visible, "{settings}");
        // The editor's own cursor: a reversed cell after the text.
        let escapes = tmux.capture_escapes();
        let line = line_with(&escapes, "abc");
        assert!(line.contains("\x1b[7m"), "{settings}: {line:?}");
        quit(&tmux).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_blocks_are_indented_by_the_setting() {
    tmux_or_return!("code_blocks_are_indented_by_the_setting");
    let answer = "Here:\n\n```\nlet x = 1;\n```\n";
    let mock = MockProvider::start(vec![Turn::text(answer), Turn::text(answer)]).await;
    for (settings, indent) in [
        (json!({}), "  "),
        (json!({"markdown": {"codeBlockIndent": "      "}}), "      "),
    ] {
        let (_home, tmux) = with_settings(&mock, settings.clone()).await;
        submit(&tmux, "show code");
        let screen = tmux.wait_for("let x = 1;").await;
        let line = line_with(&screen, "let x = 1;");
        assert_eq!(line.trim_end(), format!("{indent}let x = 1;"), "{settings}");
        quit(&tmux).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clear_on_shrink_repaints_when_the_content_gets_shorter() {
    tmux_or_return!("clear_on_shrink_repaints_when_the_content_gets_shorter");
    let mock = MockProvider::start(Vec::new()).await;
    for (settings, clears) in [
        (json!({}), false),
        (json!({"terminal": {"clearOnShrink": true}}), true),
    ] {
        let (home, tmux) = with_settings(&mock, settings.clone()).await;
        let out = home.path().join("pane.out");
        record_output(&tmux, &out);
        tokio::time::sleep(Duration::from_millis(200)).await;
        // The command list makes the content taller; Backspace closes it again.
        tmux.keys(&["-l", "/"]);
        tmux.wait_for("/model").await;
        tmux.keys(&["BSpace"]);
        tokio::time::sleep(Duration::from_millis(400)).await;
        let written = recorded(&out);
        assert_eq!(
            written.contains("\x1b[2J"),
            clears,
            "{settings}: {written:?}"
        );
        quit(&tmux).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminal_progress_is_sent_while_the_agent_works() {
    tmux_or_return!("terminal_progress_is_sent_while_the_agent_works");
    let mock = MockProvider::start(vec![Turn::text("Done one."), Turn::text("Done two.")]).await;
    for (settings, shown, tag) in [
        (json!({}), false, "one"),
        (
            json!({"terminal": {"showTerminalProgress": true}}),
            true,
            "two",
        ),
    ] {
        let (home, tmux) = with_settings(&mock, settings.clone()).await;
        let out = home.path().join("pane.out");
        record_output(&tmux, &out);
        tokio::time::sleep(Duration::from_millis(200)).await;
        submit(&tmux, "work");
        tmux.wait_for(&format!("Done {tag}.")).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let written = recorded(&out);
        let on = written.find("\x1b]9;4;3\x07");
        let off = written.rfind("\x1b]9;4;0;\x07");
        if shown {
            assert!(on.is_some() && off > on, "{written:?}");
        } else {
            assert!(on.is_none() && off.is_none(), "{written:?}");
        }
        quit(&tmux).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skip_prompt_moves_in_the_tree_without_asking_for_a_summary() {
    tmux_or_return!("skip_prompt_moves_in_the_tree_without_asking_for_a_summary");
    let mock = MockProvider::start(
        ["One.", "Two.", "One.", "Two."]
            .into_iter()
            .map(Turn::text)
            .collect(),
    )
    .await;
    for (settings, asks) in [
        (json!({}), true),
        (json!({"branchSummary": {"skipPrompt": true}}), false),
    ] {
        let (_home, tmux) = with_settings(&mock, settings.clone()).await;
        submit(&tmux, "first");
        tmux.wait_for("One.").await;
        submit(&tmux, "second");
        tmux.wait_for("Two.").await;
        submit(&tmux, "/tree");
        tmux.wait_for("Session Tree").await;
        tmux.keys(&["Up"]);
        tmux.wait_for("› • user: second").await;
        tmux.keys(&["Enter"]);
        if asks {
            tmux.wait_for("Summarize the branch left behind").await;
            tmux.keys(&["Enter"]);
        }
        // Moving to a user message leaves it (and what followed) behind and puts its text
        // back in the editor; without the setting only after the summary question.
        gone(&tmux, "Two.").await;
        // The editor is drawn a moment after the transcript: wait for its text, not one frame.
        let screen = tmux.wait_for("second").await;
        assert!(!screen.contains("Two."), "{screen}");
        assert!(!screen.contains("Session Tree"), "{screen}");
        assert!(
            !screen.contains("leave this branch"),
            "{settings}:\n{screen}"
        );
        assert_eq!(line_with(&screen, "second").trim(), "second", "{screen}");
        quit(&tmux).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_terminal_items_of_settings_change_the_ui_and_are_saved() {
    tmux_or_return!("the_terminal_items_of_settings_change_the_ui_and_are_saved");
    let mock = MockProvider::start(Vec::new()).await;
    let (home, tmux) = with_settings(&mock, json!({})).await;
    submit(&tmux, "/settings");
    let screen = tmux.wait_for("editorPaddingX").await;
    for item in [
        "showHardwareCursor",
        "autocompleteMaxVisible",
        "terminal.clearOnShrink",
        "terminal.showTerminalProgress",
    ] {
        assert!(screen.contains(item), "{item}:\n{screen}");
    }
    for (search, shown) in [
        ("editorPad", "editorPaddingX       1"),
        ("hardware", "showHardwareCursor   true"),
        ("autocomplete", "autocompleteMaxVisible 7"),
    ] {
        tmux.keys(&["-l", search]);
        tmux.keys(&["Enter"]);
        tmux.wait_for(shown).await;
        for _ in 0..search.len() {
            tmux.keys(&["BSpace"]);
        }
    }
    tmux.keys(&["Escape"]);
    tokio::time::sleep(Duration::from_millis(200)).await;
    tmux.keys(&["-l", "padded"]);
    let screen = tmux.wait_for("padded").await;
    assert!(
        line_with(&screen, "padded").starts_with(" padded"),
        "{screen}"
    );
    let flag = tmux.cmd(&["display-message", "-p", "-t", "filo", "#{cursor_flag}"]);
    assert_eq!(String::from_utf8_lossy(&flag.stdout).trim(), "1");
    quit(&tmux).await;
    let saved: Value = serde_json::from_str(
        &std::fs::read_to_string(home.path().join(".filo/agent/settings.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(saved["editorPaddingX"], 1);
    assert_eq!(saved["showHardwareCursor"], true);
    assert_eq!(saved["autocompleteMaxVisible"], 7);
}
