//! The interactive terminal UI.
//!
//! Owns: the ratatui app loop, conversation view, editor, slash commands, the /life view, themes.
//!
//! Does not own: agent logic: it drives filo-core's AgentSession; argument parsing and session
//! setup (filo-cli); the DAG's schema and renderers (filo-dag).
//!
//! Invariants: the loop never awaits the model — prompts and other slow work run in spawned
//! tasks; frames are rendered from [`state::AppState`] only, so every state can be drawn on a
//! test backend without a session; the terminal is restored on every exit path (return, error,
//! panic, SIGTERM).

pub mod app;
pub use trust::{ProjectTrust, ask_project_trust};
mod app_keys;
pub mod cells;
mod commands;
mod commands_pi073;
pub mod completion;
pub mod editor;
mod editor_edit;
pub mod hotkeys;
pub mod images;
pub mod keybindings;
pub mod life;
pub mod live;
pub mod markdown;
pub mod overlay;
pub mod picker_view;
pub mod scoped_models;
mod screen;
pub mod session_picker;
pub mod session_search;
mod settings;
pub mod state;
pub mod term;
pub mod text;
pub mod theme;
pub mod theme_catalog;
pub mod tree;
pub mod tree_view;
mod trust;
pub mod view;

use std::path::PathBuf;
use std::sync::Arc;

use crossterm::event::DisableBracketedPaste;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use filo_agent::AgentMessage;
use filo_ai::Message;
use filo_core::AgentSession;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

pub use life::LifeSource;
pub use state::{AppState, FooterInfo};
pub use theme::{ColorDepth, Theme};

/// Errors of the terminal UI. The cause is part of the message (not a `source`), so it is
/// printed once.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    #[error("terminal: {0}")]
    Io(std::io::Error),
    #[error("theme: {0}")]
    Theme(String),
    /// The user quit while entries of the session were not in its file.
    #[error("{0}")]
    Unsaved(filo_core::UnsavedSession),
}

/// On the way out: one more try to write what the session file is missing, then an error naming
/// the file and the cause if entries are still not in it (the caller prints it and fails).
pub fn check_saved(session: &AgentSession) -> Result<(), TuiError> {
    session.ensure_saved().map_err(TuiError::Unsaved)
}

impl From<std::io::Error> for TuiError {
    fn from(e: std::io::Error) -> Self {
        TuiError::Io(e)
    }
}

/// What `/reload` reads again (the caller knows the flags and directories it came from).
pub struct Reloaded {
    pub resources: filo_core::agent_session::Resources,
    pub settings: filo_core::Settings,
    pub themes: theme_catalog::ThemeCatalog,
    /// `keybindings.json` read again.
    pub keybindings: keybindings::Keybindings,
    /// Problems found while reading, shown as warnings.
    pub warnings: Vec<String>,
}

impl std::fmt::Debug for Reloaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reloaded")
            .field("themes", &self.themes.names())
            .field("warnings", &self.warnings)
            .finish_non_exhaustive()
    }
}

/// Reads resources, settings and themes again, off the event loop.
pub type Reloader = Arc<dyn Fn() -> Reloaded + Send + Sync>;

/// What the UI needs besides the session.
#[derive(Clone)]
pub struct TuiOptions {
    pub theme: Theme,
    /// Every theme that can be chosen by name (`/settings`, the `theme` setting).
    pub themes: theme_catalog::ThemeCatalog,
    pub cwd: PathBuf,
    /// Where `/resume` lists sessions (defaults to the current session file's directory).
    pub session_dir: Option<PathBuf>,
    /// Where every project's sessions are (`<agent dir>/sessions`), for the picker's "All"
    /// (defaults to the parent of `session_dir`).
    pub sessions_root: Option<PathBuf>,
    /// `$HOME`, to show paths as `~/…`.
    pub home: Option<PathBuf>,
    /// The Playfilo memory for `/life` and `/trace`; `None` with `--no-dag`.
    pub life: Option<LifeSource>,
    /// Shown at the top of the conversation.
    pub warnings: Vec<String>,
    /// Prompts from the command line, sent at start.
    pub initial_messages: Vec<String>,
    /// Images from `@file` arguments, attached to the first prompt.
    pub initial_images: Vec<filo_ai::ContentBlock>,
    /// `/reload`'s reader; `None`: `/reload` has nothing to read.
    pub reload: Option<Reloader>,
    /// The keys of every action (`<agent dir>/keybindings.json` over pi's defaults).
    pub keybindings: Arc<keybindings::Keybindings>,
    /// What the environment says about the terminal (external editor, clipboard, images).
    pub term: term::TermEnv,
    /// `--verbose`: the start-up banner and what was loaded (context files, skills, templates,
    /// scoped models), even with `quietStartup`.
    pub verbose: bool,
    /// Where `/trust` saves decisions and whether this run trusted the folder; `None`: `/trust`
    /// is refused (embedders without a trust store).
    pub project_trust: Option<ProjectTrust>,
    /// The sandbox mode of the model's commands, for the status line (`None`: unconfined).
    pub sandbox: Option<String>,
}

/// The footer's facts as the session has them now (usage summed over its messages).
pub fn footer_info(session: &AgentSession) -> FooterInfo {
    let model = session.model();
    let mut f = FooterInfo {
        model: model.as_ref().map(|m| format!("{}/{}", m.provider, m.id)),
        thinking: session.thinking_level().as_str().to_string(),
        reasoning: model.as_ref().is_some_and(|m| m.reasoning),
        context_window: model.as_ref().map_or(0, |m| m.context_window),
        cwd: session.info().cwd.to_string_lossy().into_owned(),
        session_name: session.session_name(),
        unsaved: session.unsaved().map(|u| u.to_string()),
        ..FooterInfo::default()
    };
    for m in session.messages() {
        if let AgentMessage::Llm(Message::Assistant(a)) = m {
            f.add_usage(&a);
        }
    }
    f
}

/// Where frames are drawn: stdout behind a buffer that holds a whole frame. Ratatui flushes its
/// backend at the end of every draw, so a frame reaches the terminal in one write instead of a
/// piece per kilobyte of std's line buffer (no half-drawn frames), and nothing is left buffered
/// between draws for the writes that go to stdout directly (images, progress, OSC 52).
fn frame_writer() -> std::io::BufWriter<std::io::Stdout> {
    std::io::BufWriter::with_capacity(1 << 16, std::io::stdout())
}

fn restore_terminal() {
    let _ = disable_raw_mode();
    let _ = crossterm::execute!(
        std::io::stdout(),
        DisableBracketedPaste,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
}

/// Run the interactive UI until the user quits. The terminal is put back as it was on every
/// exit, including a panic.
pub async fn run(session: AgentSession, options: TuiOptions) -> Result<(), TuiError> {
    // A panic of the UI itself (on this thread) puts the terminal back before the message is
    // printed. Panics of spawned tasks run elsewhere; tokio contains them and the UI goes on, so
    // they leave the terminal alone.
    let previous = Arc::new(std::panic::take_hook());
    let ui_thread = std::thread::current().id();
    {
        let previous = previous.clone();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current().id() == ui_thread {
                term::leave();
            }
            previous(info);
        }));
    }
    let result = match term::enter() {
        Ok(()) => run_inner(session.clone(), options).await,
        Err(e) => Err(TuiError::Io(e)),
    };
    term::leave();
    std::panic::set_hook(Box::new(move |info| previous(info)));
    result?;
    check_saved(&session)
}

/// `filo -r`: the session picker alone, before any session is open. `None` when the user
/// cancels (Escape or Ctrl+C); the terminal is put back either way.
pub async fn pick_session(
    source: session_picker::PickerSource,
    theme: Theme,
    keys: Arc<keybindings::Keybindings>,
) -> Result<Option<PathBuf>, TuiError> {
    enable_raw_mode()?;
    let result = match crossterm::execute!(std::io::stdout(), EnterAlternateScreen) {
        Ok(()) => pick_loop(source, &theme, keys).await,
        Err(e) => Err(TuiError::Io(e)),
    };
    restore_terminal();
    result
}

async fn pick_loop(
    source: session_picker::PickerSource,
    theme: &Theme,
    keys: Arc<keybindings::Keybindings>,
) -> Result<Option<PathBuf>, TuiError> {
    use crossterm::event::{Event, EventStream, KeyCode, KeyEventKind, KeyModifiers};
    use futures::StreamExt;
    use session_picker::PickerAction;
    let mut terminal = Terminal::new(CrosstermBackend::new(frame_writer()))?;
    let mut picker = session_picker::SessionPicker::new(source, filo_session::ids::now_ms());
    picker.keys = keys;
    let mut input = EventStream::new();
    loop {
        terminal.draw(|f| picker_view::draw(f, f.area(), &picker, theme))?;
        let key = match input.next().await {
            Some(Ok(Event::Key(k))) if k.kind != KeyEventKind::Release => k,
            Some(Ok(_)) => continue,
            Some(Err(e)) => return Err(TuiError::Io(e)),
            None => return Ok(None),
        };
        if key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL) {
            return Ok(None);
        }
        match picker.handle_key(key) {
            PickerAction::None | PickerAction::RenameCurrent(_) => {}
            PickerAction::Cancel => return Ok(None),
            PickerAction::Open(path) => return Ok(Some(path)),
        }
    }
}

async fn run_inner(session: AgentSession, options: TuiOptions) -> Result<(), TuiError> {
    let mut terminal = Terminal::new(CrosstermBackend::new(frame_writer()))?;
    let (sub, session_rx) = session.subscribe_channel();
    let (tx, app_rx) = tokio::sync::mpsc::unbounded_channel();
    let initial = options.initial_messages.clone();
    let mut images = options.initial_images.clone();
    let mut app = app::App::new(session.clone(), options, tx);
    for (i, m) in initial.into_iter().enumerate() {
        app.send_with_images(m, i > 0, std::mem::take(&mut images));
    }
    let result = app::run_loop(&mut terminal, &mut app, app_rx, session_rx).await;
    session.unsubscribe(sub);
    if session.is_streaming() {
        session.abort().await;
    }
    result
}

#[cfg(test)]
mod error_tests {
    #[test]
    fn an_io_error_prints_its_cause_once() {
        let e = super::TuiError::from(std::io::Error::other("tty gone"));
        let mut shown = e.to_string();
        let mut next = std::error::Error::source(&e);
        while let Some(s) = next {
            shown.push_str(&format!(": {s}"));
            next = s.source();
        }
        assert_eq!(shown.matches("tty gone").count(), 1, "{shown}");
    }
}
