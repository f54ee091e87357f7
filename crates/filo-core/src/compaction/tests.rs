use std::sync::{Arc, Mutex};

use filo_ai::{
    AssistantEvent, AssistantMessage, AssistantStream, ContentBlock, Context, Message, Model,
    ModelClient, StopReason, StreamOptions, ToolCall, UserContent, UserMessage,
};
use filo_session::{SessionManager, SessionMessage};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::*;

fn user(text: &str) -> SessionMessage {
    SessionMessage::Llm(Message::User(UserMessage {
        content: UserContent::Blocks(vec![ContentBlock::text(text)]),
        timestamp: 1,
    }))
}

fn assistant(blocks: Vec<ContentBlock>, total: u64) -> SessionMessage {
    SessionMessage::Llm(Message::Assistant(AssistantMessage {
        content: blocks,
        api: "openai-completions".into(),
        provider: "mock".into(),
        model: "m".into(),
        usage: filo_ai::Usage {
            total_tokens: total,
            ..Default::default()
        },
        stop_reason: StopReason::Stop,
        timestamp: 2,
        error_message: None,
        error_status: None,
        response_id: None,
    }))
}

fn tool_call(name: &str, path: &str) -> ContentBlock {
    ContentBlock::ToolCall(ToolCall {
        id: format!("c-{name}-{path}"),
        name: name.into(),
        arguments: json!({ "path": path }),
        thought_signature: None,
    })
}

fn model() -> Model {
    serde_json::from_value(json!({
        "id": "m", "name": "m", "api": "openai-completions", "provider": "mock",
        "baseUrl": "http://127.0.0.1:1", "contextWindow": 1000, "maxTokens": 100
    }))
    .unwrap()
}

/// A client that answers every call with fixed text (or an error) and records the contexts.
struct Scripted {
    reply: Result<String, String>,
    seen: Mutex<Vec<(Context, StreamOptions)>>,
}

impl ModelClient for Scripted {
    fn stream(
        &self,
        m: &Model,
        c: &Context,
        o: &StreamOptions,
        _: CancellationToken,
    ) -> AssistantStream {
        self.seen.lock().unwrap().push((c.clone(), o.clone()));
        let mut msg = AssistantMessage {
            content: vec![],
            api: m.api.clone(),
            provider: m.provider.clone(),
            model: m.id.clone(),
            usage: Default::default(),
            stop_reason: StopReason::Stop,
            timestamp: 0,
            error_message: None,
            error_status: None,
            response_id: None,
        };
        let ev = match &self.reply {
            Ok(t) => {
                msg.content.push(ContentBlock::text(t.clone()));
                AssistantEvent::Done { message: msg }
            }
            Err(e) => {
                msg.stop_reason = StopReason::Error;
                msg.error_message = Some(e.clone());
                AssistantEvent::Error { message: msg }
            }
        };
        Box::pin(futures::stream::iter(vec![ev]))
    }
}

#[test]
fn token_estimates_and_threshold() {
    assert_eq!(estimate_tokens(&user("abcdefgh")), 2);
    assert_eq!(estimate_tokens(&user("abcdefghi")), 3);
    let msgs = vec![
        user("x"),
        assistant(vec![ContentBlock::text("y")], 500),
        user(&"z".repeat(40)),
    ];
    assert_eq!(estimate_context_tokens(&msgs), 510);
    let s = CompactionSettings {
        enabled: true,
        reserve_tokens: 100,
        keep_recent_tokens: 10,
    };
    assert!(should_compact(901, 1000, &s));
    assert!(!should_compact(900, 1000, &s));
    assert!(!should_compact(
        5000,
        1000,
        &CompactionSettings {
            enabled: false,
            ..s
        }
    ));
}

fn session_with_turns() -> SessionManager {
    let mut s = SessionManager::in_memory("/p");
    s.append_message(user(&"a".repeat(400))).unwrap();
    s.append_message(assistant(
        vec![tool_call("read", "src/a.rs"), ContentBlock::text("ok")],
        100,
    ))
    .unwrap();
    s.append_message(user(&"b".repeat(400))).unwrap();
    s.append_message(assistant(
        vec![
            tool_call("edit", "src/a.rs"),
            tool_call("read", "README.md"),
        ],
        200,
    ))
    .unwrap();
    s.append_thinking_level_change("high").unwrap();
    s.append_message(user(&"c".repeat(400))).unwrap();
    s.append_message(assistant(vec![ContentBlock::text("d".repeat(400))], 300))
        .unwrap();
    s
}

#[test]
fn prepare_keeps_recent_and_collects_files() {
    let s = session_with_turns();
    let path = s.branch_path(None);
    let settings = CompactionSettings {
        enabled: true,
        reserve_tokens: 100,
        keep_recent_tokens: 250,
    };
    let prep = prepare_compaction(&path, &settings).unwrap();
    assert_eq!(prep.first_kept_entry_id, path[2].id);
    assert!(!prep.is_split_turn);
    assert_eq!(prep.messages_to_summarize.len(), 2);
    assert_eq!(prep.read_files.iter().collect::<Vec<_>>(), ["src/a.rs"]);
    assert!(prep.modified_files.is_empty());
    assert_eq!(prep.tokens_before, 300);
}

#[test]
fn cut_extends_over_settings_entries_like_pi() {
    // The cut lands on the last user message, then moves back over the thinking-level change;
    // the cut entry is then not a user message, so (as in pi) the turn counts as split.
    let s = session_with_turns();
    let path = s.branch_path(None);
    let settings = CompactionSettings {
        enabled: true,
        reserve_tokens: 100,
        keep_recent_tokens: 150,
    };
    let prep = prepare_compaction(&path, &settings).unwrap();
    assert_eq!(prep.first_kept_entry_id, path[4].id);
    assert!(prep.is_split_turn);
    assert_eq!(prep.messages_to_summarize.len(), 2);
    assert_eq!(prep.turn_prefix_messages.len(), 2);
    assert_eq!(prep.read_files.iter().collect::<Vec<_>>(), ["README.md"]);
    assert_eq!(prep.modified_files.iter().collect::<Vec<_>>(), ["src/a.rs"]);
    assert_eq!(
        format_file_lists(&prep.read_files, &prep.modified_files),
        "\n\n<read-files>\nREADME.md\n</read-files>\n\n<modified-files>\nsrc/a.rs\n</modified-files>"
    );
}

#[test]
fn split_turn_when_cut_is_inside_a_turn() {
    let s = session_with_turns();
    let path = s.branch_path(None);
    let settings = CompactionSettings {
        enabled: true,
        reserve_tokens: 100,
        keep_recent_tokens: 50,
    };
    let prep = prepare_compaction(&path, &settings).unwrap();
    assert_eq!(prep.first_kept_entry_id, path[6].id);
    assert!(prep.is_split_turn);
    assert_eq!(prep.turn_prefix_messages.len(), 1);
}

#[test]
fn nothing_to_prepare_right_after_a_compaction() {
    let mut s = session_with_turns();
    let keep = s.leaf_id().unwrap().to_string();
    s.append_compaction("sum", &keep, 10, None, Some(false))
        .unwrap();
    assert!(prepare_compaction(&s.branch_path(None), &CompactionSettings::default()).is_none());
}

#[tokio::test]
async fn summary_goes_through_the_model_with_file_lists() {
    let s = session_with_turns();
    let path = s.branch_path(None);
    let settings = CompactionSettings {
        enabled: true,
        reserve_tokens: 1000,
        keep_recent_tokens: 150,
    };
    let prep = prepare_compaction(&path, &settings).unwrap();
    assert!(prep.is_split_turn);
    let client = Scripted {
        reply: Ok("## Goal\nship it".into()),
        seen: Mutex::new(vec![]),
    };
    let summary = generate_summary(
        &client,
        &model(),
        Some("k".into()),
        &prep,
        1000,
        Some("focus on tests"),
        CancellationToken::new(),
    )
    .await
    .unwrap();
    assert!(summary.starts_with(
        "## Goal\nship it\n\n---\n\n**Turn Context (split turn):**\n\n## Goal\nship it\n\n<read-files>"
    ));
    let seen = client.seen.lock().unwrap();
    assert_eq!(
        seen.len(),
        2,
        "history and turn prefix are summarized separately"
    );
    assert_eq!(seen[1].1.max_tokens, Some(500));
    let (ctx, opts) = &seen[0];
    assert_eq!(
        ctx.system_prompt.as_deref(),
        Some(SUMMARIZATION_SYSTEM_PROMPT)
    );
    assert_eq!(opts.max_tokens, Some(800));
    assert_eq!(opts.api_key.as_deref(), Some("k"));
    let Message::User(u) = &ctx.messages[0] else {
        panic!()
    };
    let UserContent::Blocks(b) = &u.content else {
        panic!()
    };
    let text = b[0].as_text().unwrap();
    assert!(text.starts_with("<conversation>\n[User]: aaaa"));
    assert!(text.contains("[Assistant tool calls]: read(path=\"src/a.rs\")"));
    assert!(text.ends_with("Additional focus: focus on tests"));
}

#[tokio::test]
async fn model_error_becomes_summarization_failed() {
    let s = session_with_turns();
    let path = s.branch_path(None);
    let prep = prepare_compaction(
        &path,
        &CompactionSettings {
            keep_recent_tokens: 150,
            ..Default::default()
        },
    )
    .unwrap();
    let client = Arc::new(Scripted {
        reply: Err("429 rate limited".into()),
        seen: Mutex::new(vec![]),
    });
    let err = generate_summary(
        client.as_ref(),
        &model(),
        None,
        &prep,
        1000,
        None,
        CancellationToken::new(),
    )
    .await
    .unwrap_err();
    assert_eq!(err.to_string(), "Summarization failed: 429 rate limited");
}

#[tokio::test]
async fn branch_summary_covers_the_abandoned_branch() {
    let mut s = SessionManager::in_memory("/p");
    let root = s.append_message(user("root")).unwrap();
    s.append_message(assistant(vec![tool_call("write", "x.txt")], 10))
        .unwrap();
    let old_leaf = s.append_message(user("explored")).unwrap();
    s.branch(&root).unwrap();
    let target = s
        .append_message(assistant(vec![ContentBlock::text("other way")], 5))
        .unwrap();
    let entries = collect_entries_for_branch_summary(&s, Some(&old_leaf), &target);
    assert_eq!(entries.len(), 2);
    let prep = prepare_branch_entries(&entries, 10_000);
    assert_eq!(prep.modified_files.iter().collect::<Vec<_>>(), ["x.txt"]);
    let client = Scripted {
        reply: Ok("## Goal\nexplore".into()),
        seen: Mutex::new(vec![]),
    };
    let text = generate_branch_summary(
        &client,
        &model(),
        None,
        &prep,
        None,
        false,
        CancellationToken::new(),
    )
    .await
    .unwrap();
    assert!(text.starts_with("The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n## Goal\nexplore"));
    assert!(text.ends_with("<modified-files>\nx.txt\n</modified-files>"));
    assert!(collect_entries_for_branch_summary(&s, None, &target).is_empty());
}

fn prep(history: Vec<SessionMessage>, prefix: Vec<SessionMessage>) -> CompactionPreparation {
    CompactionPreparation {
        first_kept_entry_id: "kept".into(),
        messages_to_summarize: history,
        is_split_turn: !prefix.is_empty(),
        turn_prefix_messages: prefix,
        tokens_before: 10,
        previous_summary: None,
        read_files: Default::default(),
        modified_files: Default::default(),
    }
}

async fn summarize(
    client: &Scripted,
    prep: &CompactionPreparation,
) -> Result<String, SummaryError> {
    let cancel = CancellationToken::new();
    generate_summary(client, &model(), None, prep, 1000, None, cancel).await
}

/// pi 0.73 `compact`: only a split turn stands in "No prior history." for an empty history;
/// a compaction that keeps everything still has the model write its summary.
#[tokio::test]
async fn an_empty_history_is_summarized_by_the_model_unless_a_turn_is_split() {
    let client = Scripted {
        reply: Ok("## Goal\nwritten".into()),
        seen: Mutex::new(vec![]),
    };
    let whole = summarize(&client, &prep(vec![], vec![])).await.unwrap();
    assert_eq!(whole, "## Goal\nwritten");
    assert_eq!(client.seen.lock().unwrap().len(), 1);
    let split = summarize(&client, &prep(vec![], vec![user("start")]))
        .await
        .unwrap();
    assert_eq!(
        split,
        "No prior history.\n\n---\n\n**Turn Context (split turn):**\n\n## Goal\nwritten"
    );
    assert_eq!(client.seen.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn a_failed_prefix_summary_and_an_empty_error_read_as_pi_073() {
    let client = Scripted {
        reply: Err("500 boom".into()),
        seen: Mutex::new(vec![]),
    };
    let err = summarize(&client, &prep(vec![], vec![user("start")]))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Turn prefix summarization failed: 500 boom"
    );
    let silent = Scripted {
        reply: Err(String::new()),
        seen: Mutex::new(vec![]),
    };
    let err = summarize(&silent, &prep(vec![user("a")], vec![]))
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "Summarization failed: Unknown error");
}
