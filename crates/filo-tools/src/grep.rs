//! `grep`: search file contents with ripgrep's own crates (regex or literal, case folding, glob
//! filter, context lines), pi's `file:line: text` output and limit notices.

use std::path::{Path, PathBuf};

use filo_agent::{AgentTool, Concurrency, ToolCallContext, ToolError, ToolOutput};
use futures::FutureExt;
use futures::future::BoxFuture;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::args::{parse_args, to_count};
use crate::error::Error;
use crate::fileread::{MAX_READ_BYTES, read_regular};
use crate::paths::{display, resolve_to_cwd};
use crate::search::{Found, Hit, search_single, search_tree};
use crate::support::Notices;
use crate::support::{blocking, text_output};
use crate::truncate::{GREP_MAX_LINE_LENGTH, Limits, truncate_head, truncate_line};
use crate::walk::relative_slash;

const DESCRIPTION: &str = "Search file contents for a pattern. Returns matching lines with file paths and line numbers. Respects .gitignore. Output is truncated to 100 matches or 50KB (whichever is hit first). Long lines are truncated to 500 chars.";
const DEFAULT_LIMIT: f64 = 100.0;

#[derive(Debug, Deserialize)]
struct GrepArgs {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    #[serde(
        rename = "ignoreCase",
        default,
        deserialize_with = "crate::args::lenient_bool"
    )]
    ignore_case: Option<bool>,
    #[serde(default, deserialize_with = "crate::args::lenient_bool")]
    literal: Option<bool>,
    #[serde(default, deserialize_with = "crate::args::lenient_number")]
    context: Option<f64>,
    #[serde(default, deserialize_with = "crate::args::lenient_number")]
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
        .map_err(|e| Error::message(e.to_string()))
}

/// All matches (file, 1-based lines) in walk order, up to the limit; and whether it was hit.
pub fn find_matches(q: &GrepQuery, cancel: &CancellationToken) -> Result<Found, Error> {
    let matcher = build_matcher(q)?;
    let limit = q.limit.max(1);
    if q.root.is_file() {
        return Ok(search_single(&matcher, &q.root, limit));
    }
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    search_tree(&q.root, q.glob.as_deref(), &matcher, limit, threads, cancel)
}

/// A file's text as pi renders it: lossy UTF-8, CRLF and lone CR normalised to LF.
fn file_lines(path: &Path) -> String {
    let Ok(contents) = read_regular(path, MAX_READ_BYTES) else {
        return String::new();
    };
    let bytes = contents.bytes;
    let text = String::from_utf8(bytes)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    if text.contains('\r') {
        text.replace("\r\n", "\n").replace('\r', "\n")
    } else {
        text
    }
}

/// One match with its context lines: `file:n: text` and `file-n- text`.
fn render_block(
    rel: &str,
    lines: &[&str],
    n: usize,
    context: usize,
    out: &mut Vec<String>,
) -> bool {
    let (start, end) = if context > 0 {
        (
            n.saturating_sub(context).max(1),
            n.saturating_add(context).min(lines.len()),
        )
    } else {
        (n, n)
    };
    let mut cut_any = false;
    for current in start..=end {
        let raw = lines.get(current - 1).map_or("", |l| *l).replace('\r', "");
        let (text, cut) = truncate_line(&raw, GREP_MAX_LINE_LENGTH);
        cut_any |= cut;
        let sep = if current == n { ':' } else { '-' };
        out.push(format!("{rel}{sep}{current}{sep} {text}"));
    }
    cut_any
}

/// The text pi shows for a match line, straight from the search when that is exact: the line
/// without its terminator, unless it holds a lone `\r` (pi would have split the line there).
fn hit_text(hit: &Hit) -> Option<String> {
    let line = hit.bytes.strip_suffix(b"\n").unwrap_or(&hit.bytes);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.contains(&b'\r') {
        return None;
    }
    Some(String::from_utf8_lossy(line).into_owned())
}

/// Render matches (with context) the way pi does. Without context the matched lines come from
/// the search itself; with context each matched file is read once.
fn render(
    q: &GrepQuery,
    found: &[(PathBuf, Vec<Hit>)],
    limit_reached: bool,
) -> (String, Map<String, Value>) {
    let root_is_dir = q.root.is_dir();
    let mut out: Vec<String> = Vec::new();
    let mut lines_truncated = false;
    for (file, hits) in found {
        let rel = if root_is_dir {
            relative_slash(file, &q.root)
        } else {
            file.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        let direct: Option<Vec<String>> = if q.context == 0 {
            hits.iter().map(hit_text).collect()
        } else {
            None
        };
        if let Some(texts) = direct {
            for (hit, text) in hits.iter().zip(texts) {
                let (text, cut) = truncate_line(&text, GREP_MAX_LINE_LENGTH);
                lines_truncated |= cut;
                out.push(format!("{rel}:{}: {text}", hit.line_number));
            }
            continue;
        }
        let text = file_lines(file);
        let lines: Vec<&str> = if text.is_empty() {
            Vec::new()
        } else {
            text.split('\n').collect()
        };
        for hit in hits {
            let n = usize::try_from(hit.line_number).unwrap_or(usize::MAX);
            if lines.is_empty() {
                out.push(format!("{rel}:{n}: (unable to read file)"));
            } else {
                lines_truncated |= render_block(&rel, &lines, n, q.context, &mut out);
            }
        }
    }
    let truncation = truncate_head(&out.join("\n"), Limits::bytes_only());
    let mut notices = Notices::default();
    let limit = q.limit.max(1);
    if limit_reached {
        let text = format!(
            "{limit} matches limit reached. Use limit={} for more, or refine pattern",
            limit * 2
        );
        notices.add(text, "matchLimitReached", json!(limit));
    }
    notices.truncation(&truncation);
    if lines_truncated {
        let text = format!(
            "Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines"
        );
        notices.add(text, "linesTruncated", Value::Bool(true));
    }
    notices.finish(truncation.content)
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
    let (found, limit_reached) = find_matches(q, cancel)?;
    if found.is_empty() {
        return Ok(("No matches found".to_string(), Map::new()));
    }
    Ok(render(q, &found, limit_reached))
}

crate::support::settings_tool!(
    /// The `grep` tool.
    GrepTool, "grep"
);

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
                "glob": {"type": "string", "description": "Filter files by glob pattern relative to path, e.g. 'src/**/*.ts'. Without '/', e.g. '*.ts', it matches file names at any depth"},
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
