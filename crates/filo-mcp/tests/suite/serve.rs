//! `filo mcp serve`'s server, driven by rmcp's own client over an in-memory pipe.

use filo_mcp::serve::MemoryServer;
use rmcp::ServiceExt;

#[tokio::test]
async fn the_memory_server_lists_its_read_only_tools_and_names_a_missing_database() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = tokio::io::duplex(1 << 16);
    let server = MemoryServer {
        location: dir.path().join("none.db").display().to_string(),
        ref_name: "PI_HEAD".into(),
    };
    tokio::spawn(async move {
        let running = server.serve(a).await.unwrap();
        let _ = running.waiting().await;
    });
    let info: rmcp::model::ClientConfig = serde_json::from_value(serde_json::json!({
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}
    }))
    .unwrap();
    let client = info.serve(b).await.unwrap();
    let tools = client.peer().list_all_tools().await.unwrap();
    let names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names, ["life", "recall", "trace"]);
    let params: rmcp::model::CallToolRequestParams =
        serde_json::from_value(serde_json::json!({"name": "life", "arguments": {}})).unwrap();
    let r = client.peer().call_tool(params).await.unwrap();
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["isError"], true);
    assert!(
        v["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Error: "),
        "{v}"
    );
}
