//! Command-line flags of pi 0.73.1 against what the real pi did on the same input
//! (`tests/fixtures/pi073/flags.json`, recorded by `scripts/record-pi/record.py flags_case`):
//! `--list-models`, `--models` scoped cycling, and what `-t`, `-nt`, `-nbt`, `-nc` and a
//! repeated `--append-system-prompt` send to the model.

use filo_testkit::{MockProvider, Turn};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use super::common::Home;
use super::pi073::fixture;

/// The recording's second provider, `acme`, beside the `mock` one every Home has.
fn with_acme(home: &Home, mock: &MockProvider) {
    let path = home.path().join(".filo/agent/models.json");
    let mut models: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    models["providers"]["mock"]["models"]
        .as_array_mut()
        .unwrap()
        .push(json!({"id": "mock-thinker", "reasoning": true, "contextWindow": 100000, "maxTokens": 1000}));
    models["providers"]["acme"] = json!({
        "baseUrl": format!("{}/v1", mock.url()), "api": "openai-completions", "apiKey": "ACME_KEY",
        "models": [
            {"id": "acme-large", "contextWindow": 1048576, "maxTokens": 32768,
             "input": ["text", "image"], "reasoning": true},
            {"id": "acme-small-2", "contextWindow": 200000, "maxTokens": 8192},
            {"id": "Acme-Tiny", "contextWindow": 999, "maxTokens": 1250}
        ]
    });
    std::fs::write(&path, models.to_string()).unwrap();
}

#[tokio::test]
async fn list_models_prints_what_pi_073_prints() {
    let mock = MockProvider::start(vec![]).await;
    let home = Home::new(&mock);
    with_acme(&home, &mock);
    let pi = fixture("flags.json");
    for case in ["all", "search", "fuzzy", "none"] {
        let recorded = &pi[format!("list-models {case}")];
        let mut args = vec!["--list-models".to_owned()];
        args.extend(
            recorded["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap().to_owned()),
        );
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = home
            .command(&args)
            .env("ACME_KEY", "acme-secret")
            .output()
            .await
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{case}");
        // pi prints with console.log, which it sends to stderr when stdout is not a terminal;
        // filo prints on stdout. The text is the same.
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            recorded["stderr"].as_str().unwrap(),
            "--list-models {case}"
        );
    }
}

/// A catalog model whose wire API this build does not speak (pi's ChatGPT subscription,
/// `openai-codex-responses`) is listed like any other and, when used, fails with pi's text.
#[tokio::test]
async fn a_model_of_an_api_filo_lacks_is_listed_and_fails_clearly() {
    let mock = MockProvider::start(vec![]).await;
    let home = Home::new(&mock);
    let auth = home.path().join(".filo/agent/auth.json");
    std::fs::write(
        &auth,
        r#"{"openai-codex": {"type": "api_key", "key": "k"}}"#,
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&auth, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let (code, out, err) = home.filo(&["--list-models", "openai-codex"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.lines().any(|l| l
            .split_whitespace()
            .take(2)
            .eq(["openai-codex", "gpt-6.2-sol"])),
        "{out}"
    );
    let (code, out, err) = home
        .filo(&[
            "--provider",
            "openai-codex",
            "--model",
            "gpt-6.2-sol",
            "--no-session",
            "--no-dag",
            "-p",
            "hi",
        ])
        .await;
    assert_eq!(code, 1);
    assert_eq!(out, "");
    assert_eq!(
        err.trim_end(),
        "No API provider registered for api: openai-codex-responses"
    );
    assert!(mock.requests().is_empty());
}

#[tokio::test]
async fn models_scope_starts_on_its_first_model_and_cycles_as_pi_073() {
    let mock = MockProvider::start(vec![]).await;
    let home = Home::new(&mock);
    with_acme(&home, &mock);
    let mut child = home
        .command(&[
            "--mode",
            "rpc",
            "--no-session",
            "--no-dag",
            "--models",
            "mock-thinker:high,mock/mock-model",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(
            b"{\"id\":\"s\",\"type\":\"get_state\"}\n{\"id\":\"c1\",\"type\":\"cycle_model\"}\n{\"id\":\"c2\",\"type\":\"cycle_model\"}\n",
        )
        .await
        .unwrap();
    drop(stdin);
    let out = child.wait_with_output().await.unwrap();
    let seen: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "response")
        .map(|l| {
            let d = &l["data"];
            json!({"id": l["id"], "model": d["model"]["id"], "thinkingLevel": d["thinkingLevel"],
                   "isScoped": d["isScoped"]})
        })
        .collect();
    let mut pi = fixture("flags.json")["models scope"].clone();
    // One difference, on purpose: on a model that cannot think pi reports the level it keeps
    // as a preference ("high"), filo the level the model is actually asked for ("off").
    assert_eq!(pi[1]["model"], "mock-model");
    assert_eq!(pi[1]["thinkingLevel"], "high");
    pi[1]["thinkingLevel"] = json!("off");
    assert_eq!(
        Value::Array(seen),
        pi,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn tool_and_prompt_flags_send_what_pi_073_sends() {
    let pi = fixture("flags.json");
    let cases = [
        ("default", vec![]),
        ("-t", vec!["-t", "read,grep"]),
        ("-nt", vec!["-nt"]),
        ("-nbt", vec!["-nbt"]),
        ("-nc", vec!["-nc"]),
        (
            "append twice",
            vec![
                "--append-system-prompt",
                "First extra.",
                "--append-system-prompt",
                "Second extra.",
            ],
        ),
    ];
    for (name, flags) in cases {
        let mock = MockProvider::start(vec![Turn::text("ok")]).await;
        let home = Home::new(&mock);
        std::fs::write(
            home.project().join("AGENTS.md"),
            "Project rule: be brief.\n",
        )
        .unwrap();
        // pi has no memory: filo's memory tools are left out to compare the rest.
        let mut args = vec![
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "-p",
            "--no-session",
            "--no-dag",
        ];
        args.extend(&flags);
        args.push("hi");
        let (code, _, err) = home.filo(&args).await;
        let recorded = &pi[format!("request {name}")];
        assert_eq!(
            code,
            recorded["code"].as_i64().unwrap() as i32,
            "{name}: {err}"
        );
        let body = mock.last_request().unwrap().body;
        let tools: Vec<Value> = body["tools"]
            .as_array()
            .map(|t| t.iter().map(|t| t["function"]["name"].clone()).collect())
            .unwrap_or_default();
        assert_eq!(Value::Array(tools), recorded["tools"], "{name}");
        let system = body["messages"][0]["content"].as_str().unwrap_or_default();
        assert_eq!(
            json!(system.contains("Project rule: be brief.")),
            recorded["agentsMd"],
            "{name}"
        );
        let appended = system
            .find("First extra.")
            .map(|i| system[i..].chars().take(40).collect::<String>());
        assert_eq!(json!(appended), recorded["appended"], "{name}");
    }
}

#[tokio::test]
async fn nbt_keeps_the_memory_tools_and_nt_drops_them() {
    for (flag, want) in [
        ("-nbt", vec!["life", "recall", "trace", "tobe"]),
        ("-nt", vec![]),
    ] {
        let mock = MockProvider::start(vec![Turn::text("ok")]).await;
        let home = Home::new(&mock);
        let (code, _, err) = home
            .filo(&[
                "--provider",
                "mock",
                "--model",
                "mock-model",
                "-p",
                "--no-session",
                flag,
                "hi",
            ])
            .await;
        assert_eq!(code, 0, "{err}");
        let body = mock.last_request().unwrap().body;
        let mut tools: Vec<String> = body["tools"]
            .as_array()
            .map(|t| {
                t.iter()
                    .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                    .collect()
            })
            .unwrap_or_default();
        tools.sort();
        let mut want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
        want.sort();
        assert_eq!(tools, want, "{flag}");
    }
}

#[tokio::test]
async fn version_repeated_flags_and_fork() {
    let mock = MockProvider::start(vec![Turn::text("first"), Turn::text("forked")]).await;
    let home = Home::new(&mock);
    for flag in ["-v", "--version"] {
        let (code, out, _) = home.filo(&[flag]).await;
        assert_eq!(
            (code, out.as_str()),
            (0, concat!(env!("CARGO_PKG_VERSION"), "\n"))
        );
    }
    // A repeated flag: the last one wins (pi's parser), not an error.
    let (code, _, err) = home
        .filo(&[
            "--provider",
            "nope",
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "-p",
            "first",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let source = home.sessions().pop().unwrap();
    // --fork copies the session into a new one that names it as parent; the source is untouched.
    let before = std::fs::read(&source).unwrap();
    let (code, _, err) = home
        .filo(&[
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "--fork",
            source.to_str().unwrap(),
            "-p",
            "again",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read(&source).unwrap(), before);
    let forked: Vec<_> = home
        .sessions()
        .into_iter()
        .filter(|p| p != &source)
        .collect();
    assert_eq!(forked.len(), 1);
    let lines = super::common::jsonl(&forked[0]);
    assert_eq!(lines[0]["parentSession"], json!(source.to_str().unwrap()));
    let texts: Vec<&str> = lines
        .iter()
        .filter(|l| l["message"]["role"] == "user")
        .map(|l| l["message"]["content"][0]["text"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(texts, ["first", "again"]);
    // --fork with --no-session is refused, as pi refuses it.
    let (code, _, err) = home
        .filo(&[
            "--fork",
            source.to_str().unwrap(),
            "--no-session",
            "-p",
            "x",
        ])
        .await;
    assert_eq!(code, 1);
    assert!(
        err.contains("--fork cannot be combined with --no-session"),
        "{err}"
    );
}

/// `--session <id>` naming a session another project wrote asks, as pi does, whether to fork it
/// into this directory (in a terminal); without a terminal to ask on it says to use `--fork`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_of_another_project_is_offered_as_a_fork() {
    if !super::tui::tmux_or_skip("a_session_of_another_project_is_offered_as_a_fork") {
        return;
    }
    let mock = MockProvider::start(vec![Turn::text("from elsewhere")]).await;
    let home = Home::new(&mock);
    let other = home.path().join("other-project");
    std::fs::create_dir_all(&other).unwrap();
    let out = home
        .command(&[
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "-p",
            "written elsewhere",
        ])
        .current_dir(&other)
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let source = home.sessions().pop().unwrap();
    let id = super::common::jsonl(&source)[0]["id"].as_str().unwrap()[..8].to_owned();

    let (code, _, err) = home.filo(&["--session", &id, "-p", "hi"]).await;
    assert_eq!(code, 1);
    assert!(
        err.contains("Session found in different project: ")
            && err.contains("other-project")
            && err.contains("Use --fork"),
        "{err}"
    );

    let tmux = super::tui::launch_with(
        &home,
        &format!("--provider mock --model mock-model --session {id}"),
    );
    tmux.wait_for("Fork this session into current directory? [y/N]")
        .await;
    tmux.keys(&["y", "Enter"]);
    tmux.wait_for("from elsewhere").await;
    let forked: Vec<_> = home
        .sessions()
        .into_iter()
        .filter(|p| p != &source)
        .collect();
    assert_eq!(forked.len(), 1, "{forked:?}");
    let header = &super::common::jsonl(&forked[0])[0];
    assert_eq!(header["parentSession"], json!(source.to_str().unwrap()));
    assert_eq!(header["cwd"], json!(home.project().to_str().unwrap()));
}

/// `--verbose` shows the start-up banner even with `quietStartup`, and lists what was loaded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verbose_lists_what_was_loaded_even_with_quiet_startup() {
    if !super::tui::tmux_or_skip("verbose_lists_what_was_loaded_even_with_quiet_startup") {
        return;
    }
    let mock = MockProvider::start(vec![]).await;
    let home = Home::new(&mock);
    home.write_settings(&json!({"quietStartup": true}));
    std::fs::write(home.project().join("AGENTS.md"), "Be brief.\n").unwrap();
    let quiet = super::tui::launch_with(&home, "--provider mock --model mock-model --no-dag");
    let screen = quiet.wait_for("mock-model").await;
    assert!(!screen.contains("enter to send"), "{screen}");
    assert!(!screen.contains("Context files:"), "{screen}");
    drop(quiet);
    let verbose = super::tui::launch_with(
        &home,
        "--provider mock --model mock-model --no-dag --verbose --models mock-model:high",
    );
    let screen = verbose
        .wait_for("Scoped models: mock/mock-model:high")
        .await;
    assert!(screen.contains("enter to send"), "{screen}");
    assert!(
        screen.contains("Context files: ") && screen.contains("AGENTS.md"),
        "{screen}"
    );
}
