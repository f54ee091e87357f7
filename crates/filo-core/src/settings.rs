//! `settings.json`, global and project, as pi has them (pi spec §3.8).
//!
//! The effective settings are the global file deep-merged with the project file (project wins;
//! nested objects merged one level). Writes go to the global file and merge only the keys this
//! process changed into what is on disk now, so edits made meanwhile by hand or by another process
//! survive. Reading never creates a file.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::CoreError;
use crate::json_file::{read_json_object, write_json_pretty};

/// Effective settings plus what is needed to write changes back.
#[derive(Debug, Clone)]
pub struct Settings {
    global_path: PathBuf,
    project_path: Option<PathBuf>,
    global: Map<String, Value>,
    project: Map<String, Value>,
    merged: Map<String, Value>,
    changed: BTreeSet<String>,
    /// Problems found while loading (unparseable file: it is then never written).
    pub errors: Vec<String>,
    global_unreadable: bool,
}

fn merge(global: &Map<String, Value>, project: &Map<String, Value>) -> Map<String, Value> {
    let mut out = global.clone();
    for (k, v) in project {
        match (out.get_mut(k), v) {
            (Some(Value::Object(g)), Value::Object(p)) => {
                for (pk, pv) in p {
                    g.insert(pk.clone(), pv.clone());
                }
            }
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    out
}

/// pi's legacy key migrations, applied on load.
fn migrate_legacy(m: &mut Map<String, Value>) {
    if let Some(v) = m.remove("queueMode") {
        m.entry("steeringMode").or_insert(v);
    }
    if let Some(Value::Bool(ws)) = m.get("websockets").cloned() {
        m.remove("websockets");
        m.entry("transport")
            .or_insert_with(|| if ws { "websocket" } else { "sse" }.into());
    }
    if let Some(Value::Object(skills)) = m.get("skills").cloned() {
        if let Some(e) = skills.get("enableSkillCommands") {
            m.entry("enableSkillCommands").or_insert(e.clone());
        }
        let dirs = skills
            .get("customDirectories")
            .cloned()
            .unwrap_or(Value::Array(vec![]));
        m.insert("skills".into(), dirs);
    }
}

impl Settings {
    /// Load `<agent_dir>/settings.json` and, when `cwd` is given, `<cwd>/.pi/settings.json`
    /// (filo reads pi's project settings directory so a project configured for pi works as is).
    pub fn load(agent_dir: &Path, cwd: Option<&Path>) -> Settings {
        let global_path = agent_dir.join("settings.json");
        let project_path = cwd.map(|c| c.join(".pi").join("settings.json"));
        let mut errors = Vec::new();
        let mut read = |p: &Path| match read_json_object(p) {
            Ok(Some(mut m)) => {
                migrate_legacy(&mut m);
                (m, false)
            }
            Ok(None) => (Map::new(), false),
            Err(e) => {
                errors.push(e.to_string());
                (Map::new(), true)
            }
        };
        let (global, global_unreadable) = read(&global_path);
        let project = project_path
            .as_deref()
            .map(|p| read(p).0)
            .unwrap_or_default();
        let merged = merge(&global, &project);
        Settings {
            global_path,
            project_path,
            global,
            project,
            merged,
            changed: BTreeSet::new(),
            errors,
            global_unreadable,
        }
    }

    /// Settings that exist only in memory (tests, `--no-session` embedders).
    pub fn in_memory(values: Value) -> Settings {
        let global = values.as_object().cloned().unwrap_or_default();
        Settings {
            global_path: PathBuf::new(),
            project_path: None,
            merged: global.clone(),
            global,
            project: Map::new(),
            changed: BTreeSet::new(),
            errors: Vec::new(),
            global_unreadable: true,
        }
    }

    /// A top-level value.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.merged.get(key)
    }

    /// A nested value such as `compaction.reserveTokens`.
    pub fn get_path(&self, dotted: &str) -> Option<&Value> {
        let mut parts = dotted.split('.');
        let mut cur = self.merged.get(parts.next()?)?;
        for p in parts {
            cur = cur.get(p)?;
        }
        Some(cur)
    }

    pub fn get_str(&self, dotted: &str) -> Option<&str> {
        self.get_path(dotted).and_then(Value::as_str)
    }

    pub fn get_bool(&self, dotted: &str, default: bool) -> bool {
        self.get_path(dotted)
            .and_then(Value::as_bool)
            .unwrap_or(default)
    }

    pub fn get_u64(&self, dotted: &str, default: u64) -> u64 {
        self.get_path(dotted)
            .and_then(Value::as_u64)
            .unwrap_or(default)
    }

    /// Set a top-level key in the global settings (remembered as changed).
    pub fn set(&mut self, key: &str, value: Value) {
        self.global.insert(key.to_string(), value);
        self.changed.insert(key.to_string());
        self.merged = merge(&self.global, &self.project);
    }

    /// Write the keys changed in this process into the global file, merged into its current
    /// content. A file that could not be parsed at load is never written.
    pub fn save(&mut self) -> Result<(), CoreError> {
        if self.changed.is_empty() {
            return Ok(());
        }
        if self.global_unreadable {
            return Err(CoreError::Refused(format!(
                "{}: not writing settings to a file that could not be read",
                self.global_path.display()
            )));
        }
        let mut current = read_json_object(&self.global_path)?.unwrap_or_default();
        for k in &self.changed {
            if let Some(v) = self.global.get(k) {
                current.insert(k.clone(), v.clone());
            }
        }
        if let Some(dir) = self.global_path.parent() {
            fs::create_dir_all(dir).map_err(|e| CoreError::io(dir, e))?;
        }
        write_json_pretty(&self.global_path, &Value::Object(current), None)?;
        self.changed.clear();
        Ok(())
    }

    /// The project settings file path, if any.
    pub fn project_path(&self) -> Option<&Path> {
        self.project_path.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn project_wins_and_nested_objects_merge_one_level() {
        let dir = tempfile::tempdir().unwrap();
        let agent = dir.path().join("agent");
        let cwd = dir.path().join("proj");
        fs::create_dir_all(&agent).unwrap();
        fs::create_dir_all(cwd.join(".pi")).unwrap();
        fs::write(
            agent.join("settings.json"),
            r#"{"theme":"dark","compaction":{"enabled":true,"reserveTokens":1},"queueMode":"all"}"#,
        )
        .unwrap();
        fs::write(
            cwd.join(".pi/settings.json"),
            r#"{"theme":"light","compaction":{"reserveTokens":9}}"#,
        )
        .unwrap();
        let s = Settings::load(&agent, Some(&cwd));
        assert_eq!(s.get_str("theme"), Some("light"));
        assert!(s.get_bool("compaction.enabled", false));
        assert_eq!(s.get_u64("compaction.reserveTokens", 0), 9);
        assert_eq!(s.get_str("steeringMode"), Some("all"));
    }

    #[test]
    fn save_merges_only_changed_keys_into_current_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        fs::write(&path, r#"{"theme":"dark"}"#).unwrap();
        let mut s = Settings::load(dir.path(), None);
        fs::write(&path, r#"{"theme":"dark","hideThinkingBlock":true}"#).unwrap(); // edited meanwhile
        s.set("defaultModel", json!("claude-opus-4-6"));
        s.save().unwrap();
        let v: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(
            v,
            json!({"theme":"dark","hideThinkingBlock":true,"defaultModel":"claude-opus-4-6"})
        );
        assert!(fs::read_to_string(&path).unwrap().contains("\n  \"theme\""));
    }

    #[test]
    fn unreadable_file_is_never_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        fs::write(&path, "{broken").unwrap();
        let mut s = Settings::load(dir.path(), None);
        assert_eq!(s.errors.len(), 1);
        s.set("theme", json!("x"));
        assert!(s.save().is_err());
        assert_eq!(fs::read_to_string(&path).unwrap(), "{broken");
    }
}
