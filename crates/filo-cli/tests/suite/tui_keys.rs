//! pi 0.73's keys in the terminal UI, end to end in a tmux pane against the mock:
//! `keybindings.json` (filo's and pi's agent directory, `/hotkeys`, `/reload`), the editor's
//! word moves, kill ring, undo and jump, Shift+Ctrl+P, Ctrl+G (`$EDITOR`), Ctrl+Z (suspend and
//! `fg`), Alt+Up (restore queued messages) and Ctrl+V (an image from the clipboard).

use std::path::Path;
use std::time::Duration;

use filo_testkit::{Fault, MockProvider, Reply, Turn};
use serde_json::json;

use super::common::Home;
use super::tui::{
    Tmux, launch, launch_env, line_with, quit, server, shell_quote, submit, tmux_or_return,
};

fn write_script(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// Escape, and a pause, so the next key does not arrive with it as one Alt+key.
async fn escape(tmux: &Tmux) {
    tmux.keys(&["Escape"]);
    tokio::time::sleep(Duration::from_millis(200)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keybindings_json_rebinds_shows_in_hotkeys_and_reloads() {
    tmux_or_return!("keybindings_json_rebinds_shows_in_hotkeys_and_reloads");
    let mock = MockProvider::start(Vec::new()).await;
    let home = Home::new(&mock);
    let file = home.path().join(".filo/agent/keybindings.json");
    // A legacy name (pi before 0.60) and today's.
    std::fs::write(
        &file,
        json!({"selectModel": "ctrl+k", "app.thinking.toggle": []}).to_string(),
    )
    .unwrap();
    let tmux = launch(&home);
    tmux.wait_for("enter to send").await;
    submit(&tmux, "/hotkeys");
    let screen = tmux.wait_for("Keyboard Shortcuts").await;
    assert!(screen.contains("Navigation"), "{screen}");
    tmux.keys(&["PageDown"]);
    let screen = tmux.wait_for("Open model selector").await;
    assert!(
        line_with(&screen, "Open model selector").contains("Ctrl+K"),
        "{screen}"
    );
    assert!(
        !screen.contains("Toggle thinking block visibility"),
        "unbound: {screen}"
    );
    assert!(
        line_with(&screen, "Cycle models").contains("Ctrl+P / Shift+Ctrl+P"),
        "{screen}"
    );
    escape(&tmux).await;
    tmux.keys(&["C-l"]);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !tmux.capture().contains("type to search"),
        "ctrl+l is unbound"
    );
    tmux.keys(&["C-k"]);
    tmux.wait_for("type to search").await;
    escape(&tmux).await;

    // /reload reads the file again.
    std::fs::write(&file, json!({"app.model.select": "ctrl+o"}).to_string()).unwrap();
    submit(&tmux, "/reload");
    tmux.wait_for("Reloaded keybindings").await;
    submit(&tmux, "/hotkeys");
    tmux.wait_for("Keyboard Shortcuts").await;
    tmux.keys(&["PageDown"]);
    let screen = tmux.wait_for("Open model selector").await;
    assert!(
        line_with(&screen, "Open model selector").contains("Ctrl+O"),
        "{screen}"
    );
    escape(&tmux).await;
    // A broken file: a warning naming it, the defaults in force.
    std::fs::write(&file, "{ not json").unwrap();
    submit(&tmux, "/reload");
    let screen = tmux.wait_for("not valid JSON").await;
    assert!(screen.contains("keybindings.json"), "{screen}");
    tmux.keys(&["C-l"]);
    tmux.wait_for("type to search").await;
    escape(&tmux).await;
    let screen = quit(&tmux).await;
    assert!(screen.contains("FILO_EXIT=0"), "{screen}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "{ not json");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keybindings_are_read_from_pis_directory_when_filo_has_none() {
    tmux_or_return!("keybindings_are_read_from_pis_directory_when_filo_has_none");
    let mock = MockProvider::start(Vec::new()).await;
    let home = Home::new(&mock);
    let pi = home.path().join(".pi/agent");
    std::fs::create_dir_all(&pi).unwrap();
    std::fs::write(
        pi.join("keybindings.json"),
        json!({"app.model.select": "ctrl+k"}).to_string(),
    )
    .unwrap();
    let tmux = launch(&home);
    let screen = tmux.wait_for("enter to send").await;
    assert!(
        screen.contains("keybindings.json from pi's agent directory"),
        "{screen}"
    );
    tmux.keys(&["C-k"]);
    tmux.wait_for("type to search").await;
    escape(&tmux).await;
    quit(&tmux).await;
    assert!(!home.path().join(".filo/agent/keybindings.json").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn editor_word_moves_kill_ring_undo_and_jump() {
    tmux_or_return!("editor_word_moves_kill_ring_undo_and_jump");
    let mock = MockProvider::start(Vec::new()).await;
    let home = Home::new(&mock);
    let tmux = launch(&home);
    tmux.wait_for("enter to send").await;
    tmux.keys(&["-l", "one two three"]);
    tmux.keys(&["C-w"]);
    tmux.keys(&["C-a", "M-d"]);
    tmux.wait_for(" two\n").await;
    // Yank the last kill ("one"), then yank-pop to the one before ("three").
    tmux.keys(&["C-e", "C-y"]);
    tmux.wait_for(" two one").await;
    tmux.keys(&["M-y"]);
    tmux.wait_for(" two three").await;
    // Undo (ctrl+-, sent as 0x1f) takes the yank-pop back.
    tmux.keys(&["C-_"]);
    tmux.wait_for(" two one").await;
    // Word moves: alt+b, alt+left, alt+f; then insert there.
    tmux.keys(&["M-b", "M-Left", "M-f"]);
    tmux.keys(&["-l", "+"]);
    tmux.wait_for(" two+ one").await;
    // Jump forward to "o" from the line's start, backward to "t".
    tmux.keys(&["C-a", "C-]", "o"]);
    tmux.keys(&["-l", "^"]);
    tmux.wait_for(" tw^o+ one").await;
    tmux.keys(&["C-e", "M-C-]", "t"]);
    tmux.keys(&["-l", "_"]);
    tmux.wait_for(" _tw^o+ one").await;
    // No $EDITOR in this pane: ctrl+g says so and keeps the text.
    tmux.keys(&["C-g"]);
    let screen = tmux
        .wait_for("No editor configured. Set $VISUAL or $EDITOR")
        .await;
    assert!(screen.contains(" _tw^o+ one"), "{screen}");
    let screen = quit(&tmux).await;
    assert!(screen.contains("FILO_EXIT=0"), "{screen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_p_and_shift_ctrl_p_cycle_models_both_ways() {
    tmux_or_return!("ctrl_p_and_shift_ctrl_p_cycle_models_both_ways");
    let mock = MockProvider::start(Vec::new()).await;
    let home = Home::new(&mock);
    let models = json!({"providers": {"mock": {
        "baseUrl": format!("{}/v1", mock.url()),
        "api": "openai-completions",
        "apiKey": "MOCK_API_KEY",
        "models": [
            {"id": "mock-model", "contextWindow": 100000, "maxTokens": 1000},
            {"id": "mock-bee", "contextWindow": 100000, "maxTokens": 1000},
            {"id": "mock-sea", "contextWindow": 100000, "maxTokens": 1000}
        ]
    }}});
    std::fs::write(
        home.path().join(".filo/agent/models.json"),
        models.to_string(),
    )
    .unwrap();
    let tmux = launch(&home);
    tmux.wait_for("mock/mock-model").await;
    tmux.keys(&["C-p"]);
    tmux.wait_for("mock/mock-bee").await;
    // Shift+Ctrl+P as the keyboard protocol sends it (CSI 112;6u).
    let back = ["-H", "1b", "5b", "31", "31", "32", "3b", "36", "75"];
    tmux.keys(&back);
    tmux.wait_for("mock/mock-model").await;
    tmux.keys(&back);
    tmux.wait_for("mock/mock-sea").await;
    let screen = quit(&tmux).await;
    assert!(screen.contains("FILO_EXIT=0"), "{screen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_g_edits_the_text_in_the_external_editor() {
    tmux_or_return!("ctrl_g_edits_the_text_in_the_external_editor");
    let mock = MockProvider::start(vec![Turn::text("got it")]).await;
    let home = Home::new(&mock);
    let editor = home.path().join("fake-editor");
    // The editor records whether the terminal was handed over in cooked mode, then prefixes
    // the text.
    write_script(
        &editor,
        "mode=$(stty -a | grep -o -- '-\\?icanon' | head -1)\n\
         { printf 'edited (%s): ' \"$mode\"; cat \"$1\"; printf '\\n'; } > \"$1.new\" && mv \"$1.new\" \"$1\"",
    );
    let env = format!("EDITOR={}", shell_quote(&editor));
    let tmux = launch_env(&home, &env, "");
    tmux.wait_for("enter to send").await;
    tmux.keys(&["-l", "draft words"]);
    tmux.keys(&["C-g"]);
    let screen = tmux.wait_for("edited (icanon): draft words").await;
    assert!(screen.contains("enter to send"), "{screen}");
    tmux.keys(&["Enter"]);
    tmux.wait_for("got it").await;
    let body = mock.requests()[0].body.to_string();
    assert!(body.contains("edited (icanon): draft words"), "{body}");
    assert!(
        !body.contains("draft words\\n"),
        "the trailing newline is dropped: {body}"
    );
    let screen = quit(&tmux).await;
    assert!(screen.contains("FILO_EXIT=0"), "{screen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_z_suspends_to_the_shell_and_fg_resumes() {
    tmux_or_return!("ctrl_z_suspends_to_the_shell_and_fg_resumes");
    let mock = MockProvider::start(vec![Turn::text("still here")]).await;
    let home = Home::new(&mock);
    let tmux = server(&home);
    // An interactive shell with job control, as a user has.
    let shell = format!(
        "env -i HOME={home} PATH=\"$PATH\" MOCK_API_KEY=mock-secret TERM=xterm-256color \
         PS1='shell$ ' bash --norc --noprofile -i",
        home = shell_quote(home.path()),
    );
    let project = home.project();
    let out = tmux.cmd(&[
        "new-session",
        "-d",
        "-s",
        "filo",
        "-x",
        "100",
        "-y",
        "30",
        "-c",
        &project.to_string_lossy(),
        &shell,
    ]);
    assert!(out.status.success());
    tmux.wait_for("shell$").await;
    let bin = shell_quote(Path::new(env!("CARGO_BIN_EXE_filo")));
    submit(&tmux, &bin);
    tmux.wait_for("enter to send").await;
    tmux.keys(&["-l", "kept text"]);
    tmux.wait_for("kept text").await;
    tmux.keys(&["C-z"]);
    let screen = tmux.wait_for("Stopped").await;
    assert!(!screen.contains("enter to send"), "{screen}");
    let alt = tmux.cmd(&["display-message", "-p", "-t", "filo", "#{alternate_on}"]);
    assert_eq!(String::from_utf8_lossy(&alt.stdout).trim(), "0");
    submit(&tmux, "stty -a | grep -o -- '-\\?icanon' | head -1");
    tmux.wait_for("\nicanon").await;
    submit(&tmux, "fg");
    let screen = tmux.wait_for("enter to send").await;
    assert!(screen.contains("kept text"), "{screen}");
    tmux.keys(&["Enter"]);
    tmux.wait_for("still here").await;
    tmux.keys(&["C-d"]);
    tokio::time::sleep(Duration::from_millis(300)).await;
    // `fg`'s status is filo's exit code.
    submit(&tmux, "echo AFTER=$?");
    let screen = tmux.wait_for("AFTER=0").await;
    assert!(screen.contains("Stopped"), "{screen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alt_up_restores_queued_messages_into_the_editor() {
    tmux_or_return!("alt_up_restores_queued_messages_into_the_editor");
    let mock = MockProvider::start(Vec::new()).await;
    mock.push(Fault::Stall {
        after_events: 4,
        reply: Reply::text("Working slowly on it and then some more"),
        stall: Duration::from_secs(30),
    });
    let home = Home::new(&mock);
    let tmux = launch(&home);
    tmux.wait_for("enter to send").await;
    tmux.keys(&["M-Up"]);
    tmux.wait_for("No queued messages to restore").await;
    submit(&tmux, "start");
    tmux.wait_for("esc to interrupt").await;
    submit(&tmux, "steer this");
    tmux.keys(&["-l", "follow later"]);
    tmux.keys(&["M-Enter"]);
    tmux.wait_for("follow later").await;
    tmux.keys(&["-l", "draft"]);
    tmux.keys(&["M-Up"]);
    let screen = tmux.wait_for("draft").await;
    let steer = screen.find("steer this").expect(&screen);
    let follow = screen.find("follow later").expect(&screen);
    let draft = screen.rfind("draft").expect(&screen);
    assert!(steer < follow && follow < draft, "{screen}");
    escape(&tmux).await;
    tmux.wait_for("Aborted").await;
    // Nothing was sent after the first prompt: the queue was emptied.
    assert_eq!(mock.requests().len(), 1);
    let screen = quit(&tmux).await;
    assert!(screen.contains("FILO_EXIT=0"), "{screen}");
}

/// A PNG of 1×1 pixels.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0,
    0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x89, 0x99, 0x3d, 0x1d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_v_pastes_a_clipboard_image_as_a_file_path() {
    tmux_or_return!("ctrl_v_pastes_a_clipboard_image_as_a_file_path");
    let mock = MockProvider::start(Vec::new()).await;
    let home = Home::new(&mock);
    let bin = home.path().join("bin");
    let tmp = home.path().join("tmp");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(&tmp).unwrap();
    let png = home.path().join("clip.png");
    std::fs::write(&png, PNG).unwrap();
    // A stand-in xclip: lists the clipboard's types and prints the PNG.
    write_script(
        &bin.join("xclip"),
        &format!(
            "case \"$*\" in *TARGETS*) printf 'TARGETS\\ntext/plain\\nimage/png\\n';; \
             *image/png*) cat {};; *) exit 1;; esac",
            shell_quote(&png)
        ),
    );
    let env = format!(
        "PATH={}:/usr/bin:/bin TMPDIR={}",
        shell_quote(&bin),
        shell_quote(&tmp)
    );
    let tmux = launch_env(&home, &env, "");
    tmux.wait_for("enter to send").await;
    tmux.keys(&["-l", "look at "]);
    tmux.keys(&["C-v"]);
    let screen = tmux.wait_for("filo-clipboard-").await;
    assert!(screen.contains("look at "), "{screen}");
    let saved: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(saved.len(), 1, "{saved:?}");
    assert!(saved[0].to_string_lossy().ends_with(".png"));
    assert_eq!(std::fs::read(&saved[0]).unwrap(), PNG);
    quit(&tmux).await;

    // No clipboard tool at all: a clear message, nothing inserted.
    let empty = home.path().join("empty-bin");
    std::fs::create_dir_all(&empty).unwrap();
    let env = format!("PATH={}", shell_quote(&empty));
    let tmux = launch_env(&home, &env, "");
    tmux.wait_for("enter to send").await;
    tmux.keys(&["C-v"]);
    tmux.wait_for("Pasting an image needs wl-paste (Wayland) or xclip (X11)")
        .await;
    quit(&tmux).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tree_labels_filters_and_folding() {
    tmux_or_return!("tree_labels_filters_and_folding");
    let mock = MockProvider::start(vec![
        Turn::tool_call("call_1", "bash", json!({"command": "echo hi"})),
        Turn::text("One."),
    ])
    .await;
    let home = Home::new(&mock);
    // `/tree` opens with the `treeFilterMode` setting.
    home.write_settings(&json!({"treeFilterMode": "user-only"}));
    let tmux = launch(&home);
    tmux.wait_for("enter to send").await;
    submit(&tmux, "first");
    tmux.wait_for("One.").await;
    submit(&tmux, "/tree");
    let screen = tmux.wait_for("Session Tree").await;
    assert!(screen.contains("(1/1) [user]"), "{screen}");
    assert!(!screen.contains("assistant: One."), "{screen}");
    // Ctrl+U toggles user-only off: the default view, tool results included.
    tmux.keys(&["C-u"]);
    let screen = tmux.wait_for("assistant: One.").await;
    assert!(screen.contains("[bash: echo hi]"), "{screen}");
    // Ctrl+T: no tools.
    tmux.keys(&["C-t"]);
    let screen = tmux.wait_for("[no-tools]").await;
    assert!(!screen.contains("[bash: echo hi]"), "{screen}");
    // Shift+L on the first message: a label.
    tmux.keys(&["Up", "Up"]);
    tmux.keys(&["L"]);
    tmux.wait_for("Label (empty to remove):").await;
    tmux.keys(&["-l", "checkpoint"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("[checkpoint] user: first").await;
    // Shift+T: when the label was set.
    tmux.keys(&["T"]);
    let screen = tmux.wait_for("[+label time]").await;
    let row = line_with(&screen, "[checkpoint]");
    let after = row.split("[checkpoint] ").nth(1).unwrap_or_default();
    let time = after.split_whitespace().next().unwrap_or_default();
    assert!(
        time.len() == 5 && time.as_bytes()[2] == b':',
        "a HH:MM time after the label: {row}"
    );
    tmux.keys(&["T"]);
    // Ctrl+L: labeled entries only.
    tmux.keys(&["C-l"]);
    let screen = tmux.wait_for("[labeled]").await;
    assert!(screen.contains("(1/1) [labeled]"), "{screen}");
    // Ctrl+D: back to the default view; Ctrl+← folds the root, Ctrl+→ opens it.
    tmux.keys(&["C-d"]);
    let screen = tmux.wait_for("assistant: One.").await;
    let selected = line_with(&screen, "› ");
    assert!(selected.contains("user: first"), "{screen}");
    tmux.keys(&["C-Left"]);
    let screen = tmux.wait_for("⊞").await;
    assert!(!screen.contains("assistant: One."), "{screen}");
    tmux.keys(&["C-Right"]);
    tmux.wait_for("assistant: One.").await;
    escape(&tmux).await;
    quit(&tmux).await;
    let file = &home.sessions()[0];
    let lines = std::fs::read_to_string(file).unwrap();
    let label = lines
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["type"] == "label")
        .expect(&lines);
    assert_eq!(label["label"], "checkpoint");
    assert!(label["targetId"].is_string(), "{label}");
}

/// A 200×20 PNG (3 rows at 60 cells).
const WIDE_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAMgAAAAUCAIAAABHxuWdAAAAQUlEQVR42u3SQQ0AAAjEsJOERKQhDRHwbFIFy1I98C4SYCyMhbHAWBgLY4GxMBbGAmNhLIwFxsJYGAuMhbEwFtwth9B3S3220EMAAAAASUVORK5CYII=";

/// Everything the pane's program writes from now on, raw, into `path`.
fn record_output(tmux: &Tmux, path: &Path) {
    let cmd = format!("cat >> {}", shell_quote(path));
    assert!(
        tmux.cmd(&["pipe-pane", "-o", "-t", "filo", &cmd])
            .status
            .success()
    );
}

/// Launch with `env`, record the output, send a prompt whose tool call reads the PNG, and return
/// the pane and what filo wrote.
async fn read_image_with(home: &Home, env: &str, args: &str, tag: &str) -> (Tmux, String) {
    let tmux = launch_env(home, env, args);
    let out = home.path().join(format!("pane-{tag}.out"));
    tmux.wait_for("enter to send").await;
    record_output(&tmux, &out);
    tokio::time::sleep(Duration::from_millis(200)).await;
    submit(&tmux, "show me the picture");
    tmux.wait_for(&format!("Seen {tag}.")).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let written = String::from_utf8_lossy(&std::fs::read(&out).unwrap_or_default()).into_owned();
    (tmux, written)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn images_inline_with_kitty_and_iterm2_and_a_placeholder_elsewhere() {
    tmux_or_return!("images_inline_with_kitty_and_iterm2_and_a_placeholder_elsewhere");
    use base64::Engine;
    let png = base64::engine::general_purpose::STANDARD
        .decode(WIDE_PNG)
        .unwrap();
    let mut turns = Vec::new();
    for tag in ["kitty", "iterm", "plain", "off"] {
        turns.push(Turn::tool_call(
            &format!("call_{tag}"),
            "read",
            json!({"path": "pic.png"}),
        ));
        turns.push(Turn::text(format!("Seen {tag}.")));
    }
    let mock = MockProvider::start(turns).await;
    let home = Home::new(&mock);
    std::fs::write(home.project().join("pic.png"), &png).unwrap();

    // kitty (KITTY_WINDOW_ID): the graphics protocol at 60 cells (the default width), 3 rows.
    let (tmux, out) = read_image_with(&home, "KITTY_WINDOW_ID=1", "", "kitty").await;
    assert!(
        out.contains("\x1b_Ga=T,f=100,q=2,C=1,c=60,r=3;iVBORw0KGgo"),
        "no kitty image in the output:\n{out:?}"
    );
    let screen = tmux.capture();
    assert!(!screen.contains("[Image:"), "{screen}");
    quit(&tmux).await;
    drop(tmux);

    // iTerm2 (TERM_PROGRAM), with terminal.imageWidthCells.
    home.write_settings(&json!({"terminal": {"imageWidthCells": 40}}));
    let (tmux, out) = read_image_with(&home, "TERM_PROGRAM=iTerm.app", "", "iterm").await;
    assert!(
        out.contains("\x1b]1337;File=inline=1;width=40;height=2:iVBORw0KGgo"),
        "no iTerm2 image in the output:\n{out:?}"
    );
    quit(&tmux).await;
    drop(tmux);

    // A terminal without a protocol: pi's placeholder line, no image sequences.
    let (tmux, out) = read_image_with(&home, "", "", "plain").await;
    assert!(tmux.capture().contains("[Image: [image/png] 200x20]"));
    assert!(
        !out.contains("\x1b_G") && !out.contains("1337;File"),
        "{out:?}"
    );
    quit(&tmux).await;
    drop(tmux);

    // terminal.showImages off: the placeholder even in kitty.
    home.write_settings(&json!({"terminal": {"showImages": false}}));
    let (tmux, out) = read_image_with(&home, "KITTY_WINDOW_ID=1", "", "off").await;
    assert!(tmux.capture().contains("[Image: [image/png] 200x20]"));
    assert!(!out.contains("\x1b_Ga=T"), "{out:?}");
    quit(&tmux).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attached_image_is_shown_under_the_user_message() {
    tmux_or_return!("an_attached_image_is_shown_under_the_user_message");
    use base64::Engine;
    let png = base64::engine::general_purpose::STANDARD
        .decode(WIDE_PNG)
        .unwrap();
    let mock = MockProvider::start(vec![Turn::text("A blue strip.")]).await;
    let home = Home::new(&mock);
    std::fs::write(home.project().join("pic.png"), &png).unwrap();
    let tmux = launch_env(&home, "", "@pic.png 'what is this'");
    let screen = tmux.wait_for("A blue strip.").await;
    let user = screen.find("what is this").expect(&screen);
    let image = screen.find("[Image: [image/png] 200x20]").expect(&screen);
    assert!(user < image, "{screen}");
    quit(&tmux).await;
}
