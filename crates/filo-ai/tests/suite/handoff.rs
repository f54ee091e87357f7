//! One conversation that switches codecs mid-way and keeps its tool calls valid.

use filo_ai::{ContentBlock, Context, Message, StreamOptions, ThinkingLevel, ToolResultMessage};
use filo_testkit::{Block, MockProvider, Protocol, Reply, Turn};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::common::{collect, model, user};

#[tokio::test]
async fn anthropic_tool_call_then_openai_completions_then_google() {
    let call = Reply::tool_call("toolu_01.weird:id", "read", json!({"path": "Cargo.toml"}))
        .with_block(Block::Text("checking".into()));
    let mut call = call;
    call.blocks.insert(
        0,
        Block::Thinking {
            text: "I should read it.".into(),
            signature: "c2ln".into(),
        },
    );
    let mock = MockProvider::start(vec![
        Turn::Reply(call),
        Turn::text("It is a workspace manifest."),
        Turn::text("Yes."),
    ])
    .await;
    let opts = StreamOptions {
        reasoning: ThinkingLevel::Low,
        ..StreamOptions::default()
    };
    let mut ctx: Context = user("What is Cargo.toml?");
    ctx.tools = Some(vec![filo_ai::Tool {
        name: "read".into(),
        description: "Read a file.".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }]);

    // Turn 1: Anthropic calls a tool.
    let anthropic = model(Protocol::AnthropicMessages, &mock);
    let (_, first) = collect(&anthropic, &ctx, &opts, CancellationToken::new()).await;
    let tc = first.tool_calls().next().cloned().unwrap();
    assert_eq!(tc.id, "toolu_01.weird:id");
    ctx.messages.push(Message::Assistant(first));
    ctx.messages.push(Message::ToolResult(ToolResultMessage {
        tool_call_id: tc.id.clone(),
        tool_name: tc.name.clone(),
        content: vec![ContentBlock::text("[workspace]")],
        details: None,
        is_error: false,
        timestamp: 5,
    }));

    // Turn 2: the result goes to an OpenAI-compatible model.
    let completions = model(Protocol::OpenAiCompletions, &mock);
    let (_, second) = collect(&completions, &ctx, &opts, CancellationToken::new()).await;
    assert_eq!(second.text(), "It is a workspace manifest.");
    let body = &mock.requests()[1].body;
    let msgs = body["messages"].as_array().unwrap();
    let assistant = msgs.iter().find(|m| m["role"] == "assistant").unwrap();
    let tool = msgs.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(assistant["tool_calls"][0]["id"], tool["tool_call_id"]);
    assert_eq!(assistant["tool_calls"][0]["function"]["name"], "read");
    assert_eq!(
        assistant["tool_calls"][0]["function"]["arguments"],
        r#"{"path":"Cargo.toml"}"#
    );
    // pi 1.6 drops Anthropic's thinking for another model; no Anthropic signature leaks.
    assert_eq!(assistant["content"], "checking");
    assert!(!body.to_string().contains("c2ln"));
    ctx.messages.push(Message::Assistant(second));
    ctx.messages.push(user("Sure?").messages.remove(0));

    // Turn 3: the whole history goes to Gemini.
    let google = model(Protocol::GoogleGenerativeAi, &mock);
    let (_, third) = collect(&google, &ctx, &opts, CancellationToken::new()).await;
    assert_eq!(third.text(), "Yes.");
    let contents = mock.requests()[2].body["contents"].clone();
    let roles: Vec<&str> = contents
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "model", "user", "model", "user"]);
    // The thinking is dropped (pi 1.6): the call, then the text.
    assert_eq!(contents[1]["parts"][1]["text"], "checking");
    assert_eq!(
        contents[1]["parts"][0]["functionCall"],
        json!({"name": "read", "args": {"path": "Cargo.toml"}})
    );
    assert_eq!(
        contents[2]["parts"][0]["functionResponse"],
        json!({"name": "read", "response": {"output": "[workspace]"}})
    );
    assert!(contents[1]["parts"][0].get("thoughtSignature").is_none());
}
