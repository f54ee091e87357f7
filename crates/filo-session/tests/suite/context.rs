use filo_session::context::{COMPACTION_SUMMARY_PREFIX, COMPACTION_SUMMARY_SUFFIX};
use filo_session::{ModelRef, SessionManager};

use super::{assistant, texts, user};

#[test]
fn empty_session_gives_empty_context() {
    let s = SessionManager::in_memory("/p");
    let ctx = s.build_context();
    assert!(ctx.messages.is_empty());
    assert_eq!(ctx.thinking_level, "off");
    assert_eq!(ctx.model, None);
}

#[test]
fn tracks_thinking_level_and_model() {
    let mut s = SessionManager::in_memory("/p");
    s.append_model_change("openai", "gpt-5").unwrap();
    s.append_thinking_level_change("high").unwrap();
    s.append_message(user("hi")).unwrap();
    let ctx = s.build_context();
    assert_eq!(ctx.thinking_level, "high");
    assert_eq!(
        ctx.model,
        Some(ModelRef {
            provider: "openai".into(),
            model_id: "gpt-5".into()
        })
    );
    s.append_message(assistant("hello")).unwrap();
    let ctx = s.build_context();
    assert_eq!(ctx.model.unwrap().model_id, "claude-sonnet-4-5");
    assert_eq!(texts(&ctx.messages), ["hi", "hello"]);
}

#[test]
fn compaction_emits_summary_then_kept_then_later() {
    let mut s = SessionManager::in_memory("/p");
    s.append_message(user("one")).unwrap();
    s.append_message(assistant("a1")).unwrap();
    let kept = s.append_message(user("two")).unwrap();
    s.append_message(assistant("a2")).unwrap();
    s.append_compaction("first summary", &kept, 100, None, Some(false))
        .unwrap();
    s.append_message(user("three")).unwrap();
    let ctx = s.build_context();
    assert_eq!(
        texts(&ctx.messages),
        [
            format!("{COMPACTION_SUMMARY_PREFIX}first summary{COMPACTION_SUMMARY_SUFFIX}"),
            "two".into(),
            "a2".into(),
            "three".into()
        ]
    );
    // A later compaction wins; the earlier one emits nothing.
    let kept2 = s.leaf_id().unwrap().to_string();
    s.append_compaction("second", &kept2, 200, None, None)
        .unwrap();
    let ctx = s.build_context();
    assert_eq!(texts(&ctx.messages).len(), 2);
    assert!(texts(&ctx.messages)[0].contains("second"));
    // Unknown firstKeptEntryId keeps nothing before the compaction.
    s.append_compaction("third", "nope", 1, None, None).unwrap();
    assert_eq!(texts(&s.build_context().messages).len(), 1);
}

#[test]
fn follows_branch_to_leaf_and_includes_branch_summaries() {
    let mut s = SessionManager::in_memory("/p");
    let u1 = s.append_message(user("root")).unwrap();
    s.append_message(assistant("left")).unwrap();
    s.branch(&u1).unwrap();
    s.append_message(assistant("right")).unwrap();
    assert_eq!(texts(&s.build_context().messages), ["root", "right"]);
    s.branch_with_summary(Some(&u1), "we tried left", None, Some(false))
        .unwrap();
    let t = texts(&s.build_context().messages);
    assert_eq!(t.len(), 2);
    assert!(t[1].starts_with("The following is a summary of a branch"));
    assert!(t[1].ends_with("we tried left</summary>"));
}

#[test]
fn custom_entries_stay_out_of_context_custom_messages_go_in() {
    let mut s = SessionManager::in_memory("/p");
    s.append_message(user("hi")).unwrap();
    s.append_custom_entry("state", Some(serde_json::json!({"k": 1})))
        .unwrap();
    s.append_custom_message_entry(
        "note",
        filo_ai::UserContent::Text("injected".into()),
        true,
        None,
    )
    .unwrap();
    s.append_session_info("  named  ").unwrap();
    assert_eq!(texts(&s.build_context().messages), ["hi", "injected"]);
    assert_eq!(s.session_name(), Some("named"));
}
