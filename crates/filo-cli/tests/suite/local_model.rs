//! Opt-in (`FILO_E2E_LOCAL=1`): a real prompt through a real local model served by
//! `scripts/local-model.sh` (llama.cpp's server from PyPI with SmolLM2), no API key.

use std::path::PathBuf;
use std::process::Command;

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn a_real_prompt_through_the_local_model() {
    if std::env::var("FILO_E2E_LOCAL").ok().as_deref() != Some("1") {
        println!("skipped: set FILO_E2E_LOCAL=1 to run against scripts/local-model.sh");
        return;
    }
    let script = repo_root().join("scripts/local-model.sh");
    let already_running = std::net::TcpStream::connect("127.0.0.1:8080").is_ok();
    let started = Command::new("bash")
        .arg(&script)
        .arg("start")
        .status()
        .unwrap();
    assert!(started.success(), "scripts/local-model.sh start failed");
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_filo"))
        .args([
            "--provider",
            "llamacpp",
            "--no-session",
            "-p",
            "Say hello in five words.",
        ])
        .env("HOME", home.path())
        .output()
        .unwrap();
    if !already_running {
        let _ = Command::new("bash").arg(&script).arg("stop").status();
    }
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!text.trim().is_empty(), "the model answered nothing");
}
