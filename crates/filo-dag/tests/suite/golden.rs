//! The golden scenario of spec Appendix B and the §7 example outputs, byte for byte.

use filo_dag::golden::{self, NOW, NOW_FIRST_LIFE, SHORT_IDS, ids};
use filo_dag::render::{
    FilterMode, FixedOffset, LifeOptions, RecallOptions, TraceMode, TraceOptions, life, recall,
    trace,
};
use filo_dag::{Store, role};
use pretty_assertions::assert_eq;

fn golden_store() -> Store {
    let store = Store::open_in_memory().unwrap();
    golden::build(&store).unwrap();
    store
}

const LIFE_AT_HEAD: &str = r#"...
[pi:11223344] (1m ago) assistant: "The repo has a src folder. I will create src/weather.ts with..."
[pi:55667788] (5s ago) user: "Actually, use Python instead."
              (now) assistant: [life: {"ancestors":3}]  <-- FOCUS, HEAD
--- end of archive ---"#;

const LIFE_ROOT_ALL: &str = r#"[pi:a1b2c3d4] (2h ago) user: "Build a CLI that prints the weather for a city."  <-- FOCUS
├──               (2h ago) assistant: "Let me look at the repo first."
│   └── [pi:c9d0e1f2] (2h ago) [bash]: "README.md src"
│       └── [pi:11223344] (2h ago) assistant: "The repo has a src folder. I will create src/weather.ts with..."
│           ├── [pi:0a1b2c3d] (2h ago) [thinking_level_change]
│           │   └── [pi:55667788] (2h ago) user: "Actually, use Python instead."
│           │       └──               (2h ago) assistant: [life: {"ancestors":3}]
│           │           └── [pi:ddeeff00] (2h ago) [life]: "...tree..."
│           │               └──               (2h ago) assistant: "Going back to before the TS decision."
│           │                   └── [5fc17736fa65] (2h ago) [tobe]: "Incarnation initiated → b85004a7b193"
│           └── [pi:7c9e6679-7425-40de-944b-e07fc1f90ae7] (2h ago) user: "[SYSTEM / INCARNATION NOTE]: User wants Python, not TypeScri..."
│               └── [pi:bb000003] (2h ago) assistant: "Understood: switching to Python. I will create weather.py."  <-- HEAD
└── [c00007ea2fc0] (2h ago) model: "Terminal here: checked API quota."
--- end of archive ---"#;

const LIFE_SIBLINGS: &str = r#"...
[pi:c9d0e1f2] (2h ago) [bash]: "README.md src"
[pi:11223344] (2h ago) assistant: "The repo has a src folder. I will create src/weather.ts with..."
├── [pi:0a1b2c3d] (2h ago) [thinking_level_change] (5 descendants)
└── [pi:7c9e6679-7425-40de-944b-e07fc1f90ae7] (2h ago) user: "[SYSTEM / INCARNATION NOTE]: User wants Python, not TypeScri..."  <-- FOCUS
    └── [pi:bb000003] (2h ago) assistant: "Understood: switching to Python. I will create weather.py."  <-- HEAD
--- end of archive ---"#;

const RECALL_HEAD: &str = r#"--- archived node content ---
{
  config: {"agent":"pi","model":{"provider":"anthropic","id":"claude-sonnet-4-5"},"thinkingLevel":"high","tools":[{"name":"bash","description":"Run a shell command"},{"name":"life","description":"View the conversation DAG structure."}]},
  contents: [
    // ... 3 earlier turns omitted
    { role: "assistant", text: "The repo has a src folder. I will create..." }  // archived,
    { role: "user", text: "[SYSTEM / INCARNATION NOTE]: User wants ..." }  // archived,
    { role: "assistant", text: "Understood: switching to Python. I will create weather.py." }  // <-- TARGET NODE (pi:bb000003)
  ]
}
--- end of archive ---"#;

const TRACE_SWITCHES: &str = r#"--- archived action log ---
[2026-01-01 11:01] BOOT: null → dcb81d41c76d
[2026-01-01 11:01] SESSION_SWITCH: dcb81d41c76d → dcb81d41c76d. Metadata:
    > {
    >   "trigger": "human",
    >   "session": "/home/u/.pi/agent/sessions/x/2026-01-01T09-00-00-000Z_abc.jsonl"
    > }
[2026-01-01 09:01] INCARNATE: 5fc17736fa65 → b5c08ffdc5d3. Carryover:
    > User wants Python, not TypeScript.
--- end of archive ---"#;

fn life_opts(focus: Option<&str>, ancestors: usize, filter: FilterMode) -> LifeOptions {
    LifeOptions {
        focus: focus.map(Into::into),
        ancestors,
        filter,
        ..LifeOptions::default()
    }
}

#[test]
fn node_ids_match_appendix_b() {
    let store = golden_store();
    for full in [ids::ROW1, ids::ROW4, ids::ROW10, ids::ROW11, ids::ROW12] {
        assert!(store.node(full).unwrap().is_some(), "missing {full}");
    }
    for short in SHORT_IDS {
        let id = store.resolve_prefix(short).unwrap();
        assert!(id.starts_with(short));
    }
    assert_eq!(
        store.get_ref("PI_HEAD").unwrap().as_deref(),
        Some(ids::ROW12)
    );
    let terminal = store.get_ref("terminal_head").unwrap().unwrap();
    assert!(terminal.starts_with(SHORT_IDS[12]));
    let actions = store.actions().unwrap();
    assert_eq!(actions.len(), 3);
    assert_eq!(actions[0].from_node.as_deref(), Some(ids::ROW10));
    assert_eq!(actions[0].to_node.as_deref(), Some(ids::ROW11));
    let departure = store.node(ids::ROW10).unwrap().unwrap();
    assert_eq!((departure.external_id, departure.config_json), (None, None));
    assert_eq!(departure.role, role::TOOL_RESULT);
}

#[test]
fn life_at_head_before_the_tobe() {
    let store = Store::open_in_memory().unwrap();
    golden::build_until(&store, 7).unwrap();
    let out = life(&store, &LifeOptions::default(), NOW_FIRST_LIFE).unwrap();
    assert_eq!(out, LIFE_AT_HEAD);
    insta::assert_snapshot!("life_at_head", out);
}

#[test]
fn life_root_all_after_the_tobe() {
    let store = golden_store();
    let out = life(
        &store,
        &life_opts(Some("127c76bc"), 0, FilterMode::All),
        NOW,
    )
    .unwrap();
    assert_eq!(out, LIFE_ROOT_ALL);
    insta::assert_snapshot!("life_root_all", out);
}

#[test]
fn life_sibling_layout() {
    let store = golden_store();
    let focus = "pi:7c9e6679-7425-40de-944b-e07fc1f90ae7";
    let out = life(&store, &life_opts(Some(focus), 2, FilterMode::All), NOW).unwrap();
    assert_eq!(out, LIFE_SIBLINGS);
    insta::assert_snapshot!("life_siblings", out);
}

#[test]
fn recall_head_with_small_budget() {
    let store = golden_store();
    let opts = RecallOptions {
        budget: 600,
        context_budget: 40,
        ..RecallOptions::new("HEAD")
    };
    let out = recall(&store, &opts).unwrap();
    assert_eq!(out, RECALL_HEAD);
    insta::assert_snapshot!("recall_head", out);
}

#[test]
fn trace_switches_and_default() {
    let store = golden_store();
    let opts = TraceOptions {
        mode: TraceMode::Switches,
        ..TraceOptions::default()
    };
    let out = trace(&store, &opts, &FixedOffset(0)).unwrap();
    assert_eq!(out, TRACE_SWITCHES);
    insta::assert_snapshot!("trace_switches", out);
    let default = trace(&store, &TraceOptions::default(), &FixedOffset(0)).unwrap();
    let without_switch: Vec<&str> = TRACE_SWITCHES
        .lines()
        .filter(|l| {
            !l.contains("SESSION_SWITCH")
                && !l.starts_with("    > {")
                && !l.contains("\"trigger\"")
                && !l.contains("\"session\"")
                && *l != "    > }"
        })
        .collect();
    assert_eq!(default, without_switch.join("\n"));
}
