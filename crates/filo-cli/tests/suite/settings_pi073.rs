//! settings.json keys of pi 0.73 that shape a run, through print mode against the mock:
//! `shellCommandPrefix` and `shellPath` for the bash tool, `sessionDir` (after `--session-dir`
//! and `FILO_SESSION_DIR`, as pi orders them), `thinkingBudgets` in the request.

use std::path::{Path, PathBuf};

use filo_testkit::{MockProvider, Protocol, Turn};
use serde_json::{Value, json};

use super::common::Home;

const PRINT: [&str; 7] = [
    "--provider",
    "mock",
    "--model",
    "mock-model",
    "--no-dag",
    "-p",
    "run it",
];

/// The text of the tool results the model was sent (Chat Completions `tool` messages).
fn tool_results(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

async fn bash_once(home: &Home, mock: &MockProvider, command: &str) -> Vec<String> {
    mock.push(Turn::tool_call(
        "call_1",
        "bash",
        json!({"command": command}),
    ));
    mock.push(Turn::text("done"));
    let (code, out, err) = home.filo(&PRINT).await;
    assert_eq!((code, out.trim()), (0, "done"), "{err}");
    tool_results(&mock.last_request().unwrap().body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shell_command_prefix_runs_before_the_bash_tools_command() {
    let mock = MockProvider::start(vec![]).await;
    let home = Home::new(&mock);
    home.write_settings(&json!({"shellCommandPrefix": "export FOO=prefixed"}));
    let results = bash_once(&home, &mock, "echo FOO=$FOO").await;
    assert_eq!(results, vec!["FOO=prefixed\n".to_string()], "{results:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shell_path_runs_the_bash_tool() {
    let mock = MockProvider::start(vec![]).await;
    let home = Home::new(&mock);
    let log = home.path().join("shell.log");
    let wrapper = home.path().join("bin/logging-shell");
    std::fs::create_dir_all(wrapper.parent().unwrap()).unwrap();
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\necho \"args: $*\" >> '{}'\nexec /bin/sh \"$@\"\n",
            log.display()
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    home.write_settings(&json!({"shellPath": wrapper, "shellCommandPrefix": "X=1"}));
    let results = bash_once(&home, &mock, "echo via-wrapper $X").await;
    assert_eq!(results, vec!["via-wrapper 1\n".to_string()]);
    let logged = std::fs::read_to_string(&log).unwrap();
    assert_eq!(logged, "args: -c X=1\necho via-wrapper $X\n");
}

/// The session files under `dir` (any depth).
fn jsonl_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                out.push(p);
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_dir_comes_from_the_flag_then_the_environment_then_the_setting() {
    let mock = MockProvider::start(vec![]).await;
    let home = Home::new(&mock);
    home.write_settings(&json!({"sessionDir": "~/from-setting"}));
    let from_setting = home.path().join("from-setting");
    let from_env = home.path().join("from-env");
    let from_flag = home.path().join("from-flag");
    let print = [
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--no-dag",
        "-p",
        "hi",
    ];

    mock.push(Turn::text("one"));
    let (code, _, err) = home.filo(&print).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        jsonl_under(&from_setting).len(),
        1,
        "the setting, ~ expanded"
    );
    assert!(home.sessions().is_empty(), "nothing in the default place");

    mock.push(Turn::text("two"));
    let env = [("FILO_SESSION_DIR", "~/from-env")];
    let (code, _, err) = home.filo_with_env(&print, &env).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        jsonl_under(&from_env).len(),
        1,
        "the environment wins over the setting"
    );
    assert_eq!(jsonl_under(&from_setting).len(), 1);

    mock.push(Turn::text("three"));
    let flag = from_flag.to_str().unwrap();
    let mut with_flag = print.to_vec();
    with_flag.extend(["--session-dir", flag]);
    let (code, _, err) = home.filo_with_env(&with_flag, &env).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(jsonl_under(&from_flag).len(), 1, "the flag wins over both");
    assert_eq!(jsonl_under(&from_env).len(), 1);

    // `--continue` looks in the same place the setting names.
    mock.push(Turn::text("four"));
    let (code, _, err) = home
        .filo(&[
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "--no-dag",
            "-c",
            "-p",
            "more",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let files = jsonl_under(&from_setting);
    assert_eq!(files.len(), 1, "continued, not a new file");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(
        text.contains("\"one\"") && text.contains("\"four\""),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thinking_budgets_reach_a_budget_based_request() {
    let mock = MockProvider::start(vec![Turn::text("thought")]).await;
    let home = Home::new(&mock);
    let models = json!({"providers": {
        "anthropic": {"baseUrl": mock.base_url(Protocol::AnthropicMessages)},
    }});
    std::fs::write(
        home.path().join(".filo/agent/models.json"),
        models.to_string(),
    )
    .unwrap();
    home.write_settings(&json!({"thinkingBudgets": {"low": 1234}}));
    let args = [
        "--provider",
        "anthropic",
        "--model",
        "claude-sonnet-4-5",
        "--thinking",
        "low",
        "--no-dag",
        "-p",
        "hi",
    ];
    let (code, out, err) = home
        .filo_with_env(&args, &[("ANTHROPIC_API_KEY", "sk-ant-test")])
        .await;
    assert_eq!((code, out.trim()), (0, "thought"), "{err}");
    let body = mock.last_request().unwrap().body;
    assert_eq!(body["thinking"]["type"], "enabled", "{body}");
    assert_eq!(body["thinking"]["budget_tokens"], 1234);
}
