use std::path::Path;

use super::*;

fn full<'a>() -> PromptInput<'a> {
    PromptInput {
        tools: vec![
            ("exec", "Run a command"),
            ("sessions_list", "List sessions"),
            ("sessions_history", "History"),
            ("sessions_send", "Send"),
        ],
        workspace: Some(Path::new("/work/space")),
        ..PromptInput::default()
    }
}

#[test]
fn tool_names_are_listed_under_the_policy_line() {
    let p = build_system_prompt(&full());
    assert!(p.starts_with("You are a personal assistant running inside filo.\n"));
    assert!(p.contains("Tool availability (filtered by policy):"));
    for t in [
        "- exec: Run a command",
        "- sessions_list: List sessions",
        "- sessions_history",
        "- sessions_send",
    ] {
        assert!(p.contains(t), "{t}");
    }
}

#[test]
fn tools_follow_the_fixed_order_then_the_alphabet_once_each() {
    let input = PromptInput {
        tools: vec![
            ("zeta", "z"),
            ("bash", "Run"),
            ("read", "Read a file"),
            ("alpha", "a"),
            ("READ", "dup"),
            ("life", "memory"),
        ],
        ..PromptInput::default()
    };
    let p = build_system_prompt(&input);
    let order: Vec<&str> = p.lines().filter(|l| l.starts_with("- ")).collect();
    assert_eq!(
        order,
        [
            "- read: Read a file",
            "- bash: Run",
            "- life: memory",
            "- alpha: a",
            "- zeta: z"
        ]
    );
}

#[test]
fn the_full_prompt_has_safety_the_cli_reference_and_the_chat_sections() {
    let owners = vec!["+100".to_owned(), "+200".to_owned()];
    let input = PromptInput {
        owner_numbers: &owners,
        extra: Some("This is the team channel."),
        user_timezone: Some("Europe/Rome"),
        ..full()
    };
    let p = build_system_prompt(&input);
    for s in [
        "## Safety",
        "no self-preservation",
        "pause and ask",
        "do not copy yourself",
        "## filo CLI Quick Reference",
        "filo gateway status | start | stop | restart",
        "Do not invent commands.",
        "Owner numbers: +100, +200. Treat messages from these numbers as the user.",
        "## Current Date & Time\nTime zone: Europe/Rome",
        "## Reply Tags",
        "## Messaging",
        "## Group Chat Context\nThis is the team channel.",
        "## Silent Replies",
        "NO_REPLY",
        "## Heartbeats",
        "HEARTBEAT_OK",
        "## Workspace\nYour working directory is: /work/space",
    ] {
        assert!(p.contains(s), "missing {s:?} in\n{p}");
    }
    assert!(!p.contains("## Subagent Context"));
    let runtime = p.lines().find(|l| l.starts_with("Runtime: ")).unwrap();
    assert!(
        runtime.contains("filo=") && runtime.ends_with("thinking=off"),
        "{runtime}"
    );
}

#[test]
fn minimal_mode_keeps_safety_and_the_subagent_context_only() {
    let owners = vec!["+100".to_owned()];
    let input = PromptInput {
        mode: PromptMode::Minimal,
        owner_numbers: &owners,
        skills_prompt: Some("<available_skills>x</available_skills>"),
        heartbeat_prompt: Some("check mail"),
        tts_hint: Some("speak"),
        extra: Some("You review one file."),
        tools: vec![("message", "m"), ("recall", "r"), ("life", "l")],
        ..PromptInput::default()
    };
    let p = build_system_prompt(&input);
    assert!(p.contains("## Safety"));
    assert!(p.contains("## Subagent Context\nYou review one file."));
    for absent in [
        "Owner numbers",
        "## Memory Recall",
        "## Reply Tags",
        "## Messaging",
        "## Voice (TTS)",
        "## Silent Replies",
        "## Heartbeats",
        "## Group Chat Context",
        "## Skills",
    ] {
        assert!(!p.contains(absent), "{absent:?} in minimal mode:\n{p}");
    }
}

#[test]
fn optional_sections_appear_when_asked() {
    let input = PromptInput {
        reasoning_tag_hint: true,
        tts_hint: Some("Keep spoken replies short."),
        skills_prompt: Some("<available_skills>\n- weather\n</available_skills>"),
        tools: vec![("recall", "Read a node")],
        context_files: vec![("AGENTS.md", "Be brief."), ("SOUL.md", "Cheerful.")],
        ..PromptInput::default()
    };
    let p = build_system_prompt(&input);
    for s in [
        "## Reasoning Format",
        "<think>...</think>",
        "<final>...</final>",
        "## Voice (TTS)\nKeep spoken replies short.",
        "## Skills (mandatory)",
        "<available_skills>",
        "## Memory Recall",
        "# Project Context",
        "## AGENTS.md\n\nBe brief.",
        "SOUL.md is your persona",
    ] {
        assert!(p.contains(s), "missing {s:?}");
    }
    assert_eq!(
        build_system_prompt(&PromptInput {
            mode: PromptMode::None,
            ..input
        }),
        IDENTITY
    );
}
