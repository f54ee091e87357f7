//! `find`: files and directories matching a glob, relative to the search directory, hidden
//! entries included, `.gitignore` honoured (fd semantics, done with ripgrep's crates).
//!
//! A pattern without `/` is matched against the entry's name; a pattern with `/` against its
//! path relative to the search directory (`*` does not cross `/`, `**` does). Like fd, matching
//! is case-insensitive unless the pattern contains an upper-case letter.

use filo_agent::{AgentTool, Concurrency, ToolCallContext, ToolError, ToolOutput};
use futures::FutureExt;
use futures::future::BoxFuture;
use globset::{GlobBuilder, GlobMatcher};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::args::{parse_args, to_count};
use crate::error::Error;
use crate::paths::{display, resolve_to_cwd};
use crate::support::Notices;
use crate::support::{blocking, text_output};
use crate::truncate::{Limits, truncate_head};
use crate::walk::{relative_slash, walker};

const DESCRIPTION: &str = "Search for files by glob pattern. Returns matching file paths relative to the search directory. Respects .gitignore. Output is truncated to 1000 results or 50KB (whichever is hit first).";
const DEFAULT_LIMIT: f64 = 1000.0;

#[derive(Debug, Deserialize)]
struct FindArgs {
    pattern: String,
    path: Option<String>,
    #[serde(default, deserialize_with = "crate::args::lenient_number")]
    limit: Option<f64>,
}

fn compile(pattern: &str) -> Result<GlobMatcher, Error> {
    let smart_case_insensitive = !pattern.chars().any(char::is_uppercase);
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .case_insensitive(smart_case_insensitive)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| Error::message(format!("error parsing glob '{pattern}': {e}")))
}

/// Relative paths (directories with a trailing `/`) of matching entries, at most `limit`.
pub fn find_paths(
    root: &std::path::Path,
    pattern: &str,
    limit: usize,
    cancel: &CancellationToken,
) -> Result<Vec<String>, Error> {
    let matcher = compile(pattern)?;
    let full_path = pattern.contains('/');
    let mut results = Vec::new();
    if limit == 0 {
        return Ok(results);
    }
    for entry in walker(root, None)?.filter_map(Result::ok) {
        if cancel.is_cancelled() {
            return Err(Error::Aborted);
        }
        if entry.depth() == 0 {
            continue;
        }
        let rel = relative_slash(entry.path(), root);
        let hit = if full_path {
            matcher.is_match(&rel)
        } else {
            matcher.is_match(entry.file_name())
        };
        if hit {
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            results.push(if is_dir { format!("{rel}/") } else { rel });
            if results.len() >= limit {
                break;
            }
        }
    }
    Ok(results)
}

fn find(
    root: &std::path::Path,
    pattern: &str,
    limit: usize,
    cancel: &CancellationToken,
) -> Result<(String, Map<String, Value>), Error> {
    let meta = std::fs::metadata(root)
        .map_err(|_| Error::message(format!("Path not found: {}", display(root))))?;
    if !meta.is_dir() {
        return Err(Error::message(format!(
            "Not a directory: {}",
            display(root)
        )));
    }
    let results = find_paths(root, pattern, limit, cancel)?;
    if results.is_empty() {
        return Ok(("No files found matching pattern".to_string(), Map::new()));
    }
    let truncation = truncate_head(&results.join("\n"), Limits::bytes_only());
    let mut notices = Notices::default();
    if results.len() >= limit {
        let text = format!(
            "{limit} results limit reached. Use limit={} for more, or refine pattern",
            limit * 2
        );
        notices.add(text, "resultLimitReached", json!(limit));
    }
    notices.truncation(&truncation);
    Ok(notices.finish(truncation.content))
}

crate::support::settings_tool!(
    /// The `find` tool.
    FindTool, "find"
);

impl AgentTool for FindTool {
    fn name(&self) -> &str {
        "find"
    }

    fn label(&self) -> &str {
        "find"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Glob pattern relative to the search directory, e.g. 'src/**/*.ts'. Without '/', e.g. '*.ts', it matches file names at any depth"},
                "path": {"type": "string", "description": "Directory to search in (default: current directory)"},
                "limit": {"type": "number", "description": "Maximum number of results (default: 1000)"}
            },
            "required": ["pattern"]
        })
    }

    fn concurrency(&self) -> Concurrency {
        Concurrency::Shared
    }

    fn execute(&self, ctx: ToolCallContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        async move {
            let args: FindArgs = parse_args("find", &ctx.args)?;
            let raw = args
                .path
                .filter(|p| !p.is_empty())
                .unwrap_or_else(|| ".".into());
            let root = resolve_to_cwd(&raw, &self.settings.cwd, self.settings.home.as_deref());
            let limit = to_count(args.limit.unwrap_or(DEFAULT_LIMIT));
            let pattern = args.pattern;
            let (text, details) = blocking(&ctx.cancel, move |cancel| {
                find(&root, &pattern, limit, &cancel)
            })
            .await?;
            Ok(text_output(text, details))
        }
        .boxed()
    }
}
