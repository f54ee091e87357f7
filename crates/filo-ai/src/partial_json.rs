//! Best-effort parsing of incomplete JSON, for tool-call arguments while they stream in.

use serde_json::Value;

/// Parse `text`, closing any open string, array or object. Returns `None` when nothing sensible
/// can be made of it yet.
pub fn parse_partial(text: &str) -> Option<Value> {
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        return Some(v);
    }
    let mut stack: Vec<char> = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    for c in text.chars() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => stack.push('}'),
            '[' => stack.push(']'),
            '}' | ']' => {
                stack.pop();
            }
            _ => {}
        }
    }
    let mut candidate = text.to_string();
    if escaped {
        candidate.pop();
    }
    if in_string {
        candidate.push('"');
    }
    // Try closing as is, then after dropping a dangling `,` / `:` / key.
    for _ in 0..3 {
        let mut closed = candidate.clone();
        for c in stack.iter().rev() {
            closed.push(*c);
        }
        if let Ok(v) = serde_json::from_str::<Value>(&closed) {
            return Some(v);
        }
        let trimmed = candidate.trim_end();
        if let Some(stripped) = trimmed.strip_suffix([',', ':']) {
            candidate = stripped.to_string();
        } else if let Some(pos) = trimmed.rfind([',', '{']) {
            let keep = if trimmed[pos..].starts_with('{') {
                pos + 1
            } else {
                pos
            };
            candidate = trimmed[..keep].to_string();
        } else {
            break;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::parse_partial;
    use serde_json::json;

    #[test]
    fn closes_open_structures() {
        assert_eq!(
            parse_partial(r#"{"command":"ls -"#),
            Some(json!({"command":"ls -"}))
        );
        assert_eq!(parse_partial(r#"{"a":[1,2"#), Some(json!({"a":[1,2]})));
        assert_eq!(parse_partial(r#"{"a":1,"b"#), Some(json!({"a":1})));
        assert_eq!(parse_partial(r#"{"a":1,"#), Some(json!({"a":1})));
        assert_eq!(parse_partial(r#"{"a":"#), Some(json!({})));
        assert_eq!(parse_partial(""), None);
    }
}
