//! Tool-event helpers of the subscriber (C19, spec §8.2): tool name normalisation, the display
//! meta of a call, error detection, result sanitising for events, the first error line and the
//! tool-output payload text.

use filo_agent::ToolOutput;
use filo_ai::ContentBlock;
use serde_json::{Value, json};

/// Longest text block kept in a sanitised tool result (chars).
pub const TOOL_RESULT_EVENT_MAX_CHARS: usize = 8_000;
/// Appended to a text block cut by [`sanitize_tool_output`].
pub const TRUNCATED_SUFFIX: &str = "\n…(truncated)…";
/// Longest error line kept for the last tool error (chars).
pub const TOOL_ERROR_MAX_CHARS: usize = 400;

/// Argument keys tried, in order, for the display detail of a tool without its own rule.
const DETAIL_KEYS: [&str; 19] = [
    "command",
    "path",
    "url",
    "targetUrl",
    "targetId",
    "ref",
    "element",
    "node",
    "nodeId",
    "id",
    "requestId",
    "to",
    "channelId",
    "guildId",
    "userId",
    "name",
    "query",
    "pattern",
    "messageId",
];

/// Lower-cased, trimmed, with the aliases `bash → exec` and `apply-patch → apply_patch`.
pub fn normalize_tool_name(name: &str) -> String {
    let lower = name.trim().to_lowercase();
    match lower.as_str() {
        "bash" => "exec".to_owned(),
        "apply-patch" => "apply_patch".to_owned(),
        _ => lower,
    }
}

fn str_arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// The display meta of a call: its path/command/… argument, with ` · pty` and ` · elevated`
/// flags for exec.
pub fn tool_call_meta(tool_name: &str, args: &Value) -> Option<String> {
    let name = normalize_tool_name(tool_name);
    let detail = match name.as_str() {
        "read" | "write" | "edit" => str_arg(args, "path").or_else(|| str_arg(args, "file_path")),
        "exec" => str_arg(args, "command"),
        _ => DETAIL_KEYS.iter().find_map(|k| str_arg(args, k)),
    };
    let mut meta = detail.map(str::to_owned);
    if name == "exec" {
        for flag in ["pty", "elevated"] {
            if args.get(flag).and_then(Value::as_bool) == Some(true) {
                let m = meta.get_or_insert_with(String::new);
                if !m.is_empty() {
                    m.push_str(" · ");
                }
                m.push_str(flag);
            }
        }
    }
    meta
}

/// A tool call failed when the event says so or its details carry `status` `error`/`timeout`.
pub fn is_tool_error(is_error: bool, result: &ToolOutput) -> bool {
    is_error
        || result
            .details
            .as_ref()
            .and_then(|d| d.get("status"))
            .and_then(Value::as_str)
            .is_some_and(|s| s == "error" || s == "timeout")
}

/// The result as event JSON: text blocks cut to 8 000 chars, image data replaced by its size.
pub fn sanitize_tool_output(result: &ToolOutput) -> Value {
    let content: Vec<Value> = result
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(t) => {
                let text = match t.text.char_indices().nth(TOOL_RESULT_EVENT_MAX_CHARS) {
                    Some((cut, _)) => format!("{}{TRUNCATED_SUFFIX}", &t.text[..cut]),
                    None => t.text.clone(),
                };
                json!({"type": "text", "text": text})
            }
            ContentBlock::Image(img) => json!({
                "type": "image",
                "mimeType": img.mime_type,
                "bytes": img.data.len(),
                "omitted": true,
            }),
            other => serde_json::to_value(other).unwrap_or(Value::Null),
        })
        .collect();
    let mut out = json!({ "content": content });
    if let Some(details) = &result.details {
        out["details"] = details.clone();
    }
    out
}

/// All text of a result, joined by newlines.
pub fn tool_output_text(result: &ToolOutput) -> String {
    result
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first non-empty line of an error text, at most 400 chars.
pub fn first_error_line(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(line.chars().take(TOOL_ERROR_MAX_CHARS).collect())
}

/// The text of a tool-output reply: the summary line, then the trimmed output as a `txt` code
/// block (markdown) or raw (plain), or `(no output)`.
pub fn format_tool_output(summary: &str, output: &str, markdown: bool) -> String {
    let trimmed = output.trim();
    if trimmed.is_empty() {
        return format!("{summary}\n(no output)");
    }
    if markdown {
        format!("{summary}\n```txt\n{trimmed}\n```")
    } else {
        format!("{summary}\n{trimmed}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_metas() {
        let names = [
            ("Bash", "exec"),
            (" apply-patch ", "apply_patch"),
            ("READ", "read"),
        ];
        for (raw, want) in names {
            assert_eq!(normalize_tool_name(raw), want);
        }
        let cases = [
            ("read", json!({"path": "/a.rs"}), Some("/a.rs")),
            ("read", json!({"file_path": "/b.rs"}), Some("/b.rs")),
            ("read", json!({}), None),
            (
                "bash",
                json!({"command": "ls", "pty": true, "elevated": true}),
                Some("ls · pty · elevated"),
            ),
            ("exec", json!({"elevated": true}), Some("elevated")),
            ("web_fetch", json!({"url": "https://x"}), Some("https://x")),
            ("recall", json!({"query": "  "}), None),
        ];
        for (tool, args, want) in cases {
            assert_eq!(
                tool_call_meta(tool, &args).as_deref(),
                want,
                "{tool} {args}"
            );
        }
    }

    #[test]
    fn errors_from_flag_or_status() {
        let mut out = ToolOutput::text("x");
        assert!(!is_tool_error(false, &out));
        assert!(is_tool_error(true, &out));
        for (status, err) in [("error", true), ("timeout", true), ("ok", false)] {
            out.details = Some(json!({"status": status}));
            assert_eq!(is_tool_error(false, &out), err, "{status}");
        }
    }

    #[test]
    fn sanitising_cuts_text_and_omits_image_data() {
        let out = ToolOutput {
            content: vec![
                ContentBlock::text("é".repeat(8_001)),
                ContentBlock::image("aGVsbG8=", "image/png"),
            ],
            details: Some(json!({"k": 1})),
        };
        let v = sanitize_tool_output(&out);
        let text = v["content"][0]["text"].as_str().unwrap();
        assert!(text.ends_with(TRUNCATED_SUFFIX));
        assert_eq!(
            text.chars().count(),
            8_000 + TRUNCATED_SUFFIX.chars().count()
        );
        assert_eq!(
            v["content"][1],
            json!({"type": "image", "mimeType": "image/png", "bytes": 8, "omitted": true})
        );
        assert_eq!(v["details"], json!({"k": 1}));
        let short = sanitize_tool_output(&ToolOutput::text("ok"));
        assert_eq!(short["content"][0]["text"], "ok");
    }

    #[test]
    fn error_lines_and_output_payloads() {
        assert_eq!(
            first_error_line("\n  boom: bad\nmore").as_deref(),
            Some("boom: bad")
        );
        assert_eq!(first_error_line("  \n "), None);
        assert_eq!(first_error_line(&"x".repeat(500)).unwrap().len(), 400);
        assert_eq!(
            format_tool_output("🛠️ Exec: `ls`", "  a\nb \n", true),
            "🛠️ Exec: `ls`\n```txt\na\nb\n```"
        );
        assert_eq!(format_tool_output("s", "out", false), "s\nout");
        assert_eq!(format_tool_output("s", "  ", true), "s\n(no output)");
        assert_eq!(
            tool_output_text(&ToolOutput {
                content: vec![ContentBlock::text("a"), ContentBlock::text("b")],
                details: None
            }),
            "a\nb"
        );
    }
}
