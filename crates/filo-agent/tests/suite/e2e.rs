//! The Agent through the real `filo_ai::Client` against the scripted mock provider on 127.0.0.1.

use std::sync::Arc;
use std::time::Duration;

use filo_agent::{Agent, AgentOptions};
use filo_ai::{Client, Env, Model, ProviderRegistry, StreamOptions};
use filo_testkit::{Fault, MockProvider, Protocol, Reply, Turn};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::*;

fn mock_model(mock: &MockProvider, protocol: Protocol, api: &str, provider: &str) -> Model {
    serde_json::from_value(json!({
        "id": "mock-model", "name": "Mock", "api": api, "provider": provider,
        "baseUrl": mock.base_url(protocol), "input": ["text"], "contextWindow": 100000,
        "maxTokens": 4096
    }))
    .unwrap()
}

fn agent_for(model: Model) -> Agent {
    let client = Client::new(ProviderRegistry::empty(), Env::default()).unwrap();
    Agent::with_options(
        Arc::new(client),
        AgentOptions {
            model: Some(model),
            system_prompt: "be brief".into(),
            tools: vec![Arc::new(TestTool::new("echo"))],
            stream_options: StreamOptions {
                api_key: Some("test-key".into()),
                ..StreamOptions::default()
            },
            ..AgentOptions::default()
        },
    )
}

#[tokio::test]
async fn a_tool_round_trip_over_anthropic_messages() {
    let mock = MockProvider::start(vec![
        Turn::tool_call("toolu_1", "echo", json!({"text": "hi"})),
        Turn::text("all done"),
    ])
    .await;
    let agent = agent_for(mock_model(
        &mock,
        Protocol::AnthropicMessages,
        "anthropic-messages",
        "anthropic",
    ));
    let rec = Recorder::attach(&agent);
    agent.prompt("go").await.unwrap();
    assert_eq!(
        history(&agent),
        [
            "user:go",
            "assistant[ToolUse]:",
            "toolResult:echo: hi",
            "assistant[Stop]:all done"
        ]
    );
    assert_eq!(
        squash(rec.kinds()),
        [
            "agent_start",
            "turn_start",
            "message_start(user)",
            "message_end(user)",
            "message_start(assistant)",
            "message_update*",
            "message_end(assistant)",
            "tool_execution_start(toolu_1)",
            "tool_execution_end(toolu_1)",
            "message_start(toolResult)",
            "message_end(toolResult)",
            "turn_end",
            "turn_start",
            "message_start(assistant)",
            "message_update*",
            "message_end(assistant)",
            "turn_end",
            "agent_end",
        ]
    );
    // The second request carried the tool result back to the model.
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let body = &requests[1].body;
    let roles: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    assert_eq!(body["messages"][2]["content"][0]["tool_use_id"], "toolu_1");
    assert_eq!(body["tools"][0]["name"], "echo");
    mock.shutdown().await;
}

#[tokio::test]
async fn abort_while_the_provider_stalls() {
    let stalled = Fault::Stall {
        after_events: 3,
        reply: Reply::text("one two three four five six"),
        stall: Duration::from_secs(30),
    };
    let mock = MockProvider::start(vec![Turn::Fault(stalled)]).await;
    let agent = agent_for(mock_model(
        &mock,
        Protocol::OpenAiCompletions,
        "openai-completions",
        "openai",
    ));
    let run = tokio::spawn({
        let agent = agent.clone();
        async move { agent.prompt("go").await }
    });
    eventually(|| {
        agent
            .stream_message()
            .and_then(|m| m.as_assistant().map(|a| !a.text().is_empty()))
            .unwrap_or(false)
    })
    .await;
    agent.abort();
    run.await.unwrap().unwrap();
    let messages = agent.messages();
    let last = messages.last().unwrap().as_assistant().unwrap();
    assert_eq!(last.stop_reason, filo_ai::StopReason::Aborted);
    assert!(!last.text().is_empty(), "the partial text is kept");
    assert!(last.error_message.is_some());
    assert!(!agent.is_streaming());
    mock.shutdown().await;
}

/// An agent whose only tool logs every run, for the truncation tests.
fn agent_with_log(model: Model) -> (Agent, Arc<std::sync::Mutex<Vec<String>>>) {
    let tool = TestTool::new("echo");
    let log = Arc::clone(&tool.log);
    let client = Client::new(ProviderRegistry::empty(), Env::default()).unwrap();
    let agent = Agent::with_options(
        Arc::new(client),
        AgentOptions {
            model: Some(model),
            tools: vec![Arc::new(tool)],
            stream_options: StreamOptions {
                api_key: Some("test-key".into()),
                ..StreamOptions::default()
            },
            ..AgentOptions::default()
        },
    );
    (agent, log)
}

/// `stopReason: length` in the middle of a tool call's arguments: the complete call before it
/// runs, the cut one does not; it gets an error result the model reads on the next request.
#[tokio::test]
async fn a_tool_call_cut_by_the_output_limit_is_not_run() {
    let cases = [
        (Protocol::OpenAiCompletions, "openai-completions", "openai"),
        (
            Protocol::AnthropicMessages,
            "anthropic-messages",
            "anthropic",
        ),
        (Protocol::OpenAiResponses, "openai-responses", "openai"),
    ];
    for (protocol, api, provider) in cases {
        let cut = Reply::empty()
            .with_tool_call("call_a|fc_a", "echo", json!({"text": "whole"}))
            .with_raw_tool_call("call_b|fc_b", "echo", r#"{"text": "rm -rf /tmp/filo-tru"#)
            .with_stop(filo_testkit::Stop::Length);
        let mock =
            MockProvider::start(vec![Turn::Reply(cut), Turn::text("retrying smaller")]).await;
        let (agent, log) = agent_with_log(mock_model(&mock, protocol, api, provider));
        agent.prompt("go").await.unwrap();
        assert_eq!(
            log.lock().unwrap().clone(),
            ["start whole", "end whole"],
            "{api}: only the complete call ran"
        );
        let h = history(&agent);
        assert_eq!(h.len(), 5, "{api}: {h:?}");
        assert_eq!(h[1], "assistant[Length]:", "{api}");
        assert_eq!(h[2], "toolResult:echo: whole", "{api}");
        assert_eq!(
            h[3],
            format!("toolResult!:{}", filo_agent::TRUNCATED_TEXT),
            "{api}"
        );
        assert_eq!(h[4], "assistant[Stop]:retrying smaller", "{api}");
        let second = mock.requests()[1].body.to_string();
        assert!(
            second.contains("output token limit"),
            "{api}: the model is told why: {second}"
        );
    }
}

/// Invalid argument JSON with a normal stop is not a truncation: it is repaired as pi does and
/// validated (here `{}` fails validation), and the model gets the validation error.
#[tokio::test]
async fn invalid_tool_json_without_the_limit_is_validated_not_reported_as_cut() {
    let mock = MockProvider::start(vec![
        Turn::Reply(Reply::empty().with_raw_tool_call("call_x", "echo", "not json at all")),
        Turn::text("ok"),
    ])
    .await;
    let (agent, log) = agent_with_log(mock_model(
        &mock,
        Protocol::OpenAiCompletions,
        "openai-completions",
        "openai",
    ));
    agent.prompt("go").await.unwrap();
    assert!(log.lock().unwrap().is_empty());
    let h = history(&agent);
    assert!(
        h[2].starts_with("toolResult!:Validation failed for tool \"echo\""),
        "{h:?}"
    );
}
