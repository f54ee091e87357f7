use super::*;
use filo_ai::{AssistantMessage, ToolCall, ToolResultMessage, UserMessage};

fn user(m: &mut SessionManager, t: &str) -> String {
    m.append_message(SessionMessage::Llm(Message::User(UserMessage {
        content: UserContent::Text(t.into()),
        timestamp: 0,
    })))
    .unwrap()
}

fn assistant(m: &mut SessionManager, content: Vec<ContentBlock>) -> String {
    let a = AssistantMessage {
        content,
        api: "openai-completions".into(),
        provider: "mock".into(),
        model: "mock-model".into(),
        usage: filo_ai::Usage::default(),
        stop_reason: StopReason::Stop,
        timestamp: 0,
        error_message: None,
        error_status: None,
        response_id: None,
    };
    m.append_message(SessionMessage::Llm(Message::Assistant(a)))
        .unwrap()
}

fn texts(t: &Tree) -> Vec<String> {
    t.rows()
        .iter()
        .map(|r| format!("{}{}", r.gutter, r.text))
        .collect()
}

/// first ─┬─ abandoned (+ a tool call and result, an answer)
///        └─ kept (labeled)
fn session() -> (SessionManager, String, String) {
    let mut m = SessionManager::in_memory("/tmp");
    let first = user(&mut m, "first");
    user(&mut m, "abandoned");
    assistant(
        &mut m,
        vec![ContentBlock::ToolCall(ToolCall {
            id: "c1".into(),
            name: "bash".into(),
            arguments: serde_json::json!({"command": "ls -la"}),
            thought_signature: None,
        })],
    );
    m.append_message(SessionMessage::Llm(Message::ToolResult(
        ToolResultMessage {
            tool_call_id: "c1".into(),
            tool_name: "bash".into(),
            content: vec![ContentBlock::text("out")],
            details: None,
            is_error: false,
            timestamp: 0,
        },
    )))
    .unwrap();
    assistant(&mut m, vec![ContentBlock::text("listed")]);
    m.branch(&first).unwrap();
    let kept = user(&mut m, "kept");
    m.append_label_change(&kept, Some("good")).unwrap();
    (m, first, kept)
}

#[test]
fn filters_hide_and_keep_children_visible() {
    let (m, _, _) = session();
    let t = Tree::from_session(&m, "default");
    // pi's order and gutters: the branch on the current path first, `├─`/`└─` where a branch
    // starts (`⊟`: it folds), the first row after a branch start one level further in.
    assert_eq!(
        texts(&t),
        [
            "user: first",
            "├─ user: kept",
            "└⊟ user: abandoned",
            "      [bash: ls -la]",
            "      assistant: listed",
        ]
    );
    let mut t = Tree::from_session(&m, "no-tools");
    assert_eq!(t.rows().len(), 4);
    t.filter = "user-only";
    assert_eq!(
        texts(&t),
        ["user: first", "├─ user: kept", "└─ user: abandoned"]
    );
    t.filter = "labeled-only";
    assert_eq!(texts(&t), ["user: kept"]);
    assert_eq!(t.rows()[0].label.as_deref(), Some("good"));
    t.filter = "all";
    assert!(
        texts(&t).contains(&"│     [label: good]".to_string()),
        "{:?}",
        texts(&t)
    );
    t.filter = "default";
    t.query = "LIST".into();
    assert_eq!(texts(&t), ["assistant: listed"]);
}

#[test]
fn folding_closes_a_branch_and_branch_moves_jump_between_segments() {
    let (m, _, _) = session();
    let mut t = Tree::from_session(&m, "default");
    let rows = t.rows();
    assert!(rows[0].foldable, "a root with children folds");
    assert!(rows[2].foldable, "a branch start with children folds");
    assert!(
        !rows[1].foldable,
        "a branch start without children does not"
    );
    assert!(!rows[3].foldable);
    assert_eq!(t.branch_move(&rows, 4, true), 2);
    assert_eq!(t.branch_move(&rows, 0, false), 1);
    t.folded.insert(rows[2].id.clone());
    assert_eq!(
        texts(&t),
        ["user: first", "├─ user: kept", "└⊞ user: abandoned"]
    );
    assert!(t.rows()[2].folded);
    // A folded root keeps an empty gutter (the view draws `⊞ ` after it).
    t.folded.insert(rows[0].id.clone());
    let rows = t.rows();
    assert_eq!(rows.len(), 1);
    assert!(rows[0].folded && !rows[0].connector && rows[0].gutter.is_empty());
}

/// Several roots hang off an invisible common root: no connector of their own, their branches
/// drawn one level in; gutters stay open while a branch has siblings below.
#[test]
fn several_roots_and_nested_branches_draw_pis_gutters() {
    let mut m = SessionManager::in_memory("/tmp");
    let a = user(&mut m, "a");
    let a1 = user(&mut m, "a1");
    user(&mut m, "a1x");
    m.branch(&a1).unwrap();
    user(&mut m, "a1y");
    m.branch(&a).unwrap();
    user(&mut m, "a2");
    m.reset_leaf();
    user(&mut m, "b");
    let t = Tree::from_session(&m, "default");
    assert_eq!(
        texts(&t),
        [
            "user: b",
            "user: a",
            "├⊟ user: a1",
            "│  ├─ user: a1x",
            "│  └─ user: a1y",
            "└─ user: a2",
        ]
    );
}

#[test]
fn the_leaf_and_its_path_are_marked() {
    let (m, first, kept) = session();
    let t = Tree::from_session(&m, "default");
    let on_path: Vec<String> = t
        .rows()
        .into_iter()
        .filter(|r| r.on_path)
        .map(|r| r.id)
        .collect();
    assert_eq!(on_path, [first, kept]);
}

#[test]
fn label_times_read_as_pi_writes_them() {
    let (m, _, kept) = session();
    let t = Tree::from_session(&m, "default");
    let row = t.rows().into_iter().find(|r| r.id == kept).unwrap();
    let ms = row.label_ms.expect("the label entry's time");
    assert!((filo_session::ids::now_ms() - ms).abs() < 60_000);
    // 2026-03-07 14:05 UTC.
    let at = 1_772_892_300_000;
    let utc = chrono::Utc;
    assert_eq!(label_time(at, at + 60_000, &utc), "14:05");
    assert_eq!(label_time(at, at + 3 * 86_400_000, &utc), "3/7 14:05");
    assert_eq!(label_time(at, at + 400 * 86_400_000, &utc), "26/3/7 14:05");
    let mut t = t;
    t.set_label(&kept, None, at);
    assert_eq!(
        t.rows()
            .into_iter()
            .find(|r| r.id == kept)
            .unwrap()
            .label_ms,
        None
    );
}
