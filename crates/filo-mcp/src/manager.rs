//! The configured servers of one run and the agent tools they give, as a filo extension: tools by
//! exposure and the `--tools` allowlist, `tool_search` for the ones not declared up front, the
//! `mcp_servers` system-prompt section, and the loaded tools restored from the branch.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use filo_agent::AgentTool;
use filo_core::agent_session::SessionHandle;
use filo_core::extension::{BeforeAgentStart, Extension, SessionInfo};
use futures::future::BoxFuture;

use crate::client::{CONNECT_TIMEOUT, Server, Status};
use crate::config::{Exposure, McpConfig, namespace, pattern_matches};
use crate::search::{SearchDoc, TOOL_SEARCH, ToolSearch, loaded_on_branch, schema_text};
use crate::tools::{Loaded, McpTool, ResourceKind, ResourceTool, is_mcp_tool_name, lock};

pub use crate::client::EnvLookup;

/// Which MCP tools `--tools` keeps (pi's rules): without `--tools` all of them by exposure; with
/// an entry starting with `mcp__` (or naming a resource tool) only the ones it names or matches;
/// with other entries only, the `direct` ones are dropped and the others are reachable through
/// `tool_search` when it is listed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolFilter {
    /// The `--tools` entries, when given.
    pub allow: Option<Vec<String>>,
}

impl ToolFilter {
    fn mcp_entries(&self) -> Vec<&str> {
        self.allow
            .iter()
            .flatten()
            .map(String::as_str)
            .filter(|e| is_mcp_tool_name(e) || e.starts_with("mcp__"))
            .collect()
    }

    /// Whether an MCP tool of this exposure survives the allowlist.
    fn keeps(&self, name: &str, exposure: Exposure) -> bool {
        let Some(allow) = &self.allow else {
            return true;
        };
        let entries = self.mcp_entries();
        if entries.is_empty() {
            return exposure.searchable() && allow.iter().any(|e| e == TOOL_SEARCH);
        }
        entries.iter().any(|e| pattern_matches(e, name))
    }

    fn search_allowed(&self) -> bool {
        match &self.allow {
            None => true,
            Some(a) => a.iter().any(|e| e == TOOL_SEARCH) || !self.mcp_entries().is_empty(),
        }
    }
}

/// The servers of a run.
pub struct McpManager {
    config: McpConfig,
    servers: Vec<Arc<Server>>,
    loaded: Loaded,
    tools: Mutex<Vec<Arc<dyn AgentTool>>>,
    session: Mutex<Option<SessionHandle>>,
}

impl McpManager {
    pub fn new(
        config: McpConfig,
        cwd: PathBuf,
        home: Option<PathBuf>,
        env: EnvLookup,
    ) -> McpManager {
        let servers = config
            .servers
            .iter()
            .map(|s| {
                Arc::new(Server::new(
                    s.clone(),
                    cwd.clone(),
                    home.clone(),
                    env.clone(),
                ))
            })
            .collect();
        McpManager {
            config,
            servers,
            loaded: Arc::new(Mutex::new(Default::default())),
            tools: Mutex::new(Vec::new()),
            session: Mutex::new(None),
        }
    }

    pub fn config(&self) -> &McpConfig {
        &self.config
    }

    pub fn servers(&self) -> &[Arc<Server>] {
        &self.servers
    }

    /// Connect every enabled server at once, waiting at most `wait` in all; returns one line per
    /// configuration error, untrusted project file and failed server.
    pub async fn connect_all(&self, wait: Duration) -> Vec<String> {
        let connecting = self
            .servers
            .iter()
            .filter(|s| s.config.enabled)
            .map(|s| async move { (s.clone(), s.connection().await) });
        let results = tokio::time::timeout(wait, futures::future::join_all(connecting)).await;
        let mut lines = self.config.errors.clone();
        for skipped in &self.config.skipped {
            lines.push(format!(
                "{}: {} ({})",
                skipped.path.display(),
                skipped.reason,
                skipped.servers.join(", ")
            ));
        }
        match results {
            Ok(results) => {
                for (server, r) in results {
                    if let Err(e) = r {
                        lines.push(server.describe(&e));
                    }
                }
            }
            Err(_) => {
                for s in self.servers.iter().filter(|s| s.config.enabled) {
                    if s.status() != Status::Connected {
                        lines.push(format!(
                            "MCP server \"{}\" did not connect within {} s; its tools are not available in this run",
                            s.name(),
                            wait.as_secs()
                        ));
                    }
                }
            }
        }
        lines
    }

    /// Build the agent tools from the connected servers (call after [`McpManager::connect_all`]).
    pub async fn build_tools(&self, filter: &ToolFilter) -> Vec<Arc<dyn AgentTool>> {
        let mut tools: Vec<Arc<dyn AgentTool>> = Vec::new();
        let mut search: Vec<(Arc<dyn AgentTool>, SearchDoc)> = Vec::new();
        let mut resource_servers = Vec::new();
        let mut resource_exposure: Option<Exposure> = None;
        for server in &self.servers {
            if server.status() != Status::Connected {
                continue;
            }
            let Ok(conn) = server.connection().await else {
                continue;
            };
            let namespace_text = format!(
                "{} {} {}",
                server.name(),
                server.config.description.as_deref().unwrap_or(""),
                conn.instructions.as_deref().unwrap_or("")
            );
            if conn.has_resources && server.config.exposure != Exposure::Hidden {
                resource_servers.push(server.clone());
                resource_exposure = Some(match (resource_exposure, server.config.exposure) {
                    (Some(Exposure::Direct), _) | (_, Exposure::Direct) => Exposure::Direct,
                    (_, e) => e,
                });
            }
            let mut names: Vec<String> = Vec::new();
            for listing in &conn.tools {
                let Some(tool) = listing.get("name").and_then(|n| n.as_str()) else {
                    continue;
                };
                let exposure = server.config.tool_exposure(tool);
                if exposure == Exposure::Hidden {
                    continue;
                }
                let name = crate::result::tool_name(server.name(), tool, &|n| {
                    names.iter().any(|m| m == n)
                });
                names.push(name.clone());
                if !filter.keeps(&name, exposure) {
                    continue;
                }
                let Some(t) = McpTool::from_listing(
                    server,
                    listing,
                    name,
                    exposure,
                    self.loaded.clone(),
                    conn.has_resources,
                ) else {
                    continue;
                };
                let mut parts = vec![t.description.clone()];
                schema_text(
                    &t.parameters,
                    &t.parameters,
                    &mut parts,
                    &mut Default::default(),
                );
                let doc = SearchDoc {
                    name: t.name.clone(),
                    text: parts.join(" "),
                    namespace: namespace_text.clone(),
                };
                let t: Arc<dyn AgentTool> = Arc::new(t);
                if exposure.searchable() {
                    search.push((t.clone(), doc));
                }
                tools.push(t);
            }
        }
        if let Some(exposure) = resource_exposure {
            for kind in [
                ResourceKind::List,
                ResourceKind::Templates,
                ResourceKind::Read,
            ] {
                let t = ResourceTool {
                    kind,
                    servers: resource_servers.clone(),
                    exposure,
                    loaded: self.loaded.clone(),
                };
                if !filter.keeps(AgentTool::name(&t), exposure) {
                    continue;
                }
                let t: Arc<dyn AgentTool> = Arc::new(t);
                if exposure.searchable() {
                    let doc = SearchDoc {
                        name: t.name().to_string(),
                        text: t.description().to_string(),
                        namespace: String::new(),
                    };
                    search.push((t.clone(), doc));
                }
                tools.push(t);
            }
        }
        if !search.is_empty() && filter.search_allowed() {
            tools.push(Arc::new(ToolSearch {
                candidates: search,
                loaded: self.loaded.clone(),
            }));
        }
        *lock(&self.tools) = tools.clone();
        tools
    }

    /// The names of the tools [`McpManager::build_tools`] made.
    pub fn tool_names(&self) -> Vec<String> {
        lock(&self.tools)
            .iter()
            .map(|t| t.name().to_string())
            .collect()
    }

    /// The tools `tool_search` has loaded.
    pub fn loaded(&self) -> Vec<String> {
        let mut v: Vec<String> = lock(&self.loaded).iter().cloned().collect();
        v.sort();
        v
    }

    /// pi's `mcp_servers` section: enabled servers with tools not declared up front, with how
    /// they are reached and a one-line summary; `None` when there are none.
    pub fn servers_section(&self) -> Option<String> {
        const MAX_DESCRIPTION: usize = 250;
        let mut listed: Vec<&Arc<Server>> = self
            .servers
            .iter()
            .filter(|s| s.config.enabled && s.status() == Status::Connected)
            .filter(|s| {
                s.config.exposure.searchable()
                    || s.config.tool_exposure.iter().any(|(_, e)| e.searchable())
            })
            .collect();
        if listed.is_empty() {
            return None;
        }
        listed.sort_by(|a, b| a.name().cmp(b.name()));
        let mut lines = vec![
            "MCP servers whose tools are not declared to you. Load the tools of `tool_search` servers with `tool_search`."
                .to_string(),
        ];
        for s in listed {
            let instructions = s
                .connection_now()
                .and_then(|c| c.instructions.clone())
                .unwrap_or_default();
            let summary = s
                .config
                .description
                .as_deref()
                .map(str::trim)
                .filter(|d| !d.is_empty())
                .unwrap_or(instructions.trim())
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .to_string();
            let summary: String = if summary.chars().count() > MAX_DESCRIPTION {
                let head: String = summary.chars().take(MAX_DESCRIPTION - 1).collect();
                format!("{}…", head.trim_end())
            } else {
                summary
            };
            let head = format!("- {} (tool_search)", namespace(s.name()));
            lines.push(if summary.is_empty() {
                head
            } else {
                format!("{head}: {summary}")
            });
        }
        Some(lines.join("\n"))
    }

    /// Stop every server.
    pub async fn shutdown(&self) {
        for s in &self.servers {
            s.close().await;
        }
    }
}

impl Extension for McpManager {
    fn name(&self) -> &str {
        "mcp"
    }

    fn attach(&self, session: SessionHandle) {
        *lock(&self.session) = Some(session);
    }

    fn tools(&self, _session: &SessionInfo) -> Vec<Arc<dyn AgentTool>> {
        lock(&self.tools).clone()
    }

    fn before_agent_start(
        &self,
        _prompt: &str,
        system_prompt: &str,
    ) -> BoxFuture<'_, BeforeAgentStart> {
        // The branch decides what `tool_search` loaded (a resume, `/tree` or a fork since).
        let session = lock(&self.session)
            .as_ref()
            .and_then(SessionHandle::upgrade);
        if let Some(session) = session {
            *lock(&self.loaded) = loaded_on_branch(&session.messages());
        }
        let section = self.servers_section();
        let prompt =
            section.map(|s| format!("{system_prompt}\n\n<mcp_servers>\n{s}\n</mcp_servers>"));
        Box::pin(async move {
            BeforeAgentStart {
                system_prompt: prompt,
                messages: Vec::new(),
            }
        })
    }
}

/// How long a run waits for its servers before the first prompt.
pub const STARTUP_WAIT: Duration = CONNECT_TIMEOUT;
