//! The UI state and how session events change it. Rendering reads this state only; nothing here
//! touches the terminal or awaits anything, so tests feed it synthetic events.

use std::collections::HashMap;
use std::time::Instant;

use filo_agent::{AgentEvent, AgentMessage, ToolOutput};
use filo_ai::{AssistantEvent, AssistantMessage, ContentBlock, Message, StopReason, UserContent};
use filo_core::SessionEvent;
use ratatui::text::Line;

use crate::cells::{AssistantBlock, Cell, RenderOpts, ToolCell};
use crate::editor::Editor;
use crate::overlay::Overlay;
use crate::theme::Theme;

/// What the footer shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FooterInfo {
    /// `provider/model`, `None` when no model is available.
    pub model: Option<String>,
    pub thinking: String,
    pub reasoning: bool,
    pub context_window: u64,
    /// Tokens of the last assistant response (the context in use).
    pub context_tokens: u64,
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub cost: f64,
    pub cwd: String,
    pub session_name: Option<String>,
    /// Why entries of the session are not in its file, while any are not.
    pub unsaved: Option<String>,
    /// The sandbox mode of the model's commands, when they are confined.
    pub sandbox: Option<String>,
}

impl FooterInfo {
    /// Count one finished assistant message.
    pub fn add_usage(&mut self, m: &AssistantMessage) {
        let u = &m.usage;
        self.input += u.input;
        self.output += u.output;
        self.cache_read += u.cache_read;
        self.cache_write += u.cache_write;
        self.cost += u.cost.total;
        let ctx = u.input + u.output + u.cache_read + u.cache_write;
        if ctx > 0 && m.stop_reason != StopReason::Aborted && m.stop_reason != StopReason::Error {
            self.context_tokens = ctx;
        }
    }
}

/// A committed cell and its rendering for the last width it was drawn at.
#[derive(Debug, Clone)]
pub struct Committed {
    pub cell: Cell,
    cache: Option<(usize, RenderOpts, Vec<Line<'static>>)>,
}

impl Committed {
    pub fn new(cell: Cell) -> Self {
        Committed { cell, cache: None }
    }

    /// Rendered lines, from the cache when width and options are unchanged.
    pub fn lines(&mut self, theme: &Theme, width: usize, opts: RenderOpts) -> &[Line<'static>] {
        let stale = !matches!(&self.cache, Some((w, o, _)) if *w == width && *o == opts);
        if stale {
            self.cache = Some((width, opts, self.cell.render(theme, width, opts)));
        }
        match &self.cache {
            Some((_, _, l)) => l,
            None => &[],
        }
    }

    /// Change the cell; drops the cached rendering.
    pub fn edit(&mut self) -> &mut Cell {
        self.cache = None;
        &mut self.cell
    }
}

/// Messages typed while the agent works, shown until delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Queued {
    Steer(String),
    FollowUp(String),
}

/// The whole UI state.
pub struct AppState {
    pub theme: Theme,
    pub cells: Vec<Committed>,
    /// The assistant message being streamed, and its tool calls (content index → cell).
    pub live: Option<Cell>,
    live_index: HashMap<usize, usize>,
    pub live_tools: Vec<ToolCell>,
    /// Finished paragraphs of the live message, rendered once.
    pub live_cache: crate::live::LiveCache,
    live_tool_index: HashMap<usize, usize>,
    /// Tool call id → index into `cells`.
    tool_cells: HashMap<String, usize>,
    pub running: bool,
    /// A transient status line (compaction, retry wait).
    pub status: Option<String>,
    pub queued: Vec<Queued>,
    /// A prompt sent but not yet seen as a user message (put back in the editor if it fails).
    pub pending_prompt: Option<String>,
    pub editor: Editor,
    pub overlay: Option<Overlay>,
    /// History lines scrolled up from the bottom.
    pub scroll: usize,
    /// Rows of the history area at the last frame (a page for PageUp / PageDown).
    pub page_rows: usize,
    pub opts: RenderOpts,
    pub footer: FooterInfo,
    /// When Ctrl+C was pressed on an empty editor (a second press quits).
    pub quit_armed: Option<Instant>,
    pub should_quit: bool,
    /// The spinner frame while working.
    pub tick: usize,
    deltas: usize,
    /// The images of the conversation's cells.
    pub image_store: crate::images::ImageStore,
    /// The images drawn on screen now (redrawn only when this changes).
    pub shown_images: Vec<crate::images::Placement>,
    /// Where the editor's cursor was drawn in the last frame (`None`: an overlay had the keys).
    pub cursor_at: Option<ratatui::layout::Position>,
    /// A compaction is running (the terminal's progress indicator stays on).
    pub compacting: bool,
    /// pi's terminal settings.
    pub prefs: TermPrefs,
}

/// pi's terminal and editor settings, as the UI follows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TermPrefs {
    /// `editorPaddingX`: blank columns each side of the editor's text.
    pub editor_padding: u16,
    /// `autocompleteMaxVisible`: rows of the completion list.
    pub autocomplete_max: usize,
    /// `showHardwareCursor`: the terminal's cursor shown at the editor's (else hidden; the
    /// editor draws its own).
    pub hardware_cursor: bool,
    /// `terminal.clearOnShrink`: a full repaint when the drawn content gets shorter.
    pub clear_on_shrink: bool,
    /// `terminal.showTerminalProgress`: OSC 9;4 while the agent works.
    pub progress: bool,
}

impl Default for TermPrefs {
    fn default() -> Self {
        TermPrefs {
            editor_padding: 0,
            autocomplete_max: 5,
            hardware_cursor: false,
            clear_on_shrink: false,
            progress: false,
        }
    }
}

fn user_text(content: &UserContent) -> (String, usize) {
    match content {
        UserContent::Text(s) => (s.clone(), 0),
        UserContent::Blocks(b) => {
            let text = b
                .iter()
                .filter_map(ContentBlock::as_text)
                .collect::<Vec<_>>()
                .join("\n");
            let images = b
                .iter()
                .filter(|c| matches!(c, ContentBlock::Image(_)))
                .count();
            (text, images)
        }
    }
}

fn output_text(out: &ToolOutput) -> String {
    out.content
        .iter()
        .filter_map(ContentBlock::as_text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The image blocks of `content`, kept in `store`.
fn image_refs(
    store: &mut crate::images::ImageStore,
    content: &[ContentBlock],
) -> Vec<crate::images::ImageRef> {
    content
        .iter()
        .filter_map(|c| match c {
            ContentBlock::Image(i) => Some(store.add(&i.data, &i.mime_type)),
            _ => None,
        })
        .collect()
}

/// The assistant cell of a finished message.
pub fn assistant_cell(m: &AssistantMessage) -> Cell {
    let mut blocks = Vec::new();
    let mut images = 0;
    for b in &m.content {
        match b {
            ContentBlock::Text(t) => blocks.push(AssistantBlock::Text(t.text.clone())),
            ContentBlock::Thinking(t) => blocks.push(AssistantBlock::Thinking(t.thinking.clone())),
            ContentBlock::Image(_) => images += 1,
            ContentBlock::ToolCall(_) => {}
        }
    }
    let error = match m.stop_reason {
        StopReason::Aborted => Some(
            m.error_message
                .clone()
                .filter(|e| !e.is_empty() && e != "Request was aborted")
                .unwrap_or_else(|| "Aborted".into()),
        ),
        StopReason::Error => Some(format!(
            "Error: {}",
            m.error_message.as_deref().unwrap_or("unknown error")
        )),
        StopReason::Stop
        | StopReason::Length
        | StopReason::ToolUse
        | StopReason::Deferred
        | StopReason::Pending => None,
    };
    Cell::Assistant {
        blocks,
        error,
        images,
    }
}

impl AppState {
    pub fn new(theme: Theme, footer: FooterInfo) -> Self {
        AppState {
            theme,
            cells: Vec::new(),
            live: None,
            live_index: HashMap::new(),
            live_tools: Vec::new(),
            live_cache: crate::live::LiveCache::default(),
            live_tool_index: HashMap::new(),
            tool_cells: HashMap::new(),
            running: false,
            status: None,
            queued: Vec::new(),
            pending_prompt: None,
            editor: Editor::default(),
            overlay: None,
            scroll: 0,
            page_rows: 10,
            opts: RenderOpts::default(),
            footer,
            quit_armed: None,
            should_quit: false,
            tick: 0,
            deltas: 0,
            image_store: Default::default(),
            shown_images: Vec::new(),
            compacting: false,
            cursor_at: None,
            prefs: TermPrefs::default(),
        }
    }

    /// Switch theme; every cached rendering is dropped.
    pub fn set_theme(&mut self, mut theme: Theme) {
        theme.code_block_indent = std::mem::take(&mut self.theme.code_block_indent);
        self.theme = theme;
        for c in &mut self.cells {
            c.edit();
        }
        self.live_cache.clear();
    }

    /// `markdown.codeBlockIndent`: messages already drawn are drawn again with it.
    pub fn set_code_block_indent(&mut self, indent: &str) {
        if self.theme.code_block_indent != indent {
            let mut theme = self.theme.clone();
            theme.code_block_indent = indent.to_string();
            self.theme = theme;
            for c in &mut self.cells {
                c.edit();
            }
            self.live_cache.clear();
        }
    }

    pub fn push(&mut self, cell: Cell) {
        if let Cell::Tool(t) = &cell {
            self.tool_cells.insert(t.id.clone(), self.cells.len());
        }
        self.cells.push(Committed::new(cell));
    }

    /// Show a conversation loaded from the session (resume, fork, switch).
    pub fn load_messages(&mut self, messages: &[AgentMessage]) {
        self.cells.clear();
        self.tool_cells.clear();
        self.live = None;
        self.live_tools.clear();
        for m in messages {
            match m {
                AgentMessage::Llm(Message::User(u)) => self.push_user(&u.content),
                AgentMessage::Llm(Message::Assistant(a)) => {
                    self.push(assistant_cell(a));
                    for tc in a.tool_calls() {
                        self.push(Cell::Tool(tool_from_call(
                            tc.id.clone(),
                            &tc.name,
                            tc.arguments.clone(),
                        )));
                    }
                }
                AgentMessage::Llm(Message::ToolResult(r)) => {
                    let out = ToolOutput {
                        content: r.content.clone(),
                        details: r.details.clone(),
                    };
                    self.finish_tool(&r.tool_call_id, &r.tool_name, &out, r.is_error);
                }
                AgentMessage::Custom(c) => self.custom_message(c),
            }
        }
    }

    /// A user message: its text, then its images.
    fn push_user(&mut self, content: &UserContent) {
        let (text, _) = user_text(content);
        self.push(Cell::User(text));
        if let UserContent::Blocks(b) = content {
            let refs = image_refs(&mut self.image_store, b);
            if !refs.is_empty() {
                self.push(Cell::Images(refs));
            }
        }
    }

    fn custom_message(&mut self, c: &filo_agent::CustomMessage) {
        let get = |k: &str| c.fields.get(k);
        match c.role.as_str() {
            "bashExecution" => self.push(Cell::Bash {
                command: get("command").and_then(|v| v.as_str()).unwrap_or("").into(),
                output: get("output").and_then(|v| v.as_str()).unwrap_or("").into(),
                exit_code: get("exitCode")
                    .and_then(|v| v.as_i64())
                    .and_then(|v| i32::try_from(v).ok()),
                excluded: get("excludeFromContext")
                    .and_then(|v| v.as_bool())
                    .unwrap_or(false),
                done: true,
            }),
            "compactionSummary" => self.push(Cell::Info(
                "[compacted: earlier messages summarized]".into(),
            )),
            "branchSummary" => self.push(Cell::Info("[branch summary]".into())),
            _ => {
                if get("display").and_then(|v| v.as_bool()).unwrap_or(false) {
                    let text = match get("content") {
                        Some(serde_json::Value::String(s)) => s.clone(),
                        _ => format!("[{}]", c.role),
                    };
                    self.push(Cell::Info(text));
                }
            }
        }
    }

    fn finish_tool(&mut self, id: &str, name: &str, out: &ToolOutput, is_error: bool) {
        let text = output_text(out);
        let images = image_refs(&mut self.image_store, &out.content);
        let jumped = text.starts_with("Time travel initiated");
        let idx = match self.tool_cells.get(id) {
            Some(i) => *i,
            None => {
                self.push(Cell::Tool(tool_from_call(
                    id.into(),
                    name,
                    serde_json::Value::Null,
                )));
                self.cells.len() - 1
            }
        };
        if let Some(Cell::Tool(t)) = self.cells.get_mut(idx).map(Committed::edit) {
            t.output = text;
            t.images = images;
            t.details.clone_from(&out.details);
            t.is_error = is_error;
            t.done = true;
        }
        // `tobe` reports refusals as ordinary results (pi compatible): only its start text means
        // the jump happened.
        if name == "tobe" && !is_error && jumped {
            self.push(Cell::Info(
                "⟲ Time travel: the agent continues from an earlier node; what is above no longer is its context (see /life).".into(),
            ));
        }
    }

    /// Move the live message and its tool panels into history.
    fn commit_live(&mut self) {
        if let Some(cell) = self.live.take() {
            let empty = matches!(&cell, Cell::Assistant { blocks, error: None, images: 0 } if blocks.iter().all(|b| matches!(b, AssistantBlock::Text(t) if t.trim().is_empty())));
            if !empty {
                self.push(cell);
            }
        }
        for t in std::mem::take(&mut self.live_tools) {
            if !self.tool_cells.contains_key(&t.id) {
                self.push(Cell::Tool(t));
            }
        }
        self.live_index.clear();
        self.live_tool_index.clear();
        self.live_cache.clear();
    }

    /// Apply one session event.
    pub fn apply(&mut self, ev: &SessionEvent) {
        match ev {
            SessionEvent::Agent(a) => self.apply_agent(a),
            SessionEvent::CompactionStart { reason } => {
                self.status = Some(format!("Compacting context ({})…", reason.as_str()));
                self.compacting = true;
            }
            SessionEvent::CompactionEnd {
                result,
                aborted,
                error_message,
                ..
            } => {
                self.status = None;
                self.compacting = false;
                match (result, aborted, error_message) {
                    (Some(r), _, _) => self.push(Cell::Info(format!(
                        "Context compacted ({} tokens before).",
                        r.tokens_before
                    ))),
                    (None, true, _) => self.push(Cell::Info("Compaction aborted.".into())),
                    (None, false, Some(e)) => {
                        self.push(Cell::Error(format!("Compaction failed: {e}")))
                    }
                    (None, false, None) => {}
                }
            }
            SessionEvent::AutoRetryStart {
                attempt,
                max_attempts,
                delay_ms,
                error_message,
            } => {
                self.push(Cell::Warning(format!(
                    "{error_message} — retrying ({attempt}/{max_attempts}) in {:.1}s",
                    *delay_ms as f64 / 1000.0
                )));
                self.status = Some(format!("Retrying ({attempt}/{max_attempts})…"));
            }
            SessionEvent::AutoRetryEnd {
                success,
                final_error,
                ..
            } => {
                self.status = None;
                if !success {
                    let e = final_error.as_deref().unwrap_or("retries exhausted");
                    self.push(Cell::Error(format!("Retry failed: {e}")));
                }
            }
            SessionEvent::Warning { message } => self.push(Cell::Warning(message.clone())),
            // Shown by the footer, which the app refreshes on these.
            SessionEvent::QueueUpdate { .. }
            | SessionEvent::SessionInfoChanged { .. }
            | SessionEvent::ThinkingLevelChanged { .. } => {}
            // The run's end is shown by `agent_end`; a `!command`'s output by its result.
            SessionEvent::AgentSettled { .. } | SessionEvent::BashExecutionUpdate { .. } => {}
        }
    }

    fn apply_agent(&mut self, ev: &AgentEvent) {
        match ev {
            AgentEvent::AgentStart => self.running = true,
            AgentEvent::AgentEnd { .. } => {
                self.commit_live();
                self.running = false;
            }
            AgentEvent::TurnStart | AgentEvent::TurnEnd { .. } => {}
            AgentEvent::MessageStart { message } => self.message_start(message),
            AgentEvent::MessageUpdate { partial, event } => {
                self.stream_event(partial.message(), event)
            }
            AgentEvent::MessageEnd { message } => {
                if let AgentMessage::Llm(Message::Assistant(a)) = message {
                    self.live = Some(assistant_cell(a));
                    for tc in a.tool_calls() {
                        match self.live_tools.iter_mut().find(|t| t.id == tc.id) {
                            Some(t) => t.args = tc.arguments.clone(),
                            None => self.live_tools.push(tool_from_call(
                                tc.id.clone(),
                                &tc.name,
                                tc.arguments.clone(),
                            )),
                        }
                    }
                    self.footer.add_usage(a);
                    self.commit_live();
                }
            }
            AgentEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
            } => {
                self.commit_live();
                match self.tool_cells.get(tool_call_id) {
                    Some(i) => {
                        if let Some(Cell::Tool(t)) = self.cells.get_mut(*i).map(Committed::edit) {
                            t.args = args.clone();
                        }
                    }
                    None => self.push(Cell::Tool(tool_from_call(
                        tool_call_id.clone(),
                        tool_name,
                        args.clone(),
                    ))),
                }
            }
            AgentEvent::ToolExecutionUpdate {
                tool_call_id,
                partial_result,
                ..
            } => {
                if let Some(i) = self.tool_cells.get(tool_call_id).copied()
                    && let Some(Cell::Tool(t)) = self.cells.get_mut(i).map(Committed::edit)
                {
                    t.output = output_text(partial_result);
                }
            }
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                tool_name,
                result,
                is_error,
                ..
            } => self.finish_tool(tool_call_id, tool_name, result, *is_error),
        }
    }

    fn message_start(&mut self, message: &AgentMessage) {
        match message {
            AgentMessage::Llm(Message::User(u)) => {
                self.pending_prompt = None;
                let (text, _) = user_text(&u.content);
                if let Some(pos) = self
                    .queued
                    .iter()
                    .position(|q| matches!(q, Queued::Steer(t) | Queued::FollowUp(t) if *t == text))
                {
                    self.queued.remove(pos);
                }
                self.push_user(&u.content);
            }
            AgentMessage::Llm(Message::Assistant(_)) => {
                self.commit_live();
                self.deltas = 0;
                self.live = Some(Cell::Assistant {
                    blocks: Vec::new(),
                    error: None,
                    images: 0,
                });
            }
            AgentMessage::Llm(Message::ToolResult(_)) => {}
            AgentMessage::Custom(c) => self.custom_message(c),
        }
    }

    /// Apply one streaming delta to the live cell (deltas only; no copy of the whole message).
    fn stream_event(&mut self, partial: &AssistantMessage, event: &AssistantEvent) {
        let Some(Cell::Assistant { blocks, .. }) = self.live.as_mut() else {
            return;
        };
        match event {
            AssistantEvent::TextStart { index } => {
                self.live_index.insert(*index, blocks.len());
                blocks.push(AssistantBlock::Text(String::new()));
            }
            AssistantEvent::ThinkingStart { index } => {
                self.live_index.insert(*index, blocks.len());
                blocks.push(AssistantBlock::Thinking(String::new()));
            }
            AssistantEvent::TextDelta { index, delta }
            | AssistantEvent::ThinkingDelta { index, delta } => {
                if let Some(AssistantBlock::Text(t) | AssistantBlock::Thinking(t)) =
                    self.live_index.get(index).and_then(|i| blocks.get_mut(*i))
                {
                    t.push_str(delta);
                }
            }
            AssistantEvent::ToolCallStart { index, id, name } => {
                self.live_tool_index.insert(*index, self.live_tools.len());
                self.live_tools
                    .push(tool_from_call(id.clone(), name, serde_json::Value::Null));
            }
            AssistantEvent::ToolCallDelta { index, .. } => {
                // Re-read the best-effort arguments every few deltas (a large `write` streams many).
                self.deltas += 1;
                if self.deltas % 8 == 1 {
                    self.refresh_tool_args(partial, *index);
                }
            }
            AssistantEvent::ToolCallEnd { index, tool_call } => {
                if let Some(t) = self
                    .live_tool_index
                    .get(index)
                    .and_then(|i| self.live_tools.get_mut(*i))
                {
                    t.args = tool_call.arguments.clone();
                }
            }
            AssistantEvent::Start { .. }
            | AssistantEvent::TextEnd { .. }
            | AssistantEvent::ThinkingEnd { .. }
            | AssistantEvent::Done { .. }
            | AssistantEvent::Error { .. } => {}
        }
    }

    fn refresh_tool_args(&mut self, partial: &AssistantMessage, index: usize) {
        if let (Some(ContentBlock::ToolCall(tc)), Some(i)) =
            (partial.content.get(index), self.live_tool_index.get(&index))
            && let Some(t) = self.live_tools.get_mut(*i)
        {
            t.args = tc.arguments.clone();
        }
    }
}

/// A pending tool panel.
pub fn tool_from_call(id: String, name: &str, args: serde_json::Value) -> ToolCell {
    ToolCell {
        id,
        name: name.to_string(),
        args,
        output: String::new(),
        details: None,
        images: Vec::new(),
        is_error: false,
        done: false,
    }
}
