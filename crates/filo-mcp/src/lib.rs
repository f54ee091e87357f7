//! MCP for filo: the servers of pi's `mcp.json` as agent tools (stdio and streamable HTTP through
//! the official SDK, rmcp), `tool_search` for tools not declared up front, and the Playfilo
//! memory served to any MCP client (`filo mcp serve`).

pub mod client;
pub mod config;
pub mod edit;
pub mod manager;
pub mod result;
pub mod search;
pub mod serve;
pub mod tools;

pub use client::{McpError, Server, Status};
pub use config::{ConfigPaths, Exposure, McpConfig, ServerConfig};
pub use manager::{McpManager, ToolFilter};
