//! `filo gateway`: the embedded runner as a server (OpenClaw's WebSocket protocol and an
//! OpenAI-compatible HTTP API on one port) until SIGTERM or SIGINT, then a drain.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, Subcommand};
use filo_embed::clock::SystemClock;
use filo_embed::config::CONFIG_FILE;
use filo_embed::{EmbedConfig, EmbedDeps, EmbedPaths, Embedder};
use filo_gateway::{Gateway, GatewayConfig, Overrides};

/// Flags of `filo gateway`.
#[derive(Debug, Args)]
pub struct GatewayArgs {
    /// Where to listen (default `gateway.port` of the config on 127.0.0.1, else 18789).
    #[arg(long, value_name = "HOST:PORT")]
    bind: Option<String>,
    /// The shared token clients send (default `gateway.auth.token`, else `FILO_GATEWAY_TOKEN`).
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,
    /// The config file (default `filo-embed.json` in the state directory).
    #[arg(long, value_name = "PATH")]
    config: Option<PathBuf>,
    /// Share sessions with other gateway hosts through one PostgreSQL database
    /// (`postgres://user:pass@host:port/db`, also `FILO_GATEWAY_STORE`): each key's lane is a
    /// lock there, entries and transcripts live there, and so does the memory unless
    /// `memory.db` names another.
    #[arg(long, value_name = "URL", global = true)]
    store: Option<String>,
    #[command(subcommand)]
    command: Option<GatewayCommand>,
}

/// What `filo gateway` does besides serving.
#[derive(Debug, Subcommand)]
enum GatewayCommand {
    /// Writes a session's transcript from the shared store (`--store`) as pi's JSONL file, byte
    /// for byte the file the hosts work on.
    Export {
        /// The session key (`agent:main:…`, or the part after `agent:<agent>:`) or session id.
        session: String,
        /// The agent a short key belongs to.
        #[arg(long, default_value = "main")]
        agent: String,
        /// Where to write (default: standard output).
        #[arg(long, short = 'o', value_name = "FILE")]
        out: Option<PathBuf>,
    },
}

/// `filo gateway export`: the shared transcript of one session as JSONL.
fn export(
    url: Option<String>,
    session: &str,
    agent: &str,
    out: Option<&std::path::Path>,
) -> anyhow::Result<ExitCode> {
    let url = url.context("export reads the shared store: give --store or FILO_GATEWAY_STORE")?;
    let key = if session.starts_with("agent:") {
        session.to_owned()
    } else {
        format!("agent:{agent}:{session}")
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let lines = runtime.block_on(async {
        let shared = filo_gateway::shared::SharedStore::connect(&url, false)
            .await
            .map_err(|e| anyhow::anyhow!("--store: {}", filo_dag::redact(&e.to_string())))?;
        let session_id = match shared
            .load_entry(agent, &key)
            .await
            .map_err(|e| anyhow::anyhow!(e))?
        {
            Some(entry) => entry.session_id,
            None => session.to_owned(),
        };
        let lines = shared
            .transcript(&session_id)
            .await
            .map_err(|e| anyhow::anyhow!(e))?;
        anyhow::ensure!(
            !lines.is_empty(),
            "no shared session {session:?} (neither a key of agent {agent:?} nor a session id)"
        );
        anyhow::Ok(lines)
    })?;
    let mut text = String::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
    for l in &lines {
        text.push_str(l);
        text.push('\n');
    }
    match out {
        Some(path) => std::fs::write(path, text)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => std::io::stdout()
            .lock()
            .write_all(text.as_bytes())
            .context("cannot write the transcript")?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs the gateway until a stop signal; `env` is the process environment, read once in main.
pub fn run(args: GatewayArgs, env: &filo_ai::Env) -> anyhow::Result<ExitCode> {
    let store_url = args
        .store
        .clone()
        .or_else(|| env.get("FILO_GATEWAY_STORE").map(str::to_owned))
        .filter(|s| !s.trim().is_empty());
    if let Some(GatewayCommand::Export {
        session,
        agent,
        out,
    }) = &args.command
    {
        return export(store_url, session, agent, out.as_deref());
    }
    let home = env
        .get("HOME")
        .map(PathBuf::from)
        .context("HOME is not set")?;
    let state_dir = env.get("FILO_STATE_DIR").map(PathBuf::from);
    let temp = env
        .get("TMPDIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    let paths = EmbedPaths::new(state_dir, home.clone(), temp);
    let config_path = args
        .config
        .clone()
        .unwrap_or_else(|| paths.state_dir.join(CONFIG_FILE));
    let mut config = EmbedConfig::load(&config_path)
        .with_context(|| format!("cannot load {}", config_path.display()))?;
    if let Some(url) = &store_url {
        anyhow::ensure!(
            filo_dag::is_postgres_url(url),
            "--store takes a PostgreSQL connection string (postgres://…), not {:?}",
            filo_dag::redact(url)
        );
        if config.memory.db.is_none() {
            config.memory.db = Some(url.clone());
        }
    }
    let memory_db = config
        .memory
        .enabled
        .then(|| config.memory.db.clone())
        .flatten();
    let mut stderr = std::io::stderr().lock();
    for w in &config.warnings {
        let _ = writeln!(stderr, "warning: {w}");
    }
    let overrides = Overrides {
        bind: args.bind.clone(),
        token: args.token.clone(),
        env_token: env.get("FILO_GATEWAY_TOKEN").map(str::to_owned),
    };
    let (gateway_config, warnings) = GatewayConfig::resolve(&config, &overrides)?;
    for w in warnings {
        let _ = writeln!(stderr, "warning: {w}");
    }
    // filo's agent directory, read-only fallback to pi's for what filo's lacks (as the agent).
    let dirs = filo_core::AgentDirs::new(
        filo_session::paths::agent_dir(env.get("FILO_AGENT_DIR"), &home),
        Some(filo_session::paths::pi_agent_dir(
            env.get("PI_CODING_AGENT_DIR"),
            &home,
        )),
    );
    if let Some(n) = dirs.notice() {
        let _ = writeln!(stderr, "{n}");
    }
    let (registry, warnings) =
        filo_core::loader::load_registry(dirs.source(filo_core::AgentItem::Models));
    for w in warnings {
        let _ = writeln!(stderr, "warning: {w}");
    }
    let auth = filo_core::AuthStorage::load_from(
        &dirs.write_path(filo_core::AgentItem::Auth),
        &dirs.read_path(filo_core::AgentItem::Auth),
    );
    for e in &auth.errors {
        let _ = writeln!(stderr, "warning: {e}");
    }
    let registry_for_keys = Arc::new(registry.clone());
    let env_arc = Arc::new(env.clone());
    let api_key = filo_core::loader::api_key_resolver(auth, registry_for_keys, env_arc);
    drop(stderr);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let embedder = Embedder::new(EmbedDeps {
            config,
            paths,
            registry,
            env: env.clone(),
            client: None,
            clock: Arc::new(SystemClock),
            api_key: Some(api_key),
        })?;
        let grace = gateway_config.drain_grace;
        let authed = gateway_config.token.is_some();
        let gateway = match &store_url {
            Some(url) => {
                let memory_here = memory_db.as_deref() == Some(url.as_str());
                let shared = filo_gateway::shared::SharedStore::connect(url, memory_here)
                    .await
                    .map_err(|e| anyhow::anyhow!("--store: {}", filo_dag::redact(&e)))?;
                Gateway::with_shared_store(embedder, gateway_config, shared)
            }
            None => Gateway::new(embedder, gateway_config),
        };
        let running = gateway.start().await?;
        let _ = writeln!(
            std::io::stderr(),
            "filo gateway listening on {} (ws://{} · http://{}/v1/chat/completions){}",
            running.addr,
            running.addr,
            running.addr,
            if authed { "" } else { " — no token: auth is off (loopback only)" }
        );
        let signal = stop_signal().await?;
        let _ = writeln!(
            std::io::stderr(),
            "filo gateway: {signal}, draining (running turns get {}s)",
            grace.as_secs()
        );
        let report = running.drain(grace).await;
        if report.aborted_runs > 0 || report.dropped_queued > 0 {
            let _ = writeln!(
                std::io::stderr(),
                "filo gateway: {} run(s) aborted at the end of the grace period, {} queued message(s) not run",
                report.aborted_runs,
                report.dropped_queued
            );
        }
        anyhow::Ok(ExitCode::SUCCESS)
    })
}

/// Waits for SIGTERM or SIGINT; names it.
async fn stop_signal() -> anyhow::Result<&'static str> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("cannot watch SIGTERM")?;
    let mut int = signal(SignalKind::interrupt()).context("cannot watch SIGINT")?;
    Ok(tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    })
}
