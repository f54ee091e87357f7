//! `grep`: search file contents with ripgrep's own crates (regex or literal, case folding, glob
//! filter, context lines), pi's `file:line: text` output and limit notices.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use filo_agent::{AgentTool, Concurrency, ToolCallContext, ToolError, ToolOutput};
use futures::FutureExt;
use futures::future::BoxFuture;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::sinks::Bytes;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::args::{parse_args, to_count};
use crate::error::Error;
use crate::paths::{display, resolve_to_cwd};
use crate::settings::ToolSettings;
use crate::support::{blocking, text_output};
use crate::truncate::{
    DEFAULT_MAX_BYTES, GREP_MAX_LINE_LENGTH, Limits, format_size, truncate_head, truncate_line,
};
use crate::walk::{relative_slash, walker};

const DESCRIPTION: &str = "Search file contents for a pattern. Returns matching lines with file paths and line numbers. Respects .gitignore. Output is truncated to 100 matches or 50KB (whichever is hit first). Long lines are truncated to 500 chars.";
const DEFAULT_LIMIT: f64 = 100.0;
/// Files searched in parallel per batch; results are merged in walk order, so output is stable.
const BATCH: usize = 256;

#[derive(Debug, Deserialize)]
struct GrepArgs {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    #[serde(rename = "ignoreCase")]
    ignore_case: Option<bool>,
    literal: Option<bool>,
    context: Option<f64>,
    limit: Option<f64>,
}

/// What to search for and where.
#[derive(Debug, Clone)]
pub struct GrepQuery {
    pub pattern: String,
    pub root: PathBuf,
    pub glob: Option<String>,
    pub ignore_case: bool,
    pub literal: bool,
    pub context: usize,
    pub limit: usize,
}

fn build_matcher(q: &GrepQuery) -> Result<RegexMatcher, Error> {
    RegexMatcherBuilder::new()
        .case_insensitive(q.ignore_case)
        .fixed_strings(q.literal)
        .line_terminator(Some(b'\n'))
        .build(&q.pattern)
        .map_err(|e| Error::message(format!("regex parse error:\n{e}")))
}

fn new_searcher() -> Searcher {
    SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .build()
}

/// Matching line numbers of one file, at most `limit`.
fn search_file(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    path: &Path,
    limit: usize,
) -> Vec<u64> {
    let mut lines = Vec::new();
    let sink = Bytes(|line_number, _| {
        lines.push(line_number);
        Ok(lines.len() < limit)
    });
    // Unreadable files are skipped, as ripgrep does (it only warns).
    let _ = searcher.search_path(matcher, path, sink);
    lines
}

/// Search a batch of files on up to `threads` threads; results in input order.
fn search_batch(
    files: &[PathBuf],
    matcher: &RegexMatcher,
    limit: usize,
    threads: usize,
) -> Vec<Vec<u64>> {
    if threads <= 1 || files.len() < 2 {
        let mut searcher = new_searcher();
        return files
            .iter()
            .map(|f| search_file(&mut searcher, matcher, f, limit))
            .collect();
    }
    let mut results = vec![Vec::new(); files.len()];
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|k| {
                let matcher = matcher.clone();
                scope.spawn(move || {
                    let mut searcher = new_searcher();
                    (k..files.len())
                        .step_by(threads)
                        .map(|i| (i, search_file(&mut searcher, &matcher, &files[i], limit)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for worker in workers {
            if let Ok(found) = worker.join() {
                for (i, lines) in found {
                    results[i] = lines;
                }
            }
        }
    });
    results
}

/// All matches (file, 1-based line) in walk order, up to the limit; and whether it was hit.
pub fn find_matches(
    q: &GrepQuery,
    cancel: &CancellationToken,
) -> Result<(Vec<(PathBuf, u64)>, bool), Error> {
    let matcher = build_matcher(q)?;
    let limit = q.limit.max(1);
    let mut matches = Vec::new();
    if q.root.is_file() {
        let lines = search_file(&mut new_searcher(), &matcher, &q.root, limit);
        matches.extend(lines.into_iter().map(|l| (q.root.clone(), l)));
        let reached = matches.len() >= limit;
        return Ok((matches, reached));
    }
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    let mut walk = walker(&q.root, q.glob.as_deref())?;
    loop {
        if cancel.is_cancelled() {
            return Err(Error::Aborted);
        }
        let batch: Vec<PathBuf> = walk
            .by_ref()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
            .map(ignore::DirEntry::into_path)
            .take(BATCH)
            .collect();
        if batch.is_empty() {
            return Ok((matches, false));
        }
        for (file, lines) in batch
            .iter()
            .zip(search_batch(&batch, &matcher, limit, threads))
        {
            for line in lines {
                matches.push((file.clone(), line));
                if matches.len() >= limit {
                    return Ok((matches, true));
                }
            }
        }
    }
}

/// Render matches (with context) the way pi does, re-reading each file once.
fn render(
    q: &GrepQuery,
    matches: &[(PathBuf, u64)],
    limit_reached: bool,
) -> (String, Map<String, Value>) {
    let root_is_dir = q.root.is_dir();
    let mut cache: HashMap<&Path, Vec<String>> = HashMap::new();
    let mut out: Vec<String> = Vec::new();
    let mut lines_truncated = false;
    for (file, line_number) in matches {
        let rel = if root_is_dir {
            relative_slash(file, &q.root)
        } else {
            file.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        let lines = cache.entry(file.as_path()).or_insert_with(|| {
            std::fs::read(file)
                .map(|b| {
                    let text = String::from_utf8_lossy(&b)
                        .replace("\r\n", "\n")
                        .replace('\r', "\n");
                    text.split('\n').map(str::to_string).collect()
                })
                .unwrap_or_default()
        });
        let n = usize::try_from(*line_number).unwrap_or(usize::MAX);
        if lines.is_empty() {
            out.push(format!("{rel}:{n}: (unable to read file)"));
            continue;
        }
        let (start, end) = if q.context > 0 {
            (
                n.saturating_sub(q.context).max(1),
                n.saturating_add(q.context).min(lines.len()),
            )
        } else {
            (n, n)
        };
        for current in start..=end {
            let raw = lines
                .get(current - 1)
                .map_or("", String::as_str)
                .replace('\r', "");
            let (text, cut) = truncate_line(&raw, GREP_MAX_LINE_LENGTH);
            lines_truncated |= cut;
            let sep = if current == n { ':' } else { '-' };
            out.push(format!("{rel}{sep}{current}{sep} {text}"));
        }
    }
    let truncation = truncate_head(&out.join("\n"), Limits::bytes_only());
    let mut details = Map::new();
    let mut notices = Vec::new();
    let limit = q.limit.max(1);
    if limit_reached {
        notices.push(format!(
            "{limit} matches limit reached. Use limit={} for more, or refine pattern",
            limit * 2
        ));
        details.insert("matchLimitReached".into(), json!(limit));
    }
    if truncation.truncated {
        notices.push(format!("{} limit reached", format_size(DEFAULT_MAX_BYTES)));
        details.insert("truncation".into(), truncation.to_json());
    }
    if lines_truncated {
        notices.push(format!(
            "Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines"
        ));
        details.insert("linesTruncated".into(), Value::Bool(true));
    }
    let mut text = truncation.content;
    if !notices.is_empty() {
        text.push_str(&format!("\n\n[{}]", notices.join(". ")));
    }
    (text, details)
}

/// Run a whole grep: the text and details pi would return.
pub fn grep(
    q: &GrepQuery,
    cancel: &CancellationToken,
) -> Result<(String, Map<String, Value>), Error> {
    if std::fs::metadata(&q.root).is_err() {
        return Err(Error::message(format!(
            "Path not found: {}",
            display(&q.root)
        )));
    }
    let (matches, limit_reached) = find_matches(q, cancel)?;
    if matches.is_empty() {
        return Ok(("No matches found".to_string(), Map::new()));
    }
    Ok(render(q, &matches, limit_reached))
}

/// The `grep` tool.
#[derive(Debug, Clone)]
pub struct GrepTool {
    settings: Arc<ToolSettings>,
}

impl GrepTool {
    /// A grep tool for `cwd` with default settings.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        Self::with_settings(Arc::new(ToolSettings::new(cwd)))
    }

    /// A grep tool with explicit settings.
    pub fn with_settings(settings: Arc<ToolSettings>) -> Self {
        GrepTool { settings }
    }
}

impl AgentTool for GrepTool {
    fn name(&self) -> &str {
        "grep"
    }

    fn label(&self) -> &str {
        "grep"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Search pattern (regex or literal string)"},
                "path": {"type": "string", "description": "Directory or file to search (default: current directory)"},
                "glob": {"type": "string", "description": "Filter files by glob pattern, e.g. '*.ts' or '**/*.spec.ts'"},
                "ignoreCase": {"type": "boolean", "description": "Case-insensitive search (default: false)"},
                "literal": {"type": "boolean", "description": "Treat pattern as literal string instead of regex (default: false)"},
                "context": {"type": "number", "description": "Number of lines to show before and after each match (default: 0)"},
                "limit": {"type": "number", "description": "Maximum number of matches to return (default: 100)"}
            },
            "required": ["pattern"]
        })
    }

    fn concurrency(&self) -> Concurrency {
        Concurrency::Shared
    }

    fn execute(&self, ctx: ToolCallContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        async move {
            let args: GrepArgs = parse_args("grep", &ctx.args)?;
            let raw = args
                .path
                .filter(|p| !p.is_empty())
                .unwrap_or_else(|| ".".into());
            let query = GrepQuery {
                pattern: args.pattern,
                root: resolve_to_cwd(&raw, &self.settings.cwd, self.settings.home.as_deref()),
                glob: args.glob.filter(|g| !g.is_empty()),
                ignore_case: args.ignore_case.unwrap_or(false),
                literal: args.literal.unwrap_or(false),
                context: args.context.map_or(0, to_count),
                limit: to_count(args.limit.unwrap_or(DEFAULT_LIMIT)),
            };
            let (text, details) =
                blocking(&ctx.cancel, move |cancel| grep(&query, &cancel)).await?;
            Ok(text_output(text, details))
        }
        .boxed()
    }
}
