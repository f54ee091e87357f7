use filo_tools::LsTool;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::{failure, run, settings, text};

#[tokio::test]
async fn lists_dotfiles_and_marks_directories() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(".hidden-file"), "").unwrap();
    std::fs::create_dir(dir.path().join(".hidden-dir")).unwrap();
    std::fs::write(dir.path().join("Visible.txt"), "").unwrap();
    std::fs::create_dir(dir.path().join("dir")).unwrap();
    std::fs::write(dir.path().join("apple.txt"), "").unwrap();
    let tool = LsTool::with_settings(settings(dir.path()));
    let out = run(&tool, json!({})).await.unwrap();
    assert_eq!(
        text(&out),
        ".hidden-dir/\n.hidden-file\napple.txt\ndir/\nVisible.txt"
    );
    assert_eq!(out.details, None);
}

#[tokio::test]
async fn limit_empty_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["a", "b", "c"] {
        std::fs::write(dir.path().join(name), "").unwrap();
    }
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    let tool = LsTool::with_settings(settings(dir.path()));
    let out = run(&tool, json!({"limit": 2})).await.unwrap();
    assert_eq!(
        text(&out),
        "a\nb\n\n[2 entries limit reached. Use limit=4 for more]"
    );
    assert_eq!(out.details, Some(json!({"entryLimitReached": 2})));
    assert_eq!(
        text(&run(&tool, json!({"path": "empty"})).await.unwrap()),
        "(empty directory)"
    );
    let missing = dir.path().join("missing");
    assert_eq!(
        failure(run(&tool, json!({"path": "missing"})).await),
        format!("Path not found: {}", missing.display())
    );
    let file = dir.path().join("a");
    assert_eq!(
        failure(run(&tool, json!({"path": "a"})).await),
        format!("Not a directory: {}", file.display())
    );
}
