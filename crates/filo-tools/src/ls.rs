//! `ls`: one directory's entries, dotfiles included, sorted case-insensitively, `/` on dirs.

use std::cmp::Ordering;
use std::path::Path;

use filo_agent::{AgentTool, Concurrency, ToolCallContext, ToolError, ToolOutput};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::args::{parse_args, to_count};
use crate::error::Error;
use crate::paths::{display, resolve_to_cwd};
use crate::support::Notices;
use crate::support::{blocking, text_output};
use crate::truncate::{Limits, truncate_head};

const DESCRIPTION: &str = "List directory contents. Returns entries sorted alphabetically, with '/' suffix for directories. Includes dotfiles. Output is truncated to 500 entries or 50KB (whichever is hit first).";
const DEFAULT_LIMIT: f64 = 500.0;

#[derive(Debug, Deserialize)]
struct LsArgs {
    path: Option<String>,
    #[serde(default, deserialize_with = "crate::args::lenient_number")]
    limit: Option<f64>,
}

/// Collation key approximating `toLowerCase().localeCompare()` in the root locale:
/// punctuation and symbols sort before digits, digits before letters.
fn collation_class(c: char) -> u8 {
    if c.is_alphabetic() {
        2
    } else if c.is_numeric() {
        1
    } else {
        0
    }
}

/// Compare names the way pi sorts `ls` output.
pub fn compare_names(a: &str, b: &str) -> Ordering {
    let key = |s: &str| -> Vec<(u8, char)> {
        s.to_lowercase()
            .chars()
            .map(|c| (collation_class(c), c))
            .collect()
    };
    key(a).cmp(&key(b)).then_with(|| a.cmp(b))
}

/// The listing text and details for `dir`.
fn list(dir: &Path, limit: usize) -> Result<(String, Map<String, Value>), Error> {
    let shown = display(dir);
    let meta =
        std::fs::metadata(dir).map_err(|_| Error::message(format!("Path not found: {shown}")))?;
    if !meta.is_dir() {
        return Err(Error::message(format!("Not a directory: {shown}")));
    }
    let reader = std::fs::read_dir(dir).map_err(|e| {
        Error::message(format!(
            "Cannot read directory: {}",
            crate::error::node_message(&e, "scandir", dir)
        ))
    })?;
    let mut names: Vec<String> = reader
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort_by(|a, b| compare_names(a, b));
    let mut results = Vec::new();
    let mut limit_reached = false;
    for name in names {
        if results.len() >= limit {
            limit_reached = true;
            break;
        }
        // Follow symlinks like `stat`; entries that cannot be stat'ed are skipped.
        let Ok(meta) = std::fs::metadata(dir.join(&name)) else {
            continue;
        };
        results.push(if meta.is_dir() {
            format!("{name}/")
        } else {
            name
        });
    }
    if results.is_empty() {
        return Ok(("(empty directory)".to_string(), Map::new()));
    }
    let truncation = truncate_head(&results.join("\n"), Limits::bytes_only());
    let mut notices = Notices::default();
    if limit_reached {
        let text = format!(
            "{limit} entries limit reached. Use limit={} for more",
            limit * 2
        );
        notices.add(text, "entryLimitReached", json!(limit));
    }
    notices.truncation(&truncation);
    Ok(notices.finish(truncation.content))
}

crate::support::settings_tool!(
    /// The `ls` tool.
    LsTool, "ls"
);

impl AgentTool for LsTool {
    fn name(&self) -> &str {
        "ls"
    }

    fn label(&self) -> &str {
        "ls"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Directory to list (default: current directory)"},
                "limit": {"type": "number", "description": "Maximum number of entries to return (default: 500)"}
            }
        })
    }

    fn concurrency(&self) -> Concurrency {
        Concurrency::Shared
    }

    fn execute(&self, ctx: ToolCallContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        async move {
            let args: LsArgs = parse_args("ls", &ctx.args)?;
            let raw = args
                .path
                .filter(|p| !p.is_empty())
                .unwrap_or_else(|| ".".into());
            let dir = resolve_to_cwd(&raw, &self.settings.cwd, self.settings.home.as_deref());
            let limit = to_count(args.limit.unwrap_or(DEFAULT_LIMIT));
            let (text, details) = blocking(&ctx.cancel, move |_| list(&dir, limit)).await?;
            Ok(text_output(text, details))
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_case_insensitively_punctuation_first() {
        let mut names = vec!["b", "A", ".env", "_x", "9", "a"];
        names.sort_by(|a, b| compare_names(a, b));
        assert_eq!(names, vec![".env", "_x", "9", "A", "a", "b"]);
    }
}
