//! MCP tool results as the model reads them (pi's `convertMcpResult`): text and images, resource
//! links that name `read_mcp_resource`, embedded binary resources saved to temp files, structured
//! content as JSON when there are no blocks, and text over 20 KB cut in the middle with the full
//! text in a temp file.

use std::path::PathBuf;

use base64::Engine;
use filo_agent::ToolOutput;
use filo_ai::ContentBlock;
use serde_json::{Value, json};
use sha2::Digest;

/// Model-facing text of an MCP result beyond this many bytes is cut in the middle.
pub const OUTPUT_MAX_BYTES: usize = 20 * 1024;

/// Provider tool names are at most 64 characters.
const MAX_TOOL_NAME: usize = 64;

/// `mcp__<server>__<tool>`, every character but `[A-Za-z0-9_]` as `_`; too long or `taken`
/// (two tools sanitised to one name) gets an 8-hex hash suffix (pi's `createMcpToolName`).
pub fn tool_name(server: &str, tool: &str, taken: &dyn Fn(&str) -> bool) -> String {
    let name: String = format!("mcp__{server}__{tool}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.len() <= MAX_TOOL_NAME && !taken(&name) {
        return name;
    }
    let digest = sha2::Sha256::digest(format!("{server}\0{tool}").as_bytes());
    let hash: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    // The name is ASCII, so any byte index is a boundary.
    let keep = name.len().min(MAX_TOOL_NAME - hash.len() - 1);
    format!("{}_{hash}", &name[..keep])
}

/// A human size: `512B`, `1.5KB`, `2.0MB` (pi's `formatSize`).
pub fn format_size(bytes: usize) -> String {
    #[allow(clippy::cast_precision_loss)]
    let b = bytes as f64;
    if bytes < 1024 {
        format!("{bytes}B")
    } else if bytes < 1024 * 1024 {
        format!("{:.1}KB", b / 1024.0)
    } else {
        format!("{:.1}MB", b / (1024.0 * 1024.0))
    }
}

/// Saves text or bytes to a temp file that outlives the run (the model reads it later).
pub fn save_temp(data: &[u8], extension: &str) -> std::io::Result<PathBuf> {
    let file = tempfile::Builder::new()
        .prefix("filo-mcp-")
        .suffix(extension)
        .tempfile()?;
    std::fs::write(file.path(), data)?;
    let (_, path) = file.keep().map_err(|e| e.error)?;
    Ok(path)
}

fn is_text_mime(mime: Option<&str>) -> bool {
    let Some(m) = mime else { return false };
    let t = m.split(';').next().unwrap_or("").trim().to_lowercase();
    t.starts_with("text/") || t == "application/json" || t.ends_with("+json") || t.ends_with("+xml")
}

fn extension_of(uri: &str) -> String {
    let path = uri.split(['?', '#']).next().unwrap_or(uri);
    let last = path.rsplit('/').next().unwrap_or(path);
    match last.rfind('.') {
        Some(i)
            if (2..=9).contains(&(last.len() - i))
                && last[i + 1..].chars().all(|c| c.is_ascii_alphanumeric()) =>
        {
            last[i..].to_string()
        }
        _ => ".bin".to_string(),
    }
}

fn text(s: impl Into<String>) -> ContentBlock {
    ContentBlock::text(s)
}

/// The model-facing blocks of one MCP content block.
fn block_content(server: &str, block: &Value, readable: bool) -> Vec<ContentBlock> {
    let s = |k: &str| block.get(k).and_then(Value::as_str);
    match s("type") {
        Some("text") => vec![text(s("text").unwrap_or(""))],
        Some("image") => match (s("data"), s("mimeType")) {
            (Some(d), Some(m)) => vec![ContentBlock::image(d, m)],
            _ => vec![text("[image without data]")],
        },
        Some("audio") => vec![text(format!(
            "[audio {}]",
            s("mimeType").unwrap_or("of unknown type")
        ))],
        Some("resource_link") => {
            let mut details = Vec::new();
            if let Some(m) = s("mimeType") {
                details.push(m.to_string());
            }
            if let Some(n) = block.get("size").and_then(Value::as_u64) {
                details.push(format_size(usize::try_from(n).unwrap_or(usize::MAX)));
            }
            let details = if details.is_empty() {
                String::new()
            } else {
                format!(" ({})", details.join(", "))
            };
            let description = s("description")
                .map(|d| format!(": {d}"))
                .unwrap_or_default();
            let read = if readable {
                format!(". Read it with read_mcp_resource (server \"{server}\")")
            } else {
                String::new()
            };
            vec![text(format!(
                "[Resource {} \"{}\"{details}{description}{read}]",
                s("uri").unwrap_or(""),
                s("title").or(s("name")).unwrap_or("")
            ))]
        }
        Some("resource") => resource_contents(block.get("resource").unwrap_or(&Value::Null)),
        _ => vec![text(block.to_string())],
    }
}

/// The blocks of one `resource` (embedded or read): text as text, images as images, other
/// binaries saved to a temp file whose path the model gets.
pub fn resource_contents(r: &Value) -> Vec<ContentBlock> {
    let s = |k: &str| r.get(k).and_then(Value::as_str);
    let uri = s("uri").unwrap_or("");
    if let Some(t) = s("text") {
        return vec![text(t)];
    }
    let Some(blob) = s("blob") else {
        return vec![text(r.to_string())];
    };
    let mime = s("mimeType");
    if let Some(m) = mime.filter(|m| m.starts_with("image/")) {
        return vec![ContentBlock::image(blob, m)];
    }
    let data = match base64::engine::general_purpose::STANDARD.decode(blob) {
        Ok(d) => d,
        Err(e) => {
            return vec![text(format!(
                "[Binary resource {uri}: invalid base64: {e}]"
            ))];
        }
    };
    if is_text_mime(mime) {
        return vec![text(String::from_utf8_lossy(&data).into_owned())];
    }
    let kind = format!(
        "{}, {}",
        mime.unwrap_or("unknown type"),
        format_size(data.len())
    );
    match save_temp(&data, &extension_of(uri)) {
        Ok(p) => vec![text(format!(
            "[Binary resource {uri} ({kind}) saved to {}]",
            p.display()
        ))],
        Err(e) => vec![text(format!(
            "[Binary resource {uri} ({kind}) could not be saved: {e}]"
        ))],
    }
}

/// Convert a `CallToolResult` (as JSON). Returns the output and whether it is an error result.
pub fn convert(server: &str, tool: &str, result: &Value, readable: bool) -> (ToolOutput, bool) {
    let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut content: Vec<ContentBlock> = if blocks.is_empty() {
        match result.get("structuredContent") {
            Some(v) if !v.is_null() => vec![text(v.to_string())],
            _ => Vec::new(),
        }
    } else {
        blocks
            .iter()
            .flat_map(|b| block_content(server, b, readable))
            .collect()
    };
    if is_error && text_of(&content).is_empty() {
        content.push(text(format!("MCP tool {server}/{tool} returned an error")));
    }
    let (content, full) = limit(content);
    let mut details = json!({"server": server, "tool": tool});
    if let Some(p) = full {
        details["fullOutputPath"] = json!(p.display().to_string());
    }
    if let Some(sc) = result.get("structuredContent").filter(|v| !v.is_null()) {
        details["structuredContent"] = sc.clone();
    }
    (
        ToolOutput {
            content,
            details: Some(details),
        },
        is_error,
    )
}

fn text_of(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Keep model-facing text within [`OUTPUT_MAX_BYTES`] (pi's `limitMcpContent`): longer text
/// becomes one block in Codex's truncation format naming the file with the full text; images
/// follow it.
pub fn limit(content: Vec<ContentBlock>) -> (Vec<ContentBlock>, Option<PathBuf>) {
    let combined = text_of(&content);
    let Some(cut) = truncate_middle(&combined, OUTPUT_MAX_BYTES) else {
        return (content, None);
    };
    let (where_, path) = match save_temp(combined.as_bytes(), ".txt") {
        Ok(p) => (
            format!(
                "\n\n[Full output: {} (read it with offset/limit)]",
                p.display()
            ),
            Some(p),
        ),
        Err(e) => (format!("\n\n[Could not save the full output: {e}]"), None),
    };
    let tokens = combined.len().div_ceil(4);
    let mut out = vec![text(format!(
        "Warning: truncated output (original token count: {tokens})\nTotal output lines: {}\n\n{}{where_}",
        cut.lines, cut.content
    ))];
    out.extend(
        content
            .into_iter()
            .filter(|b| matches!(b, ContentBlock::Image(_))),
    );
    (out, path)
}

/// The head and tail of a cut text.
pub struct Cut {
    pub content: String,
    pub lines: usize,
}

/// Keep the first and last half of `max` bytes of `text` around a `…N chars truncated…` marker,
/// cutting at character boundaries; `None` when it fits.
pub fn truncate_middle(text: &str, max: usize) -> Option<Cut> {
    if text.len() <= max {
        return None;
    }
    let mut head_end = max / 2;
    while head_end > 0 && !text.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let mut tail_start = text.len() - (max - max / 2);
    while tail_start < text.len() && !text.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    let removed = text[head_end..tail_start].chars().count();
    let lines = text.split('\n').count() - usize::from(text.ends_with('\n'));
    Some(Cut {
        content: format!(
            "{}…{removed} chars truncated…{}",
            &text[..head_end],
            &text[tail_start..]
        ),
        lines,
    })
}
