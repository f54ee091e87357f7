//! `/tree`'s rows against pi 0.73.1's: the same session files open in filo in a tmux pane, and
//! the rows (gutters, connectors, fold markers, the current path's dots, the selection, the
//! count) must equal what pi drew, as `tree-screens.json` recorded it
//! (`scripts/record-pi/record.py tree_screen_case`, pi in a 98-column pane: the width inside
//! the box filo draws in its 100-column test pane), first as `/tree` opens and then after each key.

use std::path::Path;
use std::time::{Duration, Instant};

use filo_testkit::MockProvider;
use serde_json::Value;

use super::common::Home;
use super::tui::{Tmux, launch_with, shell_quote, tmux_or_skip};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/pi073");

/// The tree rows of a filo screen: inside the box, from the row after the blank line under
/// "Type to search:" through the `(i/n)` line, the box's sides and trailing blanks removed.
fn filo_rows(screen: &str) -> Vec<String> {
    let inner: Vec<String> = screen
        .lines()
        .map(|l| {
            let l = l.trim_end();
            let l = l.strip_prefix('│').unwrap_or(l);
            l.strip_suffix('│').unwrap_or(l).trim_end().to_string()
        })
        .collect();
    let Some(search) = inner.iter().position(|l| l.starts_with("Type to search:")) else {
        return Vec::new();
    };
    let start = search + 2;
    let Some(end) = (start..inner.len()).find(|&i| is_count(&inner[i])) else {
        return Vec::new();
    };
    inner[start..=end].to_vec()
}

/// pi's count line: `  (i/n)` and the status after it.
fn is_count(line: &str) -> bool {
    line.strip_prefix("  (").is_some_and(|rest| {
        rest.split_once(')')
            .and_then(|(count, _)| count.split_once('/'))
            .is_some_and(|(i, n)| i.parse::<u32>().is_ok() && n.parse::<u32>().is_ok())
    })
}

/// Wait until the pane's tree rows equal `want`; the last rows seen otherwise.
async fn rows_become(tmux: &Tmux, want: &[String]) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let rows = filo_rows(&tmux.capture());
        if rows == want || Instant::now() > deadline {
            return rows;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Open `name.session.jsonl` (its stored cwd set to the project) in filo, `/tree`, then each
/// recorded key: the rows must be pi's.
async fn same_rows_as_pi(name: &str) {
    let recorded: Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(FIXTURES).join("tree-screens.json")).unwrap(),
    )
    .unwrap();
    let shots = recorded[name].as_array().expect("the recorded screens");
    let mock = MockProvider::start(Vec::new()).await;
    let home = Home::new(&mock);
    let text =
        std::fs::read_to_string(Path::new(FIXTURES).join(format!("{name}.session.jsonl"))).unwrap();
    let (header, rest) = text.split_once('\n').unwrap();
    let mut header: Value = serde_json::from_str(header).unwrap();
    header["cwd"] = home.project().to_string_lossy().into_owned().into();
    let file = home.path().join(format!("{name}.jsonl"));
    std::fs::write(&file, format!("{header}\n{rest}")).unwrap();
    let tmux = launch_with(&home, &format!("--session {}", shell_quote(&file)));
    tmux.wait_for("mock/mock-model").await;
    tmux.keys(&["-l", "/tree"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("Session Tree").await;
    for (i, shot) in shots.iter().enumerate() {
        for key in shot["keys"].as_array().unwrap() {
            tmux.keys(&[key.as_str().unwrap()]);
        }
        let want: Vec<String> = shot["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap().to_string())
            .collect();
        let got = rows_become(&tmux, &want).await;
        assert_eq!(
            got,
            want,
            "{name}, screen {i} (after {}):\n{}",
            shot["keys"],
            tmux.capture()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tree_rows_equal_pis_on_nested_branches_with_folds() {
    if !tmux_or_skip("tree_rows_equal_pis_on_nested_branches_with_folds") {
        return;
    }
    same_rows_as_pi("tree").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tree_rows_equal_pis_on_a_session_pi_branched() {
    if !tmux_or_skip("tree_rows_equal_pis_on_a_session_pi_branched") {
        return;
    }
    same_rows_as_pi("branch").await;
}
