//! What the model can see through the bash tool: provider keys and filo's tokens are not in the
//! shell's environment unless `FILO_BASH_KEEP_ENV` says so; full-output files are gone when filo
//! exits.

use filo_testkit::{MockProvider, Reply, Turn};
use serde_json::json;

use super::common::Home;

const SECRETS: [(&str, &str); 3] = [
    ("OPENAI_API_KEY", "sk-openai-should-stay-private"),
    ("ANTHROPIC_API_KEY", "sk-ant-should-stay-private"),
    ("FILO_GATEWAY_TOKEN", "gateway-token-should-stay-private"),
];

/// `filo -p` whose model runs `env`; returns what the model got back as the tool result.
async fn env_seen_by_the_model(keep: Option<&str>) -> String {
    let mock = MockProvider::start(vec![
        Turn::Reply(Reply::tool_call(
            "call_1",
            "bash",
            json!({"command": "env"}),
        )),
        Turn::Reply(Reply::text("done")),
    ])
    .await;
    let home = Home::new(&mock);
    let mut cmd = home.command(&["--provider", "mock", "--model", "mock-model", "-p", "env"]);
    cmd.env("VISIBLE_SETTING", "plain-value");
    for (name, value) in SECRETS {
        cmd.env(name, value);
    }
    if let Some(keep) = keep {
        cmd.env("FILO_BASH_KEEP_ENV", keep);
    }
    let out = cmd.output().await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let messages = requests[1].body["messages"].as_array().unwrap().clone();
    let result = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("a tool result");
    result["content"].to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_keys_are_scrubbed_from_the_bash_tool_environment() {
    let seen = env_seen_by_the_model(None).await;
    assert!(seen.contains("VISIBLE_SETTING=plain-value"), "{seen}");
    for (name, value) in SECRETS {
        assert!(!seen.contains(value), "{name} reached the model: {seen}");
    }
    assert!(
        !seen.contains("mock-secret"),
        "the mock provider's own key (MOCK_API_KEY)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filo_bash_keep_env_opts_out_of_the_scrub() {
    let all = env_seen_by_the_model(Some("*")).await;
    for (_, value) in SECRETS {
        assert!(all.contains(value), "{all}");
    }
    let one = env_seen_by_the_model(Some("OPENAI_API_KEY")).await;
    assert!(
        one.contains("OPENAI_API_KEY=sk-openai-should-stay-private"),
        "{one}"
    );
    assert!(!one.contains("sk-ant-should-stay-private"), "{one}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_output_files_are_removed_when_filo_exits() {
    let mock = MockProvider::start(vec![
        Turn::Reply(Reply::tool_call(
            "call_1",
            "bash",
            json!({"command": "seq 1 30000"}),
        )),
        Turn::Reply(Reply::tool_call(
            "call_2",
            "bash",
            json!({"command": "ls \"$TMPDIR\""}),
        )),
        Turn::Reply(Reply::text("done")),
    ])
    .await;
    let home = Home::new(&mock);
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = home.command(&["--provider", "mock", "--model", "mock-model", "-p", "go"]);
    cmd.env("TMPDIR", tmp.path());
    let out = cmd.output().await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let third = mock.requests()[2].body.to_string();
    assert!(
        third.contains("Full output:"),
        "the first result was truncated"
    );
    let listing = third.split("pi-bash-").count() - 1;
    assert!(
        listing >= 2,
        "the file was there during the session: {third}"
    );
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}
