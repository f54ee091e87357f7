//! Configuration files as a user meets them: `models.json` and `settings.json` problems are
//! named on stderr, valid parts keep working, and nothing the user wrote is lost.

use filo_testkit::{MockProvider, Reply, Turn};
use serde_json::json;

use super::common::Home;

/// models.json with the working `mock` provider plus one that lacks `apiKey`.
fn write_models_with_a_broken_provider(home: &Home, mock: &MockProvider) {
    let models = json!({"providers": {
        "mock": {
            "baseUrl": format!("{}/v1", mock.url()),
            "api": "openai-completions",
            "apiKey": "MOCK_API_KEY",
            "models": [{"id": "mock-model"}]
        },
        "nokey": {
            "baseUrl": "http://127.0.0.1:9/v1",
            "api": "openai-completions",
            "models": [{"id": "nokey-model"}]
        }
    }});
    std::fs::write(
        home.path().join(".filo/agent/models.json"),
        models.to_string(),
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_without_api_key_is_named_and_the_others_still_work() {
    let mock = MockProvider::start(vec![
        Turn::Reply(Reply::text("still here")),
        Turn::Reply(Reply::text("json too")),
    ])
    .await;
    let home = Home::new(&mock);
    write_models_with_a_broken_provider(&home, &mock);
    let file = home.path().join(".filo/agent/models.json");
    let expected = format!(
        "{}: Invalid models.json schema: Provider nokey: \"apiKey\" is required when defining custom models.",
        file.display()
    );

    let (code, out, err) = home
        .filo(&["--provider", "mock", "--model", "mock-model", "-p", "hi"])
        .await;
    assert_eq!(code, 0, "stderr: {err}");
    assert_eq!(out.trim(), "still here");
    assert!(err.contains(&expected), "stderr: {err}");

    let (code, out, err) = home.filo(&["--list-models", "mock"]).await;
    assert_eq!(code, 0, "stderr: {err}");
    assert!(out.contains("mock-model"), "stdout: {out}");
    assert!(err.contains(&expected), "stderr: {err}");

    let (code, _, err) = home
        .filo(&[
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "--mode",
            "json",
            "hi",
        ])
        .await;
    assert_eq!(code, 0, "stderr: {err}");
    assert!(err.contains(&expected), "json mode stderr: {err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_key_command_in_models_json_is_run_and_its_output_sent() {
    let mock = MockProvider::start(vec![Turn::Reply(Reply::text("ok"))]).await;
    let home = Home::new(&mock);
    let models = json!({"providers": {"mock": {
        "baseUrl": format!("{}/v1", mock.url()),
        "api": "openai-completions",
        "authHeader": true,
        "apiKey": "!printf 'sk-%s' from-command",
        "models": [{"id": "mock-model"}]
    }}});
    std::fs::write(
        home.path().join(".filo/agent/models.json"),
        models.to_string(),
    )
    .unwrap();
    let (code, out, err) = home
        .filo(&["--provider", "mock", "--model", "mock-model", "-p", "hi"])
        .await;
    assert_eq!(code, 0, "stderr: {err}");
    assert_eq!(out.trim(), "ok");
    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer sk-from-command")
    );
}

/// Run `filo --mode rpc` with `commands` on stdin (then EOF); its stdout and stderr.
async fn rpc_session(home: &Home, commands: &[serde_json::Value]) -> (String, String) {
    use std::process::Stdio;
    use tokio::io::AsyncWriteExt;
    let mut child = home.rpc_child(&[], Stdio::piped());
    let mut stdin = child.stdin.take().unwrap();
    for c in commands {
        stdin.write_all(format!("{c}\n").as_bytes()).await.unwrap();
    }
    drop(stdin);
    let out = tokio::time::timeout(std::time::Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("filo --mode rpc did not exit after EOF")
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_settings_write_that_fails_is_reported_and_the_file_left_alone() {
    let mock = MockProvider::start(vec![]).await;
    let home = Home::new(&mock);
    let path = home.path().join(".filo/agent/settings.json");
    std::fs::write(&path, "{\"theme\": \"light\",,}").unwrap();
    let (out, err) = rpc_session(
        &home,
        &[json!({"id": "1", "type": "set_auto_retry", "enabled": false})],
    )
    .await;
    assert!(
        err.contains(&format!("Warning: {}: invalid JSON: ", path.display())),
        "stderr: {err}"
    );
    let warning = out
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["type"] == "warning")
        .unwrap_or_else(|| panic!("no warning event in: {out}"));
    assert_eq!(
        warning["message"],
        format!(
            "Settings not saved: {}: not writing settings to a file that could not be read",
            path.display()
        )
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "{\"theme\": \"light\",,}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_changes_keep_unknown_and_project_keys_where_they_are() {
    let mock = MockProvider::start(vec![]).await;
    let home = Home::new(&mock);
    home.write_settings(&json!({"futureKey": {"x": [1, 2]}, "retry": {"maxRetries": 7}}));
    let project = home.project().join(".pi");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join("settings.json"),
        r#"{"retry":{"baseDelayMs":10}}"#,
    )
    .unwrap();
    let (out, err) = rpc_session(
        &home,
        &[json!({"id": "1", "type": "set_auto_retry", "enabled": false})],
    )
    .await;
    assert!(!out.contains("\"warning\""), "stdout: {out}\nstderr: {err}");
    let global: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(home.path().join(".filo/agent/settings.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        global,
        json!({"futureKey": {"x": [1, 2]}, "retry": {"maxRetries": 7, "enabled": false}})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_api_key_command_is_named_instead_of_a_bare_missing_key() {
    let mock = MockProvider::start(vec![]).await;
    let home = Home::new(&mock);
    let models = json!({"providers": {"mock": {
        "baseUrl": format!("{}/v1", mock.url()),
        "api": "openai-completions",
        "apiKey": "!exit 3",
        "models": [{"id": "mock-model"}]
    }}});
    std::fs::write(
        home.path().join(".filo/agent/models.json"),
        models.to_string(),
    )
    .unwrap();
    let (code, _, err) = home
        .filo(&["--provider", "mock", "--model", "mock-model", "-p", "hi"])
        .await;
    assert_ne!(code, 0);
    assert!(
        err.contains(
            "Warning: models.json provider \"mock\": apiKey: the key command failed (exit status: 3)"
        ),
        "stderr: {err}"
    );
    assert!(mock.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_json_with_comments_and_trailing_commas_loads_and_a_broken_one_names_line_and_column()
 {
    let mock = MockProvider::start(vec![Turn::Reply(Reply::text("commented"))]).await;
    let home = Home::new(&mock);
    let file = home.path().join(".filo/agent/models.json");
    // pi 0.73 (model-registry.js stripJsonComments): `//` comments and trailing commas go.
    let commented = format!(
        "{{\n  // my local mock\n  \"providers\": {{\n    \"mock\": {{\n      \"baseUrl\": \"{}/v1\", // url\n      \"api\": \"openai-completions\",\n      \"apiKey\": \"MOCK_API_KEY\",\n      \"models\": [{{\"id\": \"mock-model\",}},],\n    }},\n  }},\n}}\n",
        mock.url()
    );
    std::fs::write(&file, &commented).unwrap();
    let (code, out, err) = home
        .filo(&["--provider", "mock", "--model", "mock-model", "-p", "hi"])
        .await;
    assert_eq!(code, 0, "stderr: {err}");
    assert_eq!(out.trim(), "commented");
    assert!(!err.contains("models.json"), "stderr: {err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), commented);

    let broken = "{\n  // comment\n  \"providers\": {\n    \"x\": nope\n  }\n}\n";
    std::fs::write(&file, broken).unwrap();
    let (code, out, err) = home
        .filo_with_env(
            &["--list-models", "anthropic"],
            &[("ANTHROPIC_API_KEY", "sk-test")],
        )
        .await;
    assert_eq!(code, 0, "stderr: {err}");
    assert!(
        out.contains("claude"),
        "built-in catalog still listed: {out}"
    );
    let expected = format!(
        "{}: Failed to parse models.json: expected ident at line 4 column 11",
        file.display()
    );
    assert!(err.contains(&expected), "stderr: {err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), broken);
}
