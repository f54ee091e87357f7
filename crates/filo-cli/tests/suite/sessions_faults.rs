//! Session files under faults, through the `filo` binary: a file that cannot grow (a file size
//! limit stands in for a full disk: it fails writes partway, for root too), a directory that
//! cannot be created, a torn last line repaired from the memory, an old file migrated, and the
//! permissions of what filo creates.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use filo_testkit::{MockProvider, Reply, Turn};

use super::common::{Home, jsonl};

const MODEL: [&str; 4] = ["--provider", "mock", "--model", "mock-model"];

fn args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    MODEL.iter().copied().chain(extra.iter().copied()).collect()
}

fn replies(texts: &[&str]) -> Vec<Turn> {
    texts.iter().map(|t| Turn::Reply(Reply::text(*t))).collect()
}

/// The unit of `ulimit -f` in this `sh` (512 in POSIX shells, 1024 in bash).
async fn ulimit_unit(dir: &Path) -> u64 {
    let probe = dir.join("ulimit-probe");
    let status = tokio::process::Command::new("sh")
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -f 1; head -c 4096 /dev/zero > \"$0\"")
        .arg(&probe)
        .status()
        .await
        .unwrap();
    let size = std::fs::metadata(&probe).unwrap().len();
    assert!(!status.success() && (size == 512 || size == 1024), "{size}");
    std::fs::remove_file(probe).unwrap();
    size
}

/// `filo` run with a file size limit of `limit` bytes (a multiple of the ulimit unit) and
/// SIGXFSZ ignored, so a write past the limit fails with EFBIG like a write to a full disk.
async fn filo_limited(home: &Home, limit: u64, unit: u64, args: &[&str]) -> (i32, String, String) {
    let script = format!(
        "trap '' XFSZ; ulimit -f {}; exec \"$0\" \"$@\"",
        limit / unit
    );
    let child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_filo"))
        .args(args)
        .current_dir(home.project())
        .env_clear()
        .env("HOME", home.path())
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("MOCK_API_KEY", "mock-secret")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("filo did not finish within 60 s")
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_the_full_disk_refuses_fails_print_and_json_mode_and_leaves_the_file_whole() {
    let mock = MockProvider::start(replies(&[
        "Answer one.",
        "Answer two.",
        "Answer two again.",
        "Answer three.",
    ]))
    .await;
    let home = Home::new(&mock);
    let (code, _, err) = home.filo(&args(&["--no-dag", "-p", "question one"])).await;
    assert_eq!(code, 0, "{err}");
    let file = home.sessions().pop().unwrap();
    let before = std::fs::read(&file).unwrap();
    let unit = ulimit_unit(home.path()).await;
    // Room for less than one more line: the append is cut partway by the limit.
    let limit = (before.len() as u64 / unit + 1) * unit;
    let long = format!("question two {}", "x".repeat(1500));

    let (code, out, err) =
        filo_limited(&home, limit, unit, &args(&["--no-dag", "-c", "-p", &long])).await;
    assert_ne!(code, 0, "an unsaved turn fails the run: {out}{err}");
    assert_eq!(out, "Answer two.\n", "the answer is still given");
    assert!(err.contains(&file.display().to_string()), "{err}");
    assert!(err.contains("File too large"), "the cause is named: {err}");
    assert_eq!(
        err.matches("File too large").count(),
        1,
        "cause once: {err}"
    );
    assert!(
        std::fs::read(&file).unwrap() == before,
        "no torn line: the file is as it was before the append"
    );

    let (code, out, err) = filo_limited(
        &home,
        limit,
        unit,
        &args(&["--no-dag", "--mode", "json", "-c", &long]),
    )
    .await;
    assert_ne!(code, 0, "{err}");
    assert!(err.contains(&file.display().to_string()), "{err}");
    let warning = out
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["type"] == "warning")
        .unwrap_or_else(|| panic!("a warning event: {out}"));
    assert!(
        warning["message"]
            .as_str()
            .is_some_and(|m| m.contains("File too large")),
        "{warning}"
    );
    assert!(std::fs::read(&file).unwrap() == before);

    // Without the limit the session goes on from what the file holds, every line whole.
    let (code, out, err) = home
        .filo(&args(&["--no-dag", "-c", "-p", "question three"]))
        .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "Answer three.\n");
    assert_eq!(
        jsonl(&file).len(),
        before.split(|b| *b == b'\n').count() + 1
    );
    let body = mock.requests().last().unwrap().body.to_string();
    assert!(body.contains("question one") && body.contains("Answer one."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_session_the_full_disk_cuts_short_leaves_no_file_behind() {
    let mock = MockProvider::start(replies(&["Answer."])).await;
    let home = Home::new(&mock);
    let unit = ulimit_unit(home.path()).await;
    let long = format!("question {}", "x".repeat(1500));
    let (code, out, err) = filo_limited(&home, unit, unit, &args(&["--no-dag", "-p", &long])).await;
    assert_ne!(code, 0, "{out}{err}");
    assert!(err.contains("File too large"), "{err}");
    assert_eq!(
        home.sessions(),
        Vec::<std::path::PathBuf>::new(),
        "the write that created the file was undone"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_directory_that_cannot_be_created_fails_print_mode() {
    let mock = MockProvider::start(replies(&["Answer."])).await;
    let home = Home::new(&mock);
    // A regular file where a directory should be: creating it fails, for root too.
    let blocker = home.project().join("blocker");
    std::fs::write(&blocker, "a file").unwrap();
    let dir = blocker.join("sessions");
    let dir_arg = dir.display().to_string();
    let (code, out, err) = home
        .filo(&args(&["--no-dag", "--session-dir", &dir_arg, "-p", "hi"]))
        .await;
    assert_ne!(code, 0, "{out}{err}");
    assert!(err.contains(&dir_arg), "the path is named: {err}");
    assert!(err.contains("Not a directory"), "the cause is named: {err}");
    assert_eq!(std::fs::read_to_string(&blocker).unwrap(), "a file");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_torn_last_line_restored_from_the_memory_stays_in_every_later_resume() {
    let mock = MockProvider::start(replies(&[
        "Answer one.",
        "Answer two.",
        "Answer three.",
        "Answer four.",
    ]))
    .await;
    let home = Home::new(&mock);
    let (code, _, err) = home.filo(&args(&["-p", "question one"])).await;
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = home.filo(&args(&["-c", "-p", "question two"])).await;
    assert_eq!(code, 0, "{err}");
    let file = home.sessions().pop().unwrap();
    // A crash mid-write: the last line (the second answer) is cut short.
    let text = std::fs::read_to_string(&file).unwrap();
    let last_start = text.trim_end().rfind('\n').unwrap() + 1;
    assert!(text[last_start..].contains("Answer two."));
    std::fs::write(&file, &text[..last_start + 40]).unwrap();

    let (code, _, err) = home.filo(&args(&["-c", "-p", "question three"])).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("torn last line") && err.contains(&file.display().to_string()),
        "the skipped line is reported: {err}"
    );
    let body = mock.requests().last().unwrap().body.to_string();
    assert!(
        body.contains("Answer two."),
        "restored from the memory: {body}"
    );

    let (code, _, err) = home.filo(&args(&["-c", "-p", "question four"])).await;
    assert_eq!(code, 0, "{err}");
    let body = mock.requests().last().unwrap().body.to_string();
    for part in [
        "question one",
        "Answer one.",
        "question two",
        "Answer two.",
        "question three",
        "Answer three.",
    ] {
        assert!(body.contains(part), "{part} is in the context: {body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_old_session_file_is_migrated_with_a_backup_and_without_losing_lines() {
    let mock = MockProvider::start(replies(&["Answer."])).await;
    let home = Home::new(&mock);
    let path = home.project().join("old.jsonl");
    let original = [
        r#"{"type":"session","id":"3f1c2b9e-0000-4000-8000-000000000003","timestamp":"2025-11-01T10:00:00.000Z","cwd":"/work/app"}"#,
        r#"{"type":"message","timestamp":"2025-11-01T10:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"the very first question"}],"timestamp":1761991201000}}"#,
        r#"{"type":"message","timestamp":"2025-11-01T10:00:02.000Z","message":{"role":"oracle","content":"from a newer version","timestamp":1761991202000}}"#,
        r#"{"type":"message","timestamp":"2025-11-01T10:00:03.000Z","message":{"role":"assistant","content":[{"type":"text","text":"the first answer"}],"api":"openai-completions","provider":"mock","model":"mock-model","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1761991203000}}"#,
        "",
    ]
    .join("\n");
    std::fs::write(&path, &original).unwrap();
    let (code, _, err) = home
        .filo(&args(&["--no-dag", "--session", "old.jsonl", "-p", "next"]))
        .await;
    assert_eq!(code, 0, "{err}");
    let backup = home.project().join("old.jsonl.v1.bak");
    assert_eq!(std::fs::read_to_string(&backup).unwrap(), original);
    assert!(err.contains("old.jsonl.v1.bak"), "the user is told: {err}");
    let migrated = std::fs::read_to_string(&path).unwrap();
    assert!(
        migrated.contains(original.lines().nth(2).unwrap()),
        "{migrated}"
    );
    let body = mock.requests().last().unwrap().body.to_string();
    assert!(
        body.contains("the very first question") && body.contains("the first answer"),
        "{body}"
    );
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_session_files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let mock = MockProvider::start(replies(&["Answer."])).await;
    let home = Home::new(&mock);
    let (code, _, err) = home.filo(&args(&["--no-dag", "-p", "hi"])).await;
    assert_eq!(code, 0, "{err}");
    let file = home.sessions().pop().unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(file.parent().unwrap()), 0o700);
    assert_eq!(mode(file.parent().unwrap().parent().unwrap()), 0o700);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpc_mode_reports_a_session_that_cannot_be_written_as_a_warning_event() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let mock = MockProvider::start(replies(&["Answer."])).await;
    let home = Home::new(&mock);
    let blocker = home.project().join("blocker");
    std::fs::write(&blocker, "a file").unwrap();
    let dir_arg = blocker.join("sessions").display().to_string();
    let mut child = home
        .command(&args(&[
            "--no-dag",
            "--session-dir",
            &dir_arg,
            "--mode",
            "rpc",
        ]))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"{\"type\":\"prompt\",\"message\":\"hi\"}\n")
        .await
        .unwrap();
    stdin.flush().await.unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    let warning = loop {
        let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("no warning event; seen {seen:#?}"))
            .unwrap()
            .unwrap_or_else(|| panic!("stdout closed; seen {seen:#?}"));
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        if v["type"] == "warning" {
            break v;
        }
        seen.push(v);
    };
    let message = warning["message"].as_str().unwrap();
    assert!(
        message.contains(&dir_arg) && message.contains("Not a directory"),
        "{message}"
    );
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.code().is_some());
}
