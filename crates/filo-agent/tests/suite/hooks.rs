//! Hooks around model and tool calls (pi spec §2.3, §2.4).

use std::sync::{Arc, Mutex};

use filo_agent::{
    AfterToolCall, AgentEvent, BeforeToolCall, GetApiKey, HookError, ResultOverride,
    ToolCallDecision, TransformContext,
};
use filo_ai::{ContentBlock, StreamOptions, ThinkingLevel};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::*;

#[tokio::test]
async fn before_tool_call_may_block_with_a_reason() {
    let client = Scripted::new(vec![
        tools_turn(&[
            ("c1", "echo", json!({"text": "ok", "n": "3"})),
            ("c2", "echo", json!({"text": "secret"})),
            ("c3", "echo", json!({"text": "quiet"})),
            ("c4", "echo", json!({"text": "boom"})),
        ]),
        text_turn("done"),
    ]);
    let agent = agent_with(client, vec![Arc::new(TestTool::new("echo"))]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen_in_hook = Arc::clone(&seen);
    let hook: BeforeToolCall = Arc::new(move |info, _cancel| {
        seen_in_hook.lock().unwrap().push((
            info.args.clone(),
            info.context.len(),
            info.assistant_message.content.len(),
        ));
        let text = info.args["text"].as_str().unwrap_or_default().to_string();
        Box::pin(async move {
            match text.as_str() {
                "secret" => Ok(ToolCallDecision::Block {
                    reason: Some("not allowed here".into()),
                }),
                "quiet" => Ok(ToolCallDecision::Block { reason: None }),
                "boom" => Err(HookError::new("policy engine down")),
                _ => Ok(ToolCallDecision::Allow),
            }
        })
    });
    agent.set_before_tool_call(Some(hook));
    agent.prompt("go").await.unwrap();
    assert_eq!(
        history(&agent)[2..6],
        [
            "toolResult:echo: ok",
            "toolResult!:not allowed here",
            "toolResult!:Tool execution was blocked",
            "toolResult!:policy engine down",
        ]
    );
    let seen = seen.lock().unwrap();
    // The hook sees validated, coerced arguments and the context (user + assistant).
    assert_eq!(seen[0], (json!({"text": "ok", "n": 3}), 2, 4));
}

#[tokio::test]
async fn after_tool_call_overrides_fields() {
    let client = Scripted::new(vec![
        tools_turn(&[
            ("c1", "echo", json!({"text": "keep"})),
            ("c2", "echo", json!({"text": "rewrite"})),
            ("c3", "echo", json!({"text": "flag"})),
            ("c4", "echo", json!({"text": "fail"})),
        ]),
        text_turn("done"),
    ]);
    let agent = agent_with(client, vec![Arc::new(TestTool::new("echo"))]);
    let hook: AfterToolCall = Arc::new(|info, result, _cancel| {
        let text = info.args["text"].as_str().unwrap_or_default().to_string();
        Box::pin(async move {
            assert!(!result.is_error);
            match text.as_str() {
                "rewrite" => Ok(ResultOverride {
                    content: Some(vec![ContentBlock::text("rewritten")]),
                    ..ResultOverride::default()
                }),
                "flag" => Ok(ResultOverride {
                    details: Some(json!({"flagged": true})),
                    is_error: Some(true),
                    ..ResultOverride::default()
                }),
                "fail" => Err(HookError::new("audit failed")),
                _ => Ok(ResultOverride::default()),
            }
        })
    });
    agent.set_after_tool_call(Some(hook));
    let rec = Recorder::attach(&agent);
    agent.prompt("go").await.unwrap();
    assert_eq!(
        history(&agent)[2..6],
        [
            "toolResult:echo: keep",
            "toolResult:rewritten",
            "toolResult!:echo: flag",
            "toolResult!:audit failed",
        ]
    );
    let messages = agent.messages();
    // Field-wise: the rewritten result keeps the tool's details; the flagged one keeps content.
    assert_eq!(
        messages[3].as_tool_result().unwrap().details,
        Some(json!({"len": 7}))
    );
    assert_eq!(
        messages[4].as_tool_result().unwrap().details,
        Some(json!({"flagged": true}))
    );
    // The end event reports the overridden result.
    let flagged_end = rec.events().into_iter().find_map(|e| match e {
        AgentEvent::ToolExecutionEnd {
            tool_call_id,
            is_error,
            result,
            ..
        } if tool_call_id == "c3" => Some((is_error, result.details)),
        _ => None,
    });
    assert_eq!(flagged_end, Some((true, Some(json!({"flagged": true})))));
}

#[tokio::test]
async fn options_reach_the_model_client() {
    let client = Scripted::new(vec![text_turn("a")]);
    let agent = agent_with(client.clone(), vec![]);
    let key: GetApiKey =
        Arc::new(|provider| Box::pin(async move { Ok(Some(format!("key-for-{provider}"))) }));
    agent.set_get_api_key(Some(key));
    agent.set_stream_options(StreamOptions {
        temperature: Some(0.5),
        ..StreamOptions::default()
    });
    agent.set_session_id(Some("sess-1".into()));
    agent.set_thinking_level(ThinkingLevel::High);
    agent.set_max_retry_delay_ms(Some(5));
    agent.prompt("go").await.unwrap();
    let options = &client.calls()[0].options;
    assert_eq!(options.api_key.as_deref(), Some("key-for-test"));
    assert_eq!(options.session_id.as_deref(), Some("sess-1"));
    assert_eq!(options.reasoning, ThinkingLevel::High);
    assert_eq!(options.max_retry_delay_ms, Some(5));
    assert_eq!(options.temperature, Some(0.5));
    assert_eq!(
        agent.stream_options().reasoning,
        ThinkingLevel::Off,
        "set per call"
    );
}

#[tokio::test]
async fn a_failing_context_hook_leaves_one_error_message() {
    let client = Scripted::new(vec![text_turn("never")]);
    let agent = agent_with(client.clone(), vec![]);
    let transform: TransformContext =
        Arc::new(|_messages, _cancel| Box::pin(async { Err(HookError::new("index unavailable")) }));
    agent.set_transform_context(Some(transform));
    let rec = Recorder::attach(&agent);
    agent.prompt("go").await.unwrap();
    assert!(client.calls().is_empty());
    assert_eq!(history(&agent), ["user:go", "assistant[Error]:"]);
    assert_eq!(agent.error().as_deref(), Some("index unavailable"));
    // pi: only agent_end carries the synthetic message, no message events for it.
    assert_eq!(
        rec.kinds(),
        [
            "agent_start",
            "turn_start",
            "message_start(user)",
            "message_end(user)",
            "agent_end",
        ]
    );
    assert!(!agent.is_streaming());
}
