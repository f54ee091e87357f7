//! Cuts through a surrogate pair: JavaScript's `slice` keeps a lone high surrogate, which the
//! reference's output encodes as U+FFFD. filo prints the same bytes in every cut of every tool.

use filo_dag::render::{
    FilterMode, FixedOffset, LifeOptions, RecallOptions, TraceOptions, life, recall, trace,
};
use filo_dag::{Expect, NewAction, NewBlob, NodeCommit, Parent, Store, role};
use serde_json::json;

const FFFD: char = char::REPLACEMENT_CHARACTER;

fn x(n: usize) -> String {
    "x".repeat(n)
}

/// One user node with `text` on top of a root, as HEAD; returns the store and the node id.
fn store_with(node: NodeCommit) -> (Store, String) {
    let store = Store::open_in_memory().unwrap();
    let root = store
        .commit_node(&NodeCommit::new(role::USER, 0).part(NewBlob::text("root")))
        .unwrap();
    let done = store
        .commit_node(
            &node
                .parent(Parent::Node(root.id))
                .move_ref("PI_HEAD", Expect::Any),
        )
        .unwrap();
    (store, done.id)
}

fn focus_line(store: &Store) -> String {
    let opts = LifeOptions {
        ancestors: 0,
        filter: FilterMode::All,
        ..LifeOptions::default()
    };
    let out = life(store, &opts, 0).unwrap();
    out.lines()
        .find(|l| l.ends_with("<-- FOCUS, HEAD"))
        .unwrap()
        .to_owned()
}

#[test]
fn life_previews_print_u_fffd_where_the_cut_splits_an_emoji() {
    // (text of a user node, expected preview between the quotes)
    let cases = [
        (
            format!("{}😀 and more", x(59)),
            format!("{}{FFFD}...", x(59)),
        ),
        (format!("{}😀", x(59)), format!("{}{FFFD}...", x(59))),
        (format!("{}😀", x(58)), format!("{}😀", x(58))),
        (format!("{}😀 and more", x(58)), format!("{}😀...", x(58))),
        (format!("{}\na😀", x(57)), format!("{} a{FFFD}...", x(57))),
        (format!("{}\n😀😀", x(57)), format!("{} 😀...", x(57))),
        (format!("{}😀", x(60)), format!("{}...", x(60))),
    ];
    for (text, want) in cases {
        let (store, _) = store_with(NodeCommit::new(role::USER, 1).part(NewBlob::text(&text)));
        let line = focus_line(&store);
        assert!(
            line.contains(&format!("user: \"{want}\"  <-- FOCUS, HEAD")),
            "{text:?}: {line}"
        );
    }
}

#[test]
fn tool_call_and_result_previews_cut_at_40_units() {
    let args = json!({ "k": format!("{}😀", x(33)) });
    let (store, _) = store_with(NodeCommit::new(role::ASSISTANT, 1).part(NewBlob::tool_call(
        "c1",
        "bash",
        Some(args),
    )));
    // `{"k":"` is 6 units, 33 x's make 39, the emoji's high surrogate is the 40th unit.
    assert!(
        focus_line(&store).contains(&format!("[bash: {{\"k\":\"{}{FFFD}...]", x(33))),
        "{}",
        focus_line(&store)
    );
    let content = json!([{ "type": "text", "text": format!("{}😀😀", x(39)) }]);
    let (store, _) = store_with(
        NodeCommit::new(role::TOOL_RESULT, 1)
            .part(NewBlob::tool_result("c1", "ls", content, false)),
    );
    assert!(focus_line(&store).contains(&format!("[ls]: \"{}{FFFD}...\"", x(39))));
}

#[test]
fn recall_and_trace_cuts_print_u_fffd() {
    let content = json!([{ "type": "text", "text": format!("{}😀", x(199)) }]);
    let (store, id) = store_with(
        NodeCommit::new(role::TOOL_RESULT, 1)
            .part(NewBlob::tool_result("c1", "ls", content, false)),
    );
    let out = recall(&store, &RecallOptions::new(&id[..12])).unwrap();
    assert!(
        out.contains(&format!("[tool_result: ls → {}{FFFD}...]", x(199))),
        "{out}"
    );
    // The target text cut by the remaining budget (a root: no context uses the budget).
    let store = Store::open_in_memory().unwrap();
    let id = store
        .commit_node(
            &NodeCommit::new(role::USER, 1)
                .part(NewBlob::text(format!("{}😀", x(20))))
                .move_ref("PI_HEAD", Expect::Any),
        )
        .unwrap()
        .id;
    let opts = RecallOptions {
        budget: 21,
        context_budget: 0,
        ..RecallOptions::new(&id[..12])
    };
    let out = recall(&store, &opts).unwrap();
    let want = format!(
        "text: \"{}{FFFD}\n    // text truncated (showing 21/22 chars)...",
        x(20)
    );
    assert!(out.contains(&want), "{out}");
    // trace quotes at most 500 units of metadata.
    store
        .log_action(&NewAction {
            timestamp: 0,
            action_type: "BOOT".into(),
            from_node: None,
            to_node: Some(id),
            metadata: Some(format!("{}😀", x(499))),
        })
        .unwrap();
    let out = trace(&store, &TraceOptions::default(), &FixedOffset(0)).unwrap();
    assert!(
        out.contains(&format!("    > {}{FFFD}\n    > ...(truncated)", x(499))),
        "{out}"
    );
}
