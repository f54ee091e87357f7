//! The exported HTML viewer in a real browser: `filo --export` on a crafted session (two branches,
//! a compaction, a branch summary, an image, thinking, tool calls, markdown with code, a label and
//! a hostile string everywhere text goes), opened in headless Chromium. Checks that the page
//! renders, that `#select=<id>` switches to another branch, that the console stays silent (a probe
//! page first proves the console is captured), that the hostile string stays text, and writes
//! screenshots into the test's output directory. Skipped when Chromium is missing, except in CI
//! (`CI` set to anything but `false`/`0`/empty), where that fails the test.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use filo_testkit::MockProvider;
use serde_json::{Value, json};

use super::common::Home;

const HOSTILE: &str = "</script><img src=x onerror=alert(1)>";
const HOSTILE_ESCAPED: &str = "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;";
/// A 48×32 PNG of four coloured blocks.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAADAAAAAgCAIAAADbtmxLAAAARklEQVR42u3OMRUAEBQAQHHMZiHMQsgkiSRmswhK/Ge69y7ApdNqiDp7iCQkJCQkJCQk9DlUxg5xVw4hJCQkJCQkJPQ59AA0Bvd5m3ziIwAAAABJRU5ErkJggg==";

fn chromium_binary() -> Option<&'static str> {
    ["chromium", "chromium-browser"].into_iter().find(|b| {
        std::process::Command::new(b)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// Chromium's binary, or `None` to skip outside CI. In CI a missing Chromium is a failure.
fn chromium_or_skip(test: &str) -> Option<&'static str> {
    let found = chromium_binary();
    if found.is_none() {
        let ci = std::env::var("CI").ok();
        let may_skip = matches!(
            ci.as_deref().map(str::trim),
            None | Some("" | "false" | "0")
        );
        assert!(
            may_skip,
            "{test} needs chromium, which is not installed (CI={ci:?}); .ci/run installs it"
        );
    }
    found
}

/// What one headless Chromium run printed.
struct Run {
    stdout: String,
    stderr: String,
}

impl Run {
    /// The console messages and script errors Chromium logged.
    fn console(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|l| {
                l.contains("CONSOLE")
                    || l.contains("Uncaught")
                    || l.contains("Content Security Policy")
                    || l.contains("Refused to")
            })
            .collect()
    }
}

/// Headless Chromium on `url` with `extra` flags (e.g. `--dump-dom`), a fresh profile, no
/// network services, console messages on stderr.
async fn chromium(bin: &str, url: &str, extra: &[&str]) -> Run {
    let profile = tempfile::tempdir().unwrap();
    let mut cmd = tokio::process::Command::new(bin);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--enable-logging=stderr",
        "--v=0",
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()))
    .args(extra)
    .arg(url)
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .kill_on_drop(true);
    let child = cmd.spawn().unwrap();
    let out = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .expect("chromium did not finish in 120 s")
        .unwrap();
    let run = Run {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(out.status.success(), "chromium failed:\n{}", run.stderr);
    run
}

fn file_url(path: &Path, fragment: &str) -> String {
    format!("file://{}{fragment}", path.display())
}

fn entry(id: &str, parent: Option<&str>, second: u32, kind: Value) -> Value {
    let mut e = json!({
        "id": id,
        "parentId": parent,
        "timestamp": format!("2025-11-01T10:00:{second:02}.000Z"),
    });
    let (obj, extra) = (
        e.as_object_mut().unwrap(),
        kind.as_object().unwrap().clone(),
    );
    for (k, v) in extra {
        obj.insert(k, v);
    }
    e
}

fn user(text: &str) -> Value {
    json!({"type": "message", "message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}})
}

fn assistant(content: Value) -> Value {
    json!({"type": "message", "message": {
        "role": "assistant", "content": content, "api": "openai-completions", "provider": "mock",
        "model": "mock-model", "stopReason": "stop", "timestamp": 2,
        "usage": {"input": 1200, "output": 340, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1540,
                  "cost": {"input": 0.001, "output": 0.002, "cacheRead": 0, "cacheWrite": 0, "total": 0.003}}
    }})
}

fn tool_result(call: &str, name: &str, text: &str, details: Value) -> Value {
    json!({"type": "message", "message": {
        "role": "toolResult", "toolCallId": call, "toolName": name,
        "content": [{"type": "text", "text": text}], "details": details, "isError": false, "timestamp": 3
    }})
}

/// A session with two branches below a shared start. The file ends on the right branch.
fn session_lines() -> Vec<Value> {
    let code = "## Plan\n\n1. read `main.rs`\n2. **check** the parser\n\n```rust\nfn main() {\n    println!(\"</script>\");\n}\n```\n\n| step | done |\n|---|:-:|\n| read | yes |";
    vec![
        json!({"type": "session", "version": 3, "id": "export-test", "timestamp": "2025-11-01T10:00:00.000Z", "cwd": "/work/project"}),
        entry(
            "a0000001",
            None,
            1,
            json!({"type": "model_change", "provider": "mock", "modelId": "mock-model"}),
        ),
        entry(
            "a0000002",
            Some("a0000001"),
            2,
            json!({"type": "message", "message": {"role": "user", "content": [
            {"type": "text", "text": format!("Explain the parser. Hostile: {HOSTILE}")},
            {"type": "image", "data": PNG, "mimeType": "image/png"}
        ], "timestamp": 1}}),
        ),
        entry(
            "a0000003",
            Some("a0000002"),
            3,
            assistant(json!([
                {"type": "thinking", "thinking": "The user wants **the parser**; THINKING-MARK"},
                {"type": "text", "text": code},
                {"type": "toolCall", "id": "call_1", "name": "bash", "arguments": {"command": format!("ls src # {HOSTILE}")}}
            ])),
        ),
        entry(
            "a0000004",
            Some("a0000003"),
            4,
            tool_result(
                "call_1",
                "bash",
                "main.rs\nlib.rs\nTOOL-OUTPUT-MARK",
                json!(null),
            ),
        ),
        entry(
            "a0000005",
            Some("a0000004"),
            5,
            assistant(json!([{"type": "text", "text": "Two files: `main.rs` and `lib.rs`."}])),
        ),
        // Left branch: a question, a compaction, and its end.
        entry(
            "a0000006",
            Some("a0000005"),
            6,
            user("LEFT-QUESTION: go left"),
        ),
        entry(
            "a0000007",
            Some("a0000006"),
            7,
            assistant(json!([{"type": "text", "text": "LEFT-ANSWER"}])),
        ),
        entry(
            "a0000008",
            Some("a0000007"),
            8,
            json!({"type": "compaction", "summary": "## Goal\nCOMPACTION-MARK: the left work so far", "firstKeptEntryId": "a0000006", "tokensBefore": 12345}),
        ),
        entry(
            "a0000009",
            Some("a0000008"),
            9,
            user("after the compaction"),
        ),
        entry(
            "a000000a",
            Some("a0000009"),
            10,
            assistant(json!([{"type": "text", "text": "LEFT-FINAL answer"}])),
        ),
        // Right branch: summarises the left one, then edits a file.
        entry(
            "a000000b",
            Some("a0000005"),
            11,
            json!({"type": "branch_summary", "fromId": "a000000a", "summary": "BRANCH-SUMMARY-MARK: the left branch was abandoned"}),
        ),
        entry(
            "a000000c",
            Some("a000000b"),
            12,
            user("RIGHT-QUESTION: edit the file"),
        ),
        entry(
            "a000000d",
            Some("a000000c"),
            13,
            assistant(json!([
                {"type": "toolCall", "id": "call_2", "name": "edit", "arguments": {"path": "src/main.rs", "edits": [{"oldText": "old line", "newText": "new line"}]}}
            ])),
        ),
        entry(
            "a000000e",
            Some("a000000d"),
            14,
            tool_result(
                "call_2",
                "edit",
                "Edited src/main.rs",
                json!({"diff": "-1 old line\n+1 new line", "firstChangedLine": 1}),
            ),
        ),
        entry(
            "a000000f",
            Some("a000000e"),
            15,
            assistant(json!([{"type": "text", "text": format!("RIGHT-FINAL {HOSTILE}")}])),
        ),
        entry(
            "a0000010",
            Some("a000000f"),
            16,
            json!({"type": "label", "targetId": "a000000c", "label": format!("edit {HOSTILE}")}),
        ),
        entry(
            "a0000011",
            Some("a0000010"),
            17,
            json!({"type": "session_info", "name": format!("Parser walk-through {HOSTILE}")}),
        ),
    ]
}

/// Whether the dumped DOM shows the section of `id` (present and not hidden).
fn shown(dom: &str, id: &str) -> bool {
    let tag = format!("data-id=\"{id}\"");
    dom.split("<section ")
        .skip(1)
        .find(|s| s.split('>').next().is_some_and(|open| open.contains(&tag)))
        .is_some_and(|s| !s.split('>').next().unwrap_or("").contains("hidden"))
}

fn output_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("export-html");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn assert_no_hostile_markup(dom: &str) {
    assert!(
        !dom.contains("<img src=\"x\""),
        "the hostile string became an element"
    );
    assert!(
        !dom.contains("onerror=\"alert"),
        "the hostile string became an attribute"
    );
    assert!(
        dom.contains(HOSTILE_ESCAPED),
        "the hostile text is not shown as text"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exported_viewer_renders_navigates_and_stays_inert_in_chromium() {
    let Some(bin) =
        chromium_or_skip("exported_viewer_renders_navigates_and_stays_inert_in_chromium")
    else {
        eprintln!(
            "SKIPPED exported_viewer_renders_navigates_and_stays_inert_in_chromium: chromium is not installed"
        );
        return;
    };
    // The console check below is only worth something if Chromium's console reaches us.
    let probe_dir = tempfile::tempdir().unwrap();
    let probe = probe_dir.path().join("probe.html");
    std::fs::write(
        &probe,
        "<!DOCTYPE html><title>p</title><script>console.error('FILO-PROBE-42')</script>",
    )
    .unwrap();
    let run = chromium(bin, &file_url(&probe, ""), &["--dump-dom"]).await;
    assert!(
        run.console().iter().any(|l| l.contains("FILO-PROBE-42")),
        "chromium's console is not captured:\n{}",
        run.stderr
    );

    let mock = MockProvider::start(vec![]).await;
    let home = Home::new(&mock);
    let text: String = session_lines().iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(home.project().join("s.jsonl"), &text).unwrap();
    let (code, out, err) = home.filo(&["--export", "s.jsonl", "out/viewer.html"]).await;
    assert_eq!(code, 0, "{err}");
    let page = home.project().join("out/viewer.html");
    assert_eq!(out.trim(), format!("Exported to: {}", page.display()));
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(
        html.matches("<script").count(),
        1,
        "one script, the viewer's"
    );
    assert_eq!(html.matches("</script>").count(), 1);
    assert!(!html.contains("src=\"http"), "nothing is fetched");

    // As opened: the file's last branch (the right one), rendered.
    let run = chromium(bin, &file_url(&page, ""), &["--dump-dom"]).await;
    assert_eq!(run.console(), Vec::<&str>::new(), "{}", run.stderr);
    let dom = &run.stdout;
    assert!(
        dom.contains("data-viewer=\"ready\""),
        "the viewer script did not finish:\n{dom}"
    );
    assert!(dom.contains("data-selected=\"a0000011\""), "{dom}");
    for id in [
        "a0000002", "a0000003", "a000000b", "a000000c", "a000000d", "a000000f",
    ] {
        assert!(shown(dom, id), "{id} should show on the right branch");
    }
    for id in ["a0000006", "a0000007", "a0000008", "a000000a"] {
        assert!(!shown(dom, id), "{id} belongs to the left branch");
    }
    assert!(dom.contains("<img class=\"image\" alt=\"image\" src=\"data:image/png;base64,"));
    assert!(dom.contains("<details class=\"thinking\"><summary>Thinking</summary>"));
    assert!(dom.contains("THINKING-MARK"));
    assert!(dom.contains("<code class=\"language-rust\">"));
    assert!(dom.contains("println!(\"&lt;/script&gt;\");"));
    assert!(dom.contains("<strong>check</strong>"));
    assert!(dom.contains("<th style=\"text-align:center\">done</th>"));
    assert!(dom.contains("<span class=\"tool-name\">bash</span>"));
    assert!(dom.contains("TOOL-OUTPUT-MARK"));
    assert!(
        dom.contains("<span class=\"del\">-1 old line</span>"),
        "the edit's diff"
    );
    assert!(dom.contains("BRANCH-SUMMARY-MARK"));
    assert!(
        dom.contains("<span class=\"label\">edit &lt;/script&gt;"),
        "the label"
    );
    assert!(dom.contains("<title>Parser walk-through &lt;/script&gt;"));
    assert_no_hostile_markup(dom);

    // Another branch's leaf by the link fragment: the left branch with its compaction.
    let left = file_url(&page, "#select=a000000a");
    let run = chromium(bin, &left, &["--dump-dom"]).await;
    assert_eq!(run.console(), Vec::<&str>::new(), "{}", run.stderr);
    let dom = &run.stdout;
    assert!(dom.contains("data-selected=\"a000000a\""), "{dom}");
    for id in [
        "a0000002", "a0000005", "a0000006", "a0000007", "a0000008", "a000000a",
    ] {
        assert!(shown(dom, id), "{id} should show on the left branch");
    }
    for id in ["a000000b", "a000000c", "a000000f"] {
        assert!(!shown(dom, id), "{id} belongs to the right branch");
    }
    assert!(dom.contains("COMPACTION-MARK"));
    assert!(dom.contains("12,345 tokens before"));
    assert_no_hostile_markup(dom);

    // Picking an entry in the middle shows the newest path through it, and marks the entry.
    let run = chromium(bin, &file_url(&page, "#select=a0000006"), &["--dump-dom"]).await;
    assert!(
        run.stdout.contains("data-leaf=\"a000000a\""),
        "{}",
        run.stdout
    );
    assert!(shown(&run.stdout, "a000000a"));

    // The page and screenshots of it (light and dark) go to the test's output directory.
    let dir = output_dir();
    std::fs::copy(&page, dir.join("viewer.html")).unwrap();
    println!("page: {}", dir.join("viewer.html").display());
    let shots = [
        ("viewer-right.png", file_url(&page, ""), false),
        ("viewer-left.png", left, false),
        (
            "viewer-left-dark.png",
            file_url(&page, "#select=a0000007"),
            true,
        ),
    ];
    for (name, url, dark) in shots {
        let shot = dir.join(name);
        let _ = std::fs::remove_file(&shot);
        let mut flags = vec![
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,900".to_string(),
        ];
        if dark {
            flags.push("--force-dark-mode".into());
            flags.push("--blink-settings=preferredColorScheme=0".into());
        }
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        let run = chromium(bin, &url, &flags).await;
        assert_eq!(run.console(), Vec::<&str>::new(), "{}", run.stderr);
        let png = std::fs::read(&shot).unwrap();
        assert!(png.starts_with(b"\x89PNG"), "{}", shot.display());
        println!("screenshot: {}", shot.display());
    }
}

/// `/export` in the terminal UI: HTML by default (named after the session file, with what the
/// live session adds: the system prompt and the tools), and a `.jsonl` path gets the current
/// branch as a session file whose entry lines are the session file's own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_export_writes_html_or_the_branch_as_jsonl() {
    use super::tui::{launch, tmux_or_skip};
    if !tmux_or_skip("slash_export_writes_html_or_the_branch_as_jsonl") {
        eprintln!("SKIPPED slash_export_writes_html_or_the_branch_as_jsonl: tmux is not installed");
        return;
    }
    let mock = MockProvider::start(vec![filo_testkit::Turn::text(
        "The answer is **forty-two**.",
    )])
    .await;
    let home = Home::new(&mock);
    let tmux = launch(&home);
    tmux.wait_for("enter to send").await;
    tmux.keys(&["-l", "what is <it>?"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("The answer is forty-two.").await;

    tmux.keys(&["-l", "/export"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("Session exported to:").await;
    let session = home.sessions().pop().expect("the session file");
    let stem = session.file_stem().unwrap().to_string_lossy().into_owned();
    let html_path = home.project().join(format!("filo-session-{stem}.html"));
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(html.contains("what is &lt;it&gt;?"), "{html}");
    assert!(html.contains("The answer is <strong>forty-two</strong>."));
    assert!(html.contains("<summary>System prompt</summary>"));
    assert!(
        html.contains("<li><code>read</code>"),
        "the tools are listed"
    );

    tmux.keys(&["-l", "/export out/branch.jsonl"]);
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("out/branch.jsonl").await;
    assert!(screen.contains("Session exported to:"), "{screen}");
    let copy = std::fs::read_to_string(home.project().join("out/branch.jsonl")).unwrap();
    let original = std::fs::read_to_string(&session).unwrap();
    let (head, entries) = copy.split_once('\n').unwrap();
    let head: Value = serde_json::from_str(head).unwrap();
    let original_head: Value = serde_json::from_str(original.lines().next().unwrap()).unwrap();
    assert_eq!(head["type"], "session");
    assert_eq!(head["version"], 3);
    assert_eq!(head["id"], original_head["id"]);
    assert_eq!(head["cwd"], original_head["cwd"]);
    let (_, original_entries) = original.split_once('\n').unwrap();
    assert_eq!(
        entries, original_entries,
        "entry lines are copied byte for byte"
    );
    assert!(entries.lines().count() >= 3, "{entries}");
}
