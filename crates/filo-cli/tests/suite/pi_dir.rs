//! The read-only fallback to pi's agent directory: configuration filo's own directory lacks is
//! read from pi's (`PI_CODING_AGENT_DIR`, else `~/.pi/agent`), said once on stderr, and nothing
//! is ever written there.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use filo_testkit::{MockProvider, Turn};
use serde_json::{Value, json};

use super::common::Home;
use super::rpc::Rpc;

/// Every file under `dir` with its bytes and modification time.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, SystemTime)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let meta = e.metadata().unwrap();
            if meta.is_dir() {
                stack.push(e.path());
            } else {
                let bytes = std::fs::read(e.path()).unwrap();
                out.insert(e.path(), (bytes, meta.modified().unwrap()));
            }
        }
    }
    out
}

/// Set a file's modification time well in the past, so a rewrite would show.
fn age(path: &Path) {
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000))
        .unwrap();
}

/// The notice lines of a run's stderr.
fn notices(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains("pi's agent directory"))
        .collect()
}

fn notice(items: &str, pi: &Path, home: &Home) -> String {
    format!(
        "Note: reading {items} from pi's agent directory {} (read-only; filo's own {} has none, and changes are saved there)",
        pi.display(),
        home.path().join(".filo/agent").display()
    )
}

const PRINT: [&str; 7] = [
    "--provider",
    "mock",
    "--model",
    "mock-model",
    "--no-dag",
    "-p",
    "hi",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_models_json_only_in_pis_directory_is_used_and_said_once() {
    let mock = MockProvider::start(vec![Turn::text("answer from the mock")]).await;
    let home = Home::new(&mock);
    let pi = home.path().join("elsewhere/pi-agent");
    std::fs::create_dir_all(&pi).unwrap();
    std::fs::rename(
        home.path().join(".filo/agent/models.json"),
        pi.join("models.json"),
    )
    .unwrap();
    age(&pi.join("models.json"));
    let before = snapshot(&pi);
    let pi_env = [("PI_CODING_AGENT_DIR", pi.to_str().unwrap())];

    let (code, out, err) = home.filo_with_env(&PRINT, &pi_env).await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(out.trim(), "answer from the mock");
    assert_eq!(notices(&err), [notice("models.json", &pi, &home)], "{err}");
    assert_eq!(mock.requests().len(), 1);
    // The session went to filo's own directory; pi's is exactly as it was.
    assert_eq!(home.sessions().len(), 1);
    assert_eq!(snapshot(&pi), before);

    let (code, out, err) = home
        .filo_with_env(&["--list-models", "mock"], &pi_env)
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.lines().any(|l| l.contains("mock-model")), "{out}");
    assert_eq!(notices(&err), [notice("models.json", &pi, &home)], "{err}");

    // Without the variable filo looks in ~/.pi/agent, which has nothing: no notice, no model.
    let (code, _, err) = home.filo(&PRINT).await;
    assert_ne!(code, 0);
    assert!(notices(&err).is_empty(), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_settings_change_lands_in_filos_directory_and_pis_file_is_untouched() {
    let mock = MockProvider::start(vec![]).await;
    let home = Home::new(&mock);
    let pi = home.path().join(".pi/agent");
    std::fs::create_dir_all(pi.join("prompts")).unwrap();
    let pi_settings = pi.join("settings.json");
    std::fs::write(
        &pi_settings,
        "{\n  \"steeringMode\": \"all\",\n  \"theme\": \"light\",\n  \"somePiOnlyKey\": {\"x\": 1}\n}\n",
    )
    .unwrap();
    std::fs::write(
        pi.join("prompts/pi-hello.md"),
        "---\ndescription: From pi\n---\nHello from pi\n",
    )
    .unwrap();
    age(&pi_settings);
    let before = snapshot(&pi);

    let mut rpc = Rpc::start(&home, &["--no-session", "--no-dag"]);
    let state = rpc.call("s0", json!({"type": "get_state"})).await;
    assert_eq!(state["steeringMode"], "all", "read from pi's settings.json");
    rpc.call(
        "m1",
        json!({"type": "set_steering_mode", "mode": "one-at-a-time"}),
    )
    .await;
    // pi's user prompt templates are offered, with pi's directory as their base.
    let commands = rpc.call("c1", json!({"type": "get_commands"})).await;
    let hello = commands["commands"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "pi-hello")
        .unwrap_or_else(|| panic!("{commands}"));
    assert_eq!(
        hello["sourceInfo"],
        json!({"path": pi.join("prompts/pi-hello.md").to_string_lossy(), "source": "auto",
               "scope": "user", "origin": "top-level", "baseDir": pi.to_string_lossy()})
    );
    assert_eq!(rpc.close().await, 0);

    // pi's directory: the same bytes, the same modification times, no new file.
    assert_eq!(snapshot(&pi), before);
    // filo's own file: pi's settings as they were, plus the change.
    let own = home.path().join(".filo/agent/settings.json");
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&own).unwrap()).unwrap();
    assert_eq!(
        written,
        json!({"steeringMode": "one-at-a-time", "theme": "light", "somePiOnlyKey": {"x": 1}})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_filos_own_files_present_pis_are_ignored() {
    let mock = MockProvider::start(vec![Turn::text("filo's provider answered")]).await;
    let home = Home::new(&mock);
    let pi = home.path().join(".pi/agent");
    std::fs::create_dir_all(&pi).unwrap();
    // pi's models.json sends `mock` to a port nobody listens on; its settings say otherwise too.
    let dead = json!({"providers": {"mock": {
        "baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "MOCK_API_KEY",
        "models": [{"id": "mock-model"}, {"id": "pi-only-model"}]
    }}});
    std::fs::write(pi.join("models.json"), dead.to_string()).unwrap();
    std::fs::write(pi.join("settings.json"), r#"{"steeringMode":"all"}"#).unwrap();
    home.write_settings(&json!({"steeringMode": "one-at-a-time"}));
    let before = snapshot(&pi);

    let (code, out, err) = home.filo(&PRINT).await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(out.trim(), "filo's provider answered");
    assert!(notices(&err).is_empty(), "{err}");
    let (_, listed, _) = home.filo(&["--list-models"]).await;
    assert!(!listed.contains("pi-only-model"), "{listed}");

    let mut rpc = Rpc::start(&home, &["--no-session", "--no-dag"]);
    let state = rpc.call("s0", json!({"type": "get_state"})).await;
    assert_eq!(state["steeringMode"], "one-at-a-time");
    assert_eq!(rpc.close().await, 0);
    assert_eq!(snapshot(&pi), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_stored_only_in_pis_auth_json_is_used() {
    let mock = MockProvider::start(vec![Turn::text("authorised")]).await;
    let home = Home::new(&mock);
    // filo's models.json has a literal key; pi's auth.json holds another, which wins (auth.json
    // comes before models.json, as in pi).
    let models = json!({"providers": {"mock": {
        "baseUrl": format!("{}/v1", mock.url()), "api": "openai-completions",
        "apiKey": "key-from-models-json",
        "models": [{"id": "mock-model", "contextWindow": 100000, "maxTokens": 1000}]
    }}});
    std::fs::write(
        home.path().join(".filo/agent/models.json"),
        models.to_string(),
    )
    .unwrap();
    let pi = home.path().join(".pi/agent");
    std::fs::create_dir_all(&pi).unwrap();
    std::fs::write(
        pi.join("auth.json"),
        r#"{"mock":{"type":"api_key","key":"key-from-pi"}}"#,
    )
    .unwrap();
    let before = snapshot(&pi);

    let (code, out, err) = home.filo(&PRINT).await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(notices(&err), [notice("auth.json", &pi, &home)], "{err}");
    let requests = mock.requests();
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer key-from-pi")
    );
    assert_eq!(snapshot(&pi), before);
    assert!(!home.path().join(".filo/agent/auth.json").exists());
}
