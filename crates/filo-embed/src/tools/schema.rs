//! Tool parameter schemas normalised per provider (C25, spec §12.3; OpenClaw
//! `pi-tools.schema.ts`, `schema/clean-for-gemini.ts`, `schema/clean-for-xai.ts`).
//!
//! OpenAI needs a top-level `type: "object"`; Gemini rejects many JSON Schema keywords and
//! `type` next to `anyOf`; xAI rejects length and count constraints. Normalisation happens once,
//! before a tool reaches the agent.

use serde_json::{Map, Value};

mod gemini;

pub use gemini::clean_schema_for_gemini;

/// Keywords xAI rejects.
pub const XAI_UNSUPPORTED_KEYWORDS: &[&str] = &[
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minContains",
    "maxContains",
];

/// Whether `provider`/`model` is served by xAI (directly, through OpenRouter or Venice).
pub fn is_xai_provider(provider: Option<&str>, model_id: Option<&str>) -> bool {
    let provider = provider.unwrap_or("").trim().to_lowercase();
    let model = model_id.unwrap_or("").trim().to_lowercase();
    provider.contains("xai")
        || provider.contains("x-ai")
        || (provider.contains("openrouter") && model.starts_with("x-ai/"))
        || (provider.contains("venice") && model.starts_with("grok"))
}

/// Which cleaning a provider needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaDialect {
    Gemini,
    Xai,
    Standard,
}

impl SchemaDialect {
    /// Gemini when the provider mentions `google` or `gemini` (and not `anthropic`), else xAI
    /// for xAI models, else standard.
    pub fn for_model(provider: Option<&str>, model_id: Option<&str>) -> Self {
        let p = provider.unwrap_or("").to_lowercase();
        if (p.contains("google") || p.contains("gemini")) && !p.contains("anthropic") {
            Self::Gemini
        } else if is_xai_provider(provider, model_id) {
            Self::Xai
        } else {
            Self::Standard
        }
    }

    fn clean(self, schema: Value) -> Value {
        match self {
            Self::Gemini => clean_schema_for_gemini(&schema),
            Self::Xai => strip_keywords(schema, XAI_UNSUPPORTED_KEYWORDS),
            Self::Standard => schema,
        }
    }
}

/// Removes `keywords` from a schema and every sub-schema (properties, items, unions, defs …),
/// never from the property-name level of `properties`.
pub fn strip_keywords(schema: Value, keywords: &[&str]) -> Value {
    match schema {
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|v| strip_keywords(v, keywords))
                .collect(),
        ),
        Value::Object(obj) => {
            let mut out = Map::new();
            for (k, v) in obj {
                if keywords.contains(&k.as_str()) {
                    continue;
                }
                let v = match (k.as_str(), v) {
                    (
                        "properties" | "$defs" | "definitions" | "patternProperties",
                        Value::Object(map),
                    ) => Value::Object(
                        map.into_iter()
                            .map(|(name, s)| (name, strip_keywords(s, keywords)))
                            .collect(),
                    ),
                    (
                        "items"
                        | "anyOf"
                        | "oneOf"
                        | "allOf"
                        | "prefixItems"
                        | "not"
                        | "additionalProperties"
                        | "contains",
                        v,
                    ) => strip_keywords(v, keywords),
                    (_, v) => v,
                };
                out.insert(k, v);
            }
            Value::Object(out)
        }
        other => other,
    }
}

/// A tool's parameter schema made acceptable to `provider`/`model`. Non-object schemas are
/// returned unchanged.
pub fn normalize_tool_parameters(
    parameters: &Value,
    provider: Option<&str>,
    model_id: Option<&str>,
) -> Value {
    let Value::Object(schema) = parameters else {
        return parameters.clone();
    };
    let dialect = SchemaDialect::for_model(provider, model_id);
    let has_anyof = schema.get("anyOf").is_some_and(Value::is_array);
    let has_oneof = schema.get("oneOf").is_some_and(Value::is_array);
    if schema.contains_key("type") && schema.contains_key("properties") && !has_anyof {
        return dialect.clean(parameters.clone());
    }
    let objectish = schema
        .get("properties")
        .is_some_and(|p| p.is_object() || p.is_null())
        || schema.get("required").is_some_and(Value::is_array);
    if !schema.contains_key("type") && objectish && !has_anyof && !has_oneof {
        let mut with_type = schema.clone();
        with_type.insert("type".into(), Value::from("object"));
        return dialect.clean(Value::Object(with_type));
    }
    let variants = match (schema.get("anyOf"), schema.get("oneOf")) {
        (Some(Value::Array(v)), _) | (_, Some(Value::Array(v))) => v,
        _ => return parameters.clone(),
    };
    dialect.clean(flatten_union(schema, variants))
}

/// A top-level union flattened into one object schema. The original union is not kept (Gemini
/// rejects `type` next to `anyOf`; OpenClaw kept it at one point, fixed upstream).
fn flatten_union(schema: &Map<String, Value>, variants: &[Value]) -> Value {
    let mut properties = Map::new();
    let mut required_counts: Vec<(String, usize)> = Vec::new();
    let mut object_variants = 0usize;
    for variant in variants {
        let Some(props) = variant.get("properties").and_then(Value::as_object) else {
            continue;
        };
        object_variants += 1;
        for (key, value) in props {
            let merged = match properties.get(key) {
                None => value.clone(),
                Some(existing) => merge_property_schemas(existing, value),
            };
            properties.insert(key.clone(), merged);
        }
        for key in variant
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            match required_counts.iter_mut().find(|(k, _)| k == key) {
                Some((_, n)) => *n += 1,
                None => required_counts.push((key.to_owned(), 1)),
            }
        }
    }
    let own_required: Vec<Value> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter(|k| k.is_string()).cloned().collect())
        .unwrap_or_default();
    let required: Vec<Value> = if !own_required.is_empty() {
        own_required
    } else {
        required_counts
            .into_iter()
            .filter(|(_, n)| *n == object_variants)
            .map(|(k, _)| Value::from(k))
            .collect()
    };
    let mut out = Map::new();
    out.insert("type".into(), Value::from("object"));
    for key in ["title", "description"] {
        if let Some(v) = schema.get(key).filter(|v| v.is_string()) {
            out.insert(key.into(), v.clone());
        }
    }
    let properties = if properties.is_empty() {
        schema
            .get("properties")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new()))
    } else {
        Value::Object(properties)
    };
    out.insert("properties".into(), properties);
    if !required.is_empty() {
        out.insert("required".into(), Value::Array(required));
    }
    let additional = schema
        .get("additionalProperties")
        .cloned()
        .unwrap_or(Value::Bool(true));
    out.insert("additionalProperties".into(), additional);
    Value::Object(out)
}

fn enum_values(schema: &Value) -> Option<Vec<Value>> {
    let obj = schema.as_object()?;
    if let Some(Value::Array(values)) = obj.get("enum") {
        return Some(values.clone());
    }
    if let Some(c) = obj.get("const") {
        return Some(vec![c.clone()]);
    }
    let variants = match (obj.get("anyOf"), obj.get("oneOf")) {
        (Some(Value::Array(v)), _) | (_, Some(Value::Array(v))) => v,
        _ => return None,
    };
    let values: Vec<Value> = variants.iter().filter_map(enum_values).flatten().collect();
    (!values.is_empty()).then_some(values)
}

/// JavaScript's `typeof` for a JSON value.
fn js_type(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "boolean",
        Value::Null | Value::Array(_) | Value::Object(_) => "object",
    }
}

/// Two definitions of the same property: when either carries enum/const values, one schema with
/// the union of the values (first title/description/default; `type` when all values share one
/// type); otherwise the first definition. (The spec says "both"; OpenClaw's source merges when
/// either side has values, and the source wins.)
fn merge_property_schemas(existing: &Value, incoming: &Value) -> Value {
    let (a, b) = (enum_values(existing), enum_values(incoming));
    if a.is_none() && b.is_none() {
        return existing.clone();
    }
    let mut values: Vec<Value> = Vec::new();
    for v in a.into_iter().chain(b).flatten() {
        if !values.contains(&v) {
            values.push(v);
        }
    }
    let mut merged = Map::new();
    for source in [existing, incoming] {
        let Some(obj) = source.as_object() else {
            continue;
        };
        for key in ["title", "description", "default"] {
            if let (false, Some(v)) = (merged.contains_key(key), obj.get(key)) {
                merged.insert(key.into(), v.clone());
            }
        }
    }
    let mut types: Vec<&str> = values.iter().map(js_type).collect();
    types.dedup();
    if let [only] = types.as_slice()
        && values.iter().all(|v| js_type(v) == *only)
    {
        merged.insert("type".into(), Value::from(*only));
    }
    merged.insert("enum".into(), Value::Array(values));
    Value::Object(merged)
}

#[cfg(test)]
#[path = "schema_tests.rs"]
mod tests;
