//! `mcp.json`: pi's `mcpServers` shape, read from the user's file and (in a trusted project) the
//! project's, checked entry by entry.
//!
//! A malformed file is reported with its path and the reason and contributes nothing; a malformed
//! entry is reported with its path, the server's name and the key, and the other entries load.
//! Nothing here rewrites a user's file: [`crate::edit`] does that only for `filo mcp add|remove`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

/// How a server's tools reach the model (pi's `exposure`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Exposure {
    /// Declared to the model like a built-in tool.
    Direct,
    /// Declared once `tool_search` loads it.
    Deferred,
    /// pi: callable from codemode scripts only. filo has no codemode yet, so `tool_search` loads
    /// these as it loads `deferred` ones (pi's rule: either indirect mechanism reaches both).
    Codemode,
    /// Registered but unreachable.
    Hidden,
}

impl Exposure {
    /// The exposure a configuration word names (`codemode-deferred` is pi's older `codemode`).
    pub fn parse(word: &str) -> Option<Exposure> {
        match word {
            "direct" => Some(Exposure::Direct),
            "deferred" => Some(Exposure::Deferred),
            "codemode" | "codemode-deferred" => Some(Exposure::Codemode),
            "hidden" => Some(Exposure::Hidden),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Exposure::Direct => "direct",
            Exposure::Deferred => "deferred",
            Exposure::Codemode => "codemode",
            Exposure::Hidden => "hidden",
        }
    }

    /// Whether `tool_search` can load a tool of this exposure.
    pub fn searchable(self) -> bool {
        matches!(self, Exposure::Deferred | Exposure::Codemode)
    }
}

/// How filo talks to a server.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    /// A child process speaking MCP on its stdin and stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Values as written (`${VAR}` and `!command` are resolved when connecting).
        env: BTreeMap<String, String>,
        cwd: Option<String>,
    },
    /// Streamable HTTP.
    Http {
        url: String,
        /// Values as written (resolved when connecting).
        headers: BTreeMap<String, String>,
    },
}

/// One server entry, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    pub name: String,
    pub transport: Transport,
    pub enabled: bool,
    /// Per-request timeout (pi's `timeout` in seconds, default 60).
    pub timeout: Duration,
    pub exposure: Exposure,
    /// `toolExposure` in file order: exact names and `*` patterns.
    pub tool_exposure: Vec<(String, Exposure)>,
    pub description: Option<String>,
    /// The file that defines it (and the override file, when a project overrides it).
    pub source: PathBuf,
    pub override_source: Option<PathBuf>,
}

/// The default per-request timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

impl ServerConfig {
    /// A tool's exposure: its exact `toolExposure` entry, else the first matching pattern, else the
    /// server's (pi's `getMcpToolExposure`).
    pub fn tool_exposure(&self, tool: &str) -> Exposure {
        if let Some((_, e)) = self.tool_exposure.iter().find(|(k, _)| k == tool) {
            return *e;
        }
        self.tool_exposure
            .iter()
            .find(|(k, _)| k.contains('*') && pattern_matches(k, tool))
            .map_or(self.exposure, |(_, e)| *e)
    }

    /// `stdio` or `http`.
    pub fn kind(&self) -> &'static str {
        match self.transport {
            Transport::Stdio { .. } => "stdio",
            Transport::Http { .. } => "http",
        }
    }
}

/// Whether `name` matches `pattern`, where `*` matches any characters.
pub fn pattern_matches(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == name;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !name.starts_with(first) || name.len() < first.len() + last.len() || !name.ends_with(last) {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    for mid in &parts[1..parts.len() - 1] {
        match rest.find(mid) {
            Some(at) => rest = &rest[at + mid.len()..],
            None => return false,
        }
    }
    true
}

/// A project file that was not read, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    pub path: PathBuf,
    pub servers: Vec<String>,
    pub reason: String,
}

/// Every configured server, with what could not be read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct McpConfig {
    /// In definition order; disabled servers included (`enabled: false`).
    pub servers: Vec<ServerConfig>,
    /// `<path>: <reason>` lines, one per bad file or entry.
    pub errors: Vec<String>,
    /// Project files left unread (`not loaded: project not trusted`).
    pub skipped: Vec<Skipped>,
}

impl McpConfig {
    pub fn get(&self, name: &str) -> Option<&ServerConfig> {
        self.servers.iter().find(|s| s.name == name)
    }
}

/// Where `mcp.json` files are.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigPaths {
    /// The user's file filo reads: `~/.filo/agent/mcp.json`, or pi's `~/.pi/agent/mcp.json` when
    /// filo's own does not exist (read-only).
    pub user: PathBuf,
    /// Where `filo mcp add|remove` writes the user's servers (always filo's own directory).
    pub user_write: PathBuf,
    /// The project's files in reading order: `.pi/mcp.json`, then `.filo/mcp.json`.
    pub project: Vec<PathBuf>,
    /// Where `filo mcp add --local` writes: `.filo/mcp.json`.
    pub project_write: PathBuf,
}

impl ConfigPaths {
    /// The paths for filo's agent directory `own`, pi's `pi` and the project directory `cwd`.
    pub fn new(own: &Path, pi: Option<&Path>, cwd: &Path) -> ConfigPaths {
        let user_write = own.join("mcp.json");
        let user = match pi {
            Some(pi) if !user_write.exists() && pi.join("mcp.json").exists() => pi.join("mcp.json"),
            _ => user_write.clone(),
        };
        ConfigPaths {
            user,
            user_write,
            project: vec![
                cwd.join(".pi").join("mcp.json"),
                cwd.join(".filo").join("mcp.json"),
            ],
            project_write: cwd.join(".filo").join("mcp.json"),
        }
    }
}

/// Why a project's servers were not loaded.
pub const NOT_TRUSTED: &str = "not loaded: project not trusted";

/// Read the user's file and, when `trusted`, the project's files. A project entry replaces a
/// user entry of the same name; one without `command`, `url` or `type` overrides only `enabled`,
/// `exposure` and `toolExposure` of the user's server.
pub fn load(paths: &ConfigPaths, trusted: bool) -> McpConfig {
    let mut config = McpConfig::default();
    read_file(&paths.user, Scope::User, &mut config);
    for path in &paths.project {
        if trusted {
            read_file(path, Scope::Project, &mut config);
        } else if let Ok(Some(obj)) = read_object(path) {
            let servers = obj
                .get("mcpServers")
                .and_then(Value::as_object)
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default();
            config.skipped.push(Skipped {
                path: path.clone(),
                servers,
                reason: NOT_TRUSTED.to_string(),
            });
        }
    }
    config
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    User,
    Project,
}

/// The file's top-level object; `Ok(None)` when there is no file.
fn read_object(path: &Path) -> Result<Option<Map<String, Value>>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: cannot read: {e}", path.display())),
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(Some(m)),
        Ok(_) => Err(format!(
            "{}: expected an object with an \"mcpServers\" object",
            path.display()
        )),
        Err(e) => Err(format!("{}: invalid JSON: {e}", path.display())),
    }
}

const OVERRIDE_KEYS: [&str; 3] = ["enabled", "exposure", "toolExposure"];

fn read_file(path: &Path, scope: Scope, config: &mut McpConfig) {
    let obj = match read_object(path) {
        Ok(Some(obj)) => obj,
        Ok(None) => return,
        Err(e) => return config.errors.push(e),
    };
    let servers = match obj.get("mcpServers") {
        None => return,
        Some(Value::Object(m)) => m,
        Some(_) => {
            return config.errors.push(format!(
                "{}: \"mcpServers\" must be an object",
                path.display()
            ));
        }
    };
    for (name, value) in servers {
        let is_override = value.as_object().is_some_and(|o| {
            !o.contains_key("command") && !o.contains_key("url") && !o.contains_key("type")
        });
        if scope == Scope::Project && is_override {
            override_server(path, name, value, config);
            continue;
        }
        match parse_server(name, value, path) {
            Ok(server) => {
                let clash = config
                    .servers
                    .iter()
                    .find(|s| s.name != *name && namespace(&s.name) == namespace(name))
                    .map(|s| s.name.clone());
                if let Some(other) = clash {
                    config.errors.push(format!(
                        "{}: server \"{name}\" conflicts with \"{other}\"",
                        path.display()
                    ));
                    continue;
                }
                match config.servers.iter_mut().find(|s| s.name == *name) {
                    Some(slot) => *slot = server,
                    None => config.servers.push(server),
                }
            }
            Err(e) => config.errors.push(format!("{}: {e}", path.display())),
        }
    }
}

fn override_server(path: &Path, name: &str, value: &Value, config: &mut McpConfig) {
    let Some(base) = config.servers.iter_mut().find(|s| s.name == name) else {
        return config.errors.push(format!(
            "{}: server \"{name}\" needs \"command\" or \"url\", or a user-level server to override",
            path.display()
        ));
    };
    let obj = value.as_object().cloned().unwrap_or_default();
    if let Some(extra) = obj.keys().find(|k| !OVERRIDE_KEYS.contains(&k.as_str())) {
        return config.errors.push(format!(
            "{}: server \"{name}\": an override can only set enabled, exposure, toolExposure (found \"{extra}\")",
            path.display()
        ));
    }
    let mut patched = base.clone();
    let fields = (|| -> Result<(), String> {
        if let Some(v) = obj.get("enabled") {
            patched.enabled = v.as_bool().ok_or("enabled must be a boolean")?;
        }
        if let Some(v) = obj.get("exposure") {
            patched.exposure = exposure(v, "exposure")?;
        }
        if let Some(v) = obj.get("toolExposure") {
            patched.tool_exposure = tool_exposure(v)?;
        }
        Ok(())
    })();
    match fields {
        Ok(()) => {
            patched.override_source = Some(path.to_path_buf());
            *base = patched;
        }
        Err(e) => config
            .errors
            .push(format!("{}: server \"{name}\": {e}", path.display())),
    }
}

/// A server's namespace: `mcp__<server>` with `-` as `_` (names differing only there clash).
pub fn namespace(server: &str) -> String {
    format!("mcp__{}", server.replace('-', "_"))
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn exposures_list() -> &'static str {
    "\"codemode\", \"deferred\", \"direct\", \"hidden\""
}

fn exposure(v: &Value, key: &str) -> Result<Exposure, String> {
    v.as_str()
        .and_then(Exposure::parse)
        .ok_or_else(|| format!("{key} must be one of {}", exposures_list()))
}

fn tool_exposure(v: &Value) -> Result<Vec<(String, Exposure)>, String> {
    let obj = v
        .as_object()
        .ok_or("toolExposure must map tool names to exposures")?;
    obj.iter()
        .map(|(tool, e)| {
            Ok((
                tool.clone(),
                exposure(e, &format!("toolExposure \"{tool}\""))?,
            ))
        })
        .collect()
}

fn string_map(v: Option<&Value>, what: &str) -> Result<BTreeMap<String, String>, String> {
    let Some(v) = v else {
        return Ok(BTreeMap::new());
    };
    let obj = v
        .as_object()
        .ok_or_else(|| format!("{what} must map names to strings"))?;
    obj.iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k.clone(), s.clone())),
            _ => Err(format!("{what} \"{k}\" must be a string")),
        })
        .collect()
}

/// Check one entry (pi's `validateMcpServerConfig`); the error names the server and the key.
pub fn parse_server(name: &str, value: &Value, source: &Path) -> Result<ServerConfig, String> {
    if !valid_name(name) {
        return Err(format!(
            "invalid server name \"{name}\" (use letters, digits, \"_\" and \"-\")"
        ));
    }
    let obj = value
        .as_object()
        .ok_or_else(|| format!("server \"{name}\" must be an object"))?;
    let fail = |e: String| format!("server \"{name}\": {e}");
    let enabled = match obj.get("enabled") {
        None => true,
        Some(v) => v
            .as_bool()
            .ok_or_else(|| fail("enabled must be a boolean".into()))?,
    };
    let description = match obj.get("description") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(fail("description must be a string".into())),
    };
    let timeout = match obj.get("timeout") {
        None => DEFAULT_TIMEOUT,
        Some(v) => match v.as_f64() {
            Some(secs) if secs > 0.0 && secs.is_finite() => {
                Duration::from_secs_f64(secs.min(86_400.0))
            }
            _ => return Err(fail("timeout must be a positive number of seconds".into())),
        },
    };
    let exposure_v = match obj.get("exposure") {
        None => Exposure::Codemode,
        Some(v) => exposure(v, "exposure").map_err(fail)?,
    };
    let tool_exposure_v = match obj.get("toolExposure") {
        None => Vec::new(),
        Some(v) => tool_exposure(v).map_err(fail)?,
    };
    let ty = obj.get("type").and_then(Value::as_str);
    if obj.get("type").is_some_and(|t| !t.is_string()) {
        return Err(fail(
            "type must be \"stdio\", \"http\" or \"streamable-http\"".into(),
        ));
    }
    if ty == Some("sse") {
        return Err(fail(
            "legacy SSE transport is not supported; use the streamable HTTP URL".into(),
        ));
    }
    if let Some(t) = ty
        && !["stdio", "http", "streamable-http"].contains(&t)
    {
        return Err(fail(format!(
            "type must be \"stdio\", \"http\" or \"streamable-http\" (found \"{t}\")"
        )));
    }
    let url = obj.get("url");
    let command = obj.get("command");
    let transport = if let Some(url) = url.filter(|_| ty != Some("stdio")) {
        let url = url
            .as_str()
            .filter(|u| u.starts_with("http://") || u.starts_with("https://"))
            .ok_or_else(|| fail("url must be an http or https URL".into()))?;
        Transport::Http {
            url: url.to_string(),
            headers: string_map(obj.get("headers"), "headers").map_err(fail)?,
        }
    } else if let Some(command) = command.filter(|_| ty.is_none() || ty == Some("stdio")) {
        let command = command
            .as_str()
            .filter(|c| !c.is_empty())
            .ok_or_else(|| fail("command must be a non-empty string".into()))?;
        let args = match obj.get("args") {
            None => Vec::new(),
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| v.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| fail("args must be an array of strings".into()))?,
            Some(_) => return Err(fail("args must be an array of strings".into())),
        };
        let cwd = match obj.get("cwd") {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(fail("cwd must be a string".into())),
        };
        Transport::Stdio {
            command: command.to_string(),
            args,
            env: string_map(obj.get("env"), "env").map_err(fail)?,
            cwd,
        }
    } else {
        return Err(format!(
            "server \"{name}\" needs either \"command\" (stdio) or \"url\" (streamable HTTP)"
        ));
    };
    Ok(ServerConfig {
        name: name.to_string(),
        transport,
        enabled,
        timeout,
        exposure: exposure_v,
        tool_exposure: tool_exposure_v,
        description,
        source: source.to_path_buf(),
        override_source: None,
    })
}

/// Why a `${VAR}` or `!command` value could not be resolved.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{what}: {reason}")]
pub struct ResolveError {
    pub what: String,
    pub reason: String,
}

/// Resolve a configured value as pi does: `!command` (the whole value) runs through `sh -c` and
/// its trimmed stdout is the value; otherwise `$VAR` and `${VAR}` are replaced from `env` (`$$`
/// is a literal `$`, `$!` a literal `!`). An unset variable is an error naming it.
pub fn resolve_value(
    value: &str,
    what: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, ResolveError> {
    let err = |reason: String| ResolveError {
        what: what.to_string(),
        reason,
    };
    if let Some(cmd) = value.strip_prefix('!') {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| err(format!("cannot run `{cmd}`: {e}")))?;
        if !out.status.success() {
            return Err(err(format!("`{cmd}` failed ({})", out.status)));
        }
        return Ok(String::from_utf8_lossy(&out.stdout).trim().to_string());
    }
    let mut result = String::new();
    let mut missing = Vec::new();
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        result.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(next) = after.strip_prefix('$') {
            result.push('$');
            rest = next;
        } else if let Some(next) = after.strip_prefix('!') {
            result.push('!');
            rest = next;
        } else if let Some(body) = after.strip_prefix('{') {
            match body.find('}') {
                Some(end) if is_var_name(&body[..end]) => {
                    let name = &body[..end];
                    match env(name).filter(|v| !v.is_empty()) {
                        Some(v) => result.push_str(&v),
                        None => missing.push(name.to_string()),
                    }
                    rest = &body[end + 1..];
                }
                Some(end) => {
                    result.push_str(&rest[at..at + 2 + end + 1]);
                    rest = &body[end + 1..];
                }
                None => {
                    result.push('$');
                    rest = after;
                }
            }
        } else {
            let len = after
                .char_indices()
                .take_while(|(i, c)| {
                    c.is_ascii_alphabetic() || *c == '_' || (*i > 0 && c.is_ascii_digit())
                })
                .count();
            if len == 0 {
                result.push('$');
                rest = after;
            } else {
                let name = &after[..len];
                match env(name).filter(|v| !v.is_empty()) {
                    Some(v) => result.push_str(&v),
                    None => missing.push(name.to_string()),
                }
                rest = &after[len..];
            }
        }
    }
    result.push_str(rest);
    match missing.as_slice() {
        [] => Ok(result),
        [one] => Err(err(format!("environment variable {one} is not set"))),
        many => Err(err(format!(
            "environment variables {} are not set",
            many.join(", ")
        ))),
    }
}

fn is_var_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `~` and `~/…` name the home directory.
pub fn expand_home(value: &str, home: Option<&Path>) -> String {
    match home {
        Some(h) if value == "~" => h.display().to_string(),
        Some(h) if value.starts_with("~/") => h.join(&value[2..]).display().to_string(),
        _ => value.to_string(),
    }
}
