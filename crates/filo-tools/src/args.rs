//! Argument parsing: one helper turns serde errors into model-facing text.

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::error::Error;

/// Deserialize a tool's arguments; a mismatch becomes pi's validation text for `tool`.
pub fn parse_args<T: DeserializeOwned>(tool: &str, args: &Value) -> Result<T, Error> {
    serde_json::from_value(args.clone()).map_err(|err| Error::Arguments {
        tool: tool.to_string(),
        message: err.to_string(),
        received: serde_json::to_string_pretty(args).unwrap_or_else(|_| args.to_string()),
    })
}

/// An optional number that also accepts a numeric string (`"10"`), as pi's argument validation
/// (Ajv with `coerceTypes`) does. Use with `#[serde(default, deserialize_with = "…")]`.
pub fn lenient_number<'de, D: Deserializer<'de>>(de: D) -> Result<Option<f64>, D::Error> {
    match Option::<Value>::deserialize(de)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_f64()
            .map(Some)
            .ok_or_else(|| D::Error::custom(format!("invalid number {n}"))),
        Some(Value::String(s)) => s.trim().parse::<f64>().map(Some).map_err(|_| {
            D::Error::custom(format!("invalid type: string {s:?}, expected a number"))
        }),
        Some(Value::Bool(b)) => Ok(Some(if b { 1.0 } else { 0.0 })),
        Some(other) => Err(D::Error::custom(format!(
            "invalid type: {other}, expected a number"
        ))),
    }
}

/// An optional boolean that also accepts `"true"`/`"false"` (and 1/0), like Ajv's coercion.
pub fn lenient_bool<'de, D: Deserializer<'de>>(de: D) -> Result<Option<bool>, D::Error> {
    match Option::<Value>::deserialize(de)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(b)),
        Some(Value::String(s)) if s == "true" => Ok(Some(true)),
        Some(Value::String(s)) if s == "false" => Ok(Some(false)),
        Some(Value::Number(n)) if n.as_f64() == Some(1.0) => Ok(Some(true)),
        Some(Value::Number(n)) if n.as_f64() == Some(0.0) => Ok(Some(false)),
        Some(other) => Err(D::Error::custom(format!(
            "invalid type: {other}, expected a boolean"
        ))),
    }
}

/// A JSON number as JavaScript prints it (`3`, not `3.0`; `0.5` stays `0.5`).
pub fn js_number(value: f64) -> String {
    if value.is_finite() && value.fract() == 0.0 && value.abs() < 1e21 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

/// A non-negative count from an optional JSON number (JS slice semantics: truncate toward zero).
pub fn to_count(value: f64) -> usize {
    if value.is_nan() || value <= 0.0 {
        0
    } else if value >= usize::MAX as f64 {
        usize::MAX
    } else {
        value.trunc() as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    struct Args {
        #[allow(dead_code)]
        path: String,
    }

    #[test]
    fn mismatch_becomes_validation_text() {
        let err = parse_args::<Args>("read", &json!({"path": 3})).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with(
                "Validation failed for tool \"read\":\n  - root: invalid type: integer `3`"
            ),
            "{text}"
        );
        assert!(
            text.ends_with("Received arguments:\n{\n  \"path\": 3\n}"),
            "{text}"
        );
    }

    #[derive(Debug, Deserialize)]
    struct Loose {
        #[serde(default, deserialize_with = "lenient_number")]
        n: Option<f64>,
        #[serde(default, deserialize_with = "lenient_bool")]
        b: Option<bool>,
    }

    #[test]
    fn numbers_and_booleans_are_coerced_like_ajv() {
        let v: Loose = parse_args("t", &json!({"n": "12", "b": "true"})).unwrap();
        assert_eq!((v.n, v.b), (Some(12.0), Some(true)));
        let v: Loose = parse_args("t", &json!({"n": 3, "b": false})).unwrap();
        assert_eq!((v.n, v.b), (Some(3.0), Some(false)));
        let v: Loose = parse_args("t", &json!({})).unwrap();
        assert_eq!((v.n, v.b), (None, None));
        let err = parse_args::<Loose>("t", &json!({"n": "ten"}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("expected a number"), "{err}");
    }

    #[test]
    fn numbers_print_like_javascript() {
        assert_eq!(js_number(3.0), "3");
        assert_eq!(js_number(0.5), "0.5");
        assert_eq!(js_number(-2.0), "-2");
        assert_eq!(to_count(2.7), 2);
        assert_eq!(to_count(-1.0), 0);
    }
}
