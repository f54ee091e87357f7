//! Small helpers for the JSON config files filo shares with pi.

use std::fs;
use std::io::Write;
use std::path::Path;

use serde_json::{Map, Value};

use crate::CoreError;

/// Read a JSON object file. `Ok(None)` when the file does not exist; an error when it exists but
/// is not a JSON object.
pub fn read_json_object(path: &Path) -> Result<Option<Map<String, Value>>, CoreError> {
    let text = match fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(CoreError::io(path, e)),
    };
    if text.trim().is_empty() {
        return Ok(Some(Map::new()));
    }
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(m)) => Ok(Some(m)),
        Ok(_) => Err(CoreError::NotAnObject {
            path: path.to_path_buf(),
        }),
        Err(source) => Err(CoreError::Json {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Write pretty JSON (2-space indent, like `JSON.stringify(v, null, 2)`) atomically, with the
/// given Unix mode for a new file.
pub fn write_json_pretty(path: &Path, value: &Value, mode: Option<u32>) -> Result<(), CoreError> {
    write_json(path, value, mode, false)
}

/// [`write_json_pretty`] for a file of secrets: mode 0600 whatever the file had before (pi
/// sets it after every write of `auth.json`).
pub fn write_json_private(path: &Path, value: &Value) -> Result<(), CoreError> {
    write_json(path, value, Some(0o600), true)
}

fn write_json(
    path: &Path,
    value: &Value,
    mode: Option<u32>,
    force_mode: bool,
) -> Result<(), CoreError> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let mut text = serde_json::to_string_pretty(value).map_err(|source| CoreError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    text.push('\n');
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| CoreError::io(dir, e))?;
    tmp.write_all(text.as_bytes())
        .map_err(|e| CoreError::io(path, e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let perms = match (fs::metadata(path), mode) {
            (_, Some(m)) if force_mode => Some(fs::Permissions::from_mode(m)),
            (Ok(meta), _) => Some(meta.permissions()),
            (Err(_), Some(m)) => Some(fs::Permissions::from_mode(m)),
            (Err(_), None) => None,
        };
        if let Some(p) = perms {
            fs::set_permissions(tmp.path(), p).map_err(|e| CoreError::io(path, e))?;
        }
    }
    #[cfg(not(unix))]
    let _ = (mode, force_mode);
    tmp.persist(path)
        .map_err(|e| CoreError::io(path, e.error))?;
    Ok(())
}
