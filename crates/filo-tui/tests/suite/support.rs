//! Synthetic session events and frame rendering on ratatui's TestBackend.

use filo_agent::{AgentEvent, AgentMessage, PartialMessage, ToolOutput};
use filo_ai::{
    AssistantEvent, AssistantMessage, ContentBlock, Message, StopReason, UserContent, UserMessage,
};
use filo_core::SessionEvent;
use filo_tui::{AppState, ColorDepth, FooterInfo, Theme};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::Value;

pub const W: u16 = 80;
pub const H: u16 = 24;

/// A state with the colourless dark theme and a footer for a mock model.
pub fn state() -> AppState {
    let footer = FooterInfo {
        model: Some("mock/mock-model".into()),
        thinking: "medium".into(),
        reasoning: true,
        context_window: 200_000,
        cwd: "/home/me/project".into(),
        session_name: Some("demo".into()),
        ..FooterInfo::default()
    };
    AppState::new(Theme::builtin("dark", ColorDepth::None).unwrap(), footer)
}

pub fn agent(ev: AgentEvent) -> SessionEvent {
    SessionEvent::Agent(ev)
}

pub fn user(text: &str) -> AgentMessage {
    AgentMessage::Llm(Message::User(UserMessage {
        content: UserContent::Text(text.into()),
        timestamp: 0,
    }))
}

pub fn assistant(
    content: Vec<ContentBlock>,
    stop: StopReason,
    error: Option<&str>,
) -> AssistantMessage {
    AssistantMessage {
        content,
        api: "openai-completions".into(),
        provider: "mock".into(),
        model: "mock-model".into(),
        usage: filo_ai::Usage::default(),
        stop_reason: stop,
        timestamp: 0,
        error_message: error.map(str::to_string),
        error_status: None,
        response_id: None,
    }
}

/// Apply a user prompt and the start of an assistant message.
pub fn start_turn(s: &mut AppState, prompt: &str) -> PartialMessage {
    s.apply(&agent(AgentEvent::AgentStart));
    s.apply(&agent(AgentEvent::MessageStart {
        message: user(prompt),
    }));
    s.apply(&agent(AgentEvent::MessageEnd {
        message: user(prompt),
    }));
    let initial = assistant(Vec::new(), StopReason::Stop, None);
    s.apply(&agent(AgentEvent::MessageStart {
        message: AgentMessage::Llm(Message::Assistant(initial.clone())),
    }));
    PartialMessage::new(initial)
}

/// Stream events into the live message.
pub fn stream(s: &mut AppState, partial: &mut PartialMessage, events: Vec<AssistantEvent>) {
    for event in events {
        partial.apply(&event);
        s.apply(&agent(AgentEvent::MessageUpdate {
            partial: partial.clone(),
            event,
        }));
    }
}

/// Finish the live message as `message`.
pub fn end_message(s: &mut AppState, message: AssistantMessage) {
    s.apply(&agent(AgentEvent::MessageEnd {
        message: AgentMessage::Llm(Message::Assistant(message)),
    }));
}

pub fn tool_start(s: &mut AppState, id: &str, name: &str, args: Value) {
    s.apply(&agent(AgentEvent::ToolExecutionStart {
        tool_call_id: id.into(),
        tool_name: name.into(),
        args,
    }));
}

pub fn tool_update(s: &mut AppState, id: &str, name: &str, text: &str) {
    s.apply(&agent(AgentEvent::ToolExecutionUpdate {
        tool_call_id: id.into(),
        tool_name: name.into(),
        args: Value::Null,
        partial_result: ToolOutput::text(text),
    }));
}

pub fn tool_end(s: &mut AppState, id: &str, name: &str, result: ToolOutput, is_error: bool) {
    s.apply(&agent(AgentEvent::ToolExecutionEnd {
        tool_call_id: id.into(),
        tool_name: name.into(),
        result,
        is_error,
        duration_ms: None,
    }));
}

/// Draw one frame and return the terminal's text, one line per row, trailing spaces trimmed.
pub fn frame(s: &mut AppState) -> String {
    frame_at(s, W, H)
}

pub fn frame_at(s: &mut AppState, w: u16, h: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| filo_tui::view::draw(f, s)).unwrap();
    buffer_text(t.backend().buffer())
}

pub fn buffer_text(buf: &ratatui::buffer::Buffer) -> String {
    let area = buf.area;
    let mut out = String::new();
    for y in 0..area.height {
        let mut line = String::new();
        let mut skip = 0;
        for x in 0..area.width {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            let sym = buf[(x, y)].symbol();
            line.push_str(sym);
            skip = unicode_width::UnicodeWidthStr::width(sym).saturating_sub(1);
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
