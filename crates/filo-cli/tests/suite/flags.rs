//! Flags with a fixed set of values are checked by clap: a typo is an error naming the choices,
//! never a silent fallback (to the TUI, to text mode or to the default thinking level).

use filo_testkit::{MockProvider, Reply, Turn};

use super::common::Home;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mistyped_mode_or_thinking_level_is_a_usage_error() {
    let mock = MockProvider::start(vec![Turn::Reply(Reply::text("should not be asked"))]).await;
    let home = Home::new(&mock);
    let model = ["--provider", "mock", "--model", "mock-model"];
    let cases: [(&[&str], &str); 2] = [
        (
            &["--mode", "jsno", "-p", "hi"],
            "invalid value 'jsno' for '--mode <MODE>'",
        ),
        (
            &["--thinking", "hgih", "-p", "hi"],
            "invalid value 'hgih' for '--thinking <LEVEL>'",
        ),
    ];
    for (args, message) in cases {
        let all: Vec<&str> = model.iter().chain(args.iter()).copied().collect();
        let (code, out, err) = home.filo(&all).await;
        assert_eq!(code, 2, "{args:?}: stdout {out} stderr {err}");
        assert!(err.contains(message), "{err}");
        assert!(err.contains("[possible values:"), "{err}");
        assert!(out.is_empty(), "{out}");
    }
    assert!(mock.requests().is_empty(), "no request was sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn valid_mode_and_thinking_values_still_run() {
    let mock = MockProvider::start(vec![Turn::Reply(Reply::text("fine"))]).await;
    let home = Home::new(&mock);
    let (code, out, err) = home
        .filo(&[
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "--mode",
            "text",
            "--thinking",
            "max",
            "-p",
            "hi",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "fine\n");
}

/// `@file` arguments are read only when they are regular files: a FIFO (which would block) or a
/// device (which never ends) is an error naming it, and nothing is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_at_file_that_is_a_fifo_or_device_is_refused() {
    let mock = MockProvider::start(vec![Turn::Reply(Reply::text("should not be asked"))]).await;
    let home = Home::new(&mock);
    let fifo = home.project().join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    for (arg, kind) in [
        ("@pipe", "a FIFO (named pipe)"),
        ("@/dev/zero", "a character device"),
    ] {
        let (code, out, err) = home
            .filo(&[
                "--provider",
                "mock",
                "--model",
                "mock-model",
                "-p",
                arg,
                "hi",
            ])
            .await;
        assert_eq!(code, 1, "{arg}: {out} {err}");
        assert!(
            err.contains(&format!("it is {kind}, not a regular file")),
            "{err}"
        );
    }
    assert!(mock.requests().is_empty());
}

/// The tool names a recorded Chat Completions body offered, `None` when it has no `tools` field.
fn offered_tools(body: &serde_json::Value) -> Option<Vec<String>> {
    body.get("tools").map(|tools| {
        tools
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_string())
            .collect()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_tools_sends_no_tools_field_and_tools_is_an_allowlist_over_memory_tools_too() {
    let mock = MockProvider::start(vec![
        Turn::Reply(Reply::text("default")),
        Turn::Reply(Reply::text("none")),
        Turn::Reply(Reply::text("some")),
    ])
    .await;
    let home = Home::new(&mock);
    let model = ["--provider", "mock", "--model", "mock-model"];
    let run = |extra: &'static [&'static str]| {
        let mut args: Vec<&str> = model.to_vec();
        args.extend_from_slice(extra);
        args.extend_from_slice(&["-p", "hi"]);
        args
    };
    let (code, _, err) = home.filo(&run(&[])).await;
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = home.filo(&run(&["--no-tools"])).await;
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = home.filo(&run(&["--tools", "read,recall,nosuch"])).await;
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("Unknown tool \"nosuch\" ignored"), "{err}");

    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    let default = offered_tools(&requests[0].body).unwrap();
    for name in [
        "read", "bash", "edit", "write", "life", "recall", "trace", "tobe",
    ] {
        assert!(default.iter().any(|n| n == name), "{name} in {default:?}");
    }
    // pi 0.73 (pi-ai openai-completions.js): no `tools` key at all when none are active.
    assert_eq!(
        offered_tools(&requests[1].body),
        None,
        "{}",
        requests[1].body
    );
    let prompt = requests[1].body["messages"][0]["content"].to_string();
    assert!(!prompt.contains("- recall:"), "{prompt}");
    assert_eq!(
        offered_tools(&requests[2].body).unwrap(),
        vec!["read".to_string(), "recall".to_string()]
    );
}
