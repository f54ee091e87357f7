use std::path::Path;

use filo_tools::GrepTool;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::{failure, run, settings, text};

fn write(dir: &Path, rel: &str, content: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

#[tokio::test]
async fn single_file_match_uses_the_basename() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "example.txt",
        "first line\nmatch line\nlast line",
    );
    let tool = GrepTool::with_settings(settings(dir.path()));
    let out = run(
        &tool,
        json!({"pattern": "match", "path": dir.path().join("example.txt")}),
    )
    .await
    .unwrap();
    assert_eq!(text(&out), "example.txt:2: match line");
    assert_eq!(out.details, None);
}

#[tokio::test]
async fn limit_and_context() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "context.txt",
        "before\nmatch one\nafter\nmiddle\nmatch two\nafter two",
    );
    let tool = GrepTool::with_settings(settings(dir.path()));
    let out = run(
        &tool,
        json!({"pattern": "match", "path": "context.txt", "limit": 1, "context": 1}),
    )
    .await
    .unwrap();
    assert_eq!(
        text(&out),
        "context.txt-1- before\ncontext.txt:2: match one\ncontext.txt-3- after\n\n[1 matches limit reached. Use limit=2 for more, or refine pattern]"
    );
    assert_eq!(out.details, Some(json!({"matchLimitReached": 1})));
}

#[tokio::test]
async fn directory_search_is_relative_sorted_and_respects_gitignore() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), ".gitignore", "ignored/\n*.log\n");
    write(dir.path(), "src/b.rs", "fn needle() {}\n");
    write(dir.path(), "src/a.rs", "// needle here\nnothing\n");
    write(dir.path(), ".hidden/h.txt", "needle hidden\n");
    write(dir.path(), "ignored/x.txt", "needle ignored\n");
    write(dir.path(), "debug.log", "needle log\n");
    write(dir.path(), ".git/config", "needle in git\n");
    let tool = GrepTool::with_settings(settings(dir.path()));
    let out = run(&tool, json!({"pattern": "needle"})).await.unwrap();
    assert_eq!(
        text(&out),
        ".hidden/h.txt:1: needle hidden\nsrc/a.rs:1: // needle here\nsrc/b.rs:1: fn needle() {}"
    );
}

#[tokio::test]
async fn glob_case_and_literal_options() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.ts", "Value(1)\n");
    write(dir.path(), "b.js", "value(2)\n");
    let tool = GrepTool::with_settings(settings(dir.path()));
    let out = run(&tool, json!({"pattern": "value", "glob": "*.ts"}))
        .await
        .unwrap();
    assert_eq!(text(&out), "No matches found");
    let out = run(
        &tool,
        json!({"pattern": "value", "glob": "*.ts", "ignoreCase": true}),
    )
    .await
    .unwrap();
    assert_eq!(text(&out), "a.ts:1: Value(1)");
    let out = run(&tool, json!({"pattern": "value(2)", "literal": true}))
        .await
        .unwrap();
    assert_eq!(text(&out), "b.js:1: value(2)");
    let out = run(&tool, json!({"pattern": "value(2)"})).await.unwrap();
    assert_eq!(text(&out), "No matches found");
}

#[tokio::test]
async fn long_lines_are_cut_with_a_notice() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "long.txt",
        &format!("hit {}\n", "z".repeat(600)),
    );
    let tool = GrepTool::with_settings(settings(dir.path()));
    let out = run(&tool, json!({"pattern": "hit"})).await.unwrap();
    let expected_line = format!("long.txt:1: hit {}... [truncated]", "z".repeat(496));
    assert_eq!(
        text(&out),
        format!(
            "{expected_line}\n\n[Some lines truncated to 500 chars. Use read tool to see full lines]"
        )
    );
    assert_eq!(out.details, Some(json!({"linesTruncated": true})));
}

#[tokio::test]
async fn crlf_files_render_without_carriage_returns() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "w.txt", "one\r\ntwo hit\r\nthree\r\n");
    let tool = GrepTool::with_settings(settings(dir.path()));
    let out = run(&tool, json!({"pattern": "hit", "context": 1}))
        .await
        .unwrap();
    assert_eq!(text(&out), "w.txt-1- one\nw.txt:2: two hit\nw.txt-3- three");
    let out = run(&tool, json!({"pattern": "hit"})).await.unwrap();
    assert_eq!(text(&out), "w.txt:2: two hit");
    // A lone CR: the search counts one line, pi's renderer splits it in two and shows its
    // line 1 — kept as pi does it.
    write(dir.path(), "w.txt", "a\rb hit\nc\n");
    let out = run(&tool, json!({"pattern": "hit"})).await.unwrap();
    assert_eq!(text(&out), "w.txt:1: a");
}

#[tokio::test]
async fn bad_pattern_and_missing_path() {
    let dir = tempfile::tempdir().unwrap();
    let tool = GrepTool::with_settings(settings(dir.path()));
    let message = failure(run(&tool, json!({"pattern": "("})).await);
    assert!(message.starts_with("regex parse error:\n"), "{message}");
    assert!(!message[1..].contains("regex parse error"), "{message}");
    assert!(message.ends_with("error: unclosed group"), "{message}");
    let message = failure(run(&tool, json!({"pattern": "x", "path": "nope"})).await);
    assert_eq!(
        message,
        format!("Path not found: {}", dir.path().join("nope").display())
    );
}

#[tokio::test]
async fn many_files_keep_walk_order_across_batches() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..600 {
        write(dir.path(), &format!("d/f{i:04}.txt"), "needle\n");
    }
    let tool = GrepTool::with_settings(settings(dir.path()));
    let out = run(&tool, json!({"pattern": "needle", "limit": 300}))
        .await
        .unwrap();
    let t = text(&out);
    let lines: Vec<&str> = t.lines().take(300).collect();
    let expected: Vec<String> = (0..300)
        .map(|i| format!("d/f{i:04}.txt:1: needle"))
        .collect();
    assert_eq!(lines, expected);
    assert!(t.ends_with("[300 matches limit reached. Use limit=600 for more, or refine pattern]"));
}
