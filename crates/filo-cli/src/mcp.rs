//! `filo mcp add|list|get|remove|serve` (pi's `pi mcp` commands, plus `get` and `serve`), and
//! the MCP servers of an agent run.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, Subcommand};
use filo_ai::Env;
use filo_mcp::config::{self, ConfigPaths};
use filo_mcp::{McpManager, Status, ToolFilter};
use serde_json::{Map, Value, json};

use crate::agent::AgentArgs;

#[derive(Debug, Args)]
pub struct McpArgs {
    #[command(subcommand)]
    command: McpCommand,
}

#[derive(Debug, Subcommand)]
enum McpCommand {
    /// Add or replace a server: `add <name> [options] -- <command> [args...]` (stdio) or
    /// `add <name> --url <url> [options]` (streamable HTTP).
    Add(AddArgs),
    /// Connect to every enabled server and print its state, tools and errors (exit 1 when an
    /// entry is invalid or an enabled server is not connected).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Print one server's entry, where it comes from and its state.
    Get {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Serve the Playfilo memory (`life`, `recall`, `trace`, read-only) to MCP clients over stdio,
    /// or streamable HTTP with a bearer token (`--http 127.0.0.1:8765`).
    Serve(ServeArgs),
    /// Remove a server from mcp.json.
    Remove {
        name: String,
        /// The project's `.filo/mcp.json` instead of the user's.
        #[arg(short = 'l', long)]
        local: bool,
    },
}

#[derive(Debug, Args)]
struct AddArgs {
    name: String,
    /// Write the project's `.filo/mcp.json` instead of the user's.
    #[arg(short = 'l', long)]
    local: bool,
    /// A streamable HTTP server at this URL.
    #[arg(long)]
    url: Option<String>,
    /// `KEY=VALUE` for the server's environment (stdio; repeatable).
    #[arg(long = "env")]
    env: Vec<String>,
    /// The server's working directory (stdio).
    #[arg(long)]
    cwd: Option<String>,
    /// `KEY=VALUE` HTTP header (repeatable).
    #[arg(long = "header")]
    header: Vec<String>,
    /// Send `Authorization: Bearer ${NAME}`.
    #[arg(long)]
    bearer_token_env_var: Option<String>,
    /// `direct`, `deferred`, `codemode` or `hidden`.
    #[arg(long)]
    exposure: Option<String>,
    /// What the server offers, in a sentence.
    #[arg(long)]
    description: Option<String>,
    /// The command and its arguments (after `--`).
    #[arg(last = true)]
    command: Vec<String>,
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// The memory database: an SQLite file or a PostgreSQL URL (default: `PLAYFILO_DB`, else the
    /// one filo's sessions write, `~/.playfilo/playfilo.db`).
    #[arg(long, env = "PLAYFILO_DB", value_name = "PATH|URL")]
    db: Option<PathBuf>,
    /// The ref that is HEAD.
    #[arg(long = "ref", default_value = "PI_HEAD", value_name = "NAME")]
    ref_name: String,
    /// Serve streamable HTTP at `http://ADDR/mcp` instead of stdio (`127.0.0.1:0` picks a port).
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
    /// The bearer token HTTP clients must send (default: `FILO_MCP_TOKEN`, else a new random
    /// one, printed on stderr).
    #[arg(long, env = "FILO_MCP_TOKEN", hide_env_values = true)]
    token: Option<String>,
}

struct Ctx {
    paths: ConfigPaths,
    home: PathBuf,
    cwd: PathBuf,
    env: Env,
    /// The folder's saved trust decision (filo's `trust.json`, else pi's); `filo mcp …` has no
    /// `--approve` and no prompt, so an undecided project with protected files is not trusted.
    project_trusted: bool,
}

fn context(env: &Env) -> anyhow::Result<Ctx> {
    let home = env
        .get("HOME")
        .map(PathBuf::from)
        .context("HOME is not set")?;
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let own = filo_session::paths::agent_dir(env.get("FILO_AGENT_DIR"), &home);
    let pi = filo_session::paths::pi_agent_dir(env.get("PI_CODING_AGENT_DIR"), &home);
    let store = filo_core::trust::TrustStore::new(&own, Some(&pi));
    let project_trusted = match store.get(&cwd) {
        Ok(Some(saved)) => saved.trusted,
        Ok(None) | Err(_) => filo_core::trust::protected_resources(&cwd, &home).is_empty(),
    };
    Ok(Ctx {
        paths: ConfigPaths::new(&own, Some(&pi), &cwd),
        home,
        cwd,
        env: env.clone(),
        project_trusted,
    })
}

/// Run `filo mcp …`.
pub fn run(args: McpArgs, env: &Env) -> anyhow::Result<ExitCode> {
    let ctx = context(env)?;
    let mut out = std::io::stdout().lock();
    match args.command {
        // `serve` writes stdout through tokio, which would wait for this lock forever.
        McpCommand::Serve(a) => {
            drop(out);
            serve(a, &ctx)
        }
        McpCommand::Add(a) => add(a, &ctx, &mut out),
        McpCommand::Remove { name, local } => {
            let path = if local {
                &ctx.paths.project_write
            } else {
                &ctx.paths.user_write
            };
            let scope = if local { "project" } else { "user" };
            if filo_mcp::edit::remove_server(path, &name)? {
                writeln!(
                    out,
                    "Removed {scope} MCP server \"{name}\" from {}.",
                    path.display()
                )?;
                Ok(ExitCode::SUCCESS)
            } else {
                anyhow::bail!(
                    "No {scope} MCP server named \"{name}\" in {}.",
                    path.display()
                )
            }
        }
        McpCommand::List { json } => runtime()?.block_on(list(&ctx, None, json, &mut out)),
        McpCommand::Get { name, json } => {
            runtime()?.block_on(list(&ctx, Some(&name), json, &mut out))
        }
    }
}

fn serve(a: ServeArgs, ctx: &Ctx) -> anyhow::Result<ExitCode> {
    let (config, warnings) =
        filo_core::builder::memory_config(&ctx.home, &ctx.cwd, a.db.as_deref(), None, &ctx.env);
    let mut err = std::io::stderr().lock();
    for w in warnings {
        writeln!(err, "Warning: {w}")?;
    }
    let location = config.db_path.to_string_lossy().into_owned();
    let server = filo_mcp::serve::MemoryServer {
        location,
        ref_name: a.ref_name,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let Some(addr) = a.http else {
        drop(err);
        rt.block_on(filo_mcp::serve::serve_stdio(server))?;
        return Ok(ExitCode::SUCCESS);
    };
    let token = a.token.filter(|t| !t.is_empty()).unwrap_or_else(|| {
        let t = format!(
            "{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        let _ = writeln!(err, "filo mcp serve: bearer token {t}");
        t
    });
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&addr)
            .await
            .with_context(|| format!("cannot listen on {addr}"))?;
        let local = listener.local_addr()?;
        writeln!(err, "filo mcp serve: listening on http://{local}/mcp")?;
        drop(err);
        let stop = tokio_util::sync::CancellationToken::new();
        let on_signal = stop.clone();
        tokio::spawn(async move {
            let _ = tokio::signal::ctrl_c().await;
            on_signal.cancel();
        });
        filo_mcp::serve::serve_http(server, listener, token, stop).await?;
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

fn pairs(option: &str, list: &[String]) -> anyhow::Result<Map<String, Value>> {
    let mut m = Map::new();
    for p in list {
        match p.split_once('=') {
            Some((k, v)) if !k.is_empty() => {
                m.insert(k.to_string(), json!(v));
            }
            _ => anyhow::bail!("--{option} expects KEY=VALUE, got \"{p}\"."),
        }
    }
    Ok(m)
}

fn add(a: AddArgs, ctx: &Ctx, out: &mut impl Write) -> anyhow::Result<ExitCode> {
    let mut entry = Map::new();
    match (&a.url, a.command.split_first()) {
        (Some(url), None) => {
            if !a.env.is_empty() || a.cwd.is_some() {
                anyhow::bail!("--env and --cwd only apply to stdio servers.");
            }
            let mut headers = pairs("header", &a.header)?;
            if let Some(var) = &a.bearer_token_env_var {
                headers.insert("Authorization".into(), json!(format!("Bearer ${{{var}}}")));
            }
            entry.insert("url".into(), json!(url));
            if !headers.is_empty() {
                entry.insert("headers".into(), Value::Object(headers));
            }
        }
        (None, Some((command, rest))) => {
            if !a.header.is_empty() || a.bearer_token_env_var.is_some() {
                anyhow::bail!(
                    "--header and --bearer-token-env-var only apply to HTTP servers (--url)."
                );
            }
            entry.insert("command".into(), json!(command));
            if !rest.is_empty() {
                entry.insert("args".into(), json!(rest));
            }
            let env = pairs("env", &a.env)?;
            if !env.is_empty() {
                entry.insert("env".into(), Value::Object(env));
            }
            if let Some(cwd) = &a.cwd {
                entry.insert("cwd".into(), json!(cwd));
            }
        }
        _ => anyhow::bail!(
            "Usage: filo mcp add <server> [options] (--url <url> | -- <command> [args...])"
        ),
    }
    if let Some(e) = &a.exposure {
        entry.insert("exposure".into(), json!(e));
    }
    if let Some(d) = &a.description {
        entry.insert("description".into(), json!(d));
    }
    let value = Value::Object(entry);
    let (path, scope) = if a.local {
        (&ctx.paths.project_write, "project")
    } else {
        (&ctx.paths.user_write, "user")
    };
    config::parse_server(&a.name, &value, path).map_err(|e| anyhow::anyhow!(e))?;
    let replaced = filo_mcp::edit::add_server(path, &a.name, value)?;
    writeln!(
        out,
        "{} {scope} MCP server \"{}\" in {}.",
        if replaced { "Replaced" } else { "Added" },
        a.name,
        path.display()
    )?;
    if a.local && !ctx.project_trusted {
        writeln!(
            out,
            "The project is not trusted, so {} is not loaded until it is.",
            path.display()
        )?;
    }
    writeln!(out, "Check it with: filo mcp list")?;
    Ok(ExitCode::SUCCESS)
}

fn manager(ctx: &Ctx, project_trusted: bool) -> McpManager {
    let config = config::load(&ctx.paths, project_trusted);
    let env = ctx.env.clone();
    McpManager::new(
        config,
        ctx.cwd.clone(),
        Some(ctx.home.clone()),
        Arc::new(move |k: &str| env.get(k).map(str::to_string)),
    )
}

async fn list(
    ctx: &Ctx,
    only: Option<&str>,
    as_json: bool,
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    let m = manager(ctx, ctx.project_trusted);
    let config = m.config().clone();
    if let Some(name) = only
        && config.get(name).is_none()
    {
        let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
        anyhow::bail!(
            "No MCP server named \"{name}\". Configured: {}.",
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        );
    }
    let chosen: Vec<_> = m
        .servers()
        .iter()
        .filter(|s| only.is_none_or(|n| s.name() == n))
        .cloned()
        .collect();
    futures::future::join_all(
        chosen
            .iter()
            .filter(|s| s.config.enabled)
            .map(|s| s.connection()),
    )
    .await;
    let mut reports = Vec::new();
    let mut failed = !config.errors.is_empty();
    for s in &chosen {
        let c = &s.config;
        let state = match s.status() {
            Status::Connected => "connected".to_string(),
            Status::Disabled => "disabled".to_string(),
            Status::NotConnected => "not connected".to_string(),
            Status::Failed(_) => "failed".to_string(),
        };
        if c.enabled && s.status() != Status::Connected {
            failed = true;
        }
        let conn = s.connection_now();
        let tools: Vec<String> = conn
            .as_ref()
            .map(|c| {
                c.tools
                    .iter()
                    .filter_map(|t| t["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let overrides: Map<String, Value> = tools
            .iter()
            .filter(|t| c.tool_exposure(t) != c.exposure)
            .map(|t| (t.clone(), json!(c.tool_exposure(t).as_str())))
            .collect();
        let transport = match &c.transport {
            config::Transport::Stdio { command, args, .. } => {
                format!(
                    "stdio: {}",
                    std::iter::once(command)
                        .chain(args)
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(" ")
                )
            }
            config::Transport::Http { url, .. } => format!("http: {url}"),
        };
        let mut r = json!({
            "name": c.name, "source": c.source.display().to_string(), "enabled": c.enabled,
            "exposure": c.exposure.as_str(), "transport": transport, "state": state, "tools": tools,
        });
        if let Some(o) = &c.override_source {
            r["override"] = json!(o.display().to_string());
        }
        if !overrides.is_empty() {
            r["toolExposure"] = Value::Object(overrides);
        }
        if conn.as_ref().is_some_and(|c| c.has_resources) {
            r["resources"] = json!(true);
        }
        if let Some(d) = &c.description {
            r["description"] = json!(d);
        }
        if let Status::Failed(e) = s.status() {
            r["error"] = json!(e);
        }
        reports.push(r);
    }
    m.shutdown().await;
    let skipped: Vec<String> = config
        .skipped
        .iter()
        .map(|s| {
            format!(
                "{}: {} ({})",
                s.path.display(),
                s.reason,
                s.servers.join(", ")
            )
        })
        .collect();
    if as_json {
        let v = json!({"servers": reports, "errors": config.errors, "notLoaded": skipped});
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
    } else {
        if reports.is_empty() && config.errors.is_empty() && only.is_none() {
            writeln!(
                out,
                "No MCP servers configured. Add them to {} or .filo/mcp.json (filo mcp add).",
                ctx.paths.user_write.display()
            )?;
        }
        for r in &reports {
            let n = r["tools"].as_array().map_or(0, Vec::len);
            let state = match r["state"].as_str() {
                Some("connected") => {
                    format!("connected, {n} tool{}", if n == 1 { "" } else { "s" })
                }
                Some(s) => s.to_string(),
                None => String::new(),
            };
            writeln!(
                out,
                "{}: {state} ({})",
                r["name"].as_str().unwrap_or(""),
                r["exposure"].as_str().unwrap_or("")
            )?;
            writeln!(out, "  {}", r["transport"].as_str().unwrap_or(""))?;
            writeln!(out, "  source: {}", r["source"].as_str().unwrap_or(""))?;
            if let Some(o) = r["override"].as_str() {
                writeln!(out, "  project override: {o}")?;
            }
            if n > 0 {
                let tools: Vec<String> = r["tools"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(|t| match r["toolExposure"][t].as_str() {
                        Some(e) => format!("{t} [{e}]"),
                        None => t.to_string(),
                    })
                    .collect();
                writeln!(out, "  tools: {}", tools.join(", "))?;
            }
            if r["resources"] == json!(true) {
                writeln!(out, "  offers resources")?;
            }
            if let Some(e) = r["error"].as_str() {
                writeln!(out, "  {}", e.replace('\n', "\n  "))?;
            }
        }
        for e in &config.errors {
            writeln!(out, "config error: {e}")?;
        }
        for s in &skipped {
            writeln!(out, "{s}")?;
        }
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// The MCP servers of an agent run, connected, with their tools built for the `--tools`
/// allowlist; `None` with `--no-mcp`, `--no-tools` alone, or no configured server. The lines
/// say what failed (configuration errors, untrusted project files, servers that did not connect).
pub async fn start_for_agent(
    args: &AgentArgs,
    env: &Env,
    project_trusted: bool,
) -> (Option<Arc<McpManager>>, Vec<String>) {
    if args.no_mcp || (args.no_tools && args.tools.is_none()) {
        return (None, Vec::new());
    }
    let ctx = match context(env) {
        Ok(c) => c,
        Err(e) => return (None, vec![format!("MCP disabled: {e}")]),
    };
    let m = manager(&ctx, project_trusted);
    if m.servers().is_empty() {
        let mut lines = m.config().errors.clone();
        lines.extend(m.config().skipped.iter().map(|s| {
            format!(
                "{}: {} ({})",
                s.path.display(),
                s.reason,
                s.servers.join(", ")
            )
        }));
        return (None, lines);
    }
    let lines = m.connect_all(filo_mcp::manager::STARTUP_WAIT).await;
    let allow = args.tools.as_ref().map(|t| {
        t.iter()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    });
    m.build_tools(&ToolFilter { allow }).await;
    (Some(Arc::new(m)), lines)
}

/// The `--tools` names with MCP entries (names and patterns) replaced by the MCP tools kept.
pub fn allowlist_with(names: Vec<String>, mcp: &McpManager) -> Vec<String> {
    let mut names: Vec<String> = names
        .into_iter()
        .filter(|n| !filo_mcp::tools::is_mcp_tool_name(n) && n != filo_mcp::search::TOOL_SEARCH)
        .collect();
    names.extend(mcp.tool_names());
    names
}
