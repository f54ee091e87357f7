//! The app driven headless against a real session and the scripted mock provider: keys in,
//! session events and task results pumped as the loop would, state checked.

use std::sync::Arc;
use std::time::Duration;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use filo_ai::{Client, Env, Model, ProviderRegistry, RetryPolicy};
use filo_core::{AgentSession, AgentSessionOptions, Resources, SessionEvent, Settings};
use filo_session::SessionManager;
use filo_testkit::{Fault, MockProvider, Reply, Turn};
use filo_tui::app::{App, AppEvent};
use filo_tui::cells::Cell;
use filo_tui::overlay::Overlay;
use filo_tui::state::{AppState, Queued};
use filo_tui::{ColorDepth, Theme, TuiOptions};
use serde_json::json;
use tokio::sync::mpsc::UnboundedReceiver;

struct Fixture {
    app: App,
    session_rx: UnboundedReceiver<SessionEvent>,
    app_rx: UnboundedReceiver<AppEvent>,
    _dir: tempfile::TempDir,
}

async fn fixture(turns: Vec<Turn>) -> (MockProvider, Fixture) {
    fixture_with(turns, true).await
}

async fn fixture_with(turns: Vec<Turn>, with_key: bool) -> (MockProvider, Fixture) {
    fixture_full(turns, with_key, None).await
}

async fn fixture_full(
    turns: Vec<Turn>,
    with_key: bool,
    life: Option<filo_tui::life::LifeSource>,
) -> (MockProvider, Fixture) {
    let mock = MockProvider::start(turns).await;
    let dir = tempfile::tempdir().unwrap();
    let model: Model = serde_json::from_value(json!({
        "id": "mock-model", "name": "Mock", "api": "openai-completions", "provider": "mock",
        "baseUrl": format!("{}/v1", mock.url()), "input": ["text"],
        "contextWindow": 100000, "maxTokens": 1000
    }))
    .unwrap();
    let client = Client::new(ProviderRegistry::empty(), Env::default())
        .unwrap()
        .with_retry(RetryPolicy {
            max_retries: 0,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(1),
        });
    let cwd = dir.path().to_path_buf();
    let session = AgentSession::create(AgentSessionOptions {
        cwd: cwd.clone(),
        client: Arc::new(client),
        models: vec![model.clone()].into(),
        // Without a key no model is chosen: the first-launch case.
        model: with_key.then_some(model),
        thinking_level: None,
        tools: vec![filo_tools::tool_by_name("bash", cwd.clone()).unwrap()],
        session: SessionManager::create(cwd.to_str().unwrap(), &cwd.join("sessions")),
        settings: Settings::load(&cwd.join("agent"), Some(&cwd)),
        api_key: Arc::new(move |_| with_key.then(|| "test-key".to_string())),
        resources: Resources::default(),
        extensions: Vec::new(),
        date: "2026-11-30".into(),
    })
    .unwrap();
    let (_, session_rx) = session.subscribe_channel();
    let (tx, app_rx) = tokio::sync::mpsc::unbounded_channel();
    let options = TuiOptions {
        theme: Theme::builtin("dark", ColorDepth::None).unwrap(),
        themes: filo_tui::theme_catalog::ThemeCatalog::builtin(ColorDepth::None),
        cwd,
        session_dir: None,
        sessions_root: None,
        home: None,
        life,
        warnings: Vec::new(),
        initial_messages: Vec::new(),
        initial_images: Vec::new(),
        reload: None,
        keybindings: Default::default(),
        term: Default::default(),
        verbose: false,
        project_trust: None,
        sandbox: None,
    };
    let app = App::new(session, options, tx);
    (
        mock,
        Fixture {
            app,
            session_rx,
            app_rx,
            _dir: dir,
        },
    )
}

impl Fixture {
    fn key(&mut self, code: KeyCode, modifiers: KeyModifiers) {
        self.app
            .on_terminal(Event::Key(KeyEvent::new(code, modifiers)));
    }

    fn typed(&mut self, text: &str) {
        for c in text.chars() {
            self.key(KeyCode::Char(c), KeyModifiers::NONE);
        }
    }

    fn enter(&mut self) {
        self.key(KeyCode::Enter, KeyModifiers::NONE);
    }

    /// Pump events the way the loop does until `done` holds (10 s at most).
    async fn until(&mut self, what: &str, done: impl Fn(&AppState) -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while !done(self.app.state()) {
            tokio::select! {
                Some(ev) = self.session_rx.recv() => self.app.state_mut().apply(&ev),
                Some(ev) = self.app_rx.recv() => self.app.on_app_event(ev),
                _ = tokio::time::sleep_until(deadline) => panic!("timed out waiting for {what}"),
            }
        }
    }
}

fn has(state: &AppState, f: impl Fn(&Cell) -> bool) -> bool {
    state.cells.iter().any(|c| f(&c.cell))
}

fn assistant_says(state: &AppState, needle: &str) -> bool {
    has(
        state,
        |c| matches!(c, Cell::Assistant { blocks, .. } if blocks.iter().any(|b| matches!(b, filo_tui::cells::AssistantBlock::Text(t) if t.contains(needle)))),
    )
}

#[tokio::test]
async fn prompt_runs_in_a_task_and_the_answer_lands_in_history() {
    let (mock, mut f) = fixture(vec![
        Turn::tool_call("c1", "bash", json!({"command": "echo from-tool"})),
        Turn::text("All done."),
    ])
    .await;
    f.typed("do it");
    f.enter();
    assert!(
        f.app.state().running,
        "the prompt runs in a task; the key returns at once"
    );
    assert!(f.app.state().editor.is_empty());
    f.until("the answer", |s| {
        !s.running && assistant_says(s, "All done.")
    })
    .await;
    let s = f.app.state();
    assert!(has(s, |c| matches!(c, Cell::User(t) if t == "do it")));
    assert!(has(
        s,
        |c| matches!(c, Cell::Tool(t) if t.done && !t.is_error && t.output.contains("from-tool"))
    ));
    assert_eq!(mock.requests().len(), 2);
}

#[tokio::test]
async fn ctrl_c_clears_then_arms_then_quits() {
    let (_mock, mut f) = fixture(Vec::new()).await;
    f.typed("draft");
    f.key(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert!(f.app.state().editor.is_empty());
    assert!(f.app.state().quit_armed.is_none());
    f.key(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert!(f.app.state().quit_armed.is_some() && !f.app.state().should_quit);
    f.key(KeyCode::Char('x'), KeyModifiers::NONE);
    assert!(f.app.state().quit_armed.is_none(), "another key disarms");
    f.key(KeyCode::Char('c'), KeyModifiers::CONTROL);
    f.key(KeyCode::Char('c'), KeyModifiers::CONTROL);
    f.key(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert!(f.app.state().should_quit);
}

#[tokio::test]
async fn escape_and_ctrl_c_read_as_one_alt_ctrl_c_are_both_keys() {
    let (_mock, mut f) = fixture(Vec::new()).await;
    f.typed("draft");
    // A terminal's "\x1b\x03": Escape then Ctrl+C, read as Alt+Ctrl+C.
    f.key(
        KeyCode::Char('c'),
        KeyModifiers::CONTROL | KeyModifiers::ALT,
    );
    assert!(f.app.state().editor.is_empty(), "ctrl+c cleared the editor");
    f.key(
        KeyCode::Char('c'),
        KeyModifiers::CONTROL | KeyModifiers::ALT,
    );
    f.key(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert!(f.app.state().should_quit);
    // A bound Alt+Ctrl key (jump backward) stays one key.
    let (_mock, mut f) = fixture(Vec::new()).await;
    f.typed("ab");
    f.key(
        KeyCode::Char(']'),
        KeyModifiers::CONTROL | KeyModifiers::ALT,
    );
    f.typed("a");
    assert_eq!(f.app.state().editor.cursor, 0);
    assert_eq!(f.app.state().editor.text, "ab");
}

#[tokio::test]
async fn typing_while_streaming_steers_and_escape_aborts_restoring_the_queue() {
    let (mock, mut f) = fixture(vec![Turn::Fault(Fault::Stall {
        after_events: 3,
        reply: Reply::text("Thinking about it slowly and never finishing"),
        stall: Duration::from_secs(30),
    })])
    .await;
    f.typed("first");
    f.enter();
    f.until("the stream to start", |s| s.live.is_some()).await;
    f.typed("also this");
    f.enter();
    f.typed("and later");
    f.key(KeyCode::Enter, KeyModifiers::ALT);
    assert_eq!(
        f.app.state().queued,
        vec![
            Queued::Steer("also this".into()),
            Queued::FollowUp("and later".into())
        ]
    );
    f.key(KeyCode::Esc, KeyModifiers::NONE);
    assert_eq!(f.app.state().editor.text, "also this\n\nand later");
    assert!(f.app.state().queued.is_empty());
    f.until("the abort", |s| {
        !s.running
            && has(
                s,
                |c| matches!(c, Cell::Assistant { error: Some(e), .. } if e == "Aborted"),
            )
    })
    .await;
    assert_eq!(mock.requests().len(), 1, "queued messages were not sent");
}

#[tokio::test]
async fn slash_commands_name_session_model_and_user_bash() {
    let (_mock, mut f) = fixture(Vec::new()).await;
    f.typed("/name demo");
    f.enter();
    assert_eq!(f.app.state().footer.session_name.as_deref(), Some("demo"));
    f.typed("/session");
    f.enter();
    let Some(Overlay::Text(page)) = &f.app.state().overlay else {
        panic!("no session page")
    };
    assert!(
        page.lines.iter().any(|l| l.contains("demo")),
        "{:?}",
        page.lines
    );
    f.key(KeyCode::Esc, KeyModifiers::NONE);
    assert!(f.app.state().overlay.is_none());
    f.typed("/model");
    f.enter();
    let Some(Overlay::Select(list)) = &f.app.state().overlay else {
        panic!("no selector")
    };
    assert_eq!(list.items[list.selected].value, "mock/mock-model");
    f.key(KeyCode::Enter, KeyModifiers::NONE);
    assert!(f.app.state().overlay.is_none());
    f.typed("!echo bang-out");
    f.enter();
    f.until("the command", |s| {
        has(
            s,
            |c| matches!(c, Cell::Bash { done: true, output, .. } if output.contains("bang-out")),
        )
    })
    .await;
    f.typed("/life");
    f.enter();
    assert!(has(
        f.app.state(),
        |c| matches!(c, Cell::Info(t) if t.contains("--no-dag"))
    ));
}

#[tokio::test]
async fn a_refused_prompt_is_reported_and_given_back() {
    let (mock, mut f) = fixture_with(Vec::new(), false).await;
    assert!(
        has(
            f.app.state(),
            |c| matches!(c, Cell::Warning(t) if t.contains("ANTHROPIC_API_KEY"))
        ),
        "first launch without a key says how to set one"
    );
    f.typed("hello");
    f.enter();
    f.until("the refusal", |s| {
        !s.running && has(s, |c| matches!(c, Cell::Error(_)))
    })
    .await;
    assert!(has(
        f.app.state(),
        |c| matches!(c, Cell::Error(t) if t.contains("No model selected"))
    ));
    assert_eq!(f.app.state().editor.text, "hello");
    assert!(mock.requests().is_empty());
}

#[tokio::test]
async fn tree_moves_back_to_an_earlier_prompt() {
    let (_mock, mut f) = fixture(vec![Turn::text("One."), Turn::text("Two.")]).await;
    for (prompt, answer) in [("first", "One."), ("second", "Two.")] {
        f.typed(prompt);
        f.enter();
        f.until(answer, |s| !s.running && assistant_says(s, answer))
            .await;
    }
    f.typed("/tree");
    f.enter();
    let Some(Overlay::Tree(view)) = &f.app.state().overlay else {
        panic!("no tree")
    };
    let rows: Vec<(String, bool)> = view
        .tree
        .rows()
        .into_iter()
        .map(|r| (r.text, r.on_path))
        .collect();
    let on = |t: &str| (t.to_string(), true);
    assert_eq!(
        rows,
        vec![
            on("user: first"),
            on("assistant: One."),
            on("user: second"),
            on("assistant: Two.")
        ]
    );
    assert_eq!(view.selected, view.tree.leaf, "the leaf is selected");
    for _ in 0..3 {
        f.key(KeyCode::Up, KeyModifiers::NONE);
    }
    f.enter();
    f.enter(); // "Move without a summary"
    f.until("the move", |s| s.editor.text == "first").await;
    f.until("the reload", |s| !assistant_says(s, "One.")).await;
    assert!(f.app.state().overlay.is_none());
}

#[tokio::test]
async fn settings_flip_and_double_escape_opens_the_tree() {
    let (_mock, mut f) = fixture(vec![Turn::text("One.")]).await;
    f.typed("/settings");
    f.enter();
    f.enter(); // theme: the list of themes
    let Some(Overlay::Select(list)) = &f.app.state().overlay else {
        panic!("no theme list")
    };
    let names: Vec<&str> = list.items.iter().map(|i| i.label.as_str()).collect();
    assert_eq!(names, vec!["dark", "light"]);
    f.key(KeyCode::Down, KeyModifiers::NONE);
    f.enter(); // light
    assert_eq!(f.app.state().theme.name, "light");
    assert!(
        f.app
            .state()
            .cells
            .iter()
            .all(|c| !matches!(c.cell, Cell::Error(_)))
    );
    f.key(KeyCode::Down, KeyModifiers::NONE);
    f.enter(); // autoCompaction: on → off
    let Some(Overlay::Select(list)) = &f.app.state().overlay else {
        panic!("no settings")
    };
    assert_eq!(list.items[1].label, "autoCompaction       off");
    assert_eq!(list.selected, 1);
    f.key(KeyCode::Esc, KeyModifiers::NONE);
    assert!(f.app.state().overlay.is_none());

    f.typed("hi");
    f.enter();
    f.until("the answer", |s| !s.running && assistant_says(s, "One."))
        .await;
    f.key(KeyCode::Esc, KeyModifiers::NONE);
    f.key(KeyCode::Esc, KeyModifiers::NONE);
    assert!(
        matches!(&f.app.state().overlay, Some(Overlay::Tree(_))),
        "no tree"
    );
}

#[tokio::test]
async fn life_waits_for_the_memory_off_the_event_loop() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("playfilo.db");
    {
        let store = filo_dag::Store::open(&db).unwrap();
        let commit = filo_dag::NodeCommit::new(filo_dag::role::USER, 1)
            .part(filo_dag::NewBlob::text("hello".to_string()))
            .move_ref("PI_HEAD:me", filo_dag::Expect::Any);
        store.commit_node(&commit).unwrap();
    }
    let flushed_on = Arc::new(std::sync::Mutex::new(None));
    let seen = flushed_on.clone();
    let life = filo_tui::life::LifeSource {
        db_path: db,
        head_ref: Arc::new(|| "PI_HEAD:me".to_string()),
        flush: Arc::new(move || {
            *seen.lock().unwrap() = Some(std::thread::current().id());
        }),
        travel: Arc::new(|_, _| Ok(())),
    };
    let (_mock, mut f) = fixture_full(Vec::new(), true, Some(life)).await;
    f.typed("/life");
    f.enter();
    f.until("the life view", |s| {
        matches!(s.overlay, Some(Overlay::Life(_)))
    })
    .await;
    let on = flushed_on
        .lock()
        .unwrap()
        .expect("the memory was flushed first");
    assert_ne!(
        on,
        std::thread::current().id(),
        "the flush does not block the event loop's thread"
    );
}

#[tokio::test]
async fn a_session_file_that_cannot_be_written_is_flagged_on_screen_until_saved() {
    let (_mock, mut f) = fixture(vec![Turn::text("Answer."), Turn::text("Second.")]).await;
    // A regular file where the session directory should be: the first write fails.
    let blocker = f._dir.path().join("sessions");
    std::fs::write(&blocker, "in the way").unwrap();
    f.typed("hello");
    f.enter();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while f.app.state().running || !assistant_says(f.app.state(), "Answer.") {
        tokio::select! {
            Some(ev) = f.session_rx.recv() => f.app.on_session_event(&ev),
            Some(ev) = f.app_rx.recv() => f.app.on_app_event(ev),
            _ = tokio::time::sleep_until(deadline) => panic!("timed out waiting for the answer"),
        }
    }
    while let Ok(ev) = f.session_rx.try_recv() {
        f.app.on_session_event(&ev);
    }
    let path = blocker.display().to_string();
    let warnings: Vec<&Cell> = f
        .app
        .state()
        .cells
        .iter()
        .map(|c| &c.cell)
        .filter(|c| matches!(c, Cell::Warning(_)))
        .collect();
    assert!(
        warnings
            .iter()
            .any(|c| matches!(c, Cell::Warning(t) if t.contains("not saved") && t.contains(&path))),
        "{warnings:?}"
    );
    let footer = f.app.state().footer.unsaved.clone();
    assert!(
        footer.is_some_and(|u| u.contains(&path)),
        "the footer keeps the flag"
    );
    let mut backend = ratatui::Terminal::new(ratatui::backend::TestBackend::new(100, 20)).unwrap();
    backend
        .draw(|frame| filo_tui::view::draw(frame, f.app.state_mut()))
        .unwrap();
    let screen: String = backend
        .backend()
        .buffer()
        .content()
        .iter()
        .map(|c| c.symbol())
        .collect();
    assert!(screen.contains("Not saved:"), "{screen}");
    let quit = filo_tui::check_saved(f.app.session())
        .unwrap_err()
        .to_string();
    assert!(quit.contains("not saved") && quit.contains(&path), "{quit}");

    // Once the directory can be created, the next turn writes everything and the flag goes.
    std::fs::remove_file(&blocker).unwrap();
    f.typed("again");
    f.enter();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while f.app.state().running || !assistant_says(f.app.state(), "Second.") {
        tokio::select! {
            Some(ev) = f.session_rx.recv() => f.app.on_session_event(&ev),
            Some(ev) = f.app_rx.recv() => f.app.on_app_event(ev),
            _ = tokio::time::sleep_until(deadline) => panic!("timed out waiting for the answer"),
        }
    }
    while let Ok(ev) = f.session_rx.try_recv() {
        f.app.on_session_event(&ev);
    }
    assert_eq!(f.app.state().footer.unsaved, None);
    filo_tui::check_saved(f.app.session()).unwrap();
    let file = std::fs::read_dir(&blocker)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let text = std::fs::read_to_string(file).unwrap();
    assert!(text.contains("hello") && text.contains("Answer.") && text.contains("Second."));
}
