//! Starting, serving and stopping: [`Gateway::start`] binds the port and serves HTTP and
//! WebSocket on it; [`RunningGateway::drain`] stops it the way design §5 says (new runs refused,
//! running ones given the grace period, queued messages told, stores flushed, sockets closed).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use filo_embed::{EmbedConfig, EmbedPaths, Embedder};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::config::GatewayConfig;
use crate::core::{Core, lock};

/// The gateway before it listens.
pub struct Gateway {
    core: Arc<Core>,
}

/// What [`RunningGateway::drain`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrainReport {
    /// Runs that had not finished when the grace period ended and were aborted.
    pub aborted_runs: usize,
    /// Messages that were waiting behind a run and were not run.
    pub dropped_queued: usize,
}

/// A gateway serving on its port.
pub struct RunningGateway {
    pub addr: SocketAddr,
    core: Arc<Core>,
    stop: CancellationToken,
    task: JoinHandle<std::io::Result<()>>,
}

/// Where an agent works: its `workspace` in the config, else `agents.defaults.workspace`, else
/// `<state dir>/workspace` (`workspace-<agent>` for other agents), `~` expanded.
pub fn workspace_resolver(
    config: &EmbedConfig,
    paths: &EmbedPaths,
) -> Box<dyn Fn(&str) -> PathBuf + Send + Sync> {
    let home = paths.home.clone();
    let state = paths.state_dir.clone();
    let expand = move |p: &str| match p.strip_prefix("~/") {
        Some(rest) => home.join(rest),
        None if p == "~" => home.clone(),
        None => PathBuf::from(p),
    };
    let per_agent: Vec<(String, PathBuf)> = config
        .agents
        .iter()
        .filter_map(|a| {
            let w = a.workspace.as_deref()?;
            Some((
                filo_embed::session_key::normalize_agent_id(&a.id),
                expand(w),
            ))
        })
        .collect();
    let default = config.defaults.workspace.as_deref().map(&expand);
    Box::new(move |agent: &str| {
        if let Some((_, w)) = per_agent.iter().find(|(id, _)| id == agent) {
            return w.clone();
        }
        match &default {
            Some(w) => w.clone(),
            None if agent == "main" => state.join("workspace"),
            None => state.join(format!("workspace-{agent}")),
        }
    })
}

impl Gateway {
    /// A gateway over `embedder` (one per process).
    pub fn new(embedder: Embedder, config: GatewayConfig) -> Self {
        let workspace = workspace_resolver(&embedder.config(), embedder.paths());
        Self {
            core: Core::new(embedder, config, workspace, None),
        }
    }

    /// A gateway that shares session lanes, entries and transcripts with the other hosts of
    /// one PostgreSQL database (see [`crate::shared`]).
    pub fn with_shared_store(
        embedder: Embedder,
        config: GatewayConfig,
        shared: Arc<crate::shared::SharedStore>,
    ) -> Self {
        let workspace = workspace_resolver(&embedder.config(), embedder.paths());
        embedder.set_auth_backing(crate::shared::auth::backing(shared.url()));
        Self {
            core: Core::new(embedder, config, workspace, Some(shared)),
        }
    }

    /// The shared state (for tests and embedding programs).
    pub fn core(&self) -> &Arc<Core> {
        &self.core
    }

    /// Binds `config.bind` and serves until drained.
    pub async fn start(self) -> std::io::Result<RunningGateway> {
        let listener = TcpListener::bind(self.core.config.bind).await?;
        let addr = listener.local_addr()?;
        let stop = CancellationToken::new();
        let app = crate::http::router(self.core.clone());
        let task = tokio::spawn(serve(listener, app, self.core.clone(), stop.clone()));
        Ok(RunningGateway {
            addr,
            core: self.core,
            stop,
            task,
        })
    }
}

/// Accepts connections until `stop`, each served over HTTP/1.1 (with upgrades) with a header
/// read timeout: a socket that does not send a whole request head within the handshake timeout
/// (`gateway.handshakeTimeoutMs`) is closed, the first request and every keep-alive one alike,
/// so idle sockets cannot pile up. On `stop`, connections finish their request and close.
async fn serve(
    listener: TcpListener,
    app: axum::Router,
    core: Arc<Core>,
    stop: CancellationToken,
) -> std::io::Result<()> {
    let service = hyper_util::service::TowerToHyperService::new(app);
    loop {
        let (tcp, _peer) = tokio::select! {
            () = stop.cancelled() => return Ok(()),
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                // Out of descriptors or a connection reset before accept: the listener goes on.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
        };
        // Small frames (an ack, then a result) must not wait for the peer's delayed ACK.
        // A socket that refuses the option still works, only slower.
        let _ = tcp.set_nodelay(true);
        let service = service.clone();
        let stop = stop.clone();
        let core = core.clone();
        tokio::spawn(async move {
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(core.config.handshake_timeout)
                .keep_alive(true);
            let conn = http
                .serve_connection(hyper_util::rt::TokioIo::new(tcp), service)
                .with_upgrades();
            let mut conn = std::pin::pin!(conn);
            let served = tokio::select! {
                r = conn.as_mut() => r,
                () = stop.cancelled() => {
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
            };
            if let Err(e) = served
                && e.is_timeout()
            {
                core.metrics.idle_closed.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
}

impl RunningGateway {
    pub fn core(&self) -> &Arc<Core> {
        &self.core
    }

    /// `ws://<addr>` and `http://<addr>`.
    pub fn ws_url(&self) -> String {
        format!("ws://{}", self.addr)
    }

    pub fn http_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops: new runs are refused (`Gateway is draining …`), clients get `shutdown`, queued
    /// messages end as aborted, running turns get `grace` to finish (then they are aborted),
    /// the memory and stores are flushed, sockets close with 1012, and the server stops.
    pub async fn drain(self, grace: Duration) -> DrainReport {
        let core = &self.core;
        core.set_draining();
        crate::ws::shutdown_event(&core.hub, "draining");
        let keys: Vec<String> = lock(&core.keys).keys().cloned().collect();
        let dropped_queued = keys.iter().map(|k| core.clear_queue(k)).sum();
        let aborted_before = core.metrics.finished("aborted");
        core.embedder.shutdown(grace).await;
        // Runs end through their drivers; give them a moment to publish their outcome.
        for _ in 0..200 {
            if core.live_keys() == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let aborted_runs = (core.metrics.finished("aborted") - aborted_before) as usize;
        core.hub.close_all(1012, "gateway stopping");
        // Let writers send their close frames.
        tokio::time::sleep(Duration::from_millis(50)).await;
        self.stop.cancel();
        let _served = tokio::time::timeout(Duration::from_secs(5), self.task).await;
        DrainReport {
            aborted_runs,
            dropped_queued,
        }
    }
}
