//! Finding the MCP servers installed from npm for the tests, and starting them.
//!
//! `.ci/run` installs `@modelcontextprotocol/server-everything` and `@modelcontextprotocol/sdk`
//! into `$FILO_MCP_TEST_MODULES` (default `~/.cache/filo-mcp-test/node_modules`). A test that
//! needs them skips when they or `node` are missing, except under `CI`, where it fails.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use filo_mcp::config::{ConfigPaths, McpConfig};

pub fn modules() -> Option<PathBuf> {
    let dir = std::env::var_os("FILO_MCP_TEST_MODULES")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|h| PathBuf::from(h).join(".cache/filo-mcp-test/node_modules"))
        })?;
    let ok = dir
        .join("@modelcontextprotocol/server-everything/dist/index.js")
        .exists()
        && dir.join("@modelcontextprotocol/sdk/package.json").exists()
        && std::process::Command::new("node")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
    if ok {
        Some(dir)
    } else if std::env::var_os("CI").is_some() {
        panic!(
            "the MCP test servers are not installed in {} (see .ci/run)",
            dir.display()
        );
    } else {
        eprintln!(
            "skipped: MCP test servers not installed in {}",
            dir.display()
        );
        None
    }
}

pub fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .display()
        .to_string()
}

pub fn env_lookup() -> filo_mcp::manager::EnvLookup {
    Arc::new(|k: &str| std::env::var(k).ok())
}

/// A config from one `mcp.json` text written in a temp dir.
pub fn config_from(dir: &Path, text: &str) -> McpConfig {
    let own = dir.join("agent");
    std::fs::create_dir_all(&own).unwrap();
    std::fs::write(own.join("mcp.json"), text).unwrap();
    filo_mcp::config::load(&ConfigPaths::new(&own, None, &dir.join("project")), false)
}

/// The everything server over stdio, as an `mcp.json` entry.
pub fn everything_stdio(modules: &Path, extra: &str) -> String {
    format!(
        r#"{{"command": "node", "args": ["{}", "stdio"]{extra}}}"#,
        modules
            .join("@modelcontextprotocol/server-everything/dist/index.js")
            .display()
    )
}

pub fn unruly(modules: &Path, extra: &str) -> String {
    format!(
        r#"{{"command": "node", "args": ["{}", "{}"]{extra}}}"#,
        fixture("unruly.mjs"),
        modules.display()
    )
}

/// The everything server over streamable HTTP on 127.0.0.1; killed when dropped.
pub struct HttpServer {
    child: std::process::Child,
    pub url: String,
}

impl HttpServer {
    pub fn start(modules: &Path, token: Option<&str>) -> HttpServer {
        use std::io::BufRead;
        let mut cmd = std::process::Command::new("node");
        cmd.arg(fixture("everything-http.mjs")).arg(modules);
        if let Some(t) = token {
            cmd.arg(t);
        }
        let mut child = cmd
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().strip_prefix("PORT ").unwrap().to_string();
        HttpServer {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
