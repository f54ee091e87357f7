//! The Gemini schema cleaner (OpenClaw `cleanSchemaForGemini`).

use serde_json::{Map, Value};

/// Keywords Gemini (Cloud Code Assist) rejects.
pub const GEMINI_UNSUPPORTED_KEYWORDS: &[&str] = &[
    "patternProperties",
    "additionalProperties",
    "$schema",
    "$id",
    "$ref",
    "$defs",
    "definitions",
    "examples",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "multipleOf",
    "pattern",
    "format",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
];

const META_KEYS: [&str; 3] = ["description", "title", "default"];

type Defs = Vec<(String, Value)>;

fn copy_meta(from: &Map<String, Value>, to: &mut Map<String, Value>) {
    for key in META_KEYS {
        if let Some(v) = from.get(key) {
            to.insert(key.into(), v.clone());
        }
    }
}

/// `schema` with Gemini-unsupported keywords removed, `const` turned into `enum`, nullable
/// types and null union variants dropped, literal unions flattened to enums, and local `$ref`s
/// inlined (a cycle becomes `{}`).
pub fn clean_schema_for_gemini(schema: &Value) -> Value {
    match schema {
        Value::Array(items) => Value::Array(items.iter().map(clean_schema_for_gemini).collect()),
        Value::Object(obj) => clean(schema, &extend_defs(&Vec::new(), obj), &[]),
        other => other.clone(),
    }
}

fn extend_defs(defs: &Defs, obj: &Map<String, Value>) -> Defs {
    let mut next = defs.clone();
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(entries)) = obj.get(key) {
            for (name, v) in entries {
                next.retain(|(n, _)| n != name);
                next.push((name.clone(), v.clone()));
            }
        }
    }
    next
}

fn resolve_local_ref<'a>(reference: &str, defs: &'a Defs) -> Option<&'a Value> {
    let name = reference
        .strip_prefix("#/$defs/")
        .or_else(|| reference.strip_prefix("#/definitions/"))?;
    let name = name.replace("~1", "/").replace("~0", "~");
    if name.is_empty() {
        return None;
    }
    defs.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
}

fn clean(schema: &Value, defs: &Defs, ref_stack: &[String]) -> Value {
    let obj = match schema {
        Value::Array(items) => {
            return Value::Array(items.iter().map(|v| clean(v, defs, ref_stack)).collect());
        }
        Value::Object(obj) => obj,
        other => return other.clone(),
    };
    let defs = extend_defs(defs, obj);
    if let Some(reference) = obj.get("$ref").and_then(Value::as_str) {
        return inline_ref(obj, reference, &defs, ref_stack);
    }
    let clean_all = |v: &Vec<Value>| {
        v.iter()
            .map(|x| clean(x, &defs, ref_stack))
            .collect::<Vec<_>>()
    };
    let has_anyof = matches!(obj.get("anyOf"), Some(Value::Array(_)));
    let has_oneof = matches!(obj.get("oneOf"), Some(Value::Array(_)));
    let mut unions: Vec<(&str, Vec<Value>)> = Vec::new();
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(variants)) = obj.get(key) {
            match simplify_union(obj, clean_all(variants)) {
                Union::Replaced(v) => return v,
                Union::Kept(variants) => unions.push((key, variants)),
            }
        }
    }
    let mut out = Map::new();
    for (key, value) in obj {
        if GEMINI_UNSUPPORTED_KEYWORDS.contains(&key.as_str()) {
            continue;
        }
        match (key.as_str(), value) {
            ("const", v) => {
                out.insert("enum".into(), Value::Array(vec![v.clone()]));
            }
            ("type", _) if has_anyof || has_oneof => {}
            ("type", Value::Array(types)) if types.iter().all(Value::is_string) => {
                let kept: Vec<Value> = types
                    .iter()
                    .filter(|t| t.as_str() != Some("null"))
                    .cloned()
                    .collect();
                let v = if kept.len() == 1 {
                    kept[0].clone()
                } else {
                    Value::Array(kept)
                };
                out.insert("type".into(), v);
            }
            ("properties", Value::Object(props)) => {
                let cleaned = props
                    .iter()
                    .map(|(k, v)| (k.clone(), clean(v, &defs, ref_stack)))
                    .collect();
                out.insert(key.clone(), Value::Object(cleaned));
            }
            ("items", v @ (Value::Array(_) | Value::Object(_))) => {
                out.insert(key.clone(), clean(v, &defs, ref_stack));
            }
            ("anyOf" | "oneOf", Value::Array(_)) => {
                let variants = unions
                    .iter()
                    .find(|(k, _)| k == key)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default();
                out.insert(key.clone(), Value::Array(variants));
            }
            ("allOf", Value::Array(variants)) => {
                out.insert(key.clone(), Value::Array(clean_all(variants)));
            }
            (_, v) => {
                out.insert(key.clone(), v.clone());
            }
        }
    }
    Value::Object(out)
}

fn inline_ref(
    obj: &Map<String, Value>,
    reference: &str,
    defs: &Defs,
    ref_stack: &[String],
) -> Value {
    if ref_stack.iter().any(|r| r == reference) {
        return Value::Object(Map::new());
    }
    let mut result = Map::new();
    match resolve_local_ref(reference, defs) {
        Some(target) if !is_falsy(target) => {
            let mut stack = ref_stack.to_vec();
            stack.push(reference.to_owned());
            match clean(target, defs, &stack) {
                Value::Object(cleaned) => result = cleaned,
                other => return other,
            }
        }
        _ => {}
    }
    copy_meta(obj, &mut result);
    Value::Object(result)
}

/// JavaScript falsiness of a resolved definition (`tryResolveLocalRef` result used in `if`).
fn is_falsy(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(_) | Value::Object(_) => false,
    }
}

enum Union {
    Replaced(Value),
    Kept(Vec<Value>),
}

fn is_null_schema(v: &Value) -> bool {
    let Some(obj) = v.as_object() else {
        return false;
    };
    if obj.get("const") == Some(&Value::Null) {
        return true;
    }
    if let Some(Value::Array(values)) = obj.get("enum")
        && values.len() == 1
    {
        return values[0].is_null();
    }
    match obj.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(t)) => t.len() == 1 && t[0].as_str() == Some("null"),
        _ => false,
    }
}

/// `{type, enum}` when every variant is one literal of the same single type.
fn flatten_literals(variants: &[Value]) -> Option<(String, Vec<Value>)> {
    let mut common: Option<&str> = None;
    let mut values = Vec::new();
    for variant in variants {
        let obj = variant.as_object()?;
        let literal = match (obj.get("const"), obj.get("enum")) {
            (Some(c), _) => c.clone(),
            (None, Some(Value::Array(e))) if e.len() == 1 => e[0].clone(),
            _ => return None,
        };
        let ty = match obj.get("type") {
            Some(Value::String(t)) => t.as_str(),
            Some(Value::Array(t)) if t.len() == 1 => t[0].as_str()?,
            _ => return None,
        };
        match common {
            None => common = Some(ty),
            Some(c) if c != ty => return None,
            Some(_) => {}
        }
        values.push(literal);
    }
    Some((common?.to_owned(), values)).filter(|(_, v)| !v.is_empty())
}

fn simplify_union(obj: &Map<String, Value>, variants: Vec<Value>) -> Union {
    let before = variants.len();
    let non_null: Vec<Value> = variants
        .into_iter()
        .filter(|v| !is_null_schema(v))
        .collect();
    let stripped = non_null.len() != before;
    if let Some((ty, values)) = flatten_literals(&non_null) {
        let mut out = Map::new();
        out.insert("type".into(), Value::from(ty));
        out.insert("enum".into(), Value::Array(values));
        copy_meta(obj, &mut out);
        return Union::Replaced(Value::Object(out));
    }
    if stripped && non_null.len() == 1 {
        let lone = non_null.into_iter().next().unwrap_or(Value::Null);
        return Union::Replaced(match lone {
            Value::Object(mut o) => {
                copy_meta(obj, &mut o);
                Value::Object(o)
            }
            other => other,
        });
    }
    Union::Kept(non_null)
}
