//! The app loop: one `select!` over terminal input, session events, results of spawned work and a
//! redraw timer. Nothing here awaits the model: prompts, aborts, compaction and session switches
//! run in spawned tasks that report back on a channel. A frame is drawn only when something
//! changed, at most one per [`FRAME`]; with nothing running there is no timer at all.

use std::io::Write;
use std::time::{Duration, Instant};

use crossterm::event::{Event, EventStream, KeyEventKind};
use filo_core::{AgentSession, PromptOptions, SessionEvent};
use futures::StreamExt;
use ratatui::Terminal;
use ratatui::backend::Backend;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use crate::cells::Cell;
use crate::overlay::OverlayAction;
use crate::state::{AppState, Queued};
use crate::{TuiError, TuiOptions, completion, view};

/// Shortest time between two frames (caps redraws at ~60/s while streaming).
const FRAME: Duration = Duration::from_millis(16);
/// Spinner step while the agent works.
const SPIN: Duration = Duration::from_millis(80);
/// Two Escapes closer than this open `/tree` (or `/fork`, as `doubleEscapeAction` says).
pub(crate) const DOUBLE_ESCAPE: Duration = Duration::from_millis(500);
/// How long a first Ctrl+C waits for the second.
const QUIT_WINDOW: Duration = Duration::from_millis(1500);

/// Results of spawned work.
#[derive(Debug)]
pub enum AppEvent {
    PromptDone(Option<String>),
    BashDone {
        cell: usize,
        output: String,
        exit_code: Option<i32>,
    },
    Info(String),
    Error(String),
    /// The session changed under us (new, resume, fork): reload history and footer.
    Reload,
    /// [`AppEvent::Reload`], then say what happened.
    Reloaded(String),
    /// What `/reload` read.
    ResourcesLoaded(Box<crate::Reloaded>),
    /// Put text in the editor (fork).
    EditorText(String),
    /// The `/life` view, loaded off the event loop (or why it could not be).
    Life(Box<Result<crate::life::LifeView, String>>),
}

/// The running app: state plus the session it drives. [`run`](crate::run) owns one; tests drive
/// one headless by feeding it terminal events, session events and [`AppEvent`]s.
pub struct App {
    pub(crate) state: AppState,
    pub(crate) session: AgentSession,
    pub(crate) options: TuiOptions,
    pub(crate) tx: UnboundedSender<AppEvent>,
    pub(crate) files: completion::FileIndex,
    /// When Escape was last pressed with nothing to interrupt (twice opens `/tree`, as pi).
    pub(crate) last_escape: Option<Instant>,
    /// Work that needs the terminal to itself (external editor, suspend), done by the loop.
    pub(crate) job: Option<crate::term::TermJob>,
}

impl App {
    pub fn new(session: AgentSession, options: TuiOptions, tx: UnboundedSender<AppEvent>) -> App {
        let mut footer = crate::footer_info(&session);
        footer.sandbox = options.sandbox.clone();
        let state = AppState::new(options.theme.clone(), footer);
        let mut app = App {
            state,
            session,
            files: completion::FileIndex::new(options.cwd.clone()),
            last_escape: None,
            job: None,
            options,
            tx,
        };
        app.state.editor.keys = app.options.keybindings.clone();
        app.apply_ui_settings();
        app.state.load_messages(&app.session.messages());
        app.welcome();
        app
    }

    /// The UI state (what the next frame shows).
    pub fn state(&self) -> &AppState {
        &self.state
    }

    pub fn state_mut(&mut self) -> &mut AppState {
        &mut self.state
    }

    fn welcome(&mut self) {
        let verbose = self.options.verbose;
        let quiet = !verbose && filo_core::ui_settings::quiet_startup(&self.session.settings());
        if self.state.cells.is_empty() && !quiet {
            self.state.push(Cell::Info(format!(
                "filo {} — enter to send · shift+enter newline · esc to interrupt · ctrl+c twice to exit · / for commands · ! for bash · @ for files",
                env!("CARGO_PKG_VERSION")
            )));
        }
        if verbose {
            for line in loaded_report(&self.session) {
                self.state.push(Cell::Info(line));
            }
        }
        for n in self.session.notices().to_vec() {
            self.state.push(Cell::Info(n));
        }
        for w in self.options.warnings.clone() {
            self.state.push(Cell::Warning(w));
        }
        if let Some(m) = self.session.model_fallback_message() {
            let m = m.to_string();
            self.state.push(Cell::Warning(m));
        }
    }

    /// Reload history and footer after the session was replaced.
    pub(crate) fn reload(&mut self) {
        self.state.load_messages(&self.session.messages());
        self.refresh_footer();
        self.state.scroll = 0;
    }

    /// Apply a session event; after a warning or the end of a run the footer is refreshed, so a
    /// session file that cannot be written stays flagged until it holds the session again.
    pub fn on_session_event(&mut self, ev: &SessionEvent) {
        self.state.apply(ev);
        if matches!(
            ev,
            SessionEvent::Warning { .. }
                | SessionEvent::QueueUpdate { .. }
                | SessionEvent::SessionInfoChanged { .. }
                | SessionEvent::ThinkingLevelChanged { .. }
                | SessionEvent::Agent(filo_agent::AgentEvent::AgentEnd { .. })
        ) {
            self.refresh_footer();
        }
    }

    /// The session this app drives.
    pub fn session(&self) -> &AgentSession {
        &self.session
    }

    pub(crate) fn refresh_footer(&mut self) {
        let usage = self.state.footer.clone();
        let mut f = crate::footer_info(&self.session);
        f.input = usage.input;
        f.output = usage.output;
        f.cache_read = usage.cache_read;
        f.cache_write = usage.cache_write;
        f.cost = usage.cost;
        f.context_tokens = usage.context_tokens;
        f.sandbox = usage.sandbox;
        self.state.footer = f;
    }

    /// One screen of history, less two lines of overlap.
    pub(crate) fn page(&self) -> usize {
        self.state.page_rows.saturating_sub(2).max(1)
    }

    /// Send a prompt: while the agent works, queue it (steer, or follow-up); else run it in a task.
    pub(crate) fn send(&mut self, text: String, follow_up: bool) {
        self.send_with_images(text, follow_up, Vec::new());
    }

    pub(crate) fn send_with_images(
        &mut self,
        text: String,
        follow_up: bool,
        images: Vec<filo_ai::ContentBlock>,
    ) {
        if self.state.running {
            if follow_up {
                self.session.follow_up(&text, images);
                self.state.queued.push(Queued::FollowUp(text));
            } else {
                self.session.steer(&text, images);
                self.state.queued.push(Queued::Steer(text));
            }
            return;
        }
        self.state.running = true;
        self.state.scroll = 0;
        self.state.pending_prompt = Some(text.clone());
        let session = self.session.clone();
        let tx = self.tx.clone();
        tokio::spawn(async move {
            let opts = PromptOptions {
                images,
                ..PromptOptions::default()
            };
            let r = session.prompt(&text, opts).await;
            let _ = tx.send(AppEvent::PromptDone(
                r.err().map(|e| filo_core::error_chain(&e)),
            ));
        });
    }

    /// Jump to a node from `/life`, then let the agent answer in the new timeline.
    fn travel(&mut self, node_id: &str, note: &str) {
        let Some(src) = self.options.life.clone() else {
            return;
        };
        if let Err(e) = (src.travel)(node_id, note) {
            self.state.push(Cell::Error(e.to_string()));
            return;
        }
        self.state.push(Cell::Info(format!(
            "Time travel to {} — carryover: {note}",
            filo_dag::short_id(node_id)
        )));
        self.state.running = true;
        self.state.scroll = 0;
        let session = self.session.clone();
        let tx = self.tx.clone();
        tokio::spawn(async move {
            let r = session.continue_run().await;
            let _ = tx.send(AppEvent::PromptDone(
                r.err().map(|e| filo_core::error_chain(&e)),
            ));
        });
    }

    /// Run `!cmd` / `!!cmd`.
    fn user_bash(&mut self, command: String, excluded: bool) {
        let cell = self.state.cells.len();
        self.state.push(Cell::Bash {
            command: command.clone(),
            output: String::new(),
            exit_code: None,
            excluded,
            done: false,
        });
        let session = self.session.clone();
        let tx = self.tx.clone();
        tokio::spawn(async move {
            let ev = match session.execute_bash(&command, excluded).await {
                Ok(r) => AppEvent::BashDone {
                    cell,
                    output: r.output,
                    exit_code: if r.cancelled { None } else { r.exit_code },
                },
                Err(e) => AppEvent::BashDone {
                    cell,
                    output: filo_core::error_chain(&e),
                    exit_code: Some(-1),
                },
            };
            let _ = tx.send(ev);
        });
    }

    pub(crate) fn abort(&mut self) {
        let restored: Vec<String> = self
            .state
            .queued
            .drain(..)
            .map(|q| match q {
                Queued::Steer(t) | Queued::FollowUp(t) => t,
            })
            .collect();
        if !restored.is_empty() {
            self.session.clear_queue();
            let mut text = restored.join("\n\n");
            if !self.state.editor.is_empty() {
                text = format!("{text}\n\n{}", self.state.editor.text);
            }
            self.state.editor.set_text(&text);
        }
        self.session.abort_bash();
        let session = self.session.clone();
        tokio::spawn(async move { session.abort().await });
    }

    /// Enter (or Alt+Enter) in the editor.
    pub(crate) fn submit(&mut self, text: String, follow_up: bool) {
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return;
        }
        if let Some(cmd) = trimmed.strip_prefix("!!") {
            self.user_bash(cmd.trim().to_string(), true);
        } else if let Some(cmd) = trimmed.strip_prefix('!') {
            self.user_bash(cmd.trim().to_string(), false);
        } else {
            // A built-in command runs here; any other `/…` goes to the session, which expands
            // prompt templates and skills and runs extension commands.
            let handled = trimmed.starts_with('/') && self.run_command(trimmed);
            if !handled {
                self.send(trimmed.to_string(), follow_up);
            }
        }
    }

    pub fn on_app_event(&mut self, ev: AppEvent) {
        match ev {
            AppEvent::PromptDone(err) => {
                if !self.session.is_streaming() {
                    self.state.running = false;
                }
                if let Some(e) = err {
                    self.state.push(Cell::Error(e));
                    // Refused before it reached the agent: give the text back.
                    if let Some(t) = self.state.pending_prompt.take()
                        && self.state.editor.is_empty()
                    {
                        self.state.editor.set_text(&t);
                    }
                }
                self.state.pending_prompt = None;
            }
            AppEvent::BashDone {
                cell,
                output,
                exit_code,
            } => {
                if let Some(Cell::Bash {
                    output: o,
                    exit_code: c,
                    done,
                    ..
                }) = self
                    .state
                    .cells
                    .get_mut(cell)
                    .map(crate::state::Committed::edit)
                {
                    *o = output;
                    *c = exit_code;
                    *done = true;
                }
            }
            AppEvent::Info(m) => self.state.push(Cell::Info(m)),
            AppEvent::Error(m) => self.state.push(Cell::Error(m)),
            AppEvent::Reload => {
                self.state.status = None;
                self.reload();
            }
            AppEvent::Reloaded(m) => {
                self.state.status = None;
                self.reload();
                self.state.push(Cell::Info(m));
            }
            AppEvent::ResourcesLoaded(loaded) => self.apply_reload(*loaded),
            AppEvent::EditorText(t) => self.state.editor.set_text(&t),
            AppEvent::Life(view) => match *view {
                Ok(v) => self.state.overlay = Some(crate::overlay::Overlay::Life(v)),
                Err(e) => self.state.push(Cell::Error(e)),
            },
        }
    }

    pub fn on_terminal(&mut self, ev: Event) -> bool {
        match ev {
            Event::Key(k) if k.kind != KeyEventKind::Release => self.on_key(k),
            Event::Paste(s) => {
                if self.state.overlay.is_none() {
                    self.state.editor.paste(&s);
                }
            }
            Event::Resize(_, _) => {}
            Event::Key(_) | Event::FocusGained | Event::FocusLost | Event::Mouse(_) => {
                return false;
            }
        }
        true
    }

    pub(crate) fn on_overlay_action(&mut self, action: OverlayAction) {
        match action {
            OverlayAction::None => {}
            OverlayAction::Close => self.state.overlay = None,
            OverlayAction::Chosen(kind, value) => {
                self.state.overlay = None;
                self.chosen(kind, value);
            }
            OverlayAction::Recall => self.life_recall(),
            OverlayAction::Jump { node_id, note } => {
                self.state.overlay = None;
                self.travel(&node_id, &note);
            }
            OverlayAction::OpenSession(path) => {
                self.state.overlay = None;
                self.open_session(path);
            }
            OverlayAction::Scope(a) => self.scope_action(a),
            OverlayAction::SetLabel { id, label } => {
                let r = self
                    .session
                    .session_manager()
                    .append_label_change(&id, label.as_deref());
                if let Err(e) = r {
                    self.state
                        .push(Cell::Error(format!("Could not set the label: {e}")));
                }
            }
            OverlayAction::RenameCurrent(name) => {
                self.session.set_session_name(&name);
                self.refresh_footer();
            }
        }
    }
}

/// Draw a frame: the images it places, and whether the content got shorter than before with
/// `terminal.clearOnShrink` on (then the caller clears the screen and draws again).
fn draw_frame<B: Backend>(
    terminal: &mut Terminal<B>,
    state: &mut AppState,
    screen: &mut crate::screen::Screen,
) -> Result<(Vec<crate::images::Placement>, bool), TuiError>
where
    B::Error: Into<std::io::Error>,
{
    let drawn = terminal
        .draw(|f| view::draw(f, state))
        .map_err(|e| TuiError::Io(e.into()))?;
    let clear = state.prefs.clear_on_shrink;
    let rows = if clear {
        crate::screen::content_rows(drawn.buffer)
    } else {
        0
    };
    let placed = crate::images::placements(drawn.buffer, &state.image_store, state.opts.images);
    Ok((placed, screen.shrunk(rows, clear, state.overlay.is_some())))
}

/// Clear the screen and make the next draw paint every cell. Not ratatui's `Terminal::clear`:
/// that one first asks the terminal where its cursor is and waits for the answer on stdin, which
/// the input stream may read first — the clear then stalls for seconds and fails.
fn clear_screen<B: Backend>(terminal: &mut Terminal<B>) -> Result<(), TuiError>
where
    B::Error: Into<std::io::Error>,
{
    terminal
        .backend_mut()
        .clear_region(ratatui::backend::ClearType::All)
        .map_err(|e| TuiError::Io(e.into()))?;
    // Both buffers are blank after one more swap, so the next frame is diffed against nothing.
    terminal.swap_buffers();
    Ok(())
}

/// Drive the app until the user quits.
pub(crate) async fn run_loop<B: Backend>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    mut app_rx: UnboundedReceiver<AppEvent>,
    mut session_rx: UnboundedReceiver<SessionEvent>,
) -> Result<(), TuiError>
where
    B::Error: Into<std::io::Error>,
{
    let mut input = EventStream::new();
    #[cfg(unix)]
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(TuiError::Io)?;
    let mut dirty = true;
    let mut last_draw = Instant::now() - FRAME;
    let mut spin = tokio::time::interval(SPIN);
    spin.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut screen = crate::screen::Screen::default();
    loop {
        let busy = app.state.running || app.state.compacting;
        screen.progress(busy, app.state.prefs.progress, &mut std::io::stdout());
        if dirty && last_draw.elapsed() >= FRAME {
            let (mut placed, shrunk) = draw_frame(terminal, &mut app.state, &mut screen)?;
            if shrunk {
                // The content got shorter (`terminal.clearOnShrink`): clear, paint it all.
                clear_screen(terminal)?;
                app.state.shown_images.clear();
                placed = draw_frame(terminal, &mut app.state, &mut screen)?.0;
            }
            let state = &mut app.state;
            if placed != state.shown_images {
                if let Some(d) = state.opts.images {
                    crate::images::write_images(
                        &mut std::io::stdout(),
                        d.protocol,
                        &placed,
                        &state.image_store,
                    )?;
                }
                state.shown_images = placed;
            }
            if let (false, Some(at)) = (state.prefs.hardware_cursor, state.cursor_at) {
                // Hidden, but where the editor's cursor is (input methods place their window
                // there), as pi keeps it.
                terminal
                    .set_cursor_position(at)
                    .map_err(|e| TuiError::Io(e.into()))?;
            }
            last_draw = Instant::now();
            dirty = false;
        }
        if app.state.should_quit {
            screen.progress(false, true, &mut std::io::stdout());
            return Ok(());
        }
        if let Some(job) = app.job.take() {
            // A job starts from a key the input stream has just returned, so nothing reads the
            // terminal while another program (or the shell) has it: the stream reads only while
            // it is polled. (Dropping it instead would leave a wake-up pending that makes the
            // next cursor query fail.)
            crate::term::run_job(job, app);
            clear_screen(terminal)?;
            app.state.shown_images.clear();
            dirty = true;
            continue;
        }
        let animating =
            app.state.running || app.state.status.is_some() || app.state.quit_armed.is_some();
        let wait = FRAME.saturating_sub(last_draw.elapsed());
        #[cfg(unix)]
        let term = sigterm.recv();
        #[cfg(not(unix))]
        let term = std::future::pending::<Option<()>>();
        tokio::select! {
            ev = input.next() => match ev {
                Some(Ok(ev)) => dirty |= app.on_terminal(ev),
                Some(Err(e)) => return Err(TuiError::Io(e)),
                None => return Ok(()),
            },
            Some(ev) = session_rx.recv() => {
                app.on_session_event(&ev);
                while let Ok(ev) = session_rx.try_recv() {
                    app.on_session_event(&ev);
                }
                dirty = true;
            }
            Some(ev) = app_rx.recv() => {
                app.on_app_event(ev);
                dirty = true;
            }
            _ = tokio::time::sleep(wait), if dirty => {}
            _ = spin.tick(), if animating && !dirty => {
                app.state.tick += 1;
                if app.state.quit_armed.is_some_and(|t| t.elapsed() > QUIT_WINDOW) {
                    app.state.quit_armed = None;
                }
                dirty = true;
            }
            _ = term => return Ok(()),
        }
    }
}

/// Copy text to the clipboard with OSC 52 (works over SSH and in tmux with `set-clipboard on`).
pub(crate) fn osc52_copy(text: &str) -> std::io::Result<()> {
    use base64::Engine;
    let data = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
    let mut out = std::io::stdout().lock();
    write!(out, "\x1b]52;c;{data}\x07")?;
    out.flush()
}

/// What `--verbose` lists at start: each kind of resource that was loaded, one line each.
fn loaded_report(session: &filo_core::AgentSession) -> Vec<String> {
    let r = session.resources();
    let list = |label: &str, items: Vec<String>| {
        (!items.is_empty()).then(|| format!("{label}: {}", items.join(", ")))
    };
    [
        list(
            "Context files",
            r.context_files
                .iter()
                .map(|c| c.path.display().to_string())
                .collect(),
        ),
        list("Skills", r.skills.iter().map(|s| s.name.clone()).collect()),
        list(
            "Prompt templates",
            r.templates.iter().map(|t| format!("/{}", t.name)).collect(),
        ),
        list(
            "Scoped models",
            session
                .scoped_models()
                .iter()
                .map(|m| match m.thinking {
                    Some(level) => {
                        format!("{}/{}:{}", m.model.provider, m.model.id, level.as_str())
                    }
                    None => format!("{}/{}", m.model.provider, m.model.id),
                })
                .collect(),
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}
