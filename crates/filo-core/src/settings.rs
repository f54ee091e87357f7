//! `settings.json`, global and project, as pi has them (pi spec §3.8).
//!
//! The effective settings are the global file deep-merged with the project file (project wins;
//! nested objects merged one level), read into one typed struct, [`SettingsValues`], whose
//! accessors hold every default. A value of the wrong type is reported (file and key) and its
//! default used; the file itself is left as it is.
//!
//! Writes go to the global file and merge only the keys (or nested keys) this process changed
//! into what is on disk now, so unknown keys and edits made meanwhile by hand or by another
//! process survive. A failed write is returned as an error. Reading never creates a file, and a
//! file that could not be parsed is never written.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use filo_agent::QueueMode;
use filo_ai::ThinkingLevel;

use serde_json::{Map, Value};

use crate::CoreError;
use crate::agent_dirs::{AgentDirs, AgentItem};
use crate::json_file::{read_json_object, write_json_pretty};

#[path = "settings_values.rs"]
mod values;
pub use values::*;

/// Effective settings plus what is needed to write changes back.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Where the global settings are written: always filo's own agent directory.
    global_path: PathBuf,
    /// Where they were read from: `global_path`, or pi's file when filo has none yet.
    global_source: PathBuf,
    project_path: Option<PathBuf>,
    global: Map<String, Value>,
    project: Map<String, Value>,
    merged: Map<String, Value>,
    values: SettingsValues,
    /// Keys set in this process: `(key, None)` for a whole value, `(section, Some(key))` for one
    /// key of a nested object.
    changed: BTreeSet<(String, Option<String>)>,
    /// Problems found while loading (a file that could not be parsed is then never written; a
    /// value of the wrong type is ignored in favour of its default).
    pub errors: Vec<String>,
    global_unreadable: bool,
    /// False for [`Settings::in_memory`]: changes are kept, nothing is written.
    persist: bool,
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
    // pi 0.73: `retry.maxDelayMs` became `retry.provider.maxRetryDelayMs`.
    if let Some(Value::Object(retry)) = m.get_mut("retry")
        && let Some(delay) = retry.remove("maxDelayMs")
    {
        let provider = retry
            .entry("provider")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(p) = provider {
            p.entry("maxRetryDelayMs").or_insert(delay);
        }
    }
}

fn typed(m: &Map<String, Value>) -> Result<SettingsValues, serde_json::Error> {
    serde_json::from_value(Value::Object(m.clone()))
}

/// The typed settings of `merged`, leaving out (and reporting) each value of the wrong type.
fn read_values(
    merged: &Map<String, Value>,
    file_of: &dyn Fn(&str, Option<&str>) -> PathBuf,
    errors: &mut Vec<String>,
) -> SettingsValues {
    let mut clean = Map::new();
    for (k, v) in merged {
        let one = |v: Value| Map::from_iter([(k.clone(), v)]);
        match typed(&one(v.clone())) {
            Ok(_) => {
                clean.insert(k.clone(), v.clone());
            }
            Err(e) => match v {
                Value::Object(section) => {
                    let mut kept = Map::new();
                    for (sk, sv) in section {
                        let probe = Map::from_iter([(sk.clone(), sv.clone())]);
                        match typed(&one(Value::Object(probe))) {
                            Ok(_) => {
                                kept.insert(sk.clone(), sv.clone());
                            }
                            Err(e) => errors.push(format!(
                                "{}: \"{k}.{sk}\": {e}; using the default",
                                file_of(k, Some(sk)).display()
                            )),
                        }
                    }
                    clean.insert(k.clone(), Value::Object(kept));
                }
                _ => errors.push(format!(
                    "{}: \"{k}\": {e}; using the default",
                    file_of(k, None).display()
                )),
            },
        }
    }
    // Every key on its own was accepted, so the whole is too; an error here would be a bug in
    // the probe above, and the defaults are the safe answer.
    typed(&clean).unwrap_or_default()
}

impl Settings {
    /// Load `<agent_dir>/settings.json` and, when `cwd` is given, `<cwd>/.pi/settings.json`
    /// (filo reads pi's project settings directory so a project configured for pi works as is).
    pub fn load(agent_dir: &Path, cwd: Option<&Path>) -> Settings {
        Settings::load_in(&AgentDirs::own_only(agent_dir.to_path_buf()), cwd)
    }

    /// [`Settings::load`] with the global file read where `dirs` says (pi's when filo has
    /// none). Changes are always written to filo's own directory; the first save there starts
    /// from the content of the file the settings were read from.
    pub fn load_in(dirs: &AgentDirs, cwd: Option<&Path>) -> Settings {
        let global_path = dirs.write_path(AgentItem::Settings);
        let global_source = dirs.read_path(AgentItem::Settings);
        // An untrusted project's settings are not read (project trust, `crate::trust`).
        let project_path = cwd
            .filter(|_| dirs.project_trusted())
            .map(|c| c.join(".pi").join("settings.json"));
        let mut errors = Vec::new();
        let mut read = |p: &Path| match read_json_object(p) {
            Ok(Some(mut m)) => {
                migrate_legacy(&mut m);
                (m, false)
            }
            Ok(None) => (Map::new(), false),
            Err(e) => {
                errors.push(crate::error_chain(&e));
                (Map::new(), true)
            }
        };
        let (global, global_unreadable) = read(&global_source);
        let project = project_path
            .as_deref()
            .map(|p| read(p).0)
            .unwrap_or_default();
        let mut s = Settings {
            global_path,
            global_source,
            project_path,
            global,
            project,
            merged: Map::new(),
            values: SettingsValues::default(),
            changed: BTreeSet::new(),
            errors,
            global_unreadable,
            persist: true,
        };
        let mut errors = std::mem::take(&mut s.errors);
        s.refresh(&mut errors);
        s.errors = errors;
        s
    }

    /// Settings that exist only in memory (tests, `--no-session` embedders).
    pub fn in_memory(values: Value) -> Settings {
        let mut global = values.as_object().cloned().unwrap_or_default();
        migrate_legacy(&mut global);
        let mut s = Settings {
            global_path: PathBuf::new(),
            global_source: PathBuf::new(),
            project_path: None,
            global,
            project: Map::new(),
            merged: Map::new(),
            values: SettingsValues::default(),
            changed: BTreeSet::new(),
            errors: Vec::new(),
            global_unreadable: false,
            persist: false,
        };
        let mut errors = Vec::new();
        s.refresh(&mut errors);
        s.errors = errors;
        s
    }

    fn refresh(&mut self, errors: &mut Vec<String>) {
        self.merged = merge(&self.global, &self.project);
        let project_has = |k: &str, sk: Option<&str>| match (self.project.get(k), sk) {
            (Some(_), None) => true,
            (Some(Value::Object(o)), Some(sk)) => o.contains_key(sk),
            _ => false,
        };
        let file_of = |k: &str, sk: Option<&str>| match &self.project_path {
            Some(p) if project_has(k, sk) => p.clone(),
            _ => self.global_source.clone(),
        };
        self.values = read_values(&self.merged, &file_of, errors);
    }

    /// The effective settings, typed, with their defaults.
    pub fn values(&self) -> &SettingsValues {
        &self.values
    }

    /// A top-level value as merged (for keys filo has no typed field for).
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.merged.get(key)
    }

    /// Set a top-level key in the global settings (remembered as changed).
    pub fn set(&mut self, key: &str, value: Value) {
        self.global.insert(key.to_string(), value);
        self.changed.insert((key.to_string(), None));
        self.refresh(&mut Vec::new());
    }

    /// Set one key of a nested object (e.g. `retry.enabled`) in the global settings; the rest of
    /// the object, in either file, is untouched.
    pub fn set_nested(&mut self, section: &str, key: &str, value: Value) {
        let entry = self
            .global
            .entry(section.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        if let Value::Object(o) = entry {
            o.insert(key.to_string(), value);
        }
        self.changed
            .insert((section.to_string(), Some(key.to_string())));
        self.refresh(&mut Vec::new());
    }

    /// `defaultProvider` and `defaultModel` (pi writes both on every model change).
    pub fn set_default_model(&mut self, provider: &str, id: &str) {
        self.set("defaultProvider", provider.into());
        self.set("defaultModel", id.into());
    }

    pub fn set_default_thinking_level(&mut self, level: ThinkingLevel) {
        self.set("defaultThinkingLevel", level.as_str().into());
    }

    pub fn set_steering_mode(&mut self, mode: QueueMode) {
        self.set_queue_mode("steeringMode", mode);
    }

    pub fn set_follow_up_mode(&mut self, mode: QueueMode) {
        self.set_queue_mode("followUpMode", mode);
    }

    fn set_queue_mode(&mut self, key: &str, mode: QueueMode) {
        let v = serde_json::to_value(QueueModeSetting::from(mode)).unwrap_or(Value::Null);
        self.set(key, v);
    }

    pub fn set_compaction_enabled(&mut self, enabled: bool) {
        self.set_nested("compaction", "enabled", enabled.into());
    }

    pub fn set_retry_enabled(&mut self, enabled: bool) {
        self.set_nested("retry", "enabled", enabled.into());
    }

    /// Write the keys changed in this process into the global file, merged into its current
    /// content (every other key, known or not, stays as it is). A file that could not be parsed
    /// at load is never written. When the settings were read from pi's directory, filo's own
    /// file is created from that content plus the changes; pi's file is never written.
    pub fn save(&mut self) -> Result<(), CoreError> {
        if self.changed.is_empty() || !self.persist {
            self.changed.clear();
            return Ok(());
        }
        if self.global_unreadable {
            return Err(CoreError::UnreadableNotWritten {
                path: self.global_source.clone(),
                what: "settings",
            });
        }
        let mut current = match read_json_object(&self.global_path)? {
            Some(m) => m,
            None if self.global_source != self.global_path => {
                read_json_object(&self.global_source)?.unwrap_or_default()
            }
            None => Map::new(),
        };
        for (k, sub) in &self.changed {
            let Some(v) = self.global.get(k) else {
                continue;
            };
            match (sub, v) {
                (Some(sk), Value::Object(section)) => {
                    let Some(sv) = section.get(sk) else { continue };
                    let slot = current
                        .entry(k.clone())
                        .or_insert_with(|| Value::Object(Map::new()));
                    if !slot.is_object() {
                        *slot = Value::Object(Map::new());
                    }
                    if let Value::Object(o) = slot {
                        o.insert(sk.clone(), sv.clone());
                    }
                }
                _ => {
                    current.insert(k.clone(), v.clone());
                }
            }
        }
        if let Some(dir) = self.global_path.parent() {
            fs::create_dir_all(dir).map_err(|e| CoreError::io(dir, e))?;
        }
        write_json_pretty(&self.global_path, &Value::Object(current), None)?;
        self.changed.clear();
        Ok(())
    }

    /// A top-level value of the agent directory's file only (settings a project may not change,
    /// such as `sandbox`).
    pub fn global_value(&self, key: &str) -> Option<&Value> {
        self.global.get(key)
    }

    /// `defaultProjectTrust`, read from the agent directory's file only (a project cannot
    /// trust itself); a value that is not `ask`, `always` or `never` is reported and `ask` used.
    pub fn default_project_trust(&self) -> (crate::trust::DefaultProjectTrust, Option<String>) {
        match self.global.get("defaultProjectTrust") {
            None => (crate::trust::DefaultProjectTrust::Ask, None),
            Some(v) => match serde_json::from_value(v.clone()) {
                Ok(d) => (d, None),
                Err(_) => (
                    crate::trust::DefaultProjectTrust::Ask,
                    Some(format!(
                        "{}: \"defaultProjectTrust\" must be \"ask\", \"always\" or \"never\"; using \"ask\"",
                        self.global_source.display()
                    )),
                ),
            },
        }
    }

    /// The global settings file path (where changes are written).
    pub fn global_path(&self) -> &Path {
        &self.global_path
    }

    /// The file the global settings were read from: [`Settings::global_path`], or pi's.
    pub fn global_source(&self) -> &Path {
        &self.global_source
    }

    /// The project settings file path, if any.
    pub fn project_path(&self) -> Option<&Path> {
        self.project_path.as_deref()
    }

    /// A list of strings as each file has it: `(global, project)`, empty when unset (pi reads
    /// `skills` / `prompts` / `themes` per scope, each against its own base directory).
    pub fn scoped_strings(&self, key: &str) -> (Vec<String>, Vec<String>) {
        let list = |m: &Map<String, Value>| -> Vec<String> {
            m.get(key)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        };
        (list(&self.global), list(&self.project))
    }
}

#[cfg(test)]
#[path = "settings_tests.rs"]
mod tests;
