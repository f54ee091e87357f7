//! Frames of the main states at 80×24, rendered from synthetic events (no model, no session).

use filo_agent::ToolOutput;
use filo_ai::{AssistantEvent, ContentBlock, StopReason, TextContent, ToolCall};
use filo_core::SessionEvent;
use filo_dag::{NewBlob, NodeCommit, Parent, Store, role};
use filo_tui::cells::Cell;
use filo_tui::life::LifeView;
use filo_tui::overlay::{Overlay, SelectItem, SelectKind, SelectList};
use ratatui::style::Color;
use serde_json::json;

use super::support::*;

fn text(t: &str) -> ContentBlock {
    ContentBlock::Text(TextContent {
        text: t.into(),
        text_signature: None,
    })
}

#[test]
fn streaming_markdown_with_collapsed_thinking() {
    let mut s = state();
    let mut p = start_turn(&mut s, "How do I read a file in Rust?");
    stream(
        &mut s,
        &mut p,
        vec![
            AssistantEvent::ThinkingStart { index: 0 },
            AssistantEvent::ThinkingDelta {
                index: 0,
                delta: "The user wants std::fs.".into(),
            },
            AssistantEvent::ThinkingEnd {
                index: 0,
                signature: None,
                redacted: false,
            },
            AssistantEvent::TextStart { index: 1 },
            AssistantEvent::TextDelta {
                index: 1,
                delta: "## Reading\n\nUse **`std::fs`**:\n\n".into(),
            },
            AssistantEvent::TextDelta {
                index: 1,
                delta: "```rust\nlet s = std::fs::read_to_string(\"a.txt\")?;\n".into(),
            },
        ],
    );
    insta::assert_snapshot!("streaming", frame(&mut s));
    // Ctrl+T shows the thinking in full.
    s.opts.show_thinking = true;
    let shown = frame(&mut s);
    assert!(shown.contains("The user wants std::fs."), "{shown}");
    assert!(!shown.contains("ctrl+t to expand"), "{shown}");
}

#[test]
fn tool_running_with_live_bash_output_and_queued_steer() {
    let mut s = state();
    let mut p = start_turn(&mut s, "Run the tests");
    stream(
        &mut s,
        &mut p,
        vec![
            AssistantEvent::TextStart { index: 0 },
            AssistantEvent::TextDelta {
                index: 0,
                delta: "Running them now.".into(),
            },
            AssistantEvent::ToolCallStart {
                index: 1,
                id: "t1".into(),
                name: "bash".into(),
            },
            AssistantEvent::ToolCallDelta {
                index: 1,
                delta: "{\"command\":\"cargo test\"}".into(),
            },
        ],
    );
    let call = ToolCall {
        id: "t1".into(),
        name: "bash".into(),
        arguments: json!({"command": "cargo test"}),
        thought_signature: None,
    };
    end_message(
        &mut s,
        assistant(
            vec![text("Running them now."), ContentBlock::ToolCall(call)],
            StopReason::ToolUse,
            None,
        ),
    );
    tool_start(&mut s, "t1", "bash", json!({"command": "cargo test"}));
    tool_update(
        &mut s,
        "t1",
        "bash",
        "running 3 tests\ntest a ... ok\ntest b ... ok\n",
    );
    s.queued
        .push(filo_tui::state::Queued::Steer("also run clippy".into()));
    insta::assert_snapshot!("tool_running", frame(&mut s));
}

#[test]
fn edit_diff_is_coloured() {
    let mut s = state();
    s.push(Cell::User("Rename the function".into()));
    tool_start(
        &mut s,
        "e1",
        "edit",
        json!({"path": "src/lib.rs", "oldText": "fn old", "newText": "fn new"}),
    );
    let diff = "   1 // lib\n-  2 fn old() {}\n+  2 fn new() {}\n   3 ";
    let out = ToolOutput::text("Successfully replaced text in src/lib.rs.")
        .with_details(json!({"diff": diff}));
    tool_end(&mut s, "e1", "edit", out, false);
    insta::assert_snapshot!("diff", frame(&mut s));

    // In colour, removed lines are red and added ones green.
    let mut c = state();
    c.theme = filo_tui::Theme::builtin("dark", filo_tui::ColorDepth::TrueColor).unwrap();
    c.push(s.cells[1].cell.clone());
    let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(W, H)).unwrap();
    t.draw(|f| filo_tui::view::draw(f, &mut c)).unwrap();
    let buf = t.backend().buffer().clone();
    let row_of = |needle: &str| {
        (0..H)
            .find(|y| {
                buffer_text(&buf)
                    .lines()
                    .nth(usize::from(*y))
                    .is_some_and(|l| l.contains(needle))
            })
            .unwrap()
    };
    assert_eq!(buf[(3, row_of("fn old"))].fg, Color::Rgb(0xcc, 0x66, 0x66));
    assert_eq!(buf[(3, row_of("fn new"))].fg, Color::Rgb(0xb5, 0xbd, 0x68));
}

#[test]
fn errors_and_retries_inline() {
    let mut s = state();
    let _p = start_turn(&mut s, "Hello");
    end_message(
        &mut s,
        assistant(
            vec![text("Partial ans")],
            StopReason::Error,
            Some("503 Service Unavailable"),
        ),
    );
    s.apply(&SessionEvent::AutoRetryStart {
        attempt: 1,
        max_attempts: 3,
        delay_ms: 2000,
        error_message: "503 Service Unavailable".into(),
    });
    s.apply(&SessionEvent::AutoRetryEnd {
        success: false,
        attempt: 3,
        final_error: Some("503 Service Unavailable".into()),
    });
    s.apply(&agent(filo_agent::AgentEvent::AgentEnd {
        messages: Vec::new(),
        will_retry: false,
    }));
    s.push(Cell::Error("No API key found for mock.".into()));
    insta::assert_snapshot!("error", frame(&mut s));
}

fn models() -> Vec<SelectItem> {
    [
        "anthropic/claude-sonnet-4-5",
        "openai/gpt-5.2",
        "llamacpp/qwen3-8b",
        "mock/mock-model",
    ]
    .iter()
    .map(|m| SelectItem {
        label: (*m).into(),
        detail: "200k ctx".into(),
        value: (*m).into(),
        search: String::new(),
    })
    .collect()
}

#[test]
fn model_selector_with_search() {
    let mut s = state();
    s.push(Cell::User("hi".into()));
    s.overlay = Some(Overlay::Select(SelectList::new(
        SelectKind::Model,
        "model",
        models(),
        3,
    )));
    insta::assert_snapshot!("model_selector", frame(&mut s));
    // Typing filters; Enter chooses the first match.
    let Some(ov) = s.overlay.as_mut() else {
        unreachable!()
    };
    for c in "gpt".chars() {
        ov.handle_key(
            crossterm::event::KeyEvent::from(crossterm::event::KeyCode::Char(c)),
            10,
            &Default::default(),
        );
    }
    let action = ov.handle_key(
        crossterm::event::KeyEvent::from(crossterm::event::KeyCode::Enter),
        10,
        &Default::default(),
    );
    assert_eq!(
        action,
        filo_tui::overlay::OverlayAction::Chosen(SelectKind::Model, "openai/gpt-5.2".into())
    );
}

#[test]
fn session_picker() {
    let mut s = state();
    let items = vec![
        SelectItem {
            label: "Refactor the parser".into(),
            detail: "2h ago · 14 msgs".into(),
            value: "/s/a.jsonl".into(),
            search: String::new(),
        },
        SelectItem {
            label: "Fix flaky test".into(),
            detail: "3d ago · 6 msgs".into(),
            value: "/s/b.jsonl".into(),
            search: String::new(),
        },
    ];
    let mut list = SelectList::new(SelectKind::Session, "resume session", items, 0);
    list.filter = "flaky".into();
    list.selected = 1;
    s.overlay = Some(Overlay::Select(list));
    insta::assert_snapshot!("session_picker", frame(&mut s));
    // The search also matches what a session said, not only its title.
    let Some(Overlay::Select(list)) = s.overlay.as_mut() else {
        unreachable!()
    };
    list.items[0].search = "we chose a hand-written lexer".into();
    list.filter = "lexer".into();
    assert_eq!(list.visible(), vec![0]);
}

fn commit(store: &Store, parent: Parent, r: &str, t: &str, ts: i64, refs: &[&str]) -> String {
    let mut c = NodeCommit::new(r, ts).parent(parent);
    c.parts = vec![NewBlob::text(t)];
    let id = store.commit_node(&c).unwrap().id;
    for name in refs {
        store.set_ref(name, &id).unwrap();
    }
    id
}

#[test]
fn life_view_around_head() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("playfilo.db");
    let store = Store::open(&db).unwrap();
    let t0 = 1_700_000_000_000;
    let u1 = commit(&store, Parent::Root, role::USER, "Build a parser", t0, &[]);
    let a1 = commit(
        &store,
        Parent::Node(u1),
        role::ASSISTANT,
        "Here is a plan.",
        t0 + 1_000,
        &[],
    );
    let b1 = commit(
        &store,
        Parent::Node(a1.clone()),
        role::USER,
        "Try the regex way",
        t0 + 2_000,
        &[],
    );
    let b2 = commit(
        &store,
        Parent::Node(b1),
        role::ASSISTANT,
        "Regex done.",
        t0 + 3_000,
        &[],
    );
    commit(
        &store,
        Parent::Node(b2),
        role::USER,
        "It broke",
        t0 + 4_000,
        &["PI_HEAD:other"],
    );
    let u2 = commit(
        &store,
        Parent::Node(a1),
        role::USER,
        "Use a hand-written lexer",
        t0 + 5_000,
        &[],
    );
    commit(
        &store,
        Parent::Node(u2),
        role::ASSISTANT,
        "Lexer written.",
        t0 + 6_000,
        &["PI_HEAD:me"],
    );
    drop(store);
    let mut s = state();
    let view = LifeView::open(&db, "PI_HEAD:me", t0 + 60_000).unwrap();
    assert_eq!(view.rows.len(), 6, "{:?}", view.rows);
    s.overlay = Some(Overlay::Life(view));
    insta::assert_snapshot!("life", frame(&mut s));

    // Enter shows the node (recall); `t` asks for the carryover note.
    let Some(Overlay::Life(l)) = s.overlay.as_mut() else {
        unreachable!()
    };
    l.selected = 3;
    let recall = l.recall_selected().unwrap();
    assert!(recall.contains("Try the regex way"), "{recall}");
    let ov = s.overlay.as_mut().unwrap();
    let key = |c| crossterm::event::KeyEvent::from(crossterm::event::KeyCode::Char(c));
    ov.handle_key(key('t'), 10, &Default::default());
    for c in "retry".chars() {
        ov.handle_key(key(c), 10, &Default::default());
    }
    let jump = ov.handle_key(
        crossterm::event::KeyEvent::from(crossterm::event::KeyCode::Enter),
        10,
        &Default::default(),
    );
    let filo_tui::overlay::OverlayAction::Jump { node_id, note } = jump else {
        panic!("{jump:?}")
    };
    assert_eq!(note, "retry");
    assert!(!node_id.is_empty());
}

#[test]
fn first_launch_without_a_key() {
    let mut s = state();
    s.footer.model = None;
    s.footer.session_name = None;
    s.push(Cell::Info("filo 0.1.0 — enter to send · shift+enter newline · esc to interrupt · ctrl+c twice to exit · / for commands · ! for bash · @ for files".into()));
    s.push(Cell::Warning("No models available. Set an API key environment variable (for example ANTHROPIC_API_KEY or OPENAI_API_KEY), or run a local model with scripts/local-model.sh and use --provider llamacpp. Then select a model.".into()));
    insta::assert_snapshot!("first_launch", frame(&mut s));
}

#[test]
fn resize_rewraps_and_scrolls() {
    let mut s = state();
    for i in 0..30 {
        s.push(Cell::User(format!(
            "message number {i} with some words to wrap around"
        )));
    }
    let wide = frame_at(&mut s, 80, 24);
    assert!(
        wide.contains("message number 29 with some words to wrap around"),
        "{wide}"
    );
    let narrow = frame_at(&mut s, 30, 24);
    assert!(narrow.contains("message number 29 with some"), "{narrow}");
    s.scroll = 1_000;
    let top = frame_at(&mut s, 80, 24);
    assert!(top.contains("message number 0 "), "{top}");
    assert!(s.scroll < 1_000, "scrolling past the top is clamped");
    // Tiny terminals draw without panicking, overlays included.
    s.editor.insert("some long text in the editor that wraps");
    for (w, h) in [(10, 5), (1, 1), (3, 20), (200, 3)] {
        frame_at(&mut s, w, h);
    }
    s.overlay = Some(Overlay::Select(SelectList::new(
        SelectKind::Model,
        "model",
        models(),
        0,
    )));
    for (w, h) in [(10, 5), (1, 1), (4, 4)] {
        frame_at(&mut s, w, h);
    }
}

/// A pi v3 session file with one user message `minutes` after 2026-01-01.
fn session_file(dir: &std::path::Path, id: &str, text: &str, minutes: i64, name: Option<&str>) {
    let t = 1_767_225_600_000 + minutes * 60_000;
    let ts = filo_session::ids::iso_from_ms(t);
    let mut lines = vec![
        json!({"type":"session","version":3,"id":id,"timestamp":ts,"cwd":"/p"}).to_string(),
        json!({"type":"message","id":format!("{id}01"),"parentId":null,"timestamp":ts,
            "message":{"role":"user","content":text,"timestamp":t}})
        .to_string(),
    ];
    if let Some(n) = name {
        lines.push(
            json!({"type":"session_info","id":format!("{id}02"),"parentId":format!("{id}01"),
                "timestamp":ts,"name":n})
            .to_string(),
        );
    }
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(format!("{id}.jsonl")), lines.join("\n") + "\n").unwrap();
}

#[test]
fn resume_picker_at_two_sizes() {
    use filo_tui::session_picker::{PickerSource, SessionPicker};
    let tmp = tempfile::tempdir().unwrap();
    let here = tmp.path().join("here");
    session_file(&here, "aaaa", "Refactor the parser", 10, None);
    session_file(&here, "bbbb", "Fix flaky test", 50, Some("Flaky test hunt"));
    session_file(&here, "cccc", "Write the changelog", 80, None);
    let source = PickerSource {
        dir: here,
        all_root: tmp.path().to_path_buf(),
        current_file: None,
        cwd: "/p".into(),
        home: None,
        can_rename: true,
    };
    let picker = SessionPicker::new(source, 1_767_225_600_000 + 3 * 3_600_000);
    let mut s = state();
    s.overlay = Some(Overlay::Sessions(Box::new(picker)));
    insta::assert_snapshot!("resume_picker_80x24", frame_at(&mut s, 80, 24));
    insta::assert_snapshot!("resume_picker_120x40", frame_at(&mut s, 120, 40));
}

#[test]
fn scoped_models_at_two_sizes() {
    use filo_tui::scoped_models::{ModelRow, ScopedModels};
    let rows = [
        "anthropic/claude-sonnet-4-5",
        "openai/gpt-5.2",
        "openai/gpt-5-mini",
    ]
    .iter()
    .map(|k| {
        let (p, id) = k.split_once('/').unwrap();
        ModelRow {
            key: (*k).into(),
            provider: p.into(),
            id: id.into(),
            name: id.to_uppercase(),
        }
    })
    .collect();
    let mut m = ScopedModels::new(rows, Some(vec!["openai/gpt-5.2".into()]));
    m.dirty = true;
    let mut s = state();
    s.overlay = Some(Overlay::ScopedModels(m));
    insta::assert_snapshot!("scoped_models_80x24", frame_at(&mut s, 80, 24));
    insta::assert_snapshot!("scoped_models_120x40", frame_at(&mut s, 120, 40));
}

/// `/tree` with a fork, a label, a folded-open branch and the no-tools filter.
#[test]
fn tree_selector_at_two_sizes() {
    use filo_session::{SessionManager, SessionMessage};
    use filo_tui::tree::Tree;
    use filo_tui::tree_view::TreeView;
    let mut m = SessionManager::in_memory("/tmp");
    let say = |m: &mut SessionManager, msg: filo_ai::Message| {
        m.append_message(SessionMessage::Llm(msg)).unwrap()
    };
    let user = |t: &str| {
        filo_ai::Message::User(filo_ai::UserMessage {
            content: filo_ai::UserContent::Text(t.into()),
            timestamp: 0,
        })
    };
    let first = say(&mut m, user("plan the refactor"));
    say(
        &mut m,
        filo_ai::Message::Assistant(assistant(
            vec![ContentBlock::text("Start with the parser.")],
            StopReason::Stop,
            None,
        )),
    );
    m.branch(&first).unwrap();
    let second = say(&mut m, user("try the lexer first"));
    m.append_label_change(&second, Some("lexer-plan")).unwrap();
    say(
        &mut m,
        filo_ai::Message::Assistant(assistant(
            vec![ContentBlock::text("The lexer is small; done.")],
            StopReason::Stop,
            None,
        )),
    );
    let mut tree = Tree::from_session(&m, "no-tools");
    tree.query.clear();
    let view = TreeView::new(tree, Default::default());
    let mut s = state();
    s.overlay = Some(Overlay::Tree(Box::new(view)));
    insta::assert_snapshot!("tree_selector_80x24", frame_at(&mut s, 80, 24));
    insta::assert_snapshot!("tree_selector_120x40", frame_at(&mut s, 120, 40));
}

/// `/hotkeys`, built from the keybindings (one rebound, one unbound).
#[test]
fn hotkeys_at_two_sizes() {
    let (kb, problems) = filo_tui::keybindings::Keybindings::from_json(&json!({
        "app.model.select": "ctrl+k",
        "app.suspend": [],
    }));
    assert!(problems.is_empty(), "{problems:?}");
    let mut s = state();
    s.overlay = Some(Overlay::Text(filo_tui::overlay::TextPage {
        title: "Keyboard Shortcuts".into(),
        lines: filo_tui::hotkeys::lines(&kb),
        scroll: 0,
    }));
    insta::assert_snapshot!("hotkeys_80x24", frame_at(&mut s, 80, 24));
    insta::assert_snapshot!("hotkeys_120x40", frame_at(&mut s, 120, 40));
}
