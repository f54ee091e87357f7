//! `filo mcp add|remove`: change one entry of an `mcp.json`, keeping everything else in the file
//! and its indentation. A file that does not parse is left alone and reported.

use std::path::Path;

use serde_json::{Map, Value};

/// Why a file could not be changed.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    #[error("Could not update {path}: {reason}")]
    Unreadable { path: String, reason: String },
    #[error("Could not update {path}: expected an object with an \"mcpServers\" object")]
    Shape { path: String },
    #[error("Could not write {path}: {source}")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

fn edit(
    path: &Path,
    change: impl FnOnce(&mut Map<String, Value>) -> bool,
) -> Result<bool, EditError> {
    let shown = path.display().to_string();
    let text = match std::fs::read_to_string(path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            return Err(EditError::Unreadable {
                path: shown,
                reason: e.to_string(),
            });
        }
    };
    let mut root = match &text {
        None => Map::new(),
        Some(t) => match serde_json::from_str::<Value>(t.strip_prefix('\u{feff}').unwrap_or(t)) {
            Ok(Value::Object(m)) => m,
            Ok(_) => return Err(EditError::Shape { path: shown }),
            Err(e) => {
                return Err(EditError::Unreadable {
                    path: shown,
                    reason: format!("invalid JSON: {e}"),
                });
            }
        },
    };
    let servers = root
        .entry("mcpServers")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(servers) = servers else {
        return Err(EditError::Shape { path: shown });
    };
    if !change(servers) {
        return Ok(false);
    }
    let indent = text
        .as_deref()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with([' ', '\t']) && !l.trim().is_empty())
                .map(|l| l[..l.len() - l.trim_start().len()].to_string())
        })
        .unwrap_or_else(|| "  ".to_string());
    let mut out = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
    let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
    serde::Serialize::serialize(&Value::Object(root), &mut ser).map_err(|e| {
        EditError::Unreadable {
            path: shown.clone(),
            reason: e.to_string(),
        }
    })?;
    out.push(b'\n');
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| EditError::Write {
            path: shown.clone(),
            source,
        })?;
    }
    // Written whole to a temp file beside it, then renamed over it: a failed write loses nothing.
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, &out)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|source| EditError::Write {
            path: shown,
            source,
        })?;
    Ok(true)
}

/// Add or replace `name`; returns whether an entry was replaced.
pub fn add_server(path: &Path, name: &str, config: Value) -> Result<bool, EditError> {
    let mut replaced = false;
    edit(path, |servers| {
        replaced = servers.insert(name.to_string(), config).is_some();
        true
    })?;
    Ok(replaced)
}

/// Remove `name`; returns whether the file defined it (a missing file defines nothing).
pub fn remove_server(path: &Path, name: &str) -> Result<bool, EditError> {
    if !path.exists() {
        return Ok(false);
    }
    edit(path, |servers| servers.remove(name).is_some())
}
