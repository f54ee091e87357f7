//! Argument parsing: one helper turns serde errors into model-facing text.

use serde::de::DeserializeOwned;
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
    use serde::Deserialize;
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

    #[test]
    fn numbers_print_like_javascript() {
        assert_eq!(js_number(3.0), "3");
        assert_eq!(js_number(0.5), "0.5");
        assert_eq!(js_number(-2.0), "-2");
        assert_eq!(to_count(2.7), 2);
        assert_eq!(to_count(-1.0), 0);
    }
}
