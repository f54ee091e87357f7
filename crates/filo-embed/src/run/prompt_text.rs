//! The embedded prompt of one attempt (C27): the run's parameters and offered tools mapped onto
//! [`crate::prompt::build_system_prompt`].

use std::sync::Arc;

use filo_agent::AgentTool;

use crate::prompt::{PromptInput, PromptMode, Runtime, build_system_prompt};
use crate::run::attempt::AttemptSpec;
use crate::run::params::Trigger;

/// The prompt for `spec` with `tools` offered. Cron runs and runs limited to an allow list get
/// the minimal prompt, as in OpenClaw.
pub(crate) fn embedded_prompt(spec: &AttemptSpec<'_>, tools: &[Arc<dyn AgentTool>]) -> String {
    let p = spec.params;
    let config = spec.inner.config();
    let mode = if p.trigger == Trigger::Cron || p.tools_allow.is_some() {
        PromptMode::Minimal
    } else {
        PromptMode::Full
    };
    let model = format!("{}/{}", spec.model.provider, spec.model.id);
    let today = spec.inner.today();
    let default_model = config.defaults.model.primary.clone();
    let input = PromptInput {
        mode,
        tools: tools.iter().map(|t| (t.name(), t.description())).collect(),
        workspace: Some(&p.workspace_dir),
        extra: p.extra_system_prompt.as_deref(),
        owner_numbers: &p.owner_numbers,
        reasoning_tag_hint: p.enforce_final_tag,
        runtime: Runtime {
            agent_id: Some(&spec.agent_id),
            os: Some(std::env::consts::OS),
            arch: Some(std::env::consts::ARCH),
            model: Some(&model),
            default_model: default_model.as_deref(),
            channel: p.message_channel.as_deref(),
            thinking: Some(spec.think_level.as_str()),
            date: Some(&today),
            ..Runtime::default()
        },
        ..PromptInput::default()
    };
    build_system_prompt(&input)
}
