//! The golden scenario of spec Appendix B, written exactly as the reference writes it: a Pi turn,
//! a thinking-level change, a `life` call, a tobe jump (departure, carryover, INCARNATE), the
//! first reply in the new timeline, a synthetic terminal node, then BOOT and SESSION_SWITCH.
//!
//! The spec's §7 example outputs are renderings of this database. It is public so that tests of
//! other crates (and `filo dag` tests) can build the same file.

use serde_json::{Value, json};

use crate::error::Result;
use crate::model::carryover_text;
use crate::model::{Expect, NewAction, NewBlob, NodeCommit, Parent, action_type, role};
use crate::store::Store;

/// 2026-01-01T09:00:00Z, the scenario's time origin.
pub const T0: i64 = 1_767_258_000_000;
/// When the first §7 life example was rendered (09:01:15.500 UTC, HEAD = row 7).
pub const NOW_FIRST_LIFE: i64 = 1_767_258_075_500;
/// When the other §7 examples were rendered (11:02:54 UTC).
pub const NOW: i64 = 1_767_265_374_000;
/// The system prompt of every Pi node.
pub const SYSTEM_PROMPT: &str = "You are Filo.";
/// The session path in the SESSION_SWITCH metadata.
pub const SESSION_PATH: &str = "/home/u/.pi/agent/sessions/x/2026-01-01T09-00-00-000Z_abc.jsonl";
/// The tobe carryover message.
pub const CARRYOVER: &str = "User wants Python, not TypeScript.";
/// Number of node rows in the full scenario.
pub const ROWS: usize = 13;

/// The full node ids the spec gives (rows 1, 4, 10, 11, 12).
pub mod ids {
    /// Row 1, the root user message.
    pub const ROW1: &str = "127c76bc227eabd929f0cde503d1f1e49283b4bdf0d27a1dcb6d52dc5d3d52f2";
    /// Row 4, the tobe target.
    pub const ROW4: &str = "b85004a7b193fc146a755cdb1f5b357f75455e9fd8b7b07ef50be5195b85b18b";
    /// Row 10, the departure node.
    pub const ROW10: &str = "5fc17736fa65543a55755e62e1d07ef876c5b953ceeda708451e69f7d1cbc194";
    /// Row 11, the carryover.
    pub const ROW11: &str = "b5c08ffdc5d34b82587f6a4cfdc17e8e9f8906ce0019dc9e0d34373ea5928240";
    /// Row 12, the final PI_HEAD.
    pub const ROW12: &str = "dcb81d41c76d06f173e2c9c094c74f487fb5ef6a02454e7b5d8572453aa4aa7d";
}

/// The external ids of the entries `load_entries(#12)` returns, root first: the post-tobe
/// context of Appendix B.
pub const ROW12_ENTRY_IDS: [&str; 6] = [
    "a1b2c3d4",
    "e5f6a7b8",
    "c9d0e1f2",
    "11223344",
    "7c9e6679-7425-40de-944b-e07fc1f90ae7",
    "bb000003",
];

/// The first 12 hex of rows 1–13, as listed in Appendix B.
pub const SHORT_IDS: [&str; ROWS] = [
    "127c76bc227e",
    "131963648988",
    "2893265f2865",
    "b85004a7b193",
    "5a117bb9c505",
    "30d262df3588",
    "d19bae6bb9a7",
    "626290487248",
    "c88e63502ae4",
    "5fc17736fa65",
    "b5c08ffdc5d3",
    "dcb81d41c76d",
    "c00007ea2fc0",
];

/// The Pi unified config_json (§3.3) of the scenario.
pub fn pi_config(thinking_level: &str) -> String {
    format!(
        "{{\"agent\":\"pi\",\"model\":{{\"provider\":\"anthropic\",\"id\":\"claude-sonnet-4-5\"}},\
         \"thinkingLevel\":\"{thinking_level}\",\"tools\":[{{\"name\":\"bash\",\"description\":\
         \"Run a shell command\"}},{{\"name\":\"life\",\"description\":\"View the conversation DAG \
         structure.\"}}]}}"
    )
}

/// A Pi shim commit (§4.2): parent = PI_HEAD, system prompt, unified config, PI_HEAD moves.
fn pi(node_role: &str, offset_ms: i64, ext: &str, level: &str, parts: Vec<NewBlob>) -> NodeCommit {
    let mut commit = NodeCommit::new(node_role, T0 + offset_ms)
        .parent(Parent::Ref("PI_HEAD".into()))
        .external_id(ext)
        .system_prompt(SYSTEM_PROMPT)
        .config_json(pi_config(level))
        .move_ref("PI_HEAD", Expect::Parent);
    commit.parts = parts;
    commit
}

fn text_result(call: &str, tool: &str, text: &str) -> NewBlob {
    NewBlob::tool_result(call, tool, json!([{ "type": "text", "text": text }]), false)
}

/// The Pi rows 1–9 in commit order.
fn pi_rows() -> Vec<NodeCommit> {
    let meta: Value = json!({
        "type": "thinking_level_change", "id": "0a1b2c3d", "parentId": "11223344",
        "timestamp": "2026-01-01T09:01:08.000Z", "thinkingLevel": "high",
    });
    let tobe_args = json!({ "target_node_hash": "pi:11223344", "carryover_message": CARRYOVER });
    vec![
        pi(
            role::USER,
            0,
            "a1b2c3d4",
            "off",
            vec![NewBlob::text(
                "Build a CLI that prints the weather for a city.",
            )],
        ),
        pi(
            role::ASSISTANT,
            4_000,
            "e5f6a7b8",
            "off",
            vec![
                NewBlob::thinking("Check the repo layout first."),
                NewBlob::text("Let me look at the repo first."),
                NewBlob::tool_call("toolu_01", "bash", Some(json!({ "command": "ls" }))),
            ],
        ),
        pi(
            role::TOOL_RESULT,
            5_000,
            "c9d0e1f2",
            "off",
            vec![text_result("toolu_01", "bash", "README.md\nsrc")],
        ),
        pi(
            role::ASSISTANT,
            8_000,
            "11223344",
            "off",
            vec![NewBlob::text(
                "The repo has a src folder. I will create src/weather.ts with a fetch-based client.",
            )],
        ),
        pi(
            role::PI_INTERNAL,
            68_000,
            "0a1b2c3d",
            "high",
            vec![NewBlob::pi_meta(meta)],
        ),
        pi(
            role::USER,
            70_000,
            "55667788",
            "high",
            vec![NewBlob::text("Actually, use Python instead.")],
        ),
        pi(
            role::ASSISTANT,
            75_000,
            "99aabbcc",
            "high",
            vec![NewBlob::tool_call(
                "toolu_02",
                "life",
                Some(json!({ "ancestors": 3 })),
            )],
        ),
        pi(
            role::TOOL_RESULT,
            75_500,
            "ddeeff00",
            "high",
            vec![text_result("toolu_02", "life", "...tree...")],
        ),
        pi(
            role::ASSISTANT,
            79_500,
            "0f1e2d3c",
            "high",
            vec![
                NewBlob::text("Going back to before the TS decision."),
                NewBlob::tool_call("toolu_03", "tobe", Some(tobe_args)),
            ],
        ),
    ]
}

/// The tobe handler of §6.2 for target row 4: departure (row 10), PI_HEAD → target, carryover
/// (row 11), PI_HEAD → carryover, INCARNATE.
fn tobe(store: &Store) -> Result<()> {
    let at = T0 + 79_800;
    let from = store.get_ref("PI_HEAD")?;
    let departure = store.commit_node(
        &NodeCommit::new(role::TOOL_RESULT, at)
            .parent(from.map_or(Parent::Root, Parent::Node))
            .part(NewBlob::departure(ids::ROW4)),
    )?;
    store.set_ref("PI_HEAD", ids::ROW4)?;
    let carry = store.commit_node(
        &NodeCommit::new(role::USER, at)
            .parent(Parent::Node(ids::ROW4.into()))
            .part(NewBlob::text(carryover_text(CARRYOVER)))
            .external_id("7c9e6679-7425-40de-944b-e07fc1f90ae7")
            .move_ref("PI_HEAD", Expect::Any),
    )?;
    store.log_action(&NewAction {
        timestamp: at,
        action_type: action_type::INCARNATE.into(),
        from_node: Some(departure.id),
        to_node: Some(carry.id),
        metadata: Some(CARRYOVER.into()),
    })?;
    Ok(())
}

/// Builds rows 1..=`rows` (and the actions that belong to them) into `store`, which should be
/// empty. `rows` ≥ 13 builds the whole scenario, including BOOT and SESSION_SWITCH.
pub fn build_until(store: &Store, rows: usize) -> Result<()> {
    let pi_rows = pi_rows();
    let first = rows.min(pi_rows.len());
    store.commit_batch(&pi_rows[..first])?;
    if rows >= 10 {
        tobe(store)?;
    }
    if rows >= 12 {
        store.commit_node(&pi(
            role::ASSISTANT,
            83_000,
            "bb000003",
            "high",
            vec![NewBlob::text(
                "Understood: switching to Python. I will create weather.py.",
            )],
        ))?;
    }
    if rows >= 13 {
        store.commit_node(
            &NodeCommit::new("model", T0 + 84_000)
                .parent(Parent::Node(ids::ROW1.into()))
                .part(NewBlob::text("Terminal here: checked API quota."))
                .config_json(r#"{"model":"gemini-2.5-pro","config":{"temperature":1}}"#)
                .move_ref("terminal_head", Expect::Any),
        )?;
        let boot_at = T0 + 7_284_000;
        for (kind, from, meta) in [
            (action_type::BOOT, None, None),
            (
                action_type::SESSION_SWITCH,
                Some(ids::ROW12.to_owned()),
                Some(format!(
                    r#"{{"trigger":"human","session":"{SESSION_PATH}"}}"#
                )),
            ),
        ] {
            store.log_action(&NewAction {
                timestamp: boot_at,
                action_type: kind.into(),
                from_node: from,
                to_node: Some(ids::ROW12.into()),
                metadata: meta,
            })?;
        }
    }
    Ok(())
}

/// Builds the whole scenario.
pub fn build(store: &Store) -> Result<()> {
    build_until(store, ROWS)
}
