//! MCP servers in an agent run, end to end: the `filo` binary, the mock model, and real servers
//! installed from npm (server-everything over stdio and streamable HTTP). Skipped when the
//! servers are not installed (see `.ci/run`), required under `CI`.

use std::path::{Path, PathBuf};

use filo_testkit::{MockProvider, Reply, Turn};
use serde_json::{Value, json};

use super::common::{Home, jsonl};

#[allow(clippy::print_stderr)]
fn modules() -> Option<PathBuf> {
    let dir = std::env::var_os("FILO_MCP_TEST_MODULES")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|h| PathBuf::from(h).join(".cache/filo-mcp-test/node_modules"))
        })?;
    if dir
        .join("@modelcontextprotocol/server-everything/dist/index.js")
        .exists()
    {
        Some(dir)
    } else if std::env::var_os("CI").is_some() {
        panic!(
            "the MCP test servers are not installed in {} (see .ci/run)",
            dir.display()
        );
    } else {
        eprintln!(
            "skipped: MCP test servers not installed in {}",
            dir.display()
        );
        None
    }
}

fn everything(modules: &Path) -> String {
    modules
        .join("@modelcontextprotocol/server-everything/dist/index.js")
        .display()
        .to_string()
}

fn write_mcp(home: &Home, config: &Value) {
    std::fs::write(home.path().join(".filo/agent/mcp.json"), config.to_string()).unwrap();
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect()
}

const RUN: [&str; 4] = ["--provider", "mock", "--model", "mock-model"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deferred_stdio_tool_is_found_by_tool_search_and_stays_declared_after_resume() {
    let Some(modules) = modules() else { return };
    let mock = MockProvider::start(vec![
        Turn::Reply(Reply::tool_call(
            "c1",
            "tool_search",
            json!({"query": "echo message back"}),
        )),
        Turn::Reply(Reply::tool_call(
            "c2",
            "mcp__everything__echo",
            json!({"message": "through mcp"}),
        )),
        Turn::Reply(Reply::text("It echoed.")),
        Turn::Reply(Reply::text("Still here.")),
    ])
    .await;
    let home = Home::new(&mock);
    write_mcp(
        &home,
        &json!({"mcpServers": {"everything": {
            "command": "node", "args": [everything(&modules), "stdio"], "exposure": "deferred",
            "description": "Exercises every MCP feature"
        }}}),
    );
    let mut args = RUN.to_vec();
    args.extend(["-p", "echo something"]);
    let (code, out, err) = home.filo(&args).await;
    assert_eq!(code, 0, "stderr: {err}");
    assert_eq!(out, "It echoed.\n");
    let reqs = mock.requests();
    let first = tool_names(&reqs[0].body);
    assert!(first.contains(&"tool_search".to_string()), "{first:?}");
    assert!(
        !first.iter().any(|t| t.starts_with("mcp__")),
        "deferred tools are not declared: {first:?}"
    );
    let system = reqs[0].body["messages"][0]["content"].to_string();
    assert!(
        system.contains("<mcp_servers>")
            && system.contains("- mcp__everything (tool_search): Exercises every MCP feature"),
        "{system}"
    );
    let second = tool_names(&reqs[1].body);
    assert!(
        second.contains(&"mcp__everything__echo".to_string()),
        "{second:?}"
    );
    assert!(
        reqs[1]
            .body
            .to_string()
            .contains("They are available from your next call")
    );
    assert!(
        reqs[2].body.to_string().contains("Echo: through mcp"),
        "{}",
        reqs[2].body
    );
    // The load is in the transcript: the resumed branch declares the tool again.
    let file = &home.sessions()[0];
    let search = jsonl(file)
        .into_iter()
        .find(|l| l["message"]["toolName"] == "tool_search")
        .unwrap();
    assert!(
        search["message"]["details"]["loaded"]
            .as_array()
            .unwrap()
            .contains(&json!("mcp__everything__echo"))
    );
    let mut args = RUN.to_vec();
    args.extend(["-c", "-p", "again"]);
    let (code, out, err) = home.filo(&args).await;
    assert_eq!(code, 0, "stderr: {err}");
    assert_eq!(out, "Still here.\n");
    let resumed = tool_names(&mock.requests()[3].body);
    assert!(
        resumed.contains(&"mcp__everything__echo".to_string()),
        "{resumed:?}"
    );
    // `--no-mcp`: no server, no MCP tool, no tool_search.
    let mock2 = MockProvider::start(vec![Turn::Reply(Reply::text("plain"))]).await;
    let home2 = Home::new(&mock2);
    write_mcp(
        &home2,
        &json!({"mcpServers": {"everything": {"command": "node", "args": [everything(&modules)], "exposure": "direct"}}}),
    );
    let mut args = RUN.to_vec();
    args.extend(["--no-mcp", "-p", "hi"]);
    let (code, _, err) = home2.filo(&args).await;
    assert_eq!(code, 0, "stderr: {err}");
    let names = tool_names(&mock2.requests()[0].body);
    assert!(
        !names
            .iter()
            .any(|t| t.starts_with("mcp__") || t == "tool_search"),
        "{names:?}"
    );
}

/// server-everything over streamable HTTP on 127.0.0.1 (tests/fixtures of filo-mcp).
struct HttpServer(std::process::Child, String);

impl HttpServer {
    fn start(modules: &Path) -> HttpServer {
        use std::io::BufRead;
        let script = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../filo-mcp/tests/fixtures/everything-http.mjs");
        let mut child = std::process::Command::new("node")
            .arg(script)
            .arg(modules)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().strip_prefix("PORT ").unwrap().to_string();
        HttpServer(child, format!("http://127.0.0.1:{port}/mcp"))
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn direct_http_tools_and_resources_in_a_turn_and_tools_patterns_choose_among_them() {
    let Some(modules) = modules() else { return };
    let server = HttpServer::start(&modules);
    let mock = MockProvider::start(vec![
        Turn::Reply(Reply::tool_call(
            "c1",
            "mcp__web__get_sum",
            json!({"a": 2, "b": 40}),
        )),
        Turn::Reply(Reply::tool_call(
            "c2",
            "list_mcp_resources",
            json!({"server": "web"}),
        )),
        Turn::Reply(Reply::text("Done.")),
    ])
    .await;
    let home = Home::new(&mock);
    write_mcp(
        &home,
        &json!({"mcpServers": {"web": {"url": server.1, "exposure": "direct"}}}),
    );
    let mut args = RUN.to_vec();
    args.extend([
        "--tools",
        "read,mcp__web__get_*,list_mcp_resources",
        "-p",
        "add",
    ]);
    let (code, out, err) = home.filo(&args).await;
    assert_eq!(code, 0, "stderr: {err}");
    assert_eq!(out, "Done.\n");
    let reqs = mock.requests();
    let mut names = tool_names(&reqs[0].body);
    names.sort();
    assert!(
        names.contains(&"read".to_string()) && names.contains(&"mcp__web__get_sum".to_string()),
        "{names:?}"
    );
    assert!(
        !names.contains(&"mcp__web__echo".to_string()) && !names.contains(&"bash".to_string()),
        "{names:?}"
    );
    assert!(
        reqs[1]
            .body
            .to_string()
            .contains("The sum of 2 and 40 is 42"),
        "{}",
        reqs[1].body
    );
    assert!(
        reqs[2]
            .body
            .to_string()
            .contains("\\\"server\\\":\\\"web\\\""),
        "{}",
        reqs[2].body
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_add_list_get_remove_and_a_malformed_file() {
    let Some(modules) = modules() else { return };
    let mock = MockProvider::start(vec![]).await;
    let home = Home::new(&mock);
    let script = everything(&modules);
    let (code, out, err) = home
        .filo(&[
            "mcp",
            "add",
            "every",
            "--env",
            "A=${HOME}",
            "--exposure",
            "direct",
            "--",
            "node",
            &script,
            "stdio",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let file = home.path().join(".filo/agent/mcp.json");
    assert_eq!(
        out,
        format!(
            "Added user MCP server \"every\" in {}.\nCheck it with: filo mcp list\n",
            file.display()
        )
    );
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(
        written,
        json!({"mcpServers": {"every": {"command": "node", "args": [script, "stdio"], "env": {"A": "${HOME}"}, "exposure": "direct"}}})
    );
    let (code, out, err) = home
        .filo(&[
            "mcp",
            "add",
            "docs",
            "--url",
            "http://127.0.0.1:9/mcp",
            "--bearer-token-env-var",
            "DOCS_TOKEN",
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("Added user MCP server \"docs\""));
    let (code, out, _) = home.filo(&["mcp", "list"]).await;
    assert_eq!(code, 1, "docs cannot connect: {out}");
    assert!(out.contains("every: connected, "), "{out}");
    assert!(out.contains("docs: failed (codemode)"), "{out}");
    assert!(
        out.contains("environment variable DOCS_TOKEN is not set"),
        "{out}"
    );
    let (code, out, _) = home.filo(&["mcp", "get", "every", "--json"]).await;
    assert_eq!(code, 0, "{out}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["servers"][0]["state"], "connected");
    assert!(
        v["servers"][0]["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("echo"))
    );
    let (code, out, _) = home.filo(&["mcp", "remove", "docs"]).await;
    assert_eq!(code, 0);
    assert_eq!(
        out,
        format!(
            "Removed user MCP server \"docs\" from {}.\n",
            file.display()
        )
    );
    let (code, _, err) = home.filo(&["mcp", "remove", "docs"]).await;
    assert_eq!(code, 1);
    assert!(err.contains("No user MCP server named \"docs\""), "{err}");
    // A malformed entry is named with its file and key; the other server still loads.
    let mut text = std::fs::read_to_string(&file).unwrap();
    text = text.replacen(
        "\"mcpServers\": {",
        "\"mcpServers\": {\"bad\": {\"command\": \"x\", \"args\": \"not-a-list\"},",
        1,
    );
    std::fs::write(&file, &text).unwrap();
    let (code, out, _) = home.filo(&["mcp", "list"]).await;
    assert_eq!(code, 1);
    assert!(
        out.contains(&format!(
            "config error: {}: server \"bad\": args must be an array of strings",
            file.display()
        )),
        "{out}"
    );
    assert!(out.contains("every: connected"), "{out}");
    // A file that is not JSON is not rewritten by `add`.
    std::fs::write(&file, "{ not json").unwrap();
    let (code, _, err) = home
        .filo(&["mcp", "add", "x", "--url", "http://127.0.0.1:9/mcp"])
        .await;
    assert_eq!(code, 1);
    assert!(
        err.contains(&format!(
            "Could not update {}: invalid JSON",
            file.display()
        )),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "{ not json");
}

/// Run the official TypeScript SDK's client (filo-mcp's tests/fixtures/client.mjs); its JSON lines.
async fn sdk_client(
    home: &Home,
    modules: &Path,
    target: &[&str],
    calls: &[(&str, Value)],
) -> Vec<Value> {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../filo-mcp/tests/fixtures/client.mjs");
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(script).arg(modules).args(target).arg("--");
    for (name, args) in calls {
        cmd.arg(name).arg(args.to_string());
    }
    let out = cmd
        .current_dir(home.project())
        .env("HOME", home.path())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "client failed: {stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sdk_client_reads_the_memory_filo_wrote_through_mcp_serve_over_stdio_and_http() {
    let Some(modules) = modules() else { return };
    let mock = MockProvider::start(vec![Turn::Reply(Reply::text("The whale is blue."))]).await;
    let home = Home::new(&mock);
    let mut args = RUN.to_vec();
    args.extend(["-p", "remember the blue whale"]);
    let (code, _, err) = home.filo(&args).await;
    assert_eq!(code, 0, "stderr: {err}");
    let db = home.path().join(".playfilo/playfilo.db");
    assert!(db.exists());
    let db = db.display().to_string();
    let filo = env!("CARGO_BIN_EXE_filo");
    let lines = sdk_client(
        &home,
        &modules,
        &["stdio", filo, "mcp", "serve", "--db", &db],
        &[
            ("life", json!({})),
            ("trace", json!({"filter_mode": "all"})),
        ],
    )
    .await;
    assert_eq!(lines[0]["tools"], json!(["life", "recall", "trace"]));
    let life = lines[1]["content"][0]["text"].as_str().unwrap();
    assert!(
        life.contains("remember the blue whale") && life.contains("The whale is blue."),
        "{life}"
    );
    assert!(life.contains("<-- FOCUS, HEAD"), "{life}");
    assert_eq!(lines[1]["isError"], false);
    assert!(
        lines[2]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("--- archived action log ---")
    );
    // `recall` of the user's node by the hash `life` printed.
    let hash = life
        .lines()
        .find(|l| l.contains("remember the blue whale"))
        .and_then(|l| l.split(['[', ']']).nth(1))
        .unwrap()
        .to_string();
    // Over HTTP with a bearer token, on 127.0.0.1.
    let mut server = home
        .command(&[
            "mcp",
            "serve",
            "--db",
            &db,
            "--http",
            "127.0.0.1:0",
            "--token",
            "t0ken",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = tokio::io::BufReader::new(server.stderr.take().unwrap());
    let mut line = String::new();
    tokio::io::AsyncBufReadExt::read_line(&mut stderr, &mut line)
        .await
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("filo mcp serve: listening on ")
        .unwrap()
        .to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let lines = sdk_client(
        &home,
        &modules,
        &["http", &url, "t0ken"],
        &[("recall", json!({"hash": hash}))],
    )
    .await;
    let recalled = lines[1]["content"][0]["text"].as_str().unwrap();
    assert!(recalled.contains("remember the blue whale"), "{recalled}");
    // A wrong token is refused.
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../filo-mcp/tests/fixtures/client.mjs");
    let out = tokio::process::Command::new("node")
        .arg(script)
        .arg(&modules)
        .args(["http", &url, "wrong", "--"])
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("error"));
    server.kill().await.unwrap();
}

/// pi 1.6.0 as the MCP client of `filo mcp serve` (opt-in: `FILO_E2E_PI16=1`, pi installed at
/// `/work/pi16` or `FILO_PI16_DIR`): pi's mock model calls `life` and `recall` on the memory a
/// filo run wrote, and pi's next request carries the answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pi16_calls_life_and_recall_through_filo_mcp_serve() {
    if std::env::var_os("FILO_E2E_PI16").is_none() {
        return;
    }
    let pi = PathBuf::from(std::env::var("FILO_PI16_DIR").unwrap_or_else(|_| "/work/pi16".into()));
    let node = pi.join("node_modules/.bin/node");
    let cli = pi.join("node_modules/@earendil-works/pi-coding-agent/dist/cli.js");
    let mock = MockProvider::start(vec![Turn::Reply(Reply::text("The whale is blue."))]).await;
    let home = Home::new(&mock);
    let mut args = RUN.to_vec();
    args.extend(["-p", "remember the blue whale"]);
    let (code, _, err) = home.filo(&args).await;
    assert_eq!(code, 0, "stderr: {err}");
    let db = home
        .path()
        .join(".playfilo/playfilo.db")
        .display()
        .to_string();
    let (_, life, _) = home.filo(&["dag", "--db", &db, "life"]).await;
    let hash = life
        .lines()
        .find(|l| l.contains("remember the blue whale"))
        .and_then(|l| l.split(['[', ']']).nth(1))
        .unwrap()
        .to_string();
    let pi_mock = MockProvider::start(vec![
        Turn::Reply(Reply::tool_call("p1", "mcp__playfilo__life", json!({}))),
        Turn::Reply(Reply::tool_call(
            "p2",
            "mcp__playfilo__recall",
            json!({"hash": hash}),
        )),
        Turn::Reply(Reply::text("pi read the memory.")),
    ])
    .await;
    let pi_home = tempfile::tempdir().unwrap();
    let agent = pi_home.path().join(".pi/agent");
    std::fs::create_dir_all(&agent).unwrap();
    let models = json!({"providers": {"mock": {
        "baseUrl": format!("{}/v1", pi_mock.url()), "api": "openai-completions", "apiKey": "MOCK_API_KEY",
        "models": [{"id": "mock-model", "contextWindow": 100000, "maxTokens": 1000}]}}});
    std::fs::write(agent.join("models.json"), models.to_string()).unwrap();
    let mcp = json!({"mcpServers": {"playfilo": {"command": env!("CARGO_BIN_EXE_filo"),
        "args": ["mcp", "serve", "--db", db], "exposure": "direct"}}});
    std::fs::write(agent.join("mcp.json"), mcp.to_string()).unwrap();
    let out = tokio::process::Command::new(node)
        .arg(cli)
        .args([
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "-p",
            "what do you remember?",
        ])
        .current_dir(pi_home.path())
        .env_clear()
        .env("HOME", pi_home.path())
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("PI_OFFLINE", "1")
        .env("MOCK_API_KEY", "k")
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "pi: {stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout.trim(), "pi read the memory.");
    let reqs = pi_mock.requests();
    let names = tool_names(&reqs[0].body);
    assert!(
        names.contains(&"mcp__playfilo__life".to_string()),
        "{names:?}"
    );
    assert!(
        reqs[1].body.to_string().contains("remember the blue whale"),
        "{}",
        reqs[1].body
    );
    assert!(
        reqs[2].body.to_string().contains("archived node content"),
        "{}",
        reqs[2].body
    );
}
