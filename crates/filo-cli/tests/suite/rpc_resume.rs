//! Resuming a large session over RPC (issue 16): the messages `get_messages` gives after
//! `--session <file>` are the context the eager reader builds from the same file, and the model
//! is sent the same.

use std::path::Path;

use filo_session::build_session_context;
use filo_session::file::read_session_file;
use filo_testkit::{MockProvider, Turn};
use serde_json::{Value, json};

use super::common::Home;
use super::rpc::Rpc;

/// A pi v3 session of about `n` entries in one chain: user prompt, assistant text + `bash`
/// call, tool result, answer, and a compaction every 1,000 entries or so.
fn generate(n: usize, path: &Path) {
    let usage = json!({"input":10,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":12,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}});
    let mut lines = vec![
        json!({"type":"session","version":3,"id":"resume-10k","timestamp":"2026-11-01T00:00:00.000Z","cwd":"/p"}),
    ];
    let mut ids: Vec<String> = Vec::new();
    let push = |lines: &mut Vec<Value>, ids: &mut Vec<String>, mut v: Value| {
        let id = format!("{:08x}", ids.len() + 1);
        v["id"] = json!(id);
        v["parentId"] = json!(ids.last());
        v["timestamp"] = json!("2026-11-01T00:00:00.000Z");
        lines.push(v);
        ids.push(id);
    };
    push(
        &mut lines,
        &mut ids,
        json!({"type":"model_change","provider":"mock","modelId":"mock-model"}),
    );
    let ts = 1_793_491_200_000i64;
    let mut i = 0i64;
    while lines.len() <= n {
        i += 1;
        let turn = [
            json!({"role":"user","content":[{"type":"text","text":format!("prompt {i}")}],"timestamp":ts + i}),
            json!({"role":"assistant","content":[{"type":"text","text":format!("looking {i}")},{"type":"toolCall","id":format!("call_{i}"),"name":"bash","arguments":{"command":"ls"}}],"api":"openai-completions","provider":"mock","model":"mock-model","usage":usage,"stopReason":"toolUse","timestamp":ts + i}),
            json!({"role":"toolResult","toolCallId":format!("call_{i}"),"toolName":"bash","content":[{"type":"text","text":format!("out {i}")}],"isError":false,"timestamp":ts + i}),
            json!({"role":"assistant","content":[{"type":"text","text":format!("done {i}")}],"api":"openai-completions","provider":"mock","model":"mock-model","usage":usage,"stopReason":"stop","timestamp":ts + i}),
        ];
        for message in turn {
            push(
                &mut lines,
                &mut ids,
                json!({"type":"message","message":message}),
            );
        }
        if i % 250 == 0 {
            let kept = ids[ids.len() - 100].clone();
            push(
                &mut lines,
                &mut ids,
                json!({"type":"compaction","summary":format!("summary {i}"),"firstKeptEntryId":kept,"tokensBefore":1000}),
            );
        }
    }
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(path, text).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_messages_after_resuming_a_10k_session_is_the_eager_context() {
    let mock = MockProvider::start(vec![Turn::text("resumed")]).await;
    let home = Home::new(&mock);
    let file = home.path().join("s10k.jsonl");
    generate(10_000, &file);
    let loaded = read_session_file(&file).unwrap();
    let index = loaded
        .entries
        .iter()
        .enumerate()
        .map(|(i, e)| (e.id.clone(), i))
        .collect();
    let leaf = loaded.entries.last().map(|e| e.id.as_str());
    let eager = build_session_context(&loaded.entries, &index, leaf);
    let expected: Vec<Value> = eager.messages.iter().map(|m| m.to_value()).collect();
    assert!(expected.len() > 100, "{}", expected.len());

    let path = file.to_string_lossy().into_owned();
    let mut rpc = Rpc::start(&home, &["--no-dag", "--session", &path]);
    let messages = rpc.call("m", json!({"type": "get_messages"})).await;
    assert_eq!(messages["messages"], Value::Array(expected.clone()));
    rpc.call("p", json!({"type": "prompt", "message": "continue"}))
        .await;
    rpc.event("agent_end").await;
    let messages = rpc.call("m2", json!({"type": "get_messages"})).await;
    let after = messages["messages"].as_array().unwrap();
    assert_eq!(after[..expected.len()], expected[..]);
    assert_eq!(after.len(), expected.len() + 2);
    assert_eq!(rpc.close().await, 0);
    // The request carried the whole context and the new prompt.
    let body = &mock.requests()[0].body;
    assert_eq!(
        body["messages"].as_array().map(Vec::len),
        Some(expected.len() + 2),
        "system prompt, the context, the prompt"
    );
}
