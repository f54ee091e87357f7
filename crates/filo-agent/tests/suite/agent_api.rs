//! The Agent's API (pi spec §2.5), mirroring pi's `agent.test.ts`.

use std::sync::{Arc, Mutex};

use filo_agent::{
    Agent, AgentError, AgentEvent, AgentMessage, AgentOptions, Prompt, QueueMode, ToolExecution,
};
use filo_ai::{ContentBlock, Message, StopReason, ThinkingLevel, UserContent};
use pretty_assertions::assert_eq;

use super::support::*;

#[tokio::test]
async fn default_and_custom_initial_state() {
    let agent = Agent::new(Scripted::new(vec![]));
    let s = agent.state();
    assert_eq!(s.system_prompt, "");
    assert!(s.model.is_none());
    assert_eq!(s.thinking_level, ThinkingLevel::Off);
    assert!(s.tools.is_empty() && s.messages.is_empty() && !s.is_streaming);
    assert!(s.stream_message.is_none() && s.error.is_none());
    assert_eq!(s.tool_execution, ToolExecution::Parallel);
    assert_eq!(agent.steering_mode(), QueueMode::OneAtATime);
    let err = agent.prompt("hi").await.unwrap_err();
    assert_eq!(err, AgentError::NoModel);
    assert_eq!(err.to_string(), "No model configured");
    assert!(
        agent.messages().is_empty(),
        "a refused prompt leaves no trace"
    );

    let custom = Agent::with_options(
        Scripted::new(vec![]),
        AgentOptions {
            system_prompt: "sys".into(),
            model: Some(model()),
            thinking_level: ThinkingLevel::Low,
            messages: vec![AgentMessage::user_text("earlier")],
            steering_mode: QueueMode::All,
            ..AgentOptions::default()
        },
    );
    let s = custom.state();
    assert_eq!(s.system_prompt, "sys");
    assert_eq!(s.model.unwrap().id, "scripted-1");
    assert_eq!(s.thinking_level, ThinkingLevel::Low);
    assert_eq!(s.messages.len(), 1);
    assert_eq!(custom.steering_mode(), QueueMode::All);
}

#[tokio::test]
async fn subscribe_and_unsubscribe() {
    let client = Scripted::new(vec![text_turn("a"), text_turn("b")]);
    let agent = agent_with(client, vec![]);
    let first = Recorder::attach(&agent);
    let second = Arc::new(Mutex::new(0usize));
    let counter = Arc::clone(&second);
    let id = agent.subscribe(move |_| *counter.lock().unwrap() += 1);
    agent.prompt("one").await.unwrap();
    let after_first = *second.lock().unwrap();
    assert_eq!(after_first, first.events().len());
    assert!(agent.unsubscribe(id));
    assert!(!agent.unsubscribe(id));
    agent.prompt("two").await.unwrap();
    assert_eq!(*second.lock().unwrap(), after_first);
    assert_eq!(first.events().len(), 2 * after_first);
}

#[tokio::test]
async fn listeners_see_the_state_already_updated() {
    let client = Scripted::new(vec![text_turn("a")]);
    let agent = agent_with(client, vec![]);
    let observed = Arc::new(Mutex::new(Vec::new()));
    let (probe, log) = (agent.clone(), Arc::clone(&observed));
    agent.subscribe(move |e| {
        if let AgentEvent::MessageEnd { message } = e {
            let last = probe.messages().last().cloned();
            log.lock().unwrap().push(last.as_ref() == Some(message));
        }
        if matches!(e, AgentEvent::AgentEnd { .. }) {
            log.lock().unwrap().push(!probe.is_streaming());
        }
    });
    agent.prompt("q").await.unwrap();
    assert_eq!(*observed.lock().unwrap(), [true, true, true]);
}

#[tokio::test]
async fn channel_subscription_and_wait_for_idle() {
    let gate = Arc::new(tokio::sync::Notify::new());
    let client = Scripted::new(vec![
        TurnBuilder::new()
            .step(Step::Wait(Arc::clone(&gate)))
            .text(&["x"])
            .done(StopReason::Stop),
    ]);
    let agent = agent_with(client, vec![]);
    let (_id, mut rx) = agent.subscribe_channel();
    let run = tokio::spawn({
        let agent = agent.clone();
        async move { agent.prompt("go").await }
    });
    eventually(|| agent.is_streaming()).await;
    // While a run is active, prompt and continue are refused with pi's texts.
    let err = agent.prompt("again").await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "Agent is already processing a prompt. Use steer() or followUp() to queue messages, or wait for completion."
    );
    let err = agent.continue_run().await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "Agent is already processing. Wait for completion before continuing."
    );
    gate.notify_one();
    agent.wait_for_idle().await;
    assert!(!agent.is_streaming());
    run.await.unwrap().unwrap();
    let mut kinds = Vec::new();
    while let Ok(e) = rx.try_recv() {
        kinds.push(e.kind());
    }
    assert_eq!(kinds.first(), Some(&"agent_start"));
    assert_eq!(kinds.last(), Some(&"agent_end"));
}

#[tokio::test]
async fn mutators_and_queues() {
    let agent = agent_with(Scripted::new(vec![]), vec![]);
    agent.set_system_prompt("new");
    agent.set_thinking_level(ThinkingLevel::Medium);
    agent.set_tools(vec![Arc::new(TestTool::new("echo"))]);
    agent.set_tool_execution(ToolExecution::Sequential);
    let s = agent.state();
    assert_eq!(s.system_prompt, "new");
    assert_eq!(s.thinking_level, ThinkingLevel::Medium);
    assert_eq!(s.tools[0].name(), "echo");
    assert_eq!(s.tool_execution, ToolExecution::Sequential);

    agent.replace_messages(vec![AgentMessage::user_text("a")]);
    agent.append_message(AgentMessage::user_text("b"));
    assert_eq!(history(&agent), ["user:a", "user:b"]);
    agent.clear_messages();
    assert!(agent.messages().is_empty());
    let err = agent.continue_run().await.unwrap_err();
    assert_eq!(err.to_string(), "No messages to continue from");

    assert!(!agent.has_queued_messages());
    agent.steer(AgentMessage::user_text("s"));
    assert!(agent.has_queued_messages());
    agent.clear_steering_queue();
    assert!(!agent.has_queued_messages());
    agent.follow_up(AgentMessage::user_text("f"));
    agent.clear_follow_up_queue();
    assert!(!agent.has_queued_messages());
    agent.steer(AgentMessage::user_text("s"));
    agent.follow_up(AgentMessage::user_text("f"));
    agent.clear_all_queues();
    assert!(!agent.has_queued_messages());

    agent.append_message(AgentMessage::user_text("x"));
    agent.follow_up(AgentMessage::user_text("f"));
    agent.reset();
    assert!(agent.messages().is_empty() && !agent.has_queued_messages());
    assert!(agent.error().is_none());
    agent.set_session_id(Some("s1".into()));
    assert_eq!(agent.session_id().as_deref(), Some("s1"));
}

#[tokio::test]
async fn prompt_with_images() {
    let client = Scripted::new(vec![text_turn("a cat")]);
    let agent = agent_with(client.clone(), vec![]);
    let image = ContentBlock::image("aGk=", "image/png");
    agent
        .prompt(Prompt::TextWithImages(
            "what is this?".into(),
            vec![image.clone()],
        ))
        .await
        .unwrap();
    let Message::User(user) = &client.calls()[0].context.messages[0] else {
        panic!("not a user message")
    };
    assert_eq!(
        user.content,
        UserContent::Blocks(vec![ContentBlock::text("what is this?"), image])
    );
}

/// A run's sink re-reads the listeners only after they changed: one added by a listener during a
/// run hears every event after the one that added it, and one that removed itself hears no more.
#[tokio::test]
async fn listeners_changed_during_a_run_apply_from_the_next_event() {
    let client = Scripted::new(vec![text_turn("one two three")]);
    let agent = agent_with(client, vec![]);
    let all = Recorder::attach(&agent);
    let late = Recorder::default();

    let me: Arc<Mutex<Option<filo_agent::SubscriptionId>>> = Arc::default();
    let heard_by_leaver = Arc::new(Mutex::new(0usize));
    let (handle, agent2, count) = (Arc::clone(&me), agent.clone(), Arc::clone(&heard_by_leaver));
    let leaver = agent.subscribe(move |_| {
        *count.lock().unwrap() += 1;
        if let Some(id) = handle.lock().unwrap().take() {
            assert!(agent2.unsubscribe(id));
        }
    });
    *me.lock().unwrap() = Some(leaver);

    // Adds `late` at the first `turn_start`, then drops its handle on the agent.
    let adder_agent = Arc::new(Mutex::new(Some(agent.clone())));
    let late_sink = late.clone();
    agent.subscribe(move |e| {
        if matches!(e, AgentEvent::TurnStart)
            && let Some(a) = adder_agent.lock().unwrap().take()
        {
            let sink = late_sink.clone();
            a.subscribe(move |e| sink.0.lock().unwrap().push(e.clone()));
        }
    });

    agent.prompt("go").await.unwrap();
    let kinds = all.kinds();
    let turn_start = kinds.iter().position(|k| k == "turn_start").unwrap();
    assert!(kinds.len() > turn_start + 3, "{kinds:?}");
    assert_eq!(late.kinds(), kinds[turn_start + 1..]);
    assert_eq!(*heard_by_leaver.lock().unwrap(), 1);
}
