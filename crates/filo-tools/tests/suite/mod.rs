//! Shared helpers for the tool tests.

mod bash;
mod edit;
mod find;
mod grep;
mod ls;
mod read;
mod registry;
mod special_files;
mod write;

use std::path::Path;
use std::sync::Arc;

use filo_agent::{AgentTool, ToolCallContext, ToolError, ToolOutput};
use filo_ai::ContentBlock;
use filo_tools::ToolSettings;
use serde_json::Value;

/// Settings for a temp dir, with a fake home and the temp dir as spill directory.
pub fn settings(dir: &Path) -> Arc<ToolSettings> {
    Arc::new(ToolSettings::from_env(
        dir,
        Some(dir.as_os_str().to_owned()),
        dir.to_path_buf(),
    ))
}

/// Run a tool with arguments and a fresh token.
pub async fn run(tool: &dyn AgentTool, args: Value) -> Result<ToolOutput, ToolError> {
    tool.execute(ToolCallContext::new("call-1", args)).await
}

/// The first text block.
pub fn text(output: &ToolOutput) -> &str {
    output
        .content
        .iter()
        .find_map(ContentBlock::as_text)
        .expect("a text block")
}

/// The message of a model-facing failure.
pub fn failure(result: Result<ToolOutput, ToolError>) -> String {
    match result {
        Err(ToolError::Failed(message)) => message,
        other => panic!("expected a model-facing failure, got {other:?}"),
    }
}
