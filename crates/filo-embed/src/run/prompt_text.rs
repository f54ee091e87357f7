//! The system prompt of an embedded run, until the full C27 builder is wired in: identity,
//! workspace, extra context and the runtime line.

use crate::run::params::RunParams;
use crate::run::resolve::Resolved;

/// The embedded system prompt for `params`.
pub(crate) fn embedded_prompt(params: &RunParams, resolved: &Resolved, today: &str) -> String {
    let mut lines = vec![
        "You are a personal assistant running inside filo.".to_owned(),
        String::new(),
        "## Workspace".to_owned(),
        format!(
            "Your working directory is: {}",
            params.workspace_dir.display()
        ),
    ];
    if let Some(extra) = params
        .extra_system_prompt
        .as_deref()
        .filter(|e| !e.trim().is_empty())
    {
        lines.extend([
            String::new(),
            "## Group Chat Context".to_owned(),
            extra.to_owned(),
        ]);
    }
    lines.extend([
        String::new(),
        "## Runtime".to_owned(),
        format!(
            "Runtime: agent={} | filo={} | model={}/{} | date={today}",
            resolved.agent_id,
            env!("CARGO_PKG_VERSION"),
            resolved.provider,
            resolved.model.id
        ),
    ]);
    lines.join("\n")
}
