//! `edit`: pi 0.73's multi-block edit. Every `edits[].oldText` is matched against the original
//! file (exact first, then fuzzy), must be unique and must not overlap another; the replacements
//! are applied together, keeping the file's BOM and line endings, and a line-numbered diff is
//! reported. The pre-0.63 single `{oldText, newText}` shape and `edits` sent as a JSON string are
//! still accepted ([`AgentTool::prepare_arguments`]).

use std::borrow::Cow;

use filo_agent::{AgentTool, Concurrency, ToolCallContext, ToolError, ToolOutput};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::args::parse_args;
use crate::diff::generate_diff_string;
use crate::error::{Error, errno_code};
use crate::fileread::MAX_READ_BYTES;
use crate::fuzzy::{
    count_occurrences, detect_line_ending, fuzzy_find, normalize_for_fuzzy_match, normalize_to_lf,
    restore_line_endings, strip_bom,
};
use crate::paths::resolve_to_cwd;
use crate::support::{cancellable, text_output};

/// pi 0.73.1's description of the edit tool.
pub const DESCRIPTION: &str = "Edit a single file using exact text replacement. Every edits[].oldText must match a unique, non-overlapping region of the original file. If two changes affect the same block or nearby lines, merge them into one edit instead of emitting overlapping edits. Do not include large unchanged regions just to connect distant changes.";
const PATH_DESCRIPTION: &str = "Path to the file to edit (relative or absolute)";
const EDITS_DESCRIPTION: &str = "One or more targeted replacements. Each edit is matched against the original file, not incrementally. Do not include overlapping or nested edits. If two changes touch the same block or nearby lines, merge them into one edit instead.";
const OLD_TEXT_DESCRIPTION: &str = "Exact text for one targeted replacement. It must be unique in the original file and must not overlap with any other edits[].oldText in the same call.";
const NEW_TEXT_DESCRIPTION: &str = "Replacement text for this targeted edit.";
const DIFF_CONTEXT_LINES: usize = 4;

/// One replacement.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Replacement {
    #[serde(rename = "oldText")]
    pub old_text: String,
    #[serde(rename = "newText")]
    pub new_text: String,
}

impl Replacement {
    pub fn new(old_text: impl Into<String>, new_text: impl Into<String>) -> Self {
        Replacement {
            old_text: old_text.into(),
            new_text: new_text.into(),
        }
    }
}

#[derive(Debug, Deserialize)]
struct EditArgs {
    path: String,
    #[serde(default)]
    edits: Vec<Replacement>,
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

/// pi's `prepareArguments` for edit: `edits` given as a JSON string is parsed when it holds an
/// array, and a top-level `oldText`/`newText` pair (both strings) becomes the last entry of
/// `edits`. Anything else is returned as it came, for validation to judge.
pub fn prepare_edit_arguments(args: Value) -> Value {
    let Value::Object(mut map) = args else {
        return args;
    };
    if let Some(Value::String(text)) = map.get("edits")
        && let Ok(parsed @ Value::Array(_)) = serde_json::from_str::<Value>(text)
    {
        map.insert("edits".into(), parsed);
    }
    let legacy = matches!(
        (map.get("oldText"), map.get("newText")),
        (Some(Value::String(_)), Some(Value::String(_)))
    );
    if !legacy {
        return Value::Object(map);
    }
    let old = map.remove("oldText").unwrap_or(Value::Null);
    let new = map.remove("newText").unwrap_or(Value::Null);
    let mut edits = match map.remove("edits") {
        Some(Value::Array(edits)) => edits,
        _ => Vec::new(),
    };
    edits.push(json!({"oldText": old, "newText": new}));
    map.insert("edits".into(), Value::Array(edits));
    Value::Object(map)
}

/// Apply one edit (pi's single-edit texts).
pub fn plan_edit(raw: &str, path: &str, old_text: &str, new_text: &str) -> Result<EditPlan, Error> {
    plan_edits(raw, path, &[Replacement::new(old_text, new_text)])
}

struct Matched<'a> {
    edit_index: usize,
    index: usize,
    length: usize,
    new_text: Cow<'a, str>,
}

fn not_found(path: &str, i: usize, total: usize) -> Error {
    Error::message(if total == 1 {
        format!(
            "Could not find the exact text in {path}. The old text must match exactly including all whitespace and newlines."
        )
    } else {
        format!(
            "Could not find edits[{i}] in {path}. The oldText must match exactly including all whitespace and newlines."
        )
    })
}

fn duplicate(path: &str, i: usize, total: usize, occurrences: usize) -> Error {
    Error::message(if total == 1 {
        format!(
            "Found {occurrences} occurrences of the text in {path}. The text must be unique. Please provide more context to make it unique."
        )
    } else {
        format!(
            "Found {occurrences} occurrences of edits[{i}] in {path}. Each oldText must be unique. Please provide more context to make it unique."
        )
    })
}

fn empty_old_text(path: &str, i: usize, total: usize) -> Error {
    Error::message(if total == 1 {
        format!("oldText must not be empty in {path}.")
    } else {
        format!("edits[{i}].oldText must not be empty in {path}.")
    })
}

fn no_change(path: &str, total: usize) -> Error {
    Error::message(if total == 1 {
        format!(
            "No changes made to {path}. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected."
        )
    } else {
        format!("No changes made to {path}. The replacements produced identical content.")
    })
}

/// Apply pi 0.73's edit algorithm to a file's text. `path` is the argument as given, for messages.
/// All edits are matched against the same original text; when any needs the fuzzy match, the
/// whole operation runs on the normalised text, as pi does.
pub fn plan_edits(raw: &str, path: &str, edits: &[Replacement]) -> Result<EditPlan, Error> {
    let (bom, content) = strip_bom(raw);
    let ending = detect_line_ending(content);
    let content = normalize_to_lf(content);
    let total = edits.len();
    let normalized: Vec<(Cow<'_, str>, Cow<'_, str>)> = edits
        .iter()
        .map(|e| (normalize_to_lf(&e.old_text), normalize_to_lf(&e.new_text)))
        .collect();
    if let Some(i) = normalized.iter().position(|(old, _)| old.is_empty()) {
        return Err(empty_old_text(path, i, total));
    }
    let any_fuzzy = normalized
        .iter()
        .any(|(old, _)| fuzzy_find(&content, old).is_some_and(|m| m.fuzzy));
    let base: Cow<'_, str> = if any_fuzzy {
        Cow::Owned(normalize_for_fuzzy_match(&content))
    } else {
        Cow::Borrowed(&content)
    };
    let mut matched = Vec::with_capacity(total);
    for (i, (old, new)) in normalized.iter().enumerate() {
        let found = fuzzy_find(&base, old).ok_or_else(|| not_found(path, i, total))?;
        let occurrences = count_occurrences(&base, old);
        if occurrences > 1 {
            return Err(duplicate(path, i, total, occurrences));
        }
        matched.push(Matched {
            edit_index: i,
            index: found.index,
            length: found.length,
            new_text: new.clone(),
        });
    }
    matched.sort_by_key(|m| m.index);
    for pair in matched.windows(2) {
        let (previous, current) = (&pair[0], &pair[1]);
        if previous.index + previous.length > current.index {
            return Err(Error::message(format!(
                "edits[{}] and edits[{}] overlap in {path}. Merge them into one edit or target disjoint regions.",
                previous.edit_index, current.edit_index
            )));
        }
    }
    let mut replaced = String::with_capacity(base.len());
    let mut at = 0;
    for m in &matched {
        replaced.push_str(&base[at..m.index]);
        replaced.push_str(&m.new_text);
        at = m.index + m.length;
    }
    replaced.push_str(&base[at..]);
    if replaced == *base {
        return Err(no_change(path, total));
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
        if args.edits.is_empty() {
            return Err(Error::message(
                "Edit tool input is invalid. edits must contain at least one replacement.",
            ));
        }
        let path = resolve_to_cwd(
            &args.path,
            &self.settings.cwd,
            self.settings.home.as_deref(),
        );
        let inaccessible = |code: &str| {
            Error::message(format!(
                "Could not edit file: {}. Error code: {code}.",
                args.path
            ))
        };
        let meta = tokio::fs::metadata(&path)
            .await
            .map_err(|e| inaccessible(errno_code(&e).unwrap_or("EIO")))?;
        if meta.permissions().readonly() {
            return Err(inaccessible("EACCES"));
        }
        let bytes = crate::fileread::read_whole_regular(&path, MAX_READ_BYTES).await?;
        let raw = String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        let (edits, shown) = (args.edits, args.path.clone());
        let count = edits.len();
        let plan = tokio::task::spawn_blocking(move || plan_edits(&raw, &shown, &edits))
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
            format!("Successfully replaced {count} block(s) in {}.", args.path),
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
                "path": {"type": "string", "description": PATH_DESCRIPTION},
                "edits": {
                    "type": "array",
                    "description": EDITS_DESCRIPTION,
                    "items": {
                        "type": "object",
                        "properties": {
                            "oldText": {"type": "string", "description": OLD_TEXT_DESCRIPTION},
                            "newText": {"type": "string", "description": NEW_TEXT_DESCRIPTION}
                        },
                        "required": ["oldText", "newText"]
                    }
                }
            },
            "required": ["path", "edits"]
        })
    }

    fn prepare_arguments(&self, args: Value) -> Value {
        prepare_edit_arguments(args)
    }

    fn concurrency(&self) -> Concurrency {
        Concurrency::Exclusive
    }

    fn execute(&self, ctx: ToolCallContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        async move {
            let args: EditArgs = parse_args("edit", &prepare_edit_arguments(ctx.args))?;
            Ok(cancellable(&ctx.cancel, self.run(args)).await?)
        }
        .boxed()
    }
}
