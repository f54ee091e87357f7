//! A private PostgreSQL server for one test: Debian's `postgresql` binaries, a data directory in
//! a temporary folder, loopback only, stopped when the [`PgServer`] is dropped.
//!
//! `initdb` runs once per machine and version into a template folder under the system temporary
//! directory; each server copies the template (a fraction of a second) and starts `postgres` on a
//! free port with durability off (`fsync=off`: test data is thrown away). As root, the server
//! runs as the `postgres` user (else `nobody`), because PostgreSQL refuses to run as root.
//!
//! When no PostgreSQL can be found, [`PgServer::start`] answers `Ok(None)` and the caller skips,
//! unless `FILO_REQUIRE_POSTGRES` is set (CI sets it): then a missing server is an error, so a
//! machine without PostgreSQL fails the suite instead of passing it silently.

use std::fs;
use std::io;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// The variable that turns "no PostgreSQL here" from a skip into an error.
pub const REQUIRE_ENV: &str = "FILO_REQUIRE_POSTGRES";

/// A running private server.
#[derive(Debug)]
pub struct PgServer {
    dir: TempDir,
    bin: PathBuf,
    port: u16,
    user: Option<(u32, u32)>,
    child: Option<Child>,
}

/// Why a server could not be had.
#[derive(Debug)]
pub struct PgError(pub String);

impl std::fmt::Display for PgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PgError {}

fn err(what: impl std::fmt::Display) -> PgError {
    PgError(what.to_string())
}

impl PgServer {
    /// Starts a server, or `Ok(None)` when this machine has no PostgreSQL and
    /// [`REQUIRE_ENV`] is not set.
    pub fn start() -> Result<Option<Self>, PgError> {
        let required = std::env::var_os(REQUIRE_ENV).is_some_and(|v| !v.is_empty() && v != "0");
        let Some(bin) = find_bin() else {
            if required {
                return Err(err(format!(
                    "{REQUIRE_ENV} is set but no PostgreSQL binaries were found \
                     (/usr/lib/postgresql/*/bin/postgres)"
                )));
            }
            return Ok(None);
        };
        let user = service_user()?;
        let template = template(&bin, user)?;
        let mut last = None;
        // The free port is probed, then bound by postgres: another process may take it between.
        for _ in 0..5 {
            match Self::launch(&bin, &template, user) {
                Ok(server) => return Ok(Some(server)),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| err("postgres did not start")))
    }

    /// Like [`PgServer::start`], but a machine without PostgreSQL is an error whatever the
    /// environment says (for benchmarks and tools that cannot skip).
    pub fn start_required() -> Result<Self, PgError> {
        Self::start()?.ok_or_else(|| err("no PostgreSQL binaries found"))
    }

    fn launch(bin: &Path, template: &Path, user: Option<(u32, u32)>) -> Result<Self, PgError> {
        let dir = tempfile::Builder::new()
            .prefix("filo-pg-")
            .tempdir()
            .map_err(err)?;
        let data = dir.path().join("data");
        let status = Command::new("cp")
            .arg("-a")
            .arg(template)
            .arg(&data)
            .status()
            .map_err(err)?;
        if !status.success() {
            return Err(err("copying the PostgreSQL template failed"));
        }
        if let Some((uid, gid)) = user {
            chown_tree(dir.path(), uid, gid)?;
        }
        let port = free_port()?;
        let mut server = Self {
            dir,
            bin: bin.to_path_buf(),
            port,
            user,
            child: None,
        };
        server.spawn()?;
        server.wait_ready()?;
        Ok(server)
    }

    /// Starts `postgres` on this server's data directory and port (its log appended to).
    fn spawn(&mut self) -> Result<(), PgError> {
        let log_path = self.dir.path().join("postgres.log");
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(err)?;
        if let Some((uid, gid)) = self.user {
            std::os::unix::fs::chown(&log_path, Some(uid), Some(gid)).map_err(err)?;
        }
        let mut cmd = Command::new(self.bin.join("postgres"));
        cmd.arg("-D")
            .arg(self.dir.path().join("data"))
            .arg("-p")
            .arg(self.port.to_string())
            .arg("-k")
            .arg(self.dir.path())
            .args(["-c", "listen_addresses=127.0.0.1"])
            .args(["-c", "fsync=off", "-c", "synchronous_commit=off"])
            .args(["-c", "full_page_writes=off", "-c", "max_connections=200"])
            .args(["-c", "shared_buffers=32MB"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        if let Some((uid, gid)) = self.user {
            cmd.uid(uid).gid(gid);
        }
        self.child = Some(cmd.spawn().map_err(err)?);
        Ok(())
    }

    /// Stops the server as an operator's restart does (`pg_ctl stop -m fast`: every connection
    /// is cut, what was committed is kept), keeping its data; [`PgServer::start_again`] brings
    /// it back on the same port. (The test server runs with `synchronous_commit=off`, so an
    /// immediate stop could lose the last commits: not what a restart does.)
    pub fn stop_now(&mut self) {
        self.stop_with("fast");
    }

    /// Starts a stopped server again on the same port and data, and waits until it answers.
    pub fn start_again(&mut self) -> Result<(), PgError> {
        if self.child.is_some() {
            return Ok(());
        }
        self.spawn()?;
        self.wait_ready()
    }

    /// The data directory (`pg_hba.conf`, `postgresql.conf`), for tests that change how the
    /// server authenticates.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn wait_ready(&mut self) -> Result<(), PgError> {
        let started = Instant::now();
        loop {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                let log =
                    fs::read_to_string(self.dir.path().join("postgres.log")).unwrap_or_default();
                self.child = None;
                return Err(err(format!("postgres exited with {status}: {log}")));
            }
            let ready = Command::new(self.bin.join("pg_isready"))
                .args(["-q", "-h", "127.0.0.1", "-p", &self.port.to_string()])
                .status()
                .map_err(err)?;
            if ready.success() {
                return Ok(());
            }
            if started.elapsed() > Duration::from_secs(60) {
                return Err(err("postgres was not ready after 60 s"));
            }
            std::thread::sleep(Duration::from_millis(30));
        }
    }

    /// The TCP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A connection string for the superuser and the `postgres` database.
    pub fn url(&self) -> String {
        self.url_for("postgres")
    }

    /// A connection string for the superuser and `database`.
    pub fn url_for(&self, database: &str) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{}/{database}?sslmode=disable",
            self.port
        )
    }

    /// Creates a database and returns its connection string.
    pub fn create_database(&self, name: &str) -> Result<String, PgError> {
        self.psql(&format!("CREATE DATABASE \"{name}\""))?;
        Ok(self.url_for(name))
    }

    /// Runs one SQL command with `psql` against the `postgres` database; returns its output.
    pub fn psql(&self, sql: &str) -> Result<String, PgError> {
        let out = Command::new(self.bin.join("psql"))
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"])
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(["-U", "postgres", "-d", "postgres", "-c", sql])
            .output()
            .map_err(err)?;
        if !out.status.success() {
            return Err(err(format!(
                "psql failed: {}",
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// The server's log so far (for failure messages).
    pub fn log(&self) -> String {
        fs::read_to_string(self.dir.path().join("postgres.log")).unwrap_or_default()
    }

    fn stop(&mut self) {
        self.stop_with("immediate");
    }

    fn stop_with(&mut self, mode: &str) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        // At the end, an immediate shutdown: test data is thrown away, and the backends end
        // with it.
        let mut cmd = Command::new(self.bin.join("pg_ctl"));
        cmd.args(["stop", "-m", mode, "-w", "-D"])
            .arg(self.dir.path().join("data"))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some((uid, gid)) = self.user {
            cmd.uid(uid).gid(gid);
        }
        let stopped = cmd.status().is_ok_and(|s| s.success());
        if !stopped {
            let _ = child.kill();
        }
        let _ = child.wait();
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The newest `/usr/lib/postgresql/<version>/bin` with a `postgres` binary.
fn find_bin() -> Option<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| {
            let e = e.ok()?;
            let version: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("postgres").exists().then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin)
}

/// As root: the uid/gid of `postgres` (else `nobody`). Otherwise `None` (run as ourselves).
fn service_user() -> Result<Option<(u32, u32)>, PgError> {
    let me = fs::metadata("/proc/self").map_err(err)?;
    if std::os::unix::fs::MetadataExt::uid(&me) != 0 {
        return Ok(None);
    }
    let passwd = fs::read_to_string("/etc/passwd").map_err(err)?;
    let lookup = |name: &str| {
        passwd.lines().find_map(|line| {
            let f: Vec<&str> = line.split(':').collect();
            (f.first() == Some(&name) && f.len() > 3)
                .then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))
                .flatten()
        })
    };
    lookup("postgres")
        .or_else(|| lookup("nobody"))
        .map(Some)
        .ok_or_else(|| err("running as root, and neither a postgres nor a nobody user exists"))
}

/// The initialised data directory every server copies, made once (atomically, by rename).
fn template(bin: &Path, user: Option<(u32, u32)>) -> Result<PathBuf, PgError> {
    let version = bin
        .parent()
        .and_then(Path::file_name)
        .and_then(|v| v.to_str())
        .unwrap_or("pg");
    let owner = user.map_or_else(|| "self".to_owned(), |(u, _)| u.to_string());
    let root = std::env::temp_dir().join(format!("filo-pg-template-{version}-{owner}"));
    let done = root.join("data").join("PG_VERSION");
    if done.exists() {
        return Ok(root.join("data"));
    }
    let scratch = tempfile::Builder::new()
        .prefix("filo-pg-init-")
        .tempdir()
        .map_err(err)?;
    let data = scratch.path().join("data");
    if let Some((uid, gid)) = user {
        chown_tree(scratch.path(), uid, gid)?;
    }
    let mut cmd = Command::new(bin.join("initdb"));
    cmd.arg("-D")
        .arg(&data)
        .args(["-U", "postgres", "--auth=trust", "--no-sync"])
        .args(["-E", "UTF8", "--locale=C"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some((uid, gid)) = user {
        cmd.uid(uid).gid(gid);
    }
    let out = cmd.output().map_err(err)?;
    if !out.status.success() {
        return Err(err(format!(
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    let kept = scratch.keep();
    match fs::rename(&kept, &root) {
        Ok(()) => {}
        // Another test made it first: use theirs.
        Err(_) if done.exists() => {
            let _ = fs::remove_dir_all(&kept);
        }
        Err(e) => {
            let _ = fs::remove_dir_all(&kept);
            return Err(err(format!("keeping the PostgreSQL template: {e}")));
        }
    }
    Ok(root.join("data"))
}

fn chown_tree(path: &Path, uid: u32, gid: u32) -> Result<(), PgError> {
    std::os::unix::fs::chown(path, Some(uid), Some(gid)).map_err(err)?;
    if path.is_dir() {
        for entry in fs::read_dir(path).map_err(err)? {
            chown_tree(&entry.map_err(err)?.path(), uid, gid)?;
        }
    }
    Ok(())
}

fn free_port() -> Result<u16, PgError> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(err)?;
    Ok(listener.local_addr().map_err(|e: io::Error| err(e))?.port())
}
