//! Transcript policy and turn validation (C18, spec §4.6, §4.7, §14): which repairs a provider
//! needs, and the pure message transforms that apply them before each attempt.
//!
//! Steps of OpenClaw's `sanitizeSessionHistory` that filo-ai's `transform_messages` already
//! performs at send time are not repeated here: tool-call id normalisation for the target API
//! (`sanitize_tool_call_ids` / `tool_call_id_mode` are reported for callers, filo-ai rewrites
//! ids), thought-signature sanitisation (filo-ai drops signatures from another model), and
//! dropping errored/aborted assistant turns. Inter-session annotation, the OpenAI Responses
//! reasoning downgrade and the `model-snapshot` entry need session metadata and live with the
//! attempt, not here.

use filo_agent::AgentMessage;
use filo_ai::{AssistantMessage, ContentBlock, Message, UserContent, UserMessage};

use crate::history::repair::{
    repair_tool_use_result_pairing, sanitize_tool_call_inputs, strip_tool_result_details,
};

/// Text of the user message prepended when a Google transcript starts with the assistant.
pub const GOOGLE_BOOTSTRAP_TEXT: &str = "(session bootstrap)";
/// Custom entry type recording that the Google ordering fix was applied to a session.
pub const GOOGLE_TURN_ORDERING_ENTRY: &str = "google-turn-ordering-bootstrap";
/// Text of the assistant bridge Mistral needs between a tool result and a user message.
pub const MISTRAL_BRIDGE_TEXT: &str = "(continuing)";

const MISTRAL_MODEL_HINTS: [&str; 7] = [
    "mistral",
    "mixtral",
    "codestral",
    "pixtral",
    "devstral",
    "ministral",
    "mistralai",
];

/// How much of a transcript's content is sanitised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SanitizeMode {
    ImagesOnly,
    Full,
}

/// Which tool-call ids a provider accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolCallIdMode {
    /// Alphanumeric ids.
    Strict,
    /// Exactly nine alphanumerics (Mistral).
    Strict9,
}

/// Thought-signature sanitisation options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThoughtSignaturePolicy {
    pub allow_base64_only: bool,
    pub include_camel_case: bool,
}

/// What a provider needs done to a transcript before it is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TranscriptPolicy {
    pub sanitize_mode: SanitizeMode,
    pub sanitize_tool_call_ids: bool,
    pub tool_call_id_mode: Option<ToolCallIdMode>,
    pub repair_tool_use_result_pairing: bool,
    pub sanitize_thought_signatures: Option<ThoughtSignaturePolicy>,
    pub drop_thinking_blocks: bool,
    pub apply_google_turn_ordering: bool,
    pub validate_gemini_turns: bool,
    pub validate_anthropic_turns: bool,
    pub allow_synthetic_tool_results: bool,
    /// Not a policy field in OpenClaw (it tests the provider when validating turns); kept here so
    /// the Mistral bridge is driven by the same derivation.
    pub bridge_mistral_turns: bool,
}

/// Derives the policy from the model's wire API, provider id and model id.
pub fn resolve_transcript_policy(api: &str, provider: &str, model_id: &str) -> TranscriptPolicy {
    let api = api.trim().to_lowercase();
    let provider = provider.trim().to_lowercase();
    let model = model_id.trim().to_lowercase();
    let is_google = api.contains("google") || api.contains("gemini");
    let is_anthropic = matches!(
        api.as_str(),
        "anthropic-messages" | "bedrock-converse-stream"
    ) || matches!(provider.as_str(), "anthropic" | "amazon-bedrock");
    let is_openai = matches!(provider.as_str(), "openai" | "openai-codex")
        || (provider.is_empty()
            && matches!(
                api.as_str(),
                "openai" | "openai-completions" | "openai-responses" | "openai-codex-responses"
            ));
    let is_strict_openai_compatible = api == "openai-completions"
        && !is_openai
        && !matches!(provider.as_str(), "openrouter" | "opencode");
    let is_mistral = provider == "mistral" || MISTRAL_MODEL_HINTS.iter().any(|h| model.contains(h));
    let is_minimax =
        matches!(provider.as_str(), "minimax" | "minimax-cn") || model.contains("minimax");
    let is_openrouter_gemini = matches!(provider.as_str(), "openrouter" | "opencode" | "kilocode")
        && model.contains("gemini");
    let is_copilot_claude = provider == "github-copilot" && model.contains("claude");

    let full = is_google || is_anthropic || is_mistral || is_openrouter_gemini;
    let ids = !is_openai && (is_google || is_mistral || is_anthropic || is_minimax);
    TranscriptPolicy {
        sanitize_mode: if !is_openai && full {
            SanitizeMode::Full
        } else {
            SanitizeMode::ImagesOnly
        },
        sanitize_tool_call_ids: ids,
        tool_call_id_mode: match (ids, is_mistral) {
            (true, true) => Some(ToolCallIdMode::Strict9),
            (true, false) => Some(ToolCallIdMode::Strict),
            (false, _) => None,
        },
        repair_tool_use_result_pairing: true,
        sanitize_thought_signatures: ((is_google || is_openrouter_gemini) && !is_openai).then_some(
            ThoughtSignaturePolicy {
                allow_base64_only: true,
                include_camel_case: true,
            },
        ),
        drop_thinking_blocks: is_copilot_claude,
        apply_google_turn_ordering: !is_openai && is_google,
        validate_gemini_turns: !is_openai && is_google,
        validate_anthropic_turns: !is_openai && (is_anthropic || is_strict_openai_compatible),
        allow_synthetic_tool_results: !is_openai && (is_google || is_anthropic),
        bridge_mistral_turns: is_mistral,
    }
}

fn user_blocks(content: UserContent) -> Vec<ContentBlock> {
    match content {
        UserContent::Text(s) => vec![ContentBlock::text(s)],
        UserContent::Blocks(b) => b,
    }
}

/// Merges consecutive user messages (Anthropic and strict providers reject them): contents
/// concatenated, the later message's timestamp.
///
/// Source note: OpenClaw's baseline lets a string content contribute nothing to the merge; filo
/// turns it into a text block (as OpenClaw's later `validateStrictTurns` does), so no user text
/// is lost.
pub fn merge_consecutive_user_turns(messages: Vec<AgentMessage>) -> Vec<AgentMessage> {
    let mut out: Vec<AgentMessage> = Vec::with_capacity(messages.len());
    for msg in messages {
        if let AgentMessage::Llm(Message::User(later)) = msg {
            if let Some(AgentMessage::Llm(Message::User(earlier))) = out.last_mut() {
                let mut content = user_blocks(std::mem::replace(
                    &mut earlier.content,
                    UserContent::Blocks(Vec::new()),
                ));
                content.extend(user_blocks(later.content));
                *earlier = UserMessage {
                    content: UserContent::Blocks(content),
                    timestamp: later.timestamp,
                };
                continue;
            }
            out.push(AgentMessage::Llm(Message::User(later)));
        } else {
            out.push(msg);
        }
    }
    out
}

/// Merges consecutive assistant messages (Gemini rejects them): contents concatenated, the
/// earlier message's fields, the later one's usage, stop reason and error (when it has one).
pub fn merge_consecutive_assistant_turns(messages: Vec<AgentMessage>) -> Vec<AgentMessage> {
    let mut out: Vec<AgentMessage> = Vec::with_capacity(messages.len());
    for msg in messages {
        if let AgentMessage::Llm(Message::Assistant(later)) = msg {
            if let Some(AgentMessage::Llm(Message::Assistant(earlier))) = out.last_mut() {
                earlier.content.extend(later.content);
                earlier.usage = later.usage;
                earlier.stop_reason = later.stop_reason;
                if later.error_message.is_some() {
                    earlier.error_message = later.error_message;
                }
                continue;
            }
            out.push(AgentMessage::Llm(Message::Assistant(later)));
        } else {
            out.push(msg);
        }
    }
    out
}

/// Inserts an assistant `(continuing)` message between a tool result and a following user
/// message (Mistral rejects tool → user). The bridge copies api/provider/model from the last
/// assistant before it.
pub fn bridge_tool_to_user_turns(messages: Vec<AgentMessage>) -> Vec<AgentMessage> {
    let mut out: Vec<AgentMessage> = Vec::with_capacity(messages.len());
    let mut last_assistant: Option<AssistantMessage> = None;
    for msg in messages {
        let is_user = matches!(msg, AgentMessage::Llm(Message::User(_)));
        let after_tool = matches!(out.last(), Some(AgentMessage::Llm(Message::ToolResult(_))));
        if is_user
            && after_tool
            && let Some(template) = &last_assistant
        {
            let bridge = AssistantMessage {
                content: vec![ContentBlock::text(MISTRAL_BRIDGE_TEXT)],
                usage: Default::default(),
                stop_reason: Default::default(),
                error_message: None,
                timestamp: msg.timestamp().unwrap_or(template.timestamp),
                ..template.clone()
            };
            out.push(AgentMessage::Llm(Message::Assistant(bridge)));
        }
        if let AgentMessage::Llm(Message::Assistant(a)) = &msg {
            last_assistant = Some(a.clone());
        }
        out.push(msg);
    }
    out
}

/// Prepends a `(session bootstrap)` user message when the transcript starts with the assistant;
/// returns whether it did (the caller records [`GOOGLE_TURN_ORDERING_ENTRY`] once per session).
pub fn apply_google_turn_ordering(messages: &mut Vec<AgentMessage>) -> bool {
    let Some(AgentMessage::Llm(Message::Assistant(first))) = messages.first() else {
        return false;
    };
    let timestamp = first.timestamp;
    messages.insert(
        0,
        AgentMessage::Llm(Message::User(UserMessage {
            content: UserContent::Text(GOOGLE_BOOTSTRAP_TEXT.to_owned()),
            timestamp,
        })),
    );
    true
}

/// Drops thinking blocks from assistant messages (and assistants left empty).
pub fn drop_thinking_blocks(messages: Vec<AgentMessage>) -> Vec<AgentMessage> {
    messages
        .into_iter()
        .filter_map(|m| match m {
            AgentMessage::Llm(Message::Assistant(mut a)) => {
                let had = a.content.len();
                a.content
                    .retain(|b| !matches!(b, ContentBlock::Thinking(_)));
                (a.content.len() == had || !a.content.is_empty())
                    .then_some(AgentMessage::Llm(Message::Assistant(a)))
            }
            other => Some(other),
        })
        .collect()
}

/// Role of the message that stands for a compacted prefix of the transcript.
pub const COMPACTION_SUMMARY_ROLE: &str = "compactionSummary";

/// Zeroes the usage of assistant messages before the latest compaction summary: their tokens
/// were summarised away and must not count towards the context again.
pub fn zero_usage_before_compaction(mut messages: Vec<AgentMessage>) -> Vec<AgentMessage> {
    let Some(last) = messages
        .iter()
        .rposition(|m| m.role() == COMPACTION_SUMMARY_ROLE)
    else {
        return messages;
    };
    for m in &mut messages[..last] {
        if let AgentMessage::Llm(Message::Assistant(a)) = m {
            a.usage = Default::default();
        }
    }
    messages
}

/// Result of [`sanitize_session_history`].
#[derive(Debug, Clone, PartialEq)]
pub struct SanitizedHistory {
    pub messages: Vec<AgentMessage>,
    /// The Google ordering fix prepended a bootstrap message.
    pub google_bootstrap_added: bool,
}

/// The load-time pipeline in OpenClaw's order (minus the steps filo-ai performs at send time):
/// drop thinking → sanitise tool-call inputs → pairing repair → strip details → usage zeroing
/// before the latest compaction → turn validation → Google ordering.
pub fn sanitize_session_history(
    messages: Vec<AgentMessage>,
    policy: &TranscriptPolicy,
    allowed_tool_names: Option<&[String]>,
    now_ms: i64,
) -> SanitizedHistory {
    let mut msgs = messages;
    if policy.drop_thinking_blocks {
        msgs = drop_thinking_blocks(msgs);
    }
    msgs = sanitize_tool_call_inputs(msgs, allowed_tool_names).messages;
    if policy.repair_tool_use_result_pairing {
        msgs = repair_tool_use_result_pairing(msgs, now_ms).messages;
    }
    msgs = strip_tool_result_details(msgs);
    msgs = zero_usage_before_compaction(msgs);
    if policy.validate_gemini_turns {
        msgs = merge_consecutive_assistant_turns(msgs);
    }
    if policy.validate_anthropic_turns {
        msgs = merge_consecutive_user_turns(msgs);
    }
    if policy.bridge_mistral_turns {
        msgs = bridge_tool_to_user_turns(msgs);
    }
    let google_bootstrap_added =
        policy.apply_google_turn_ordering && apply_google_turn_ordering(&mut msgs);
    SanitizedHistory {
        messages: msgs,
        google_bootstrap_added,
    }
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
