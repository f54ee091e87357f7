use std::path::Path;

use filo_tools::FindTool;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::{failure, run, settings, text};

fn write(dir: &Path, rel: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, "x").unwrap();
}

#[tokio::test]
async fn hidden_files_are_included() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), ".secret/hidden.txt");
    write(dir.path(), "visible.txt");
    let tool = FindTool::with_settings(settings(dir.path()));
    let out = run(&tool, json!({"pattern": "**/*.txt"})).await.unwrap();
    assert_eq!(text(&out), ".secret/hidden.txt\nvisible.txt");
    assert_eq!(out.details, None);
}

#[tokio::test]
async fn gitignore_is_respected() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(".gitignore"), "ignored.txt\n").unwrap();
    write(dir.path(), "ignored.txt");
    write(dir.path(), "kept.txt");
    write(dir.path(), "sub/ignored.txt");
    let tool = FindTool::with_settings(settings(dir.path()));
    let out = run(&tool, json!({"pattern": "*.txt"})).await.unwrap();
    assert_eq!(text(&out), "kept.txt");
}

#[tokio::test]
async fn name_and_path_patterns_and_directories() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "src/lib.rs");
    write(dir.path(), "src/deep/mod.rs");
    write(dir.path(), "tests/lib.rs");
    let tool = FindTool::with_settings(settings(dir.path()));
    let out = run(&tool, json!({"pattern": "src/**/*.rs"})).await.unwrap();
    assert_eq!(text(&out), "src/deep/mod.rs\nsrc/lib.rs");
    let out = run(&tool, json!({"pattern": "lib.rs"})).await.unwrap();
    assert_eq!(text(&out), "src/lib.rs\ntests/lib.rs");
    let out = run(&tool, json!({"pattern": "deep"})).await.unwrap();
    assert_eq!(text(&out), "src/deep/");
    let out = run(&tool, json!({"pattern": "*.rs", "path": "src"}))
        .await
        .unwrap();
    assert_eq!(text(&out), "deep/mod.rs\nlib.rs");
}

#[tokio::test]
async fn limit_notice_and_no_results() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["a.md", "b.md", "c.md"] {
        write(dir.path(), name);
    }
    let tool = FindTool::with_settings(settings(dir.path()));
    let out = run(&tool, json!({"pattern": "*.md", "limit": 2}))
        .await
        .unwrap();
    assert_eq!(
        text(&out),
        "a.md\nb.md\n\n[2 results limit reached. Use limit=4 for more, or refine pattern]"
    );
    assert_eq!(out.details, Some(json!({"resultLimitReached": 2})));
    let out = run(&tool, json!({"pattern": "*.zip"})).await.unwrap();
    assert_eq!(text(&out), "No files found matching pattern");
    let message = failure(run(&tool, json!({"pattern": "*", "path": "missing"})).await);
    assert_eq!(
        message,
        format!("Path not found: {}", dir.path().join("missing").display())
    );
}
