//! MCP tools as agent tools: one [`McpTool`] per server tool (`mcp__<server>__<tool>`), and the
//! three resource tools Codex and pi use (`list_mcp_resources`, `list_mcp_resource_templates`,
//! `read_mcp_resource`).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use filo_agent::{AgentTool, Concurrency, ToolCallContext, ToolError, ToolOutput};
use filo_ai::ContentBlock;
use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

use crate::client::Server;
use crate::config::Exposure;
use crate::result;

/// The tools `tool_search` loaded on this branch (shared by every deferred tool and the search).
pub type Loaded = Arc<Mutex<HashSet<String>>>;

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

pub const LIST_RESOURCES: &str = "list_mcp_resources";
pub const LIST_TEMPLATES: &str = "list_mcp_resource_templates";
pub const READ_RESOURCE: &str = "read_mcp_resource";

/// Whether a tool name is an MCP tool (a server tool or a resource tool).
pub fn is_mcp_tool_name(name: &str) -> bool {
    name.starts_with("mcp__") || [LIST_RESOURCES, LIST_TEMPLATES, READ_RESOURCE].contains(&name)
}

/// A server tool as the model sees it.
pub struct McpTool {
    pub name: String,
    pub label: String,
    pub description: String,
    pub parameters: Value,
    pub server: Arc<Server>,
    /// The tool's name on its server.
    pub tool: String,
    pub exposure: Exposure,
    pub read_only: bool,
    pub loaded: Loaded,
    /// Whether resource links in results can name `read_mcp_resource`.
    pub readable: bool,
}

impl McpTool {
    /// Build from a `tools/list` entry; `None` for a tool without a name.
    pub fn from_listing(
        server: &Arc<Server>,
        listing: &Value,
        name: String,
        exposure: Exposure,
        loaded: Loaded,
        readable: bool,
    ) -> Option<McpTool> {
        let tool = listing.get("name")?.as_str()?.to_string();
        let title = listing
            .get("title")
            .or_else(|| listing.pointer("/annotations/title"))
            .and_then(Value::as_str);
        let description = listing
            .get("description")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .or(title)
            .map_or_else(
                || format!("MCP tool {tool} from server {}", server.name()),
                str::to_string,
            );
        Some(McpTool {
            name,
            label: format!("{}/{tool}", server.name()),
            description,
            parameters: input_schema(listing.get("inputSchema")),
            server: server.clone(),
            read_only: listing.pointer("/annotations/readOnlyHint") == Some(&Value::Bool(true)),
            tool,
            exposure,
            loaded,
            readable,
        })
    }
}

/// An MCP input schema as an object schema (pi's `normalizeMcpInputSchema`).
fn input_schema(schema: Option<&Value>) -> Value {
    let mut s = match schema {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    s.insert("type".into(), json!("object"));
    if !s.contains_key("properties") {
        s.insert("properties".into(), json!({}));
    }
    Value::Object(s)
}

/// The model-facing failure of a result with `isError`: its text.
fn error_text(out: &ToolOutput) -> String {
    out.content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl AgentTool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }
    fn label(&self) -> &str {
        &self.label
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn parameters(&self) -> Value {
        self.parameters.clone()
    }
    fn concurrency(&self) -> Concurrency {
        if self.read_only {
            Concurrency::Shared
        } else {
            Concurrency::Exclusive
        }
    }
    fn deferred(&self) -> bool {
        self.exposure.searchable()
    }
    fn declared(&self) -> bool {
        !self.exposure.searchable() || lock(&self.loaded).contains(&self.name)
    }
    fn execute(&self, ctx: ToolCallContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            if !self.declared() {
                return Err(ToolError::failed(format!(
                    "Tool {} is not loaded yet: find it with tool_search first",
                    self.name
                )));
            }
            let raw = self
                .server
                .call_tool(&self.tool, ctx.args, &ctx.cancel)
                .await
                .map_err(|e| ToolError::failed(e.to_string()))?;
            let (out, is_error) =
                result::convert(self.server.name(), &self.tool, &raw, self.readable);
            if is_error {
                return Err(ToolError::failed(error_text(&out)));
            }
            Ok(out)
        })
    }
}

/// Which of the three resource tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceKind {
    List,
    Templates,
    Read,
}

/// A resource tool over every server with resources.
pub struct ResourceTool {
    pub kind: ResourceKind,
    pub servers: Vec<Arc<Server>>,
    pub exposure: Exposure,
    pub loaded: Loaded,
}

impl ResourceTool {
    fn find(&self, name: &str) -> Result<&Arc<Server>, ToolError> {
        self.servers
            .iter()
            .find(|s| s.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = self.servers.iter().map(|s| s.name()).collect();
                ToolError::failed(format!(
                    "MCP server \"{name}\" has no resources{}",
                    if names.is_empty() {
                        String::new()
                    } else {
                        format!(". Servers with resources: {}", names.join(", "))
                    }
                ))
            })
    }

    async fn list(
        &self,
        args: &Value,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<Value, ToolError> {
        let (method, key) = match self.kind {
            ResourceKind::Templates => ("resources/templates/list", "resourceTemplates"),
            _ => ("resources/list", "resources"),
        };
        let arg = |k: &str| {
            args.get(k)
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        let tag = |server: &str, item: &Value| {
            let mut m = Map::new();
            m.insert("server".into(), json!(server));
            if let Value::Object(o) = item {
                for (k, v) in o {
                    if k != "_meta" && k != "icons" {
                        m.insert(k.clone(), v.clone());
                    }
                }
            }
            Value::Object(m)
        };
        let visible = |item: &Value| {
            let uri = item
                .get("uri")
                .or_else(|| item.get("uriTemplate"))
                .and_then(Value::as_str)
                .unwrap_or("");
            let mime = item.get("mimeType").and_then(Value::as_str).unwrap_or("");
            !uri.starts_with("ui://") && !mime.replace(' ', "").contains("profile=mcp-app")
        };
        if let Some(name) = arg("server") {
            let server = self.find(&name)?;
            let page = server
                .list_page(method, arg("cursor"), cancel)
                .await
                .map_err(|e| ToolError::failed(e.to_string()))?;
            let items: Vec<Value> = page
                .get(key)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter(|i| visible(i))
                        .map(|i| tag(&name, i))
                        .collect()
                })
                .unwrap_or_default();
            let mut out = json!({"server": name, key: items});
            if let Some(c) = page.get("nextCursor").filter(|c| c.is_string()) {
                out["nextCursor"] = c.clone();
            }
            return Ok(out);
        }
        if arg("cursor").is_some() {
            return Err(ToolError::failed(
                "cursor can only be used when a server is specified",
            ));
        }
        let mut servers: Vec<&Arc<Server>> = self.servers.iter().collect();
        servers.sort_by(|a, b| a.name().cmp(b.name()));
        let results =
            futures::future::join_all(servers.iter().map(|s| s.list_all(method, key, cancel)))
                .await;
        let mut items = Vec::new();
        let mut errors = Vec::new();
        for (server, r) in servers.iter().zip(results) {
            match r {
                Ok(list) => items.extend(
                    list.iter()
                        .filter(|i| visible(i))
                        .map(|i| tag(server.name(), i)),
                ),
                Err(e) => errors.push(json!({"server": server.name(), "error": e.to_string()})),
            }
        }
        let mut out = json!({ key: items });
        if !errors.is_empty() {
            out["errors"] = json!(errors);
        }
        Ok(out)
    }
}

fn json_output(tool: &str, server: Option<&str>, payload: &Value) -> ToolOutput {
    let (content, full) = result::limit(vec![ContentBlock::text(payload.to_string())]);
    let mut details = json!({"server": server.unwrap_or(""), "tool": tool});
    if let Some(p) = full {
        details["fullOutputPath"] = json!(p.display().to_string());
    }
    ToolOutput {
        content,
        details: Some(details),
    }
}

impl AgentTool for ResourceTool {
    fn name(&self) -> &str {
        match self.kind {
            ResourceKind::List => LIST_RESOURCES,
            ResourceKind::Templates => LIST_TEMPLATES,
            ResourceKind::Read => READ_RESOURCE,
        }
    }
    fn label(&self) -> &str {
        self.name()
    }
    fn description(&self) -> &str {
        match self.kind {
            ResourceKind::List => {
                "Lists resources provided by MCP servers. Resources allow servers to share data that provides context to language models, such as files, database schemas, or application-specific information. Prefer resources over web search when possible."
            }
            ResourceKind::Templates => {
                "Lists resource templates provided by MCP servers. Parameterized resource templates allow servers to share data that takes parameters and provides context to language models, such as files, database schemas, or application-specific information. Prefer resource templates over web search when possible."
            }
            ResourceKind::Read => {
                "Read a specific resource from an MCP server given the server name and resource URI."
            }
        }
    }
    fn parameters(&self) -> Value {
        match self.kind {
            ResourceKind::Read => json!({
                "type": "object",
                "properties": {
                    "server": {"type": "string", "description": "MCP server name exactly as configured. Must match the 'server' field returned by list_mcp_resources."},
                    "uri": {"type": "string", "description": "Resource URI to read. Must be one of the URIs returned by list_mcp_resources."}
                },
                "required": ["server", "uri"],
                "additionalProperties": false
            }),
            _ => json!({
                "type": "object",
                "properties": {
                    "server": {"type": "string", "description": "MCP server name. Omit to list every server with resources."},
                    "cursor": {"type": "string", "description": "Opaque cursor from a previous call with the same server; omit for the first page."}
                },
                "additionalProperties": false
            }),
        }
    }
    fn concurrency(&self) -> Concurrency {
        Concurrency::Shared
    }
    fn deferred(&self) -> bool {
        self.exposure.searchable()
    }
    fn declared(&self) -> bool {
        !self.exposure.searchable() || lock(&self.loaded).contains(self.name())
    }
    fn execute(&self, ctx: ToolCallContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            if !self.declared() {
                return Err(ToolError::failed(format!(
                    "Tool {} is not loaded yet: find it with tool_search first",
                    self.name()
                )));
            }
            if self.kind != ResourceKind::Read {
                let payload = self.list(&ctx.args, &ctx.cancel).await?;
                let server = ctx.args.get("server").and_then(Value::as_str);
                return Ok(json_output(self.name(), server, &payload));
            }
            let name = ctx.args.get("server").and_then(Value::as_str).unwrap_or("");
            let uri = ctx.args.get("uri").and_then(Value::as_str).unwrap_or("");
            let server = self.find(name)?;
            let read = server
                .read_resource(uri, &ctx.cancel)
                .await
                .map_err(|e| ToolError::failed(e.to_string()))?;
            let contents: Vec<ContentBlock> = read
                .get("contents")
                .and_then(Value::as_array)
                .map(|a| a.iter().flat_map(result::resource_contents).collect())
                .unwrap_or_default();
            let (content, full) = result::limit(contents);
            let mut details = json!({"server": name, "tool": READ_RESOURCE, "uri": uri});
            if let Some(p) = full {
                details["fullOutputPath"] = json!(p.display().to_string());
            }
            Ok(ToolOutput {
                content,
                details: Some(details),
            })
        })
    }
}
