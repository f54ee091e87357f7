//! Asking the model for a summary (pi spec §5.4, §5.5).

use filo_ai::{
    AssistantEvent, AssistantMessage, ContentBlock, Context, Message, Model, ModelClient,
    StopReason, StreamOptions, ThinkingLevel, Usage, UserContent, UserMessage,
};
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::{CompactionPreparation, format_file_lists};
use filo_session::{SessionMessage, convert_to_llm};

/// The system prompt of every summarization call.
pub const SUMMARIZATION_SYSTEM_PROMPT: &str = "You are a context summarization assistant. Your task is to read a conversation between a user and an AI coding assistant, then produce a structured summary following the exact format specified.\n\nDo NOT continue the conversation. Do NOT respond to any questions in the conversation. ONLY output the structured summary.";

const SECTIONS: &str = "## Goal\n[What the user is trying to accomplish]\n\n## Constraints & Preferences\n- [Requirements and preferences the user stated]\n\n## Progress\n### Done\n- [x] [Completed work]\n\n### In Progress\n- [ ] [Current work]\n\n### Blocked\n- [Issues preventing progress, if any]\n\n## Key Decisions\n- **[Decision]**: [Brief rationale]\n\n## Next Steps\n1. [What should happen next, in order]\n\n## Critical Context\n- [Data, references or findings needed to continue]\n\nKeep each section concise. Preserve exact file paths, function names, and error messages.";

fn summarization_prompt() -> String {
    format!(
        "The messages above are a conversation to summarize. Write a structured context checkpoint that another assistant can use to continue the work, in exactly this format:\n\n{SECTIONS}"
    )
}

fn update_prompt() -> String {
    format!(
        "The messages above are NEW conversation to fold into the existing summary in <previous-summary>. Update it: keep everything still relevant, add new progress and decisions, move items from In Progress to Done when they were finished, and revise Next Steps. Use exactly this format:\n\n{SECTIONS}"
    )
}

const TURN_PREFIX_PROMPT: &str = "This is the PREFIX of a turn that was too large to keep in full. The SUFFIX (the most recent work) is kept verbatim. Summarize the prefix so the suffix makes sense, in this format:\n\n## Original Request\n[What the user asked for in this turn]\n\n## Early Progress\n- [Key decisions and work done in the prefix]\n\n## Context for Suffix\n- [What is needed to understand the kept recent work]\n\nBe concise.";

const BRANCH_PROMPT: &str = "Summarize the conversation branch above so the assistant can recall what was explored there, in this format:\n\n## Goal\n[What the user was trying to accomplish in this branch]\n\n## Constraints & Preferences\n- [Requirements stated]\n\n## Progress\n### Done\n- [x] [Completed work]\n\n### In Progress\n- [ ] [Unfinished work]\n\n### Blocked\n- [Issues, if any]\n\n## Key Decisions\n- **[Decision]**: [Brief rationale]\n\n## Next Steps\n1. [What would have come next]\n\nKeep each section concise. Preserve exact file paths, function names, and error messages.";

/// Why a summary could not be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SummaryError {
    #[error("Summarization failed: {0}")]
    Failed(String),
    /// The summary of a split turn's prefix failed.
    #[error("Turn prefix summarization failed: {0}")]
    PrefixFailed(String),
    #[error("Compaction cancelled")]
    Cancelled,
}

fn texts(blocks: &[ContentBlock], sep: &str) -> String {
    blocks
        .iter()
        .filter_map(ContentBlock::as_text)
        .collect::<Vec<_>>()
        .join(sep)
}

/// pi's `serializeConversation`.
pub fn serialize_conversation(messages: &[Message]) -> String {
    let mut parts = Vec::new();
    for m in messages {
        match m {
            Message::User(u) => {
                let t = match &u.content {
                    UserContent::Text(s) => s.clone(),
                    UserContent::Blocks(b) => texts(b, ""),
                };
                if !t.is_empty() {
                    parts.push(format!("[User]: {t}"));
                }
            }
            Message::Assistant(a) => {
                let thinking: Vec<&str> = a
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Thinking(t) => Some(t.thinking.as_str()),
                        _ => None,
                    })
                    .collect();
                if !thinking.is_empty() {
                    parts.push(format!("[Assistant thinking]: {}", thinking.join("\n")));
                }
                let t = texts(&a.content, "\n");
                if !t.is_empty() {
                    parts.push(format!("[Assistant]: {t}"));
                }
                let calls: Vec<String> = a
                    .tool_calls()
                    .map(|tc| {
                        let args = tc
                            .arguments
                            .as_object()
                            .map(|o| {
                                o.iter()
                                    .map(|(k, v)| format!("{k}={v}"))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            })
                            .unwrap_or_default();
                        format!("{}({args})", tc.name)
                    })
                    .collect();
                if !calls.is_empty() {
                    parts.push(format!("[Assistant tool calls]: {}", calls.join("; ")));
                }
            }
            Message::ToolResult(r) => {
                let t = texts(&r.content, "");
                if t.is_empty() {
                    continue;
                }
                let n = t.chars().count();
                let shown = if n > 2000 {
                    let head: String = t.chars().take(2000).collect();
                    format!("{head}\n\n[... {} more characters truncated]", n - 2000)
                } else {
                    t
                };
                parts.push(format!("[Tool result]: {shown}"));
            }
        }
    }
    parts.join("\n\n")
}

/// One non-streaming completion: drain the stream and return the final message.
async fn complete(
    client: &dyn ModelClient,
    model: &Model,
    prompt: String,
    options: StreamOptions,
    cancel: CancellationToken,
) -> Result<AssistantMessage, SummaryError> {
    let context = Context {
        system_prompt: Some(SUMMARIZATION_SYSTEM_PROMPT.to_string()),
        messages: vec![Message::User(UserMessage {
            content: UserContent::Blocks(vec![ContentBlock::text(prompt)]),
            timestamp: 0,
        })],
        tools: None,
    };
    let mut stream = client.stream(model, &context, &options, cancel);
    while let Some(ev) = stream.next().await {
        match ev {
            AssistantEvent::Done { message } => return Ok(message),
            AssistantEvent::Error { message } => {
                return Err(match message.stop_reason {
                    StopReason::Aborted => SummaryError::Cancelled,
                    _ => SummaryError::Failed(
                        message
                            .error_message
                            .filter(|m| !m.is_empty())
                            .unwrap_or_else(|| "Unknown error".into()),
                    ),
                });
            }
            _ => {}
        }
    }
    Err(SummaryError::Failed("stream ended without a result".into()))
}

fn conversation_prompt(
    messages: &[SessionMessage],
    previous: Option<&str>,
    instructions: &str,
    custom: Option<&str>,
) -> String {
    let mut p = format!(
        "<conversation>\n{}\n</conversation>\n\n",
        serialize_conversation(&convert_to_llm(messages))
    );
    if let Some(prev) = previous {
        p.push_str(&format!(
            "<previous-summary>\n{prev}\n</previous-summary>\n\n"
        ));
    }
    p.push_str(instructions);
    if let Some(c) = custom.filter(|c| !c.trim().is_empty()) {
        p.push_str(&format!("\n\nAdditional focus: {c}"));
    }
    p
}

/// Summarize a prepared compaction at thinking level `high` (for callers that have no session
/// level of their own). See [`generate_summary_at`].
pub async fn generate_summary(
    client: &dyn ModelClient,
    model: &Model,
    api_key: Option<String>,
    prep: &CompactionPreparation,
    reserve_tokens: u64,
    custom_instructions: Option<&str>,
    cancel: CancellationToken,
) -> Result<String, SummaryError> {
    let request = SummaryRequest {
        api_key,
        reserve_tokens,
        thinking: ThinkingLevel::High,
    };
    generate_summary_at(client, model, &request, prep, custom_instructions, cancel).await
}

/// How a compaction's summary requests are sent.
#[derive(Debug, Clone)]
pub struct SummaryRequest {
    pub api_key: Option<String>,
    /// The session's `compaction.reserveTokens` (the requests' token budgets derive from it).
    pub reserve_tokens: u64,
    /// The session's thinking level: both summary requests (the history and a split turn's
    /// prefix) reason at it when the model reasons, as pi 0.73's `compact` passes it; `off`
    /// sends no reasoning.
    pub thinking: ThinkingLevel,
}

impl SummaryRequest {
    fn options(&self, model: &Model, max_tokens: u64) -> StreamOptions {
        StreamOptions {
            max_tokens: Some(max_tokens),
            api_key: self.api_key.clone(),
            reasoning: if model.reasoning {
                self.thinking
            } else {
                ThinkingLevel::Off
            },
            ..StreamOptions::default()
        }
    }
}

/// Summarize a prepared compaction. Returns the summary text with the file lists appended.
pub async fn generate_summary_at(
    client: &dyn ModelClient,
    model: &Model,
    request: &SummaryRequest,
    prep: &CompactionPreparation,
    custom_instructions: Option<&str>,
    cancel: CancellationToken,
) -> Result<String, SummaryError> {
    generate_summary_with_usage(client, model, request, prep, custom_instructions, cancel)
        .await
        .map(|(summary, _)| summary)
}

/// [`generate_summary_at`], with what its requests cost added up (pi 1.6 reports it as the
/// compaction's `usage`).
pub async fn generate_summary_with_usage(
    client: &dyn ModelClient,
    model: &Model,
    request: &SummaryRequest,
    prep: &CompactionPreparation,
    custom_instructions: Option<&str>,
    cancel: CancellationToken,
) -> Result<(String, Usage), SummaryError> {
    let reserve_tokens = request.reserve_tokens;
    // pi 0.73 (compaction.js `compact`): a split turn with a prefix is summarized in two parts,
    // an empty history then reads "No prior history."; otherwise the model is always asked.
    let split = prep.is_split_turn && !prep.turn_prefix_messages.is_empty();
    let history = async {
        if split && prep.messages_to_summarize.is_empty() {
            return Ok(("No prior history.".to_string(), Usage::default()));
        }
        let instructions = if prep.previous_summary.is_some() {
            update_prompt()
        } else {
            summarization_prompt()
        };
        let prompt = conversation_prompt(
            &prep.messages_to_summarize,
            prep.previous_summary.as_deref(),
            &instructions,
            custom_instructions,
        );
        let options = request.options(model, reserve_tokens * 4 / 5);
        let m = complete(client, model, prompt, options, cancel.clone()).await?;
        Ok::<_, SummaryError>((texts(&m.content, "\n"), m.usage))
    };
    let prefix = async {
        if !split {
            return Ok(None);
        }
        let prompt =
            conversation_prompt(&prep.turn_prefix_messages, None, TURN_PREFIX_PROMPT, None);
        let options = request.options(model, reserve_tokens / 2);
        let m = complete(client, model, prompt, options, cancel.clone())
            .await
            .map_err(|e| match e {
                SummaryError::Failed(m) => SummaryError::PrefixFailed(m),
                other => other,
            })?;
        Ok::<_, SummaryError>(Some((texts(&m.content, "\n"), m.usage)))
    };
    let (history, prefix) = futures::join!(history, prefix);
    let (mut summary, mut usage) = history?;
    if let Some((p, prefix_usage)) = prefix? {
        summary = format!("{summary}\n\n---\n\n**Turn Context (split turn):**\n\n{p}");
        usage = add_usage(&usage, &prefix_usage);
    }
    summary.push_str(&format_file_lists(&prep.read_files, &prep.modified_files));
    Ok((summary, usage))
}

/// Two requests' usage added up, field by field (pi's `combineUsage`).
fn add_usage(a: &Usage, b: &Usage) -> Usage {
    Usage {
        input: a.input + b.input,
        output: a.output + b.output,
        cache_read: a.cache_read + b.cache_read,
        cache_write: a.cache_write + b.cache_write,
        total_tokens: a.total_tokens + b.total_tokens,
        cost: filo_ai::Cost {
            input: a.cost.input + b.cost.input,
            output: a.cost.output + b.cost.output,
            cache_read: a.cost.cache_read + b.cost.cache_read,
            cache_write: a.cost.cache_write + b.cost.cache_write,
            total: a.cost.total + b.cost.total,
        },
    }
}

/// Summarize an abandoned branch (pi spec §5.5).
pub async fn generate_branch_summary(
    client: &dyn ModelClient,
    model: &Model,
    api_key: Option<String>,
    prep: &super::BranchPreparation,
    custom_instructions: Option<&str>,
    replace_instructions: bool,
    cancel: CancellationToken,
) -> Result<String, SummaryError> {
    let body = if prep.messages.is_empty() {
        "No content to summarize".to_string()
    } else {
        let prompt = if replace_instructions {
            conversation_prompt(
                &prep.messages,
                None,
                custom_instructions.unwrap_or(BRANCH_PROMPT),
                None,
            )
        } else {
            conversation_prompt(&prep.messages, None, BRANCH_PROMPT, custom_instructions)
        };
        let options = StreamOptions {
            max_tokens: Some(2048),
            api_key,
            ..StreamOptions::default()
        };
        let m = complete(client, model, prompt, options, cancel).await?;
        texts(&m.content, "\n")
    };
    Ok(format!(
        "The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n{body}{}",
        format_file_lists(&prep.read_files, &prep.modified_files)
    ))
}
