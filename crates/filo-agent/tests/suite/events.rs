//! The event sequence (pi spec §2.2) and the loop's basic behaviour (§2.3), mirroring pi's
//! `agent-loop.test.ts`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use filo_agent::{
    AgentError, AgentEvent, AgentMessage, CustomMessage, LoopConfig, LoopContext, TransformContext,
    agent_loop, agent_loop_continue,
};
use filo_ai::{ContentBlock, Message, StopReason, UserContent, UserMessage};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::support::*;

#[tokio::test]
async fn prompt_with_one_tool_call_emits_pis_sequence() {
    let client = Scripted::new(vec![
        tools_turn(&[("c1", "echo", json!({"text": "hi"}))]),
        text_turn("done"),
    ]);
    let tool = TestTool {
        updates: 2,
        delay: Duration::from_millis(6),
        ..TestTool::new("echo")
    };
    let agent = agent_with(client.clone(), vec![Arc::new(tool)]);
    let rec = Recorder::attach(&agent);
    agent.prompt("x").await.unwrap();

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
            "tool_execution_start(c1)",
            "tool_execution_update(c1)",
            "tool_execution_update(c1)",
            "tool_execution_end(c1)",
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
    assert_eq!(
        history(&agent),
        [
            "user:x",
            "assistant[ToolUse]:",
            "toolResult:echo: hi",
            "assistant[Stop]:done"
        ]
    );
    // The second model call saw the tool result; both saw the system prompt and the tool.
    assert_eq!(
        client.roles(1),
        ["user:x", "assistant:", "toolResult:echo: hi"]
    );
    let call = &client.calls()[0];
    assert_eq!(call.context.system_prompt.as_deref(), Some("be brief"));
    assert_eq!(call.context.tools.as_ref().unwrap()[0].name, "echo");
    // Tool results carry details; agent_end lists everything the run produced.
    let result = agent.messages()[2].as_tool_result().cloned().unwrap();
    assert_eq!(result.details, Some(json!({"len": 2})));
    let events = rec.events();
    let Some(AgentEvent::AgentEnd { messages, .. }) = events.last() else {
        panic!("last event is not agent_end")
    };
    assert_eq!(messages, &agent.messages());
    let Some(AgentEvent::TurnEnd { tool_results, .. }) =
        events.iter().find(|e| e.kind() == "turn_end")
    else {
        panic!("no turn_end")
    };
    assert_eq!(tool_results, &vec![result]);
    assert!(!agent.is_streaming());
    assert_eq!(agent.state().pending_tool_calls, Vec::<String>::new());
}

/// Timestamps and durations vary from run to run; everything else in the JSON is fixed.
fn redact(line: &str) -> String {
    redact_number(
        &redact_number(line, "\"timestamp\":", 'T'),
        "\"durationMs\":",
        'D',
    )
}

/// Every number after `key` replaced by `mark`.
fn redact_number(line: &str, key: &str, mark: char) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(pos) = rest.find(key) {
        let (head, tail) = rest.split_at(pos + key.len());
        out.push_str(head);
        let digits = tail.chars().take_while(char::is_ascii_digit).count();
        out.push(mark);
        rest = &tail[digits..];
    }
    out.push_str(rest);
    out
}

#[tokio::test]
async fn events_serialize_as_pis_json() {
    let client = Scripted::new(vec![
        tools_turn(&[("c1", "echo", json!({"text": "hi"}))]),
        text_turn("ok"),
    ]);
    let agent = agent_with(client, vec![Arc::new(TestTool::new("echo"))]);
    let rec = Recorder::attach(&agent);
    agent
        .prompt(AgentMessage::from(UserMessage {
            content: UserContent::Text("x".into()),
            timestamp: 5,
        }))
        .await
        .unwrap();
    let lines: Vec<String> = rec
        .events()
        .iter()
        .filter(|e| !matches!(e, AgentEvent::AgentEnd { .. }))
        .map(|e| redact(&serde_json::to_string(e).unwrap()))
        .collect();
    insta::assert_snapshot!(lines.join("\n"));
}

#[tokio::test]
async fn continue_emits_no_user_events() {
    let client = Scripted::new(vec![text_turn("again")]);
    let agent = agent_with(client.clone(), vec![]);
    agent.replace_messages(vec![AgentMessage::user_text("hello")]);
    let rec = Recorder::attach(&agent);
    agent.continue_run().await.unwrap();
    assert_eq!(
        squash(rec.kinds()),
        [
            "agent_start",
            "turn_start",
            "message_start(assistant)",
            "message_update*",
            "message_end(assistant)",
            "turn_end",
            "agent_end",
        ]
    );
    assert_eq!(client.roles(0), ["user:hello"]);
    assert_eq!(history(&agent), ["user:hello", "assistant[Stop]:again"]);
}

fn loop_config(client: Arc<Scripted>) -> LoopConfig {
    LoopConfig::new(model(), client)
}

#[tokio::test]
async fn loop_continue_checks_the_context() {
    let client = Scripted::new(vec![text_turn("fine")]);
    let config = loop_config(client.clone());
    let mut events = Vec::new();
    let mut sink = |e: AgentEvent| events.push(e.kind());
    let empty = agent_loop_continue(
        LoopContext::default(),
        &config,
        &mut sink,
        CancellationToken::new(),
    )
    .await;
    assert_eq!(
        empty.unwrap_err().to_string(),
        "Cannot continue: no messages in context"
    );
    let from_assistant = LoopContext {
        messages: vec![AgentMessage::from(assistant(vec![], StopReason::Stop))],
        ..LoopContext::default()
    };
    let err = agent_loop_continue(from_assistant, &config, &mut sink, CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(err, AgentError::CannotContinueFrom("assistant".into()));
    assert_eq!(
        err.to_string(),
        "Cannot continue from message role: assistant"
    );
    // A custom role as the last message is fine.
    let custom = LoopContext {
        messages: vec![
            AgentMessage::user_text("q"),
            AgentMessage::Custom(CustomMessage::new("note", serde_json::Map::new())),
        ],
        ..LoopContext::default()
    };
    let produced = agent_loop_continue(custom, &config, &mut sink, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(produced.len(), 1);
    assert_eq!(client.roles(0), ["user:q"]);
    // The refused calls emitted nothing.
    assert_eq!(events.iter().filter(|k| **k == "agent_start").count(), 1);
    assert_eq!(events.first(), Some(&"agent_start"));
}

#[tokio::test]
async fn custom_roles_go_through_convert_to_llm_after_transform_context() {
    let client = Scripted::new(vec![text_turn("ok")]);
    let mut config = loop_config(client.clone());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen_by_convert = Arc::clone(&seen);
    config.convert_to_llm = Arc::new(move |messages: &[AgentMessage]| {
        seen_by_convert.lock().unwrap().push(messages.len());
        messages
            .iter()
            .map(|m| match m {
                AgentMessage::Llm(l) => l.clone(),
                AgentMessage::Custom(c) => Message::User(UserMessage {
                    content: UserContent::Text(format!(
                        "[{}] {}",
                        c.role,
                        c.fields["text"].as_str().unwrap_or_default()
                    )),
                    timestamp: 0,
                }),
            })
            .collect()
    });
    // Pruning: only the last two messages reach the model.
    let transform: TransformContext = Arc::new(|messages: Vec<AgentMessage>, _cancel| {
        Box::pin(async move {
            let skip = messages.len().saturating_sub(2);
            Ok(messages.into_iter().skip(skip).collect())
        })
    });
    config.transform_context = Some(transform);
    let mut fields = serde_json::Map::new();
    fields.insert("text".into(), json!("remember this"));
    let context = LoopContext {
        messages: vec![
            AgentMessage::user_text("old"),
            AgentMessage::user_text("older"),
        ],
        ..LoopContext::default()
    };
    let prompts = vec![
        AgentMessage::Custom(CustomMessage::new("note", fields)),
        AgentMessage::user_text("now"),
    ];
    let mut kinds = Vec::new();
    let mut sink = |e: AgentEvent| kinds.push(label(&e));
    let produced = agent_loop(
        prompts,
        context,
        &config,
        &mut sink,
        CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(client.roles(0), ["user:[note] remember this", "user:now"]);
    assert_eq!(*seen.lock().unwrap(), [2]);
    assert_eq!(
        produced.iter().map(AgentMessage::role).collect::<Vec<_>>(),
        ["note", "user", "assistant"]
    );
    assert_eq!(
        &kinds[..4],
        [
            "agent_start",
            "turn_start",
            "message_start(note)",
            "message_end(note)"
        ]
    );
}

#[tokio::test]
async fn tool_calls_run_even_when_the_stop_reason_is_length() {
    let truncated = TurnBuilder::new()
        .tool("c1", "echo", json!({"text": "cut"}))
        .done(StopReason::Length);
    let client = Scripted::new(vec![truncated, text_turn("after")]);
    let agent = agent_with(client, vec![Arc::new(TestTool::new("echo"))]);
    agent.prompt("go").await.unwrap();
    assert_eq!(
        history(&agent),
        [
            "user:go",
            "assistant[Length]:",
            "toolResult:echo: cut",
            "assistant[Stop]:after"
        ]
    );
}

#[tokio::test]
async fn unknown_tools_and_invalid_arguments_become_error_results() {
    let client = Scripted::new(vec![
        tools_turn(&[
            ("c1", "nope", json!({})),
            ("c2", "echo", json!({"n": "x"})),
            ("c3", "echo", json!({"text": 5, "n": "7"})),
        ]),
        text_turn("ok"),
    ]);
    let agent = agent_with(client, vec![Arc::new(TestTool::new("echo"))]);
    let rec = Recorder::attach(&agent);
    agent.prompt("go").await.unwrap();
    let h = history(&agent);
    assert_eq!(h[2], "toolResult!:Tool nope not found");
    assert!(
        h[3].starts_with("toolResult!:Validation failed for tool \"echo\":\n"),
        "{}",
        h[3]
    );
    assert!(h[3].contains("  - n: must be integer"), "{}", h[3]);
    assert!(
        h[3].contains("  - text: must have required property 'text'"),
        "{}",
        h[3]
    );
    assert!(
        h[3].ends_with("Received arguments:\n{\n  \"n\": \"x\"\n}"),
        "{}",
        h[3]
    );
    // Ajv-style coercion: a number for a string, a numeric string for an integer.
    assert_eq!(h[4], "toolResult:echo: 5");
    // Error results have `details: {}` and the raw arguments in the start event.
    let result = agent.messages()[2].as_tool_result().cloned().unwrap();
    assert_eq!(result.details, Some(json!({})));
    let starts: Vec<Value> = rec
        .events()
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionStart { args, .. } => Some(args),
            _ => None,
        })
        .collect();
    assert_eq!(starts[2], json!({"text": 5, "n": "7"}));
}

#[tokio::test]
async fn a_stream_without_a_final_event_ends_the_run_with_an_error() {
    let client = Scripted::new(vec![TurnBuilder::new().text(&["par", "tial"]).open()]);
    let agent = agent_with(client, vec![]);
    agent.prompt("go").await.unwrap();
    assert_eq!(history(&agent), ["user:go", "assistant[Error]:partial"]);
    assert_eq!(
        agent.error().as_deref(),
        Some("Stream ended without a final event")
    );
}

#[tokio::test]
async fn message_updates_carry_the_growing_partial() {
    let client = Scripted::new(vec![
        TurnBuilder::new()
            .text(&["a", "b", "c"])
            .done(StopReason::Stop),
    ]);
    let agent = agent_with(client, vec![]);
    let rec = Recorder::attach(&agent);
    agent
        .prompt(vec![AgentMessage::user_blocks(vec![ContentBlock::text(
            "q",
        )])])
        .await
        .unwrap();
    let texts: Vec<String> = rec
        .events()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::MessageUpdate { partial, .. } => Some(partial.message().text()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["", "a", "ab", "abc", "abc"]);
}

#[tokio::test]
async fn without_transform_only_new_messages_are_converted() {
    let client = Scripted::new(vec![
        tools_turn(&[("c1", "echo", json!({"text": "hi"}))]),
        text_turn("done"),
    ]);
    let agent = agent_with(
        client.clone(),
        vec![Arc::new(super::support::TestTool::new("echo"))],
    );
    agent.replace_messages(vec![
        AgentMessage::user_text("earlier"),
        AgentMessage::Custom(CustomMessage::new("note", serde_json::Map::new())),
    ]);
    let sizes = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&sizes);
    agent.set_convert_to_llm(Arc::new(move |messages: &[AgentMessage]| {
        seen.lock().unwrap().push(messages.len());
        filo_agent::default_convert_to_llm(messages)
    }));
    agent.prompt("now").await.unwrap();
    // First call: the whole history plus the prompt; second: the assistant and its tool result.
    assert_eq!(*sizes.lock().unwrap(), [3, 2]);
    assert_eq!(client.roles(0), ["user:earlier", "user:now"]);
    assert_eq!(
        client.roles(1),
        [
            "user:earlier",
            "user:now",
            "assistant:",
            "toolResult:echo: hi"
        ]
    );
}
