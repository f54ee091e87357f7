//! Against real MCP servers from npm: server-everything over stdio and streamable HTTP, and a
//! misbehaving server built on the official SDK.

use std::time::Duration;

use filo_agent::{AgentTool, ToolCallContext, ToolError};
use filo_ai::ContentBlock;
use filo_mcp::{McpManager, Status, ToolFilter};
use serde_json::json;

use super::common::{self, HttpServer};

fn manager(text: &str) -> (McpManager, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let config = common::config_from(dir.path(), text);
    assert!(config.errors.is_empty(), "{:?}", config.errors);
    let m = McpManager::new(config, dir.path().to_path_buf(), None, common::env_lookup());
    (m, dir)
}

async fn tools(m: &McpManager) -> Vec<std::sync::Arc<dyn AgentTool>> {
    let lines = m.connect_all(Duration::from_secs(60)).await;
    assert!(lines.is_empty(), "{lines:?}");
    m.build_tools(&ToolFilter::default()).await
}

fn find<'a>(
    tools: &'a [std::sync::Arc<dyn AgentTool>],
    name: &str,
) -> &'a std::sync::Arc<dyn AgentTool> {
    tools.iter().find(|t| t.name() == name).unwrap_or_else(|| {
        panic!(
            "no {name} in {:?}",
            tools.iter().map(|t| t.name()).collect::<Vec<_>>()
        )
    })
}

fn text(out: &filo_agent::ToolOutput) -> String {
    out.content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

async fn call(
    tool: &dyn AgentTool,
    args: serde_json::Value,
) -> Result<filo_agent::ToolOutput, ToolError> {
    tool.execute(ToolCallContext::new("c1", args)).await
}

#[tokio::test]
async fn everything_over_stdio_gives_direct_tools_images_structured_content_and_resources() {
    let Some(modules) = common::modules() else {
        return;
    };
    let entry = common::everything_stdio(&modules, r#", "exposure": "direct""#);
    let (m, _dir) = manager(&format!(r#"{{"mcpServers": {{"every-thing": {entry}}}}}"#));
    let tools = tools(&m).await;
    let echo = find(&tools, "mcp__every-thing__echo".replace('-', "_").as_str());
    assert!(echo.declared() && !echo.deferred());
    let out = call(echo.as_ref(), json!({"message": "hello"}))
        .await
        .unwrap();
    assert_eq!(text(&out), "Echo: hello");
    assert_eq!(out.details.as_ref().unwrap()["server"], "every-thing");
    let image = call(
        find(
            &tools,
            "mcp__every_thing__get-tiny-image"
                .replace('-', "_")
                .as_str(),
        )
        .as_ref(),
        json!({}),
    )
    .await
    .unwrap();
    assert!(
        image
            .content
            .iter()
            .any(|b| matches!(b, ContentBlock::Image(i) if i.mime_type == "image/png"))
    );
    let sc = call(
        find(
            &tools,
            "mcp__every_thing__get-structured-content"
                .replace('-', "_")
                .as_str(),
        )
        .as_ref(),
        json!({"location": "New York"}),
    )
    .await
    .unwrap();
    assert!(
        sc.details.as_ref().unwrap()["structuredContent"].is_object(),
        "{:?}",
        sc.details
    );
    // Resources: listed across servers, read by server and URI.
    let listed = call(
        find(&tools, "list_mcp_resources").as_ref(),
        json!({"server": "every-thing"}),
    )
    .await
    .unwrap();
    let listing: serde_json::Value = serde_json::from_str(&text(&listed)).unwrap();
    let first = &listing["resources"][0];
    assert_eq!(first["server"], "every-thing");
    let uri = first["uri"].as_str().unwrap().to_string();
    let read = call(
        find(&tools, "read_mcp_resource").as_ref(),
        json!({"server": "every-thing", "uri": uri}),
    )
    .await
    .unwrap();
    assert!(!read.content.is_empty());
    let templates = call(
        find(&tools, "list_mcp_resource_templates").as_ref(),
        json!({}),
    )
    .await
    .unwrap();
    assert!(
        text(&templates).contains("resourceTemplates"),
        "{}",
        text(&templates)
    );
    let wrong = call(
        find(&tools, "read_mcp_resource").as_ref(),
        json!({"server": "nope", "uri": "x"}),
    )
    .await
    .unwrap_err();
    assert!(
        wrong
            .to_string()
            .contains("MCP server \"nope\" has no resources. Servers with resources: every-thing"),
        "{wrong}"
    );
    m.shutdown().await;
}

#[tokio::test]
async fn everything_over_streamable_http_with_a_bearer_header() {
    let Some(modules) = common::modules() else {
        return;
    };
    let server = HttpServer::start(&modules, Some("sekrit"));
    // SAFETY of the test: the variable is read only by this test's config.
    let (m, _dir) = manager(&format!(
        r#"{{"mcpServers": {{"web": {{"url": "{}", "headers": {{"Authorization": "Bearer ${{FILO_MCP_TEST_TOKEN_UNSET}}"}}, "exposure": "direct"}},
            "web2": {{"url": "{}", "headers": {{"Authorization": "!echo Bearer sekrit"}}, "exposure": "direct"}}}}}}"#,
        server.url, server.url
    ));
    let lines = m.connect_all(Duration::from_secs(60)).await;
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("MCP server \"web\": header \"Authorization\": environment variable FILO_MCP_TEST_TOKEN_UNSET is not set"),
        "{lines:?}"
    );
    let tools = m.build_tools(&ToolFilter::default()).await;
    let out = call(
        find(&tools, "mcp__web2__echo").as_ref(),
        json!({"message": "over http"}),
    )
    .await
    .unwrap();
    assert_eq!(text(&out), "Echo: over http");
    assert!(!tools.iter().any(|t| t.name().starts_with("mcp__web__")));
    m.shutdown().await;
}

#[tokio::test]
async fn a_server_that_hangs_floods_fails_or_dies_fails_only_its_call() {
    let Some(modules) = common::modules() else {
        return;
    };
    let entry = common::unruly(&modules, r#", "exposure": "direct", "timeout": 3"#);
    let (m, _dir) = manager(&format!(r#"{{"mcpServers": {{"unruly": {entry}}}}}"#));
    let tools = tools(&m).await;
    let echo = find(&tools, "mcp__unruly__echo");
    // Never answers: cut off at the server's timeout.
    let hang = call(find(&tools, "mcp__unruly__hang").as_ref(), json!({}))
        .await
        .unwrap_err();
    assert_eq!(
        hang.to_string(),
        "MCP server \"unruly\": tools/call timed out after 3 s"
    );
    // 100 MB in one message: over rmcp's 16 MiB cap, discarded, so the call times out.
    let flood = call(
        find(&tools, "mcp__unruly__flood").as_ref(),
        json!({"mb": 100}),
    )
    .await
    .unwrap_err();
    assert!(flood.to_string().contains("timed out"), "{flood}");
    // An `isError` result is a model-facing error with the server's text.
    let fail = call(find(&tools, "mcp__unruly__fail").as_ref(), json!({}))
        .await
        .unwrap_err();
    assert_eq!(fail.to_string(), "it went wrong");
    // Over 20 KB: the middle is cut and the full text saved.
    let big = call(find(&tools, "mcp__unruly__big").as_ref(), json!({"kb": 64}))
        .await
        .unwrap();
    let t = text(&big);
    assert!(t.len() < 21 * 1024, "{}", t.len());
    assert!(
        t.starts_with("Warning: truncated output (original token count: "),
        "{}",
        &t[..100]
    );
    assert!(t.contains("chars truncated…") && t.contains("line 0 "));
    let path = big.details.as_ref().unwrap()["fullOutputPath"]
        .as_str()
        .unwrap()
        .to_string();
    let full = std::fs::read_to_string(&path).unwrap();
    assert!(full.len() >= 64 * 1024 && full.starts_with("line 0 "));
    assert!(t.contains(&format!(
        "[Full output: {path} (read it with offset/limit)]"
    )));
    std::fs::remove_file(&path).unwrap();
    // Dies mid-call: a named error, then the next call reconnects (after the backoff).
    let crash = call(find(&tools, "mcp__unruly__crash").as_ref(), json!({}))
        .await
        .unwrap_err();
    assert!(
        crash.to_string().starts_with("MCP server \"unruly\""),
        "{crash}"
    );
    let mut answered = None;
    for _ in 0..40 {
        match call(echo.as_ref(), json!({"message": "again"})).await {
            Ok(out) => {
                answered = Some(text(&out));
                break;
            }
            Err(e) => {
                assert!(e.to_string().starts_with("MCP server \"unruly\""), "{e}");
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }
    }
    assert_eq!(answered.as_deref(), Some("echo: again"));
    assert_eq!(m.servers()[0].status(), Status::Connected);
    m.shutdown().await;
}
