//! `filo -r` against `pi -r` (0.73.1) on the same sessions: the picker's screen at 80×24 and
//! 120×40, before and after typing a filter, must be pi's screen line for line
//! (`tests/fixtures/pi073/resume-picker.json`, recorded in tmux by `scripts/record-pi/record.py
//! resume_picker_case`). The sessions are described in the fixture with their ages, so both sides
//! show the same relative times.

use serde_json::{Value, json};

use super::common::Home;
use super::pi073::fixture;
use super::tui::{Tmux, launch_sized, tmux_or_skip};

/// The fixture's sessions as pi v3 files in `home`'s session dir for its project, their times
/// counted back from now as the recorder counted them.
fn write_sessions(home: &Home, sessions: &Value) {
    let cwd = home.project().to_string_lossy().into_owned();
    let dir = filo_session::paths::session_dir_for(&home.path().join(".filo/agent"), &cwd);
    std::fs::create_dir_all(&dir).unwrap();
    let now = filo_session::ids::now_ms();
    for s in sessions.as_array().unwrap() {
        let id = s["id"].as_str().unwrap();
        let ms = now - (s["ageHours"].as_f64().unwrap() * 3_600_000.0) as i64;
        let iso = filo_session::ids::iso_from_ms(ms);
        let mut lines =
            vec![json!({"type": "session", "version": 3, "id": id, "timestamp": iso, "cwd": cwd})];
        let mut parent = Value::Null;
        for i in 0..s["messages"].as_u64().unwrap() {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            let text = if i == 0 {
                s["topic"].as_str().unwrap().to_owned()
            } else {
                format!("{role} {i}")
            };
            let mut message =
                json!({"role": role, "content": [{"type": "text", "text": text}], "timestamp": ms});
            if role == "assistant" {
                message["api"] = json!("openai-completions");
                message["provider"] = json!("mock");
                message["model"] = json!("mock-model");
                message["stopReason"] = json!("stop");
                message["usage"] = json!({"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0,
                    "totalTokens": 2, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}});
            }
            let entry_id = format!("{}{i:04}", &id[id.len() - 4..]);
            lines.push(json!({"type": "message", "id": entry_id, "parentId": parent, "timestamp": iso, "message": message}));
            parent = json!(entry_id);
        }
        let name = format!("{}_{id}.jsonl", iso.replace([':', '.'], "-"));
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(dir.join(name), text).unwrap();
    }
}

/// The pane's text as the recorder keeps it: every line without its trailing blanks.
fn normalized(text: &str) -> String {
    text.trim_end_matches('\n')
        .lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The pane once `needle` shows and the screen is `expected`, or — after 10 s without it — the
/// last screen seen (the caller's comparison then fails and shows it). A frame can reach the
/// terminal in pieces, and under load the pieces can be far apart, so no single capture (nor two
/// that agree) proves the frame is complete; the recorded screen does.
async fn screen(tmux: &Tmux, needle: &str, expected: &str) -> String {
    let mut text = normalized(&tmux.wait_for(needle).await);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while text != expected && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        text = normalized(&tmux.capture());
    }
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_flag_shows_pi_073s_picker_screen() {
    if !tmux_or_skip("resume_flag_shows_pi_073s_picker_screen") {
        return;
    }
    let pi = fixture("resume-picker.json");
    let mock = filo_testkit::MockProvider::start(vec![]).await;
    for (size, key) in [((80, 24), "80x24"), ((120, 40), "120x40")] {
        let home = Home::new(&mock);
        write_sessions(&home, &pi["sessions"]);
        let tmux = launch_sized(&home, "", "--provider mock --model mock-model -r", size);
        let recorded = &pi[key];
        let expected = recorded["first"].as_str().unwrap().trim_end_matches('\n');
        let first = screen(&tmux, "gamma topic", expected).await;
        assert_eq!(first, expected, "{key}: the first screen");
        tmux.keys(&["-l", "alpha"]);
        let expected = recorded["filtered"]
            .as_str()
            .unwrap()
            .trim_end_matches('\n');
        let filtered = screen(&tmux, "> alpha", expected).await;
        assert_eq!(filtered, expected, "{key}: after typing a filter");
        // pi draws in the terminal's own screen and leaves the picker there; filo draws on the
        // alternate screen and restores the terminal. What both print after Escape is the same.
        tmux.keys(&["Escape"]);
        let after = normalized(&tmux.wait_for("FILO_EXIT=").await);
        assert!(
            recorded["after"]
                .as_str()
                .unwrap()
                .contains("No session selected\nPI_EXIT=0"),
            "{}",
            recorded["after"]
        );
        assert!(
            after.contains("No session selected\nFILO_EXIT=0"),
            "{key}: after Escape\n{after}"
        );
    }
}
