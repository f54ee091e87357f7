//! The agent's tools with their model-facing definitions and compiled argument validators.
//!
//! A validator is compiled once per tool, the first time the tool is called, and kept for the life
//! of the [`ToolSet`]. Validation mirrors pi's `validateToolArguments` (spec §1.12): scalar types
//! are coerced the way Ajv's `coerceTypes` does, every error is listed, and the failure text is
//! pi's format so the model reads the same message.

use std::sync::{Arc, OnceLock};

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{ValidationError, Validator};
use serde_json::{Map, Number, Value};

use crate::error::ArgumentsError;
use crate::tool::AgentTool;

/// One tool and its cached validator.
pub struct ToolEntry {
    tool: Arc<dyn AgentTool>,
    schema: Value,
    validator: OnceLock<Result<Validator, ArgumentsError>>,
}

impl ToolEntry {
    /// The tool.
    pub fn tool(&self) -> &Arc<dyn AgentTool> {
        &self.tool
    }

    /// Validate (and coerce) arguments; the error's text is what the model reads.
    pub fn validate(&self, args: &Value) -> Result<Value, ArgumentsError> {
        let name = self.tool.name();
        let validator = self
            .validator
            .get_or_init(|| {
                jsonschema::validator_for(&self.schema).map_err(|e| ArgumentsError::Schema {
                    tool: name.to_string(),
                    reason: e.to_string(),
                })
            })
            .as_ref()
            .map_err(Clone::clone)?;
        let mut coerced = args.clone();
        coerce(&self.schema, &mut coerced);
        let lines: Vec<String> = validator
            .iter_errors(&coerced)
            .map(|e| describe(&e))
            .collect();
        if lines.is_empty() {
            return Ok(coerced);
        }
        let received = serde_json::to_string_pretty(args).unwrap_or_else(|_| args.to_string());
        Err(ArgumentsError::Invalid {
            tool: name.to_string(),
            problems: lines,
            received,
        })
    }
}

/// The tools of an agent, in the order given.
#[derive(Default)]
pub struct ToolSet {
    entries: Vec<ToolEntry>,
    definitions: Vec<filo_ai::Tool>,
    /// Whether some tool is [deferred](AgentTool::deferred): then the definitions are asked anew
    /// before every model call.
    has_deferred: bool,
}

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.entries.iter().map(|e| e.tool.name()))
            .finish()
    }
}

impl ToolSet {
    pub fn new(tools: Vec<Arc<dyn AgentTool>>) -> Self {
        let has_deferred = tools.iter().any(|t| t.deferred());
        let definitions = tools
            .iter()
            .filter(|t| !t.deferred() || t.declared())
            .map(|t| t.definition())
            .collect();
        let entries = tools
            .into_iter()
            .map(|tool| ToolEntry {
                schema: tool.parameters(),
                tool,
                validator: OnceLock::new(),
            })
            .collect();
        ToolSet {
            entries,
            definitions,
            has_deferred,
        }
    }

    /// Whether some tool's declaration can change between model calls.
    pub fn has_deferred(&self) -> bool {
        self.has_deferred
    }

    /// The definitions to send now: every tool that is not deferred, and the deferred ones that
    /// are declared at this moment, in order.
    pub fn declared_definitions(&self) -> Vec<filo_ai::Tool> {
        if !self.has_deferred {
            return self.definitions.clone();
        }
        self.entries
            .iter()
            .filter(|e| !e.tool.deferred() || e.tool.declared())
            .map(|e| e.tool.definition())
            .collect()
    }

    /// The first tool with exactly this name.
    pub fn get(&self, name: &str) -> Option<&ToolEntry> {
        self.entries.iter().find(|e| e.tool.name() == name)
    }

    /// The model-facing definitions when the set was made, in order (see
    /// [`ToolSet::declared_definitions`] for deferred tools).
    pub fn definitions(&self) -> &[filo_ai::Tool] {
        &self.definitions
    }

    /// The tools, in order.
    pub fn tools(&self) -> impl Iterator<Item = &Arc<dyn AgentTool>> {
        self.entries.iter().map(|e| &e.tool)
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// One line of pi's error list: `  - <path>: <message>`, Ajv's wording where it has one.
fn describe(error: &ValidationError<'_>) -> String {
    let path = error
        .instance_path()
        .as_str()
        .trim_start_matches('/')
        .to_string();
    let (path, message) = match error.kind() {
        ValidationErrorKind::Required { property } => {
            let p = property
                .as_str()
                .map_or_else(|| property.to_string(), str::to_string);
            let full = if path.is_empty() {
                p.clone()
            } else {
                format!("{path}/{p}")
            };
            (full, format!("must have required property '{p}'"))
        }
        ValidationErrorKind::Type { kind } => {
            let types = match kind {
                TypeKind::Single(t) => t.to_string(),
                TypeKind::Multiple(set) => set
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(","),
            };
            (path, format!("must be {types}"))
        }
        ValidationErrorKind::AdditionalProperties { .. } => {
            (path, "must NOT have additional properties".to_string())
        }
        ValidationErrorKind::Enum { .. } => (
            path,
            "must be equal to one of the allowed values".to_string(),
        ),
        _ => (path, error.to_string()),
    };
    let path = if path.is_empty() {
        "root".to_string()
    } else {
        path
    };
    format!("  - {path}: {message}")
}

/// The single `type` a schema names, if it names exactly one.
fn single_type(schema: &Value) -> Option<&str> {
    match schema.get("type")? {
        Value::String(s) => Some(s),
        Value::Array(a) if a.len() == 1 => a[0].as_str(),
        _ => None,
    }
}

/// Ajv `coerceTypes` for scalars, applied through `properties` and `items`.
fn coerce(schema: &Value, value: &mut Value) {
    if let Some(ty) = single_type(schema)
        && let Some(new) = coerce_scalar(ty, value)
    {
        *value = new;
    }
    match value {
        Value::Object(map) => coerce_object(schema, map),
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items").filter(|s| s.is_object()) {
                for item in items {
                    coerce(item_schema, item);
                }
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
    }
}

fn coerce_object(schema: &Value, map: &mut Map<String, Value>) {
    let Some(Value::Object(props)) = schema.get("properties") else {
        return;
    };
    for (key, prop_schema) in props {
        if let Some(v) = map.get_mut(key) {
            coerce(prop_schema, v);
        }
    }
}

fn coerce_scalar(ty: &str, value: &Value) -> Option<Value> {
    match (ty, value) {
        ("number", Value::String(s)) => s.trim().parse::<f64>().ok().and_then(number),
        ("integer", Value::String(s)) => s.trim().parse::<i64>().ok().map(Value::from),
        ("number" | "integer", Value::Bool(b)) => Some(Value::from(i64::from(*b))),
        ("number" | "integer", Value::Null) => Some(Value::from(0)),
        ("string", Value::Number(n)) => Some(Value::String(n.to_string())),
        ("string", Value::Bool(b)) => Some(Value::String(b.to_string())),
        ("string", Value::Null) => Some(Value::String(String::new())),
        ("boolean", Value::String(s)) if s == "true" => Some(Value::Bool(true)),
        ("boolean", Value::String(s)) if s == "false" => Some(Value::Bool(false)),
        ("boolean", Value::Number(n)) if n.as_f64() == Some(1.0) => Some(Value::Bool(true)),
        ("boolean", Value::Number(n)) if n.as_f64() == Some(0.0) => Some(Value::Bool(false)),
        ("boolean", Value::Null) => Some(Value::Bool(false)),
        ("null", Value::String(s)) if s.is_empty() => Some(Value::Null),
        ("null", Value::Bool(false)) => Some(Value::Null),
        ("null", Value::Number(n)) if n.as_f64() == Some(0.0) => Some(Value::Null),
        _ => None,
    }
}

/// A JSON number, as an integer when the value is integral (so `"5"` becomes `5`, not `5.0`).
fn number(f: f64) -> Option<Value> {
    const MAX_SAFE: f64 = 9_007_199_254_740_991.0;
    if f.fract() == 0.0 && f.abs() <= MAX_SAFE {
        // Integral and within the exactly representable range.
        #[allow(clippy::cast_possible_truncation)]
        return Some(Value::from(f as i64));
    }
    Number::from_f64(f).map(Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::{ToolCallContext, ToolError, ToolOutput};
    use futures::future::BoxFuture;
    use serde_json::json;

    struct Schema(Value);

    impl AgentTool for Schema {
        fn name(&self) -> &str {
            "read"
        }
        fn label(&self) -> &str {
            "Read"
        }
        fn description(&self) -> &str {
            "reads"
        }
        fn parameters(&self) -> Value {
            self.0.clone()
        }
        fn execute(&self, _ctx: ToolCallContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
            Box::pin(async { Ok(ToolOutput::text("ok")) })
        }
    }

    fn set(schema: Value) -> ToolSet {
        ToolSet::new(vec![Arc::new(Schema(schema))])
    }

    fn read_schema() -> Value {
        json!({"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"number"},
            "flags":{"type":"array","items":{"type":"boolean"}}},"required":["path"]})
    }

    #[test]
    fn valid_arguments_are_coerced_like_ajv() {
        let s = set(read_schema());
        let out = s
            .get("read")
            .unwrap()
            .validate(&json!({"path":"a","limit":"10","flags":["true",0]}))
            .unwrap();
        assert_eq!(out, json!({"path":"a","limit":10,"flags":[true,false]}));
    }

    #[test]
    fn failures_use_pis_text() {
        let s = set(read_schema());
        let err = s
            .get("read")
            .unwrap()
            .validate(&json!({"limit":"many"}))
            .unwrap_err();
        assert!(
            matches!(&err, ArgumentsError::Invalid { tool, problems, .. }
            if tool == "read" && problems.len() == 2)
        );
        let err = err.to_string();
        let (head, received) = err.split_once("\n\nReceived arguments:\n").unwrap();
        let mut lines: Vec<&str> = head.lines().collect();
        assert_eq!(lines.remove(0), "Validation failed for tool \"read\":");
        lines.sort_unstable();
        assert_eq!(
            lines,
            [
                "  - limit: must be number",
                "  - path: must have required property 'path'"
            ]
        );
        assert_eq!(received, "{\n  \"limit\": \"many\"\n}");
        let root = s
            .get("read")
            .unwrap()
            .validate(&json!("x"))
            .unwrap_err()
            .to_string();
        assert!(root.contains("  - root: must be object"), "{root}");
    }

    #[test]
    fn broken_schema_is_a_model_facing_error() {
        let s = set(json!({"type": 5}));
        let err = s.get("read").unwrap().validate(&json!({})).unwrap_err();
        assert!(matches!(err, ArgumentsError::Schema { .. }));
        let err = err.to_string();
        assert!(
            err.starts_with("Invalid JSON Schema for tool \"read\""),
            "{err}"
        );
        assert!(s.get("write").is_none());
    }
}
