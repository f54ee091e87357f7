//! The system prompt of an embedded run (C27, spec §10, OpenClaw `buildAgentSystemPrompt`): built
//! per run from the tools the policy let through, the channel, the owners and the runtime, and
//! applied as the session's prompt (filo never rebuilds pi's coding prompt for embedded runs).
//!
//! Sections keep OpenClaw's names and order; a section with nothing to say is left out, and the
//! `Minimal` mode (sub-agents, cron runs, runs with a tool allow list) drops the chatty ones.
//! The wording is filo's own. OpenClaw-only sections with no filo counterpart (self-update,
//! documentation mirrors, canvas, nodes) are not produced.

use std::path::Path;

/// How much of the prompt a run gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PromptMode {
    #[default]
    Full,
    /// Sub-agents, cron runs, runs limited to a tool allow list.
    Minimal,
    /// Only the first line.
    None,
}

/// What the prompt is built from.
#[derive(Debug, Clone, Default)]
pub struct PromptInput<'a> {
    pub mode: PromptMode,
    /// `(name, description)` of every tool offered, after policy.
    pub tools: Vec<(&'a str, &'a str)>,
    pub workspace: Option<&'a Path>,
    pub workspace_notes: Vec<&'a str>,
    /// The extra prompt of the run (group chat context, or a sub-agent's task).
    pub extra: Option<&'a str>,
    pub owner_numbers: &'a [String],
    /// The skills list (`<available_skills>…`), when the agent has skills.
    pub skills_prompt: Option<&'a str>,
    pub user_timezone: Option<&'a str>,
    /// Context files injected as `# Project Context`: (path, content).
    pub context_files: Vec<(&'a str, &'a str)>,
    /// The provider needs `<think>`/`<final>` tags.
    pub reasoning_tag_hint: bool,
    pub tts_hint: Option<&'a str>,
    pub heartbeat_prompt: Option<&'a str>,
    pub runtime: Runtime<'a>,
}

/// The `## Runtime` line's parts (absent ones are left out).
#[derive(Debug, Clone, Default)]
pub struct Runtime<'a> {
    pub agent_id: Option<&'a str>,
    pub host: Option<&'a str>,
    pub os: Option<&'a str>,
    pub arch: Option<&'a str>,
    pub model: Option<&'a str>,
    pub default_model: Option<&'a str>,
    pub channel: Option<&'a str>,
    pub capabilities: Vec<&'a str>,
    pub thinking: Option<&'a str>,
    pub reasoning: Option<&'a str>,
    pub date: Option<&'a str>,
}

/// The first line, the whole prompt in `None` mode.
pub const IDENTITY: &str = "You are a personal assistant running inside filo.";

/// The fixed order of known tools in `## Tooling` (filo's `bash` stands at `exec`'s place);
/// others follow alphabetically.
const TOOL_ORDER: &[&str] = &[
    "read",
    "write",
    "edit",
    "apply_patch",
    "grep",
    "find",
    "ls",
    "exec",
    "bash",
    "process",
    "web_search",
    "web_fetch",
    "browser",
    "canvas",
    "nodes",
    "cron",
    "message",
    "gateway",
    "agents_list",
    "sessions_list",
    "sessions_history",
    "sessions_send",
    "session_status",
    "image",
    "life",
    "recall",
    "trace",
    "tobe",
];

fn tooling(tools: &[(&str, &str)]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut unique: Vec<(&str, &str)> = tools
        .iter()
        .copied()
        .filter(|(n, _)| seen.insert(n.to_lowercase()))
        .collect();
    let rank = |n: &str| TOOL_ORDER.iter().position(|t| t.eq_ignore_ascii_case(n));
    unique.sort_by(|a, b| match (rank(a.0), rank(b.0)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.0.to_lowercase().cmp(&b.0.to_lowercase()),
    });
    let mut lines = vec![
        "## Tooling".to_owned(),
        "Tool availability (filtered by policy):".to_owned(),
        "Tool names are case-sensitive. Call tools exactly as listed.".to_owned(),
    ];
    if unique.is_empty() {
        lines.push("No tools are available in this run: answer from the conversation.".to_owned());
    }
    for (name, description) in unique {
        let summary = description.lines().next().unwrap_or("").trim();
        lines.push(if summary.is_empty() {
            format!("- {name}")
        } else {
            format!("- {name}: {summary}")
        });
    }
    lines.push(String::new());
    lines
}

fn section(out: &mut Vec<String>, title: &str, body: &[&str]) {
    out.push(title.to_owned());
    out.extend(body.iter().map(|l| (*l).to_owned()));
    out.push(String::new());
}

/// The embedded system prompt.
pub fn build_system_prompt(p: &PromptInput<'_>) -> String {
    if p.mode == PromptMode::None {
        return IDENTITY.to_owned();
    }
    let minimal = p.mode == PromptMode::Minimal;
    let has = |t: &str| p.tools.iter().any(|(n, _)| n.eq_ignore_ascii_case(t));
    let mut out = vec![IDENTITY.to_owned(), String::new()];
    out.extend(tooling(&p.tools));
    section(
        &mut out,
        "## Tool Call Style",
        &[
            "Call routine, low-risk tools without narrating them; explain only multi-step, sensitive or destructive actions, or when asked.",
        ],
    );
    section(
        &mut out,
        "## Safety",
        &[
            "You have no goals of your own: no self-preservation, replication, resource acquisition or power-seeking, and no plans beyond the user's request.",
            "Safety and human oversight come before finishing the task: when instructions conflict, pause and ask; obey requests to stop, pause or be audited, and never bypass safeguards.",
            "Do not manipulate anyone to expand your access, do not copy yourself, and do not change system prompts, safety rules or tool policies unless the user explicitly asks.",
        ],
    );
    section(
        &mut out,
        "## filo CLI Quick Reference",
        &[
            "filo gateway status | start | stop | restart — the gateway serving this session.",
            "filo dag life | recall | trace — the memory graph. Do not invent commands.",
        ],
    );
    if let (Some(skills), false) = (p.skills_prompt.filter(|s| !s.trim().is_empty()), minimal) {
        section(
            &mut out,
            "## Skills (mandatory)",
            &[
                "Before answering, scan <available_skills>. If exactly one skill applies, read its SKILL.md with the read tool and follow it; if none applies, read none.",
                skills,
            ],
        );
    }
    if !minimal && (has("recall") || has("life")) {
        section(
            &mut out,
            "## Memory Recall",
            &[
                "Earlier turns of this and other sessions are in the memory graph: use `life` to see where you are, `recall` to read a node with its context, `trace` for the navigation log, before saying you do not remember.",
            ],
        );
    }
    if p.user_timezone.is_some() && has("session_status") {
        out.push("For the current date and time, call session_status.".to_owned());
        out.push(String::new());
    }
    if let Some(dir) = p.workspace {
        let mut body = vec![format!("Your working directory is: {}", dir.display())];
        body.push(
            "This is the one workspace for file tools unless you are told otherwise.".to_owned(),
        );
        body.extend(p.workspace_notes.iter().map(|n| (*n).to_owned()));
        out.push("## Workspace".to_owned());
        out.extend(body);
        out.push(String::new());
    }
    if let (false, [_, ..]) = (minimal, p.owner_numbers) {
        let owners = p.owner_numbers.join(", ");
        let line =
            format!("Owner numbers: {owners}. Treat messages from these numbers as the user.");
        section(&mut out, "## User Identity", &[&line]);
    }
    if let Some(tz) = p.user_timezone {
        section(
            &mut out,
            "## Current Date & Time",
            &[&format!("Time zone: {tz}")],
        );
    }
    if !p.context_files.is_empty() {
        section(
            &mut out,
            "## Workspace Files (injected)",
            &["These files are loaded below as Project Context; the user can edit them."],
        );
    }
    if !minimal {
        section(
            &mut out,
            "## Reply Tags",
            &[
                "To reply to the message that triggered this turn, start your answer with [[reply_to_current]]; to reply to another message use [[reply_to:<id>]]. Whitespace inside the tags is allowed; tags are removed before sending.",
            ],
        );
        section(
            &mut out,
            "## Messaging",
            &[
                "Your answer is delivered to the conversation this turn came from; write it for that channel.",
            ],
        );
    }
    if let (Some(hint), false) = (p.tts_hint, minimal) {
        section(&mut out, "## Voice (TTS)", &[hint]);
    }
    if let Some(extra) = p.extra.map(str::trim).filter(|e| !e.is_empty()) {
        let title = if minimal {
            "## Subagent Context"
        } else {
            "## Group Chat Context"
        };
        section(&mut out, title, &[extra]);
    }
    if p.reasoning_tag_hint {
        section(
            &mut out,
            "## Reasoning Format",
            &[
                "Put all internal reasoning inside <think>...</think>, then the reply inside <final>...</final>. Only the text inside <final> is shown to the user.",
                "Example: <think>The user wants a short answer.</think><final>Done.</final>",
            ],
        );
    }
    if !p.context_files.is_empty() {
        out.push("# Project Context".to_owned());
        out.push(String::new());
        let soul = p
            .context_files
            .iter()
            .any(|(path, _)| path.to_lowercase().ends_with("soul.md"));
        if soul {
            out.push("SOUL.md is your persona: embody its tone and character.".to_owned());
            out.push(String::new());
        }
        for (path, content) in &p.context_files {
            out.push(format!("## {path}"));
            out.push(String::new());
            out.push((*content).to_owned());
            out.push(String::new());
        }
    }
    if !minimal {
        section(
            &mut out,
            "## Silent Replies",
            &[
                "When there is nothing to say, reply with exactly NO_REPLY and nothing else: never append it to a real answer and never wrap it in markdown or code.",
            ],
        );
        let prompt = p
            .heartbeat_prompt
            .map_or_else(|| "(configured)".to_owned(), str::to_owned);
        let line = format!("Heartbeat prompt: {prompt}");
        section(
            &mut out,
            "## Heartbeats",
            &[
                &line,
                "When a heartbeat finds nothing that needs attention, reply exactly HEARTBEAT_OK.",
            ],
        );
    }
    out.push("## Runtime".to_owned());
    out.push(runtime_line(&p.runtime));
    let reasoning = p.runtime.reasoning.unwrap_or("off");
    out.push(format!("Reasoning: {reasoning} (hidden unless on/stream). Toggle /reasoning; /status shows Reasoning when enabled."));
    out.join("\n").trim_end().to_owned()
}

fn runtime_line(r: &Runtime<'_>) -> String {
    let os = r.os.map(|os| match r.arch {
        Some(arch) => format!("{os} ({arch})"),
        None => os.to_owned(),
    });
    let capabilities = r.channel.map(|_| {
        if r.capabilities.is_empty() {
            "none".to_owned()
        } else {
            r.capabilities.join(",")
        }
    });
    let own = |v: Option<&str>| v.map(str::to_owned);
    let parts: Vec<String> = [
        ("agent", own(r.agent_id)),
        ("host", own(r.host)),
        ("os", os),
        ("filo", Some(env!("CARGO_PKG_VERSION").to_owned())),
        ("model", own(r.model)),
        ("default_model", own(r.default_model)),
        ("date", own(r.date)),
        ("channel", own(r.channel)),
        ("capabilities", capabilities),
        ("thinking", Some(r.thinking.unwrap_or("off").to_owned())),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.filter(|v| !v.is_empty()).map(|v| format!("{k}={v}")))
    .collect();
    format!("Runtime: {}", parts.join(" | "))
}

#[cfg(test)]
#[path = "prompt_tests.rs"]
mod tests;
