use pretty_assertions::assert_eq;
use serde_json::json;

use super::{run, settings, text};
use filo_tools::WriteTool;

#[tokio::test]
async fn writes_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let tool = WriteTool::with_settings(settings(dir.path()));
    let out = run(&tool, json!({"path": "out.txt", "content": "Test content"}))
        .await
        .unwrap();
    assert_eq!(text(&out), "Successfully wrote to out.txt");
    assert_eq!(out.details, None);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out.txt")).unwrap(),
        "Test content"
    );
}

#[tokio::test]
async fn creates_parent_directories_and_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    let tool = WriteTool::with_settings(settings(dir.path()));
    run(&tool, json!({"path": "a/b/c.txt", "content": "first"}))
        .await
        .unwrap();
    let out = run(&tool, json!({"path": "a/b/c.txt", "content": "second"}))
        .await
        .unwrap();
    assert_eq!(text(&out), "Successfully wrote to a/b/c.txt");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a/b/c.txt")).unwrap(),
        "second"
    );
}

#[tokio::test]
async fn reports_utf16_length_like_pi() {
    let dir = tempfile::tempdir().unwrap();
    let tool = WriteTool::with_settings(settings(dir.path()));
    // "é" is 2 UTF-8 bytes but 1 UTF-16 unit; "😀" is 4 bytes and 2 units.
    let out = run(&tool, json!({"path": "u.txt", "content": "é😀"}))
        .await
        .unwrap();
    assert_eq!(text(&out), "Successfully wrote to u.txt");
    assert_eq!(std::fs::read(dir.path().join("u.txt")).unwrap().len(), 6);
}
