//! `edit`: replace one unique occurrence of a text in a file, exact first then fuzzy, keeping the
//! file's BOM and line endings, and report a line-numbered diff.

use std::borrow::Cow;

use filo_agent::{AgentTool, Concurrency, ToolCallContext, ToolError, ToolOutput};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::args::parse_args;
use crate::diff::generate_diff_string;
use crate::error::Error;
use crate::fileread::MAX_READ_BYTES;
use crate::fuzzy::{
    count_occurrences, detect_line_ending, fuzzy_find, normalize_to_lf, restore_line_endings,
    strip_bom,
};
use crate::paths::resolve_to_cwd;
use crate::support::{cancellable, text_output};

const DESCRIPTION: &str = "Edit a file by replacing exact text. The oldText must match exactly (including whitespace). Use this for precise, surgical edits.";
const DIFF_CONTEXT_LINES: usize = 4;

#[derive(Debug, Deserialize)]
struct EditArgs {
    path: String,
    #[serde(rename = "oldText")]
    old_text: String,
    #[serde(rename = "newText")]
    new_text: String,
}

/// A successful edit: the bytes to write and what to report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditPlan {
    /// The whole new file, BOM and line endings restored.
    pub new_file: String,
    /// pi's diff text.
    pub diff: String,
    /// New-file line of the first change.
    pub first_changed_line: Option<usize>,
}

/// Apply pi's edit algorithm to a file's text. `path` is the argument as given, for messages.
pub fn plan_edit(raw: &str, path: &str, old_text: &str, new_text: &str) -> Result<EditPlan, Error> {
    let (bom, content) = strip_bom(raw);
    let ending = detect_line_ending(content);
    let content = normalize_to_lf(content);
    let old = normalize_to_lf(old_text);
    let new = normalize_to_lf(new_text);
    let Some(found) = fuzzy_find(&content, &old) else {
        return Err(Error::message(format!(
            "Could not find the exact text in {path}. The old text must match exactly including all whitespace and newlines."
        )));
    };
    let occurrences = count_occurrences(&content, &old);
    if occurrences > 1 {
        return Err(Error::message(format!(
            "Found {occurrences} occurrences of the text in {path}. The text must be unique. Please provide more context to make it unique."
        )));
    }
    let base = found.content;
    let mut replaced = String::with_capacity(base.len() + new.len());
    replaced.push_str(&base[..found.index]);
    replaced.push_str(&new);
    replaced.push_str(&base[found.index + found.length..]);
    if replaced == base {
        return Err(Error::message(format!(
            "No changes made to {path}. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected."
        )));
    }
    let (diff, first_changed_line) = generate_diff_string(&base, &replaced, DIFF_CONTEXT_LINES);
    let new_file = match restore_line_endings(&replaced, ending) {
        Cow::Borrowed(_) if bom.is_empty() => replaced,
        restored => format!("{bom}{restored}"),
    };
    Ok(EditPlan {
        new_file,
        diff,
        first_changed_line,
    })
}

crate::support::settings_tool!(
    /// The `edit` tool.
    EditTool, "edit"
);

impl EditTool {
    async fn run(&self, args: EditArgs) -> Result<ToolOutput, Error> {
        let path = resolve_to_cwd(
            &args.path,
            &self.settings.cwd,
            self.settings.home.as_deref(),
        );
        let not_found = || Error::message(format!("File not found: {}", args.path));
        let meta = tokio::fs::metadata(&path).await.map_err(|_| not_found())?;
        if meta.permissions().readonly() {
            return Err(not_found());
        }
        let bytes = crate::fileread::read_whole_regular(&path, MAX_READ_BYTES).await?;
        let raw = String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        let (old_text, new_text, shown) = (args.old_text, args.new_text, args.path.clone());
        let plan =
            tokio::task::spawn_blocking(move || plan_edit(&raw, &shown, &old_text, &new_text))
                .await
                .map_err(|e| Error::Internal(format!("edit worker failed: {e}")))??;
        tokio::fs::write(&path, plan.new_file.as_bytes())
            .await
            .map_err(|e| Error::io("open", &path, e))?;
        let mut details = Map::new();
        details.insert("diff".into(), Value::String(plan.diff));
        if let Some(line) = plan.first_changed_line {
            details.insert("firstChangedLine".into(), json!(line));
        }
        Ok(text_output(
            format!("Successfully replaced text in {}.", args.path),
            details,
        ))
    }
}

impl AgentTool for EditTool {
    fn name(&self) -> &str {
        "edit"
    }

    fn label(&self) -> &str {
        "edit"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path to the file to edit (relative or absolute)"},
                "oldText": {"type": "string", "description": "Exact text to find and replace (must match exactly)"},
                "newText": {"type": "string", "description": "New text to replace the old text with"}
            },
            "required": ["path", "oldText", "newText"]
        })
    }

    fn concurrency(&self) -> Concurrency {
        Concurrency::Exclusive
    }

    fn execute(&self, ctx: ToolCallContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        async move {
            let args: EditArgs = parse_args("edit", &ctx.args)?;
            Ok(cancellable(&ctx.cancel, self.run(args)).await?)
        }
        .boxed()
    }
}
