//! The Playfilo memory through the real agent and the mock provider: mirroring, tobe, resume.

use std::path::Path;
use std::sync::Arc;

use filo_core::playfilo::{Playfilo, PlayfiloConfig};
use filo_core::{AgentSession, AgentSessionOptions, PromptOptions, Resources, Settings};
use filo_dag::Store;
use filo_session::{EntryKind, SessionManager, SessionMessage};
use filo_testkit::{MockProvider, Reply};
use serde_json::{Value, json};

use super::{Echo, mock_model};

pub struct Memory {
    pub session: AgentSession,
    pub playfilo: Arc<Playfilo>,
    pub db: std::path::PathBuf,
}

impl Memory {
    /// Script one reply, send one prompt, wait for the run.
    pub async fn say(&self, mock: &MockProvider, prompt: &str, reply: Reply) {
        mock.push(reply);
        self.session
            .prompt(prompt, PromptOptions::default())
            .await
            .unwrap();
    }
}

pub fn memory_session(mock: &MockProvider, dir: &Path, manager: SessionManager) -> Memory {
    memory_session_with(mock, dir, manager, Vec::new())
}

pub fn memory_session_with(
    mock: &MockProvider,
    dir: &Path,
    manager: SessionManager,
    more: Vec<Arc<dyn filo_core::Extension>>,
) -> Memory {
    memory_session_config(mock, dir, manager, more, |_| {})
}

/// [`memory_session_with`], with a change to the memory's configuration.
pub fn memory_session_config(
    mock: &MockProvider,
    dir: &Path,
    manager: SessionManager,
    more: Vec<Arc<dyn filo_core::Extension>>,
    tweak: impl FnOnce(&mut PlayfiloConfig),
) -> Memory {
    let db = dir.join("playfilo.db");
    let mut config = PlayfiloConfig::under_home(dir);
    config.db_path = db.clone();
    config.seed_path = Some(dir.join("seed.md"));
    tweak(&mut config);
    let playfilo = Arc::new(Playfilo::open(config).unwrap());
    memory_session_on(mock, dir, manager, more, playfilo, db)
}

/// A session against the mock with `playfilo` (a view over `db`) as its memory.
pub fn memory_session_on(
    mock: &MockProvider,
    dir: &Path,
    manager: SessionManager,
    more: Vec<Arc<dyn filo_core::Extension>>,
    playfilo: Arc<Playfilo>,
    db: std::path::PathBuf,
) -> Memory {
    let client = super::fast_client();
    let model = mock_model(mock, 100_000);
    let session = AgentSession::create(AgentSessionOptions {
        cwd: dir.to_path_buf(),
        client: Arc::new(client),
        models: vec![model.clone()].into(),
        model: Some(model),
        thinking_level: None,
        tools: vec![
            Arc::new(Echo),
            filo_tools::tool_by_name("bash", dir.to_path_buf()).unwrap(),
        ],
        session: manager,
        settings: Settings::in_memory(json!({})),
        api_key: Arc::new(|_| Some("k".to_string())),
        resources: Resources {
            custom_system_prompt: Some("You are Filo.".into()),
            ..Resources::default()
        },
        extensions: std::iter::once(playfilo.clone() as Arc<dyn filo_core::Extension>)
            .chain(more)
            .collect(),
        date: "2026-11-30".into(),
    })
    .unwrap();
    Memory {
        session,
        playfilo,
        db,
    }
}

pub fn new_manager(dir: &Path) -> SessionManager {
    SessionManager::create(dir.to_str().unwrap(), &dir.join("sessions"))
}

fn last_entry_id(s: &AgentSession, pred: impl Fn(&SessionMessage) -> bool) -> String {
    let m = s.session_manager();
    m.entries()
        .rev()
        .find(|e| e.message().is_some_and(&pred))
        .unwrap()
        .id
        .clone()
}

fn is_assistant(m: &SessionMessage) -> bool {
    m.role() == "assistant"
}

/// The role and text of every message of a recorded chat-completions request.
fn roles_and_text(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or("").to_string(),
                m["content"].to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn appendix_b_conversation_mirrors_and_travels() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockProvider::start(vec![]).await;
    let mem = memory_session(&mock, dir.path(), new_manager(dir.path()));
    let s = &mem.session;
    let warnings = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let w2 = warnings.clone();
    s.subscribe(Arc::new(move |ev: &filo_core::SessionEvent| {
        if let filo_core::SessionEvent::Warning { message } = ev {
            w2.lock().unwrap().push(message.clone());
        }
    }));
    mock.push(
        Reply::thinking("Check the repo layout first.", "sig-1")
            .with_text("Let me look at the repo first.")
            .with_tool_call("toolu_01", "bash", json!({"command": "echo README.md"})),
    );
    mock.push(Reply::text(
        "The repo has a src folder. I will create src/weather.ts with a fetch-based client.",
    ));
    s.prompt(
        "Build a CLI that prints the weather for a city.",
        PromptOptions::default(),
    )
    .await
    .unwrap();
    let t_entry = last_entry_id(s, is_assistant);
    let t_node = mem.playfilo.head().unwrap();

    mock.push(Reply::tool_call(
        "toolu_02",
        "life",
        json!({"ancestors": 3}),
    ));
    mock.push(Reply::text("Going back to before the TS decision.").with_tool_call(
        "toolu_03",
        "tobe",
        json!({"target_node_hash": format!("pi:{t_entry}"), "carryover_message": "User wants Python, not TypeScript."}),
    ));
    mock.push(Reply::text(
        "Understood: switching to Python. I will create weather.py.",
    ));
    s.prompt("Actually, use Python instead.", PromptOptions::default())
        .await
        .unwrap();
    assert_eq!(mock.remaining(), 0);

    // The life tool saw the graph.
    let reqs = mock.requests();
    let life_result = reqs[3].body.to_string();
    assert!(life_result.contains("<-- FOCUS, HEAD"), "{life_result}");

    // The request in the new timeline: the target lineage plus the carryover, nothing else.
    let last = roles_and_text(&reqs[4].body);
    let roles: Vec<&str> = last.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "assistant", "user"]
    );
    assert!(last[5].1.contains("[SYSTEM / INCARNATION NOTE]: User wants Python, not TypeScript.\\n[SYSTEM WARNING]: State transitioned."));
    assert!(!reqs[4].body.to_string().contains("Actually, use Python"));

    // T -> C -> R in the DAG, the departure hanging off the tobe caller, the aborted turn absent.
    mem.playfilo.flush();
    let store = Store::open(&mem.db).unwrap();
    let r = store.node(&mem.playfilo.head().unwrap()).unwrap().unwrap();
    let c = store
        .node(r.parent_id.as_deref().unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(r.role, "assistant");
    assert_eq!(c.role, "user");
    assert_eq!(c.parent_id.as_deref(), Some(t_node.as_str()));
    assert!(c.config_json.is_none());
    let actions = store.actions().unwrap();
    let inc = actions
        .iter()
        .find(|a| a.action_type == "INCARNATE")
        .unwrap();
    assert_eq!(inc.to_node.as_deref(), Some(c.id.as_str()));
    assert_eq!(
        inc.metadata.as_deref(),
        Some("User wants Python, not TypeScript.")
    );
    assert!(
        warnings.lock().unwrap().is_empty(),
        "{:?}",
        warnings.lock().unwrap()
    );
    let departure = store
        .node(inc.from_node.as_deref().expect("a departure node"))
        .unwrap()
        .unwrap();
    assert_eq!(departure.role, "toolResult");
    let caller = store
        .node(departure.parent_id.as_deref().unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(caller.role, "assistant");
    let children_of_caller = store.children(&caller.id).unwrap();
    assert_eq!(
        children_of_caller.len(),
        1,
        "only the departure: the tobe result and the aborted assistant are absent"
    );
    assert_eq!(
        store
            .refs()
            .unwrap()
            .iter()
            .filter(|(n, _)| n.starts_with("PI_HEAD"))
            .count(),
        2
    );
    assert_eq!(store.get_ref("PI_HEAD").unwrap(), mem.playfilo.head());

    // The DAG alone carries the thinking signature (outside the hash) for a replay.
    let from_dag = store.load_entries(Some(&t_node)).unwrap();
    let thinking = from_dag
        .iter()
        .flat_map(|e| {
            e["message"]["content"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .find(|b| b["type"] == "thinking")
        .unwrap();
    let file_entry = s
        .session_manager()
        .entries()
        .find_map(|e| match e.message() {
            Some(SessionMessage::Llm(filo_ai::Message::Assistant(a))) => {
                a.content.iter().find_map(|b| match b {
                    filo_ai::ContentBlock::Thinking(t) => t.thinking_signature.clone(),
                    _ => None,
                })
            }
            _ => None,
        });
    assert!(file_entry.is_some());
    assert_eq!(
        thinking["thinkingSignature"].as_str(),
        file_entry.as_deref()
    );

    // The session file resumes into the same timeline: T -> C -> R.
    let path = s.session_file().unwrap();
    let reopened = SessionManager::open(&path, "/").unwrap();
    let ctx = reopened.build_context();
    let last_text = match ctx.messages.last().unwrap() {
        SessionMessage::Llm(filo_ai::Message::Assistant(a)) => a.text(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        last_text,
        "Understood: switching to Python. I will create weather.py."
    );
    assert_eq!(ctx.messages.len(), 6);
    assert_eq!(s.stats().extension_errors, 0);
}

#[tokio::test]
async fn tobe_among_three_parallel_calls_skips_all_their_results() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockProvider::start(vec![]).await;
    let mem = memory_session(&mock, dir.path(), new_manager(dir.path()));
    let s = &mem.session;
    mock.push(Reply::text("First answer."));
    s.prompt("hello", PromptOptions::default()).await.unwrap();
    let target = mem.playfilo.head().unwrap();
    mock.push(
        Reply::tool_call("c1", "echo", json!({"text": "a"}))
            .with_tool_call(
                "c2",
                "tobe",
                json!({"target_node_hash": &target[..12], "carryover_message": "again"}),
            )
            .with_tool_call("c3", "echo", json!({"text": "b"})),
    );
    mock.push(Reply::text("New timeline."));
    s.prompt("jump", PromptOptions::default()).await.unwrap();
    mem.playfilo.flush();
    let store = Store::open(&mem.db).unwrap();
    let head = store.node(&mem.playfilo.head().unwrap()).unwrap().unwrap();
    let carry = store
        .node(head.parent_id.as_deref().unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(carry.parent_id.as_deref(), Some(target.as_str()));
    let toolresults: usize = store
        .subtree(&target, 50)
        .unwrap()
        .iter()
        .filter(|(n, _)| n.role == "toolResult")
        .count();
    assert_eq!(
        toolresults, 1,
        "only the departure node; the three results stayed out"
    );
    let body = mock.requests()[2].body.to_string();
    assert!(!body.contains("\"jump\""));
}

#[tokio::test]
async fn nested_tobe_and_refused_targets() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockProvider::start(vec![]).await;
    let mem = memory_session(&mock, dir.path(), new_manager(dir.path()));
    let s = &mem.session;
    mock.push(Reply::tool_call("e1", "echo", json!({"text": "x"})));
    mock.push(Reply::text("Done one."));
    s.prompt("one", PromptOptions::default()).await.unwrap();
    let user1 = last_entry_id(s, |m| m.role() == "user");
    let done_one = mem.playfilo.head().unwrap();
    mem.playfilo.flush();
    let store = Store::open(&mem.db).unwrap();
    let echo_caller = store
        .lineage(&done_one, None)
        .unwrap()
        .into_iter()
        .find(|n| n.role == "assistant" && n.id != done_one)
        .unwrap();
    // Refused: an assistant whose tool call would be left unanswered.
    mock.push(Reply::tool_call(
        "t0",
        "tobe",
        json!({"target_node_hash": &echo_caller.id[..16], "carryover_message": "no"}),
    ));
    // First jump, to "Done one.".
    mock.push(Reply::tool_call(
        "t1",
        "tobe",
        json!({"target_node_hash": &done_one[..12], "carryover_message": "first"}),
    ));
    // In the new timeline, a second jump back to the first user message.
    mock.push(Reply::tool_call(
        "t2",
        "tobe",
        json!({"target_node_hash": format!("pi:{user1}"), "carryover_message": "second"}),
    ));
    mock.push(Reply::text("Back at the start."));
    s.prompt("two", PromptOptions::default()).await.unwrap();
    assert_eq!(mock.remaining(), 0);
    let reqs = mock.requests();
    let refused = reqs[3].body.to_string();
    assert!(refused.contains("would be left unanswered"), "{refused}");
    let last = roles_and_text(&reqs[5].body);
    let roles: Vec<&str> = last.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(roles, ["system", "user", "user"]);
    assert!(last[2].1.contains("INCARNATION NOTE]: second"));
    let incarnations = store
        .actions()
        .unwrap()
        .into_iter()
        .filter(|a| a.action_type == "INCARNATE")
        .count();
    assert_eq!(incarnations, 2);
    assert_eq!(
        s.last_assistant_text().as_deref(),
        Some("Back at the start.")
    );
}

#[tokio::test]
async fn seed_is_prepended_and_tools_registered() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("seed.md"), "  I am the seed.  \n").unwrap();
    let mock = MockProvider::start(vec![]).await;
    let mem = memory_session(&mock, dir.path(), new_manager(dir.path()));
    mem.say(&mock, "hello", Reply::text("hi")).await;
    let body = &mock.requests()[0].body;
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.starts_with("I am the seed.\n\nYou are Filo."),
        "{system}"
    );
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["echo", "bash", "life", "recall", "trace", "tobe"]);
    // The mirrored nodes carry the composed prompt and the config.
    mem.playfilo.flush();
    let store = Store::open(&mem.db).unwrap();
    let head = store.node(&mem.playfilo.head().unwrap()).unwrap().unwrap();
    let config: Value = serde_json::from_str(head.config_json.as_deref().unwrap()).unwrap();
    assert_eq!(config["model"]["id"], "mock-model");
    assert_eq!(config["tools"].as_array().unwrap().len(), 6);
    let prompt = store
        .blob(head.system_prompt_hash.as_deref().unwrap())
        .unwrap()
        .unwrap();
    assert!(prompt.content.contains("I am the seed."));
}

#[tokio::test]
async fn resume_rebuilds_from_the_dag_after_a_jump() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockProvider::start(vec![]).await;
    let path = {
        let mem = memory_session(&mock, dir.path(), new_manager(dir.path()));
        mem.say(&mock, "q1", Reply::text("Answer one.")).await;
        let target = mem.playfilo.head().unwrap();
        mem.say(&mock, "q2", Reply::text("Answer two.")).await;
        mock.push(Reply::tool_call(
            "t",
            "tobe",
            json!({"target_node_hash": &target[..12], "carryover_message": "back"}),
        ));
        mem.say(&mock, "go back", Reply::text("Resumed timeline."))
            .await;
        mem.session.session_file().unwrap()
    };
    // A new process opens the same file: the context is the DAG lineage (q1, a1, carryover, R).
    let manager = SessionManager::open(&path, "/").unwrap();
    let mem = memory_session(&mock, dir.path(), manager);
    mem.say(&mock, "status?", Reply::text("Still here.")).await;
    let body = mock.requests().last().unwrap().body.to_string();
    assert!(
        body.contains("Answer one.")
            && body.contains("INCARNATION NOTE]: back")
            && body.contains("Resumed timeline.")
    );
    assert!(
        !body.contains("Answer two."),
        "the abandoned branch is not resumed"
    );
    mem.playfilo.flush();
    let store = Store::open(&mem.db).unwrap();
    assert!(
        store
            .actions()
            .unwrap()
            .iter()
            .any(|a| a.action_type == "BOOT")
    );
}

#[tokio::test]
async fn resume_of_a_dag_written_by_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("playfilo.db");
    filo_dag::golden::build(&Store::open(&db).unwrap()).unwrap();
    // A pi session file whose last entry is the reference's final assistant (bb000003).
    let file = dir.path().join("sessions").join("ref.jsonl");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let lines = [
        r#"{"type":"session","version":3,"id":"abc","timestamp":"2026-01-01T09:00:00.000Z","cwd":"/home/u/proj"}"#,
        r#"{"type":"message","id":"a1b2c3d4","parentId":null,"timestamp":"2026-01-01T09:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"Build a CLI that prints the weather for a city."}],"timestamp":1767258000000}}"#,
        r#"{"type":"message","id":"bb000003","parentId":"a1b2c3d4","timestamp":"2026-01-01T09:01:23.000Z","message":{"role":"assistant","content":[{"type":"text","text":"Understood: switching to Python. I will create weather.py."}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1767258083000}}"#,
    ];
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let mock = MockProvider::start(vec![]).await;
    let mem = memory_session(&mock, dir.path(), SessionManager::open(&file, "/").unwrap());
    assert!(
        mem.session
            .notices()
            .iter()
            .any(|n| n.contains("the DAG wins")),
        "{:?}",
        mem.session.notices()
    );
    let texts: Vec<String> = mem
        .session
        .messages()
        .iter()
        .filter_map(|m| m.as_llm().map(|l| serde_json::to_string(l).unwrap()))
        .collect();
    assert_eq!(
        texts.len(),
        6,
        "T -> C -> R: a1b2c3d4 e5f6a7b8 c9d0e1f2 11223344 carryover bb000003"
    );
    assert!(texts[4].contains("User wants Python, not TypeScript."));
    assert!(texts[5].contains("\"stopReason\":\"stop\""));
    // No thinking level on the resumed branch: one is recorded, as a child of the DAG's leaf.
    let m = mem.session.session_manager();
    let leaf = m.leaf_entry().unwrap();
    assert!(matches!(leaf.kind, EntryKind::ThinkingLevelChange { .. }));
    assert_eq!(leaf.parent_id.as_deref(), Some("bb000003"));
}

/// Types a message into the session right after `tobe` ran — that is, during the jump.
struct TypeDuringJump(std::sync::Mutex<Option<filo_core::agent_session::SessionHandle>>);

impl filo_core::Extension for TypeDuringJump {
    fn name(&self) -> &str {
        "type-during-jump"
    }
    fn attach(&self, session: filo_core::agent_session::SessionHandle) {
        *self.0.lock().unwrap() = Some(session);
    }
    fn tool_result(
        &self,
        call: &filo_core::extension::ToolCallEvent,
        _: &filo_agent::ToolOutput,
        _: bool,
    ) -> Option<(filo_agent::ToolOutput, bool)> {
        if call.tool_name == "tobe" {
            let s = self
                .0
                .lock()
                .unwrap()
                .as_ref()
                .and_then(|h| h.upgrade())
                .unwrap();
            s.steer("also add tests", Vec::new());
        }
        None
    }
}

#[tokio::test]
async fn steering_typed_during_a_jump_reaches_the_new_timeline() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockProvider::start(vec![]).await;
    let mem = memory_session_with(
        &mock,
        dir.path(),
        new_manager(dir.path()),
        vec![Arc::new(TypeDuringJump(Default::default()))],
    );
    mem.say(&mock, "start", Reply::text("Base.")).await;
    let target = mem.playfilo.head().unwrap();
    mock.push(Reply::tool_call(
        "t1",
        "tobe",
        json!({"target_node_hash": &target[..12], "carryover_message": "redo"}),
    ));
    mem.say(
        &mock,
        "jump please",
        Reply::text("In the new timeline, with your note."),
    )
    .await;
    let last = mock.requests().last().unwrap().body.clone();
    let roles = roles_and_text(&last);
    let n = roles.len();
    assert!(
        roles[n - 2].1.contains("INCARNATION NOTE]: redo"),
        "{roles:?}"
    );
    assert_eq!(roles[n - 1].0, "user");
    assert!(roles[n - 1].1.contains("also add tests"), "{roles:?}");
    assert!(!last.to_string().contains("jump please"));
    // The steering message is in the DAG under the carryover.
    mem.playfilo.flush();
    let store = Store::open(&mem.db).unwrap();
    let head = mem.playfilo.head().unwrap();
    let lineage = store.lineage(&head, Some(3)).unwrap();
    let roles: Vec<&str> = lineage.iter().map(|n| n.role.as_str()).collect();
    assert_eq!(
        roles,
        ["assistant", "user", "user"],
        "R <- steering <- carryover"
    );
}

#[tokio::test]
async fn wait_for_idle_covers_the_continuation_after_a_jump() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockProvider::start(vec![]).await;
    let mem = memory_session(&mock, dir.path(), new_manager(dir.path()));
    mem.say(&mock, "start", Reply::text("Base.")).await;
    let target = mem.playfilo.head().unwrap();
    mock.push(Reply::tool_call(
        "t1",
        "tobe",
        json!({"target_node_hash": &target[..12], "carryover_message": "x"}),
    ));
    mock.push(filo_testkit::Fault::Stall {
        after_events: 1,
        reply: Reply::text("Continued."),
        stall: std::time::Duration::from_millis(200),
    });
    let s2 = mem.session.clone();
    let run = tokio::spawn(async move { s2.prompt("go", PromptOptions::default()).await });
    while !mem.session.is_streaming() {
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    mem.session.wait_for_idle().await;
    assert_eq!(
        mem.session.last_assistant_text().as_deref(),
        Some("Continued.")
    );
    run.await.unwrap().unwrap();
}

#[tokio::test]
async fn switching_sessions_logs_boot_and_session_switch() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockProvider::start(vec![]).await;
    // A first session with a mirrored answer.
    let first_file = {
        let mem = memory_session(&mock, dir.path(), new_manager(dir.path()));
        mem.say(&mock, "one", Reply::text("In the first session."))
            .await;
        mem.session.session_file().unwrap()
    };
    let mem = memory_session(&mock, dir.path(), new_manager(dir.path()));
    mem.say(&mock, "two", Reply::text("In the second session."))
        .await;
    let second_head = mem.playfilo.head().unwrap();
    mem.session.switch_session(&first_file).await.unwrap();
    let first_head = mem.playfilo.head().unwrap();
    assert_ne!(first_head, second_head);
    mem.playfilo.flush();
    let store = Store::open(&mem.db).unwrap();
    let actions = store.actions().unwrap();
    let boot = actions
        .iter()
        .rev()
        .find(|a| a.action_type == "BOOT")
        .unwrap();
    assert_eq!(boot.to_node.as_deref(), Some(first_head.as_str()));
    let switch = actions
        .iter()
        .find(|a| a.action_type == "SESSION_SWITCH")
        .unwrap();
    assert_eq!(switch.from_node.as_deref(), Some(second_head.as_str()));
    assert_eq!(switch.to_node.as_deref(), Some(first_head.as_str()));
    let meta: Value = serde_json::from_str(switch.metadata.as_deref().unwrap()).unwrap();
    assert_eq!(meta["trigger"], "human");
    assert_eq!(meta["session"], first_file.to_string_lossy().as_ref());
    assert!(mem.session.messages().iter().any(|m| {
        serde_json::to_string(m)
            .unwrap()
            .contains("In the first session.")
    }));
}

#[tokio::test]
async fn a_session_the_dag_never_saw_keeps_its_history_across_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockProvider::start(vec![]).await;
    // Another session leaves PI_HEAD somewhere: it must not adopt the resumed one.
    {
        let mem = memory_session(&mock, dir.path(), new_manager(dir.path()));
        mem.say(&mock, "elsewhere", Reply::text("Unrelated.")).await;
    }
    // A pi session file with history the DAG never saw.
    let file = dir.path().join("pi.jsonl");
    let lines = [
        r#"{"type":"session","version":3,"id":"pi-session","timestamp":"2026-01-01T09:00:00.000Z","cwd":"/p"}"#,
        r#"{"type":"message","id":"aa000001","parentId":null,"timestamp":"2026-01-01T09:00:00.000Z","message":{"role":"user","content":"old question","timestamp":1}}"#,
        r#"{"type":"message","id":"aa000002","parentId":"aa000001","timestamp":"2026-01-01T09:00:01.000Z","message":{"role":"assistant","content":[{"type":"text","text":"old answer"}],"api":"openai-completions","provider":"mock","model":"mock-model","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":2}}"#,
    ];
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    for (i, prompt) in ["first resume", "second resume", "third resume"]
        .iter()
        .enumerate()
    {
        let mem = memory_session(&mock, dir.path(), SessionManager::open(&file, "/").unwrap());
        mock.push(Reply::text(format!("answer {i}")));
        mem.session
            .prompt(prompt, PromptOptions::default())
            .await
            .unwrap();
        let body = mock.requests().last().unwrap().body.to_string();
        assert!(
            body.contains("old question") && body.contains("old answer"),
            "resume {i}: {body}"
        );
        assert!(
            !body.contains("elsewhere"),
            "resume {i} adopted another session: {body}"
        );
        if i > 0 {
            assert!(
                body.contains("answer 0"),
                "resume {i} lost the earlier resume: {body}"
            );
        }
    }
}

#[tokio::test]
async fn a_user_can_travel_without_a_tool_call() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockProvider::start(vec![]).await;
    let mem = memory_session(&mock, dir.path(), new_manager(dir.path()));
    mem.say(&mock, "one", Reply::text("First.")).await;
    let target = mem.playfilo.head().unwrap();
    mem.say(&mock, "two", Reply::text("Second.")).await;
    let before = mem.playfilo.head().unwrap();
    assert!(
        mem.playfilo
            .travel("zzzz", "x")
            .unwrap_err()
            .to_string()
            .contains("Node not found")
    );
    mem.playfilo.travel(&target[..12], "user jump").unwrap();
    mock.push(Reply::text("Answered in the past."));
    mem.session.continue_run().await.unwrap();
    let body = mock.requests().last().unwrap().body.to_string();
    assert!(body.contains("First.") && body.contains("INCARNATION NOTE]: user jump"));
    assert!(!body.contains("Second."));
    mem.playfilo.flush();
    let store = Store::open(&mem.db).unwrap();
    let inc = store
        .actions()
        .unwrap()
        .into_iter()
        .find(|a| a.action_type == "INCARNATE")
        .unwrap();
    assert_eq!(inc.from_node.as_deref(), Some(before.as_str()));
    let head = store.node(&mem.playfilo.head().unwrap()).unwrap().unwrap();
    let carry = store
        .node(head.parent_id.as_deref().unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(carry.parent_id.as_deref(), Some(target.as_str()));
}
