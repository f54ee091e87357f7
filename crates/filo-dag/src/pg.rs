//! The PostgreSQL backend: a connection, its statement cache, the schema and its migrations.
//!
//! The tables live in the schema `playfilo` and hold what the SQLite file holds, column for
//! column, plus `nodes.seq`: SQLite's rowid (insertion order, which life lists children in) made
//! explicit. Text keys use the `"C"` collation, so a hash-prefix range is the same byte range as
//! in SQLite. `playfilo.meta` records the layout version; a database newer than this code is
//! refused before anything is written, and older layouts are brought up to date at open, under
//! an advisory lock so that hosts starting together migrate once.
//!
//! The client is the synchronous `postgres` crate, like `rusqlite`. That client drives its own
//! small runtime and would panic when called on a thread that runs async tasks; a call made
//! from such a thread (an async test, a tool, the gateway) therefore runs on a short-lived
//! scoped thread instead ([`off_runtime`]), and its rows are collected before they are visited.
//! Plain threads (the memory writer, `filo dag`) stream rows directly.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use postgres::fallible_iterator::FallibleIterator;
use postgres::types::{IsNull, ToSql, Type, to_sql_checked};
use postgres::{Client, Statement};
use rustls_pki_types::pem::PemObject;

use crate::db::{Cols, P};
use crate::error::{DagError, Result};

/// The layout version of the PostgreSQL tables this code writes and understands.
pub const PG_LAYOUT_VERSION: i64 = 1;

/// The advisory lock every DAG write transaction takes (serialises writers, like SQLite's
/// `BEGIN IMMEDIATE`): the first eight bytes of `sha256("playfilo.write")`, as a fixed number.
const WRITE_LOCK: i64 = 0x706c_6179_6669_6c6f;
/// The advisory lock of schema migrations.
const MIGRATE_LOCK: i64 = 0x706c_6179_6d69_6772;

/// Layout migrations: version `i + 1` is reached by running `MIGRATIONS[i]`.
const MIGRATIONS: &[&str] = &["\
CREATE TABLE playfilo.blobs (hash TEXT COLLATE \"C\" PRIMARY KEY, type TEXT NOT NULL, \
  content TEXT NOT NULL, thought_signature TEXT);
CREATE TABLE playfilo.nodes (seq BIGSERIAL NOT NULL UNIQUE, id TEXT COLLATE \"C\" PRIMARY KEY, \
  parent_id TEXT COLLATE \"C\", role TEXT NOT NULL, parts_list TEXT NOT NULL, \
  timestamp BIGINT NOT NULL, config_json TEXT, thought_signatures TEXT, system_prompt_hash TEXT, \
  external_id TEXT COLLATE \"C\");
CREATE INDEX nodes_parent ON playfilo.nodes (parent_id, seq);
CREATE INDEX nodes_external_id ON playfilo.nodes (external_id, seq);
CREATE TABLE playfilo.refs (name TEXT COLLATE \"C\" PRIMARY KEY, node_id TEXT NOT NULL);
CREATE TABLE playfilo.action_log (id BIGSERIAL PRIMARY KEY, timestamp BIGINT NOT NULL, \
  action_type TEXT NOT NULL, from_node TEXT, to_node TEXT, metadata TEXT);
CREATE INDEX action_log_to_node ON playfilo.action_log (to_node);
CREATE FUNCTION playfilo.try_jsonb(t TEXT) RETURNS JSONB LANGUAGE plpgsql IMMUTABLE AS $f$
  BEGIN RETURN t::jsonb; EXCEPTION WHEN others THEN RETURN NULL; END $f$;"];

/// Runs `f` where the synchronous client may block: right here on a plain thread, on a scoped
/// thread when this thread belongs to an async runtime.
fn off_runtime<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    if tokio::runtime::Handle::try_current().is_err() {
        return f();
    }
    std::thread::scope(|s| match s.spawn(f).join() {
        Ok(r) => r,
        Err(panic) => std::panic::resume_unwind(panic),
    })
}

/// One connection to a Playfilo database in PostgreSQL, reopened when it broke.
///
/// A connection breaks when the server restarts, stops or the network drops it. The call that
/// finds it broken fails with [`DagError::PgUnavailable`] (a call on a connection that had
/// been working is first made once more on a new one); the next call outside a transaction
/// connects again. An attempt that was refused at once is repeated by the next call; one that
/// hung (a host that does not answer) starts a backoff (0.1 s, doubling to 5 s) during which
/// calls fail at once, so an unreachable server costs one slow attempt per backoff, not one
/// per call. A transaction whose connection broke fails to its end (its statements are
/// never sent on another connection); the one after it reconnects.
pub(crate) struct Pg {
    /// The connection string with its password (to reconnect).
    url: String,
    /// `None` while disconnected (and while being dropped).
    client: RefCell<Option<Client>>,
    statements: RefCell<HashMap<&'static str, Statement>>,
    /// The connection string without its password, for messages.
    shown: String,
    /// A transaction was begun on the current connection and not ended.
    in_tx: Cell<bool>,
    /// The connection broke during the open transaction: everything fails until it ends.
    tx_lost: Cell<bool>,
    /// Why the last connection attempt failed, when it did, and when to try again.
    retry: RefCell<Option<Retry>>,
    /// The last call found a connection that had been working broken (a server restarted
    /// since): outside a transaction, that call is made once more on a new connection.
    stale: Cell<bool>,
}

/// The backoff after a failed connection attempt.
struct Retry {
    cause: String,
    at: Instant,
    delay: Duration,
}

const BACKOFF_FIRST: Duration = Duration::from_millis(100);
/// A connection attempt that failed after this long (a host that does not answer, a connect
/// timeout) starts the backoff; one refused faster does not.
const SLOW_ATTEMPT: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

impl std::fmt::Debug for Pg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pg").field("url", &self.shown).finish()
    }
}

/// True for a connection string this backend takes (`postgres://…`, `postgresql://…`).
pub fn is_postgres_url(s: &str) -> bool {
    s.starts_with("postgres://") || s.starts_with("postgresql://")
}

pub use crate::redact::redact;

pub(crate) fn pg_error(e: &postgres::Error) -> DagError {
    DagError::Postgres(pg_text(e))
}

/// The text of a client error: the server's message, or the error with its causes.
fn pg_text(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {}", db.severity(), db.message()),
        None => {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(s) = source {
                text.push_str(": ");
                text.push_str(&s.to_string());
                source = s.source();
            }
            text
        }
    }
}

impl From<postgres::Error> for DagError {
    fn from(e: postgres::Error) -> Self {
        pg_error(&e)
    }
}

/// Splits off the parameters this code handles itself (`sslrootcert`), which the driver's
/// parser would refuse.
fn split_own_params(url: &str) -> (String, Option<String>) {
    let Some((base, query)) = url.split_once('?') else {
        return (url.to_owned(), None);
    };
    let mut root = None;
    let kept: Vec<&str> = query
        .split('&')
        .filter(|kv| match kv.split_once('=') {
            Some(("sslrootcert", v)) => {
                root = Some(v.to_owned());
                false
            }
            _ => !kv.is_empty(),
        })
        .collect();
    if kept.is_empty() {
        (base.to_owned(), root)
    } else {
        (format!("{base}?{}", kept.join("&")), root)
    }
}

/// rustls with ring; the roots are `sslrootcert` when given, else the platform's verifier.
fn tls(root: Option<&str>) -> Result<tokio_postgres_rustls::MakeRustlsConnect> {
    let bad = |what: String| DagError::Postgres(format!("TLS: {what}"));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(e.to_string()))?;
    let config = match root {
        Some(path) => {
            let pem = std::fs::read(path).map_err(|e| bad(format!("sslrootcert {path}: {e}")))?;
            let mut roots = rustls::RootCertStore::empty();
            for cert in rustls_pki_types::CertificateDer::pem_slice_iter(&pem) {
                let cert = cert.map_err(|e| bad(format!("sslrootcert {path}: {e}")))?;
                roots
                    .add(cert)
                    .map_err(|e| bad(format!("sslrootcert {path}: {e}")))?;
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        }
        None => {
            let verifier = rustls_platform_verifier::Verifier::new(provider)
                .map_err(|e| bad(e.to_string()))?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(verifier))
                .with_no_client_auth()
        }
    };
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

/// A plain client for `url` with the same options and TLS as the store's own connection
/// (`sslmode`, `sslrootcert`, a 10 s connect timeout, TCP keepalives): for programs that keep their own tables
/// next to the memory (the gateway's shared state). Call it off async runtimes.
pub fn connect_client(url: &str) -> Result<Client> {
    let shown = redact(url);
    let (url, root) = split_own_params(url);
    let mut config: postgres::Config = url
        .parse()
        .map_err(|e: postgres::Error| DagError::Postgres(format!("{shown}: {e}")))?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(Duration::from_secs(10));
    }
    // A server that vanished without closing the socket is noticed, not waited on forever.
    config.keepalives(true);
    config.keepalives_idle(Duration::from_secs(30));
    config.application_name("filo");
    let tls = tls(root.as_deref())?;
    off_runtime(|| config.connect(tls)).map_err(|e| {
        let cause = redact(&pg_text(&e));
        match e.as_db_error() {
            // The server answered and refused (a wrong password, no such database): not a
            // server that is away.
            Some(_) => DagError::Postgres(format!("{shown}: {cause}")),
            None => DagError::PgUnavailable { url: shown, cause },
        }
    })
}

impl Pg {
    /// Connects, creates or migrates the schema, and refuses a layout newer than this code.
    pub(crate) fn connect(url: &str) -> Result<Self> {
        let shown = redact(url);
        let client = Self::open(url, &shown)?;
        Ok(Self {
            url: url.to_owned(),
            client: RefCell::new(Some(client)),
            statements: RefCell::new(HashMap::new()),
            shown,
            in_tx: Cell::new(false),
            tx_lost: Cell::new(false),
            retry: RefCell::new(None),
            stale: Cell::new(false),
        })
    }

    /// A new connection with the schema checked (and migrated) and the search path set.
    fn open(url: &str, shown: &str) -> Result<Client> {
        let mut client = connect_client(url)?;
        let shown = shown.to_owned();
        match off_runtime(|| Self::migrate_on(&mut client, &shown)) {
            Ok(()) => Ok(client),
            Err(e) => {
                off_runtime(move || drop(client));
                Err(e)
            }
        }
    }

    /// The connection string without its password.
    pub(crate) fn shown(&self) -> &str {
        &self.shown
    }

    fn unavailable(&self, cause: impl Into<String>) -> DagError {
        DagError::PgUnavailable {
            url: self.shown.clone(),
            cause: redact(&cause.into()),
        }
    }

    /// Makes sure there is a connection: reconnects (outside a transaction, after the backoff)
    /// when the last one broke.
    fn ensure_connected(&self) -> Result<()> {
        if self.tx_lost.get() {
            return Err(self
                .unavailable("the connection broke during this transaction; it was rolled back"));
        }
        let connected = self
            .client
            .try_borrow()
            .map_err(|_| {
                DagError::Postgres("the connection is already in use by this thread".into())
            })?
            .as_ref()
            .is_some_and(|c| !c.is_closed());
        if connected {
            return Ok(());
        }
        if let Some(old) = self.client.borrow_mut().take() {
            off_runtime(move || drop(old));
        }
        self.statements.borrow_mut().clear();
        if let Some(r) = self.retry.borrow().as_ref()
            && Instant::now() < r.at
        {
            return Err(self.unavailable(r.cause.clone()));
        }
        let tried = Instant::now();
        match Self::open(&self.url, &self.shown) {
            Ok(client) => {
                *self.client.borrow_mut() = Some(client);
                *self.retry.borrow_mut() = None;
                Ok(())
            }
            Err(e) => {
                let cause = match &e {
                    DagError::PgUnavailable { cause, .. } => cause.clone(),
                    other => other.to_string(),
                };
                let mut retry = self.retry.borrow_mut();
                if tried.elapsed() < SLOW_ATTEMPT {
                    // Refused at once (the server is down, the host answers): trying again is
                    // cheap, and finds the server the moment it is back.
                    *retry = None;
                    return Err(self.unavailable(cause));
                }
                let delay = retry
                    .as_ref()
                    .map_or(BACKOFF_FIRST, |r| (r.delay * 2).min(BACKOFF_MAX));
                *retry = Some(Retry {
                    cause: cause.clone(),
                    at: Instant::now() + delay,
                    delay,
                });
                Err(self.unavailable(cause))
            }
        }
    }

    /// After a failed call: when the connection itself is gone (not just the statement), it
    /// is closed here and the error says the database is unavailable.
    fn after_error(&self, e: DagError) -> DagError {
        if matches!(e, DagError::PgUnavailable { .. }) {
            return e;
        }
        let alive = match self.client.try_borrow_mut() {
            Ok(mut slot) => match slot.as_mut() {
                Some(c) if !c.is_closed() => off_runtime(|| match c.is_valid(PROBE_TIMEOUT) {
                    Ok(()) => true,
                    Err(e) => e.as_db_error().is_some(),
                }),
                _ => false,
            },
            Err(_) => true,
        };
        // (`is_valid` failing with the server's own error still means the server answered.)
        if alive {
            return e;
        }
        if let Some(old) = self.client.borrow_mut().take() {
            off_runtime(move || drop(old));
        }
        self.statements.borrow_mut().clear();
        if self.in_tx.get() {
            self.tx_lost.set(true);
        } else {
            self.stale.set(true);
        }
        let cause = match e {
            DagError::Postgres(text) => text,
            other => other.to_string(),
        };
        self.unavailable(cause)
    }

    /// The client, borrowed for one call (an error if this thread already uses it).
    fn slot(&self) -> Result<std::cell::RefMut<'_, Client>> {
        self.ensure_connected()?;
        let slot = self.client.try_borrow_mut().map_err(|_| {
            DagError::Postgres("the connection is already in use by this thread".into())
        })?;
        std::cell::RefMut::filter_map(slot, Option::as_mut)
            .map_err(|_| self.unavailable("not connected"))
    }

    /// Runs `attempt`, and once more on a new connection when it found the connection broken
    /// outside a transaction: after a server restart, the first call on the old connection
    /// fails before the server saw it. (A statement of a transaction is never repeated: the
    /// transaction fails as a whole.) `attempt` prepares its statements itself, since
    /// statements belong to a connection.
    fn again<R>(&self, mut attempt: impl FnMut() -> Result<R>) -> Result<R> {
        self.stale.set(false);
        match attempt() {
            Err(DagError::PgUnavailable { .. })
                if !self.in_tx.get() && self.stale.replace(false) =>
            {
                attempt()
            }
            other => other,
        }
    }

    /// Runs `f` on the client, off any async runtime.
    fn with<R: Send>(&self, f: impl FnOnce(&mut Client) -> Result<R> + Send) -> Result<R> {
        let out = {
            let mut client = self.slot()?;
            let client: &mut Client = &mut client;
            off_runtime(|| f(client))
        };
        out.map_err(|e| self.after_error(e))
    }

    fn migrate_on(client: &mut Client, shown: &str) -> Result<()> {
        let mut tx = client.transaction()?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATE_LOCK])?;
        tx.batch_execute(
            "CREATE SCHEMA IF NOT EXISTS playfilo; \
             CREATE TABLE IF NOT EXISTS playfilo.meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);",
        )?;
        let found: i64 = tx
            .query_opt(
                "SELECT value FROM playfilo.meta WHERE key = 'layout_version'",
                &[],
            )?
            .map(|r| r.get::<_, String>(0))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        if found > PG_LAYOUT_VERSION {
            return Err(DagError::PgTooNew {
                url: shown.to_owned(),
                found,
                supported: PG_LAYOUT_VERSION,
            });
        }
        for (i, step) in MIGRATIONS.iter().enumerate() {
            if i64::try_from(i).unwrap_or(i64::MAX) >= found {
                tx.batch_execute(step)?;
            }
        }
        tx.execute(
            "INSERT INTO playfilo.meta (key, value) VALUES ('layout_version', $1), \
             ('playfilo_schema', $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            &[
                &PG_LAYOUT_VERSION.to_string(),
                &crate::store::SCHEMA_VERSION.to_string(),
            ],
        )?;
        tx.commit()?;
        client.batch_execute("SET search_path TO playfilo")?;
        Ok(())
    }

    fn statement(&self, sql: &'static str) -> Result<Statement> {
        if let Some(s) = self.statements.borrow().get(sql) {
            return Ok(s.clone());
        }
        let s = self.with(|c| Ok(c.prepare(sql)?))?;
        self.statements.borrow_mut().insert(sql, s.clone());
        Ok(s)
    }

    pub(crate) fn each(
        &self,
        sql: &'static str,
        params: &[P<'_>],
        visit: &mut dyn FnMut(&dyn Cols) -> Result<bool>,
    ) -> Result<()> {
        let mut visited = false;
        self.again(|| {
            if visited {
                // Rows were handed out already: they are not handed out twice.
                return Err(self.unavailable("the connection broke while rows were read"));
            }
            self.each_once(sql, params, &mut *visit, &mut visited)
        })
    }

    fn each_once(
        &self,
        sql: &'static str,
        params: &[P<'_>],
        visit: &mut dyn FnMut(&dyn Cols) -> Result<bool>,
        visited: &mut bool,
    ) -> Result<()> {
        let stmt = self.statement(sql)?;
        if tokio::runtime::Handle::try_current().is_ok() {
            // On a runtime thread: the rows are fetched on a scoped thread, then visited here.
            let rows = self.with(|c| {
                let refs: Vec<&(dyn ToSql + Sync)> =
                    params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
                Ok(c.query(&stmt, &refs)?)
            })?;
            *visited = !rows.is_empty();
            for row in &rows {
                if !visit(row)? {
                    break;
                }
            }
            return Ok(());
        }
        let streamed = (|| {
            // Errors that are not the connection's (or already say so) pass as they are.
            let mut client = self.slot().map_err(Walk::Pass)?;
            let mut rows = client
                .query_raw(&stmt, params.iter())
                .map_err(|e| Walk::Db(e.into()))?;
            while let Some(row) = rows.next().map_err(|e| Walk::Db(e.into()))? {
                *visited = true;
                if !visit(&row).map_err(Walk::Pass)? {
                    break;
                }
            }
            Ok(())
        })();
        match streamed {
            Ok(()) => Ok(()),
            Err(Walk::Pass(e)) => Err(e),
            Err(Walk::Db(e)) => Err(self.after_error(e)),
        }
    }

    pub(crate) fn exec(&self, sql: &'static str, params: &[P<'_>]) -> Result<u64> {
        self.again(|| {
            let stmt = self.statement(sql)?;
            self.with(|c| {
                let refs: Vec<&(dyn ToSql + Sync)> =
                    params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
                Ok(c.execute(&stmt, &refs)?)
            })
        })
    }

    /// Runs a fixed script (no parameters).
    pub(crate) fn batch(&self, sql: &str) -> Result<()> {
        self.with(|c| Ok(c.batch_execute(sql)?))
    }

    pub(crate) fn begin(&self, write: bool) -> Result<()> {
        let sql = if write {
            format!("BEGIN; SELECT pg_advisory_xact_lock({WRITE_LOCK});")
        } else {
            "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY".to_owned()
        };
        self.again(|| self.batch(&sql))?;
        self.in_tx.set(true);
        Ok(())
    }

    pub(crate) fn end(&self, commit: bool) -> Result<()> {
        let lost = self.tx_lost.replace(false);
        self.in_tx.set(false);
        if lost {
            // The server rolled the transaction back when the connection went.
            return if commit {
                Err(self.unavailable(
                    "the connection broke during this transaction; it was rolled back",
                ))
            } else {
                Ok(())
            };
        }
        self.batch(if commit { "COMMIT" } else { "ROLLBACK" })
    }
}

/// An error while streaming rows: the database's, or one that says nothing about the
/// connection (the visitor's) or has already been looked at.
enum Walk {
    Db(DagError),
    Pass(DagError),
}

/// How long a connection that failed a call gets to answer a probe before it is called broken.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

impl Drop for Pg {
    fn drop(&mut self) {
        // Closing the client blocks on its runtime: do it off any async runtime too.
        if let Some(client) = self.client.get_mut().take() {
            off_runtime(move || drop(client));
        }
    }
}

impl ToSql for P<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> std::result::Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match *self {
            P::Text(s) => s.to_sql_checked(ty, out),
            P::OptText(s) => s.to_sql_checked(ty, out),
            P::Int(i) => i.to_sql_checked(ty, out),
            P::List(l) => l.to_sql_checked(ty, out),
            P::OptList(l) => l.to_sql_checked(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        // Each value is checked against the column type by the inner `to_sql_checked`.
        true
    }

    to_sql_checked!();
}

impl Cols for postgres::Row {
    fn text(&self, i: usize) -> Result<Option<&str>> {
        self.try_get::<_, Option<&str>>(i)
            .map_err(|e| DagError::Postgres(format!("column {i}: {e}")))
    }

    fn int(&self, i: usize) -> Result<Option<i64>> {
        let ty = self
            .columns()
            .get(i)
            .map(|c| c.type_().clone())
            .ok_or_else(|| DagError::Postgres(format!("no column {i}")))?;
        let v = if ty == Type::INT4 {
            self.try_get::<_, Option<i32>>(i).map(|v| v.map(i64::from))
        } else {
            self.try_get::<_, Option<i64>>(i)
        };
        v.map_err(|e| DagError::Postgres(format!("column {i}: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_shown_without_their_password() {
        assert_eq!(
            redact("postgres://u:secret@h:5432/db"),
            "postgres://u:***@h:5432/db"
        );
        assert_eq!(
            redact("postgres://u@h:5432/db?password=secret"),
            "postgres://u@h:5432/db?password=***"
        );
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(redact("postgres://h/db"), "postgres://h/db");
    }

    #[test]
    fn sslrootcert_is_taken_out_of_the_url() {
        assert_eq!(
            split_own_params("postgres://h/db?sslmode=require&sslrootcert=/x/ca.pem"),
            (
                "postgres://h/db?sslmode=require".to_owned(),
                Some("/x/ca.pem".to_owned())
            )
        );
        assert_eq!(
            split_own_params("postgres://h/db?sslrootcert=ca.pem"),
            ("postgres://h/db".to_owned(), Some("ca.pem".to_owned()))
        );
        assert_eq!(
            split_own_params("postgres://h/db"),
            ("postgres://h/db".to_owned(), None)
        );
    }
}
