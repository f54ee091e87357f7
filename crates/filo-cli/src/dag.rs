//! `filo dag …`: the life / recall / trace tools and the show, stats and fsck maintenance commands.

use filo_core::playfilo::SystemZone;
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use clap::{ArgAction, Args, Subcommand};
use filo_dag::render::{
    FilterMode, LifeOptions, RecallOptions, TraceMode, TraceOptions, life, recall, trace,
};
use filo_dag::{Create, PathEntry, Store};
use serde_json::{Value, json};

/// Common flags of every `filo dag` command.
#[derive(Debug, Args)]
pub struct DagArgs {
    /// The database: an SQLite file (default `~/.playfilo/playfilo.db`) or a PostgreSQL
    /// connection string (`postgres://user:pass@host:port/db?sslmode=require`).
    #[arg(long, env = "PLAYFILO_DB", global = true, value_name = "PATH|URL")]
    db: Option<PathBuf>,
    /// The ref that is HEAD.
    #[arg(
        long = "ref",
        default_value = "PI_HEAD",
        global = true,
        value_name = "NAME"
    )]
    ref_name: String,
    /// Render ages against this clock (ms since the epoch) instead of the system clock.
    #[arg(long, global = true, value_name = "MS")]
    now: Option<i64>,
    #[command(subcommand)]
    command: DagCommand,
}

#[derive(Debug, Subcommand)]
enum DagCommand {
    /// The DAG around a node (the `life` tool).
    Life {
        /// Hash prefix, pi:<id>, external id or HEAD.
        #[arg(long)]
        focus_hash: Option<String>,
        /// Ancestors shown above the focus.
        #[arg(long, default_value_t = 3)]
        ancestors: usize,
        /// Whether child branches are drawn.
        #[arg(long, default_value_t = true, action = ArgAction::Set, value_name = "true|false")]
        children: bool,
        /// default, no-tools, user-only or all.
        #[arg(long, default_value = "default")]
        filter_mode: String,
        /// Max depth of the child trees.
        #[arg(long, default_value_t = 10)]
        max_depth: usize,
        /// Reference behaviour: drop a hidden child together with its whole subtree.
        #[arg(long)]
        hide_hidden_subtrees: bool,
    },
    /// One node with its budgeted context (the `recall` tool).
    Recall {
        /// Hash prefix, pi:<id>, external id or HEAD.
        hash: String,
        /// Total character budget.
        #[arg(long, default_value_t = 5000)]
        budget: usize,
        /// Per-node budget of the context.
        #[arg(long, default_value_t = 200)]
        context_budget: usize,
        /// default, no-tools, user-only or all.
        #[arg(long, default_value = "default")]
        filter_mode: String,
    },
    /// The navigation log of the current lineage (the `trace` tool), in local time.
    Trace {
        /// Number of events.
        #[arg(long, default_value_t = 15)]
        limit: usize,
        /// default, switches or all.
        #[arg(long, default_value = "default")]
        filter_mode: String,
    },
    /// One node with its parts, as JSON.
    Show {
        /// Hash prefix, pi:<id> or external id.
        hash: String,
    },
    /// The lineage ending at a node read back as pi session entries (what a resume from the
    /// memory loads), root first, one JSON object per line.
    Entries {
        /// Hash prefix, pi:<id>, external id or HEAD.
        #[arg(default_value = "HEAD")]
        hash: String,
    },
    /// Counts per role and blob type, size, refs.
    Stats,
    /// Recompute every hash and check every link; exit 1 on any problem. With `--session`, also
    /// check that a session file's entries are in the memory, each under its session parent.
    Fsck {
        /// A session file (`.jsonl`) to compare with its nodes (external id = entry id): from its
        /// first mirrored entry on, every entry of its current path must have a node hanging
        /// under its session parent's node.
        #[arg(long, value_name = "FILE")]
        session: Vec<PathBuf>,
    },
    /// Copy a whole database into an empty one, across backends (SQLite file ⇄ PostgreSQL):
    /// every blob, node, ref and action-log row as stored, so ids, refs and action ids are
    /// the same on both sides. All or nothing; the source is only read.
    Migrate {
        /// The database to read (a file path or `postgres://…`).
        #[arg(long, value_name = "PATH|URL")]
        from: String,
        /// The database to write: created if it is a missing file; must hold nothing.
        #[arg(long, value_name = "PATH|URL")]
        to: String,
    },
}

/// What the commands take from the process: home directory and clock.
#[derive(Debug, Clone)]
pub struct Env {
    /// `$HOME`.
    pub home: Option<OsString>,
    /// The wall clock in ms.
    pub now_ms: i64,
}

impl Env {
    /// Reads `HOME` and the system clock.
    pub fn from_process() -> Self {
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        Self {
            home: std::env::var_os("HOME"),
            now_ms,
        }
    }
}

/// The reference's location: `<HOME>/.playfilo/playfilo.db`.
pub fn default_db_path(home: Option<&OsString>) -> Option<PathBuf> {
    home.filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".playfilo").join("playfilo.db"))
}

/// Runs a `filo dag` command, writing its output to `out`.
pub fn run(args: DagArgs, env: &Env, out: &mut dyn Write) -> Result<ExitCode> {
    if let DagCommand::Migrate { from, to } = &args.command {
        return migrate(from, to, out);
    }
    let path = match args.db.clone() {
        Some(p) => p,
        None => default_db_path(env.home.as_ref())
            .context("cannot locate ~/.playfilo/playfilo.db: HOME is not set (use --db)")?,
    };
    let location = path.to_string_lossy().into_owned();
    let remote = filo_dag::is_postgres_url(&location);
    if matches!(args.command, DagCommand::Fsck { .. }) && !remote && path.exists() {
        // A damaged file is looked at read-only, never opened for writing.
        let diagnosis = filo_dag::diagnose(&path);
        if !diagnosis.is_ok() {
            damaged(&diagnosis, out)?;
            return Ok(ExitCode::FAILURE);
        }
    }
    let store = Store::open_location(&location, Create::Never)?;
    if matches!(
        args.command,
        DagCommand::Recall { .. } | DagCommand::Trace { .. }
    ) {
        // Their walks may stream through the whole lineage once: keep its pages out of RSS.
        store.set_streaming_reads()?;
    }
    let now = args.now.unwrap_or(env.now_ms);
    let text = match args.command {
        DagCommand::Life {
            focus_hash,
            ancestors,
            children,
            filter_mode,
            max_depth,
            hide_hidden_subtrees,
        } => {
            let opts = LifeOptions {
                ref_name: args.ref_name,
                focus: focus_hash,
                ancestors,
                children,
                filter: FilterMode::parse(&filter_mode),
                max_depth,
                descend_hidden: !hide_hidden_subtrees,
            };
            life(&store, &opts, now)?
        }
        DagCommand::Recall {
            hash,
            budget,
            context_budget,
            filter_mode,
        } => {
            let opts = RecallOptions {
                ref_name: args.ref_name,
                hash,
                budget,
                context_budget,
                filter: FilterMode::parse(&filter_mode),
            };
            recall(&store, &opts)?
        }
        DagCommand::Trace { limit, filter_mode } => {
            let opts = TraceOptions {
                ref_name: args.ref_name,
                limit,
                mode: TraceMode::parse(&filter_mode),
            };
            trace(&store, &opts, &SystemZone)?
        }
        DagCommand::Show { hash } => show(&store, &hash)?,
        DagCommand::Entries { hash } => return entries(&store, &args.ref_name, &hash, out),
        DagCommand::Stats => stats(&store)?,
        DagCommand::Fsck { session } => return fsck(&store, &session, out),
        // Answered above, before --db is opened.
        DagCommand::Migrate { from, to } => return migrate(&from, &to, out),
    };
    writeln!(out, "{text}")?;
    Ok(ExitCode::SUCCESS)
}

/// `filo dag migrate --from A --to B`.
fn migrate(from: &str, to: &str, out: &mut dyn Write) -> Result<ExitCode> {
    // The source is only read: a file is opened read-only and as it is (no journal-mode switch,
    // no layout upgrade).
    let source = if filo_dag::is_postgres_url(from) {
        Store::connect(from)
    } else {
        Store::open_read_only(from)
    }
    .with_context(|| format!("opening the source {}", filo_dag::redact(from)))?;
    let dest = Store::open_location(to, Create::IfMissing)
        .with_context(|| format!("opening the destination {}", filo_dag::redact(to)))?;
    let copied = source.copy_into(&dest)?;
    writeln!(
        out,
        "copied {} blobs, {} nodes, {} refs, {} actions from {} to {}",
        copied.blobs,
        copied.nodes,
        copied.refs,
        copied.actions,
        source.location(),
        dest.location()
    )?;
    Ok(ExitCode::SUCCESS)
}

/// `filo dag entries [HASH]`: one line per entry, each the text `load_entries`' entry serializes to.
fn entries(
    store: &Store,
    ref_name: &str,
    reference: &str,
    out: &mut dyn Write,
) -> Result<ExitCode> {
    let id = if reference == "HEAD" {
        store
            .get_ref(ref_name)?
            .with_context(|| format!("no {ref_name} set"))?
    } else {
        store.resolve(reference)?
    };
    let mut out = std::io::BufWriter::with_capacity(256 * 1024, out);
    let mut failed = None;
    store.each_entry_line(&id, &mut |line| {
        let written = out
            .write_all(line.as_bytes())
            .and_then(|()| out.write_all(b"\n"));
        failed = written.err();
        failed.is_none()
    })?;
    if let Some(e) = failed {
        return Err(e.into());
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn show(store: &Store, reference: &str) -> Result<String> {
    let id = store.resolve(reference)?;
    let node = store
        .node(&id)?
        .with_context(|| format!("node {id} not found"))?;
    let blobs = store.blobs(&node.parts)?;
    let parts: Vec<Value> = node
        .parts
        .iter()
        .map(|h| match blobs.get(h) {
            Some(b) => json!({
                "hash": h,
                "type": b.blob_type,
                "content": b.value().unwrap_or_else(|| Value::String(b.content.clone())),
                "thought_signature": b.thought_signature,
            }),
            None => json!({ "hash": h, "missing": true }),
        })
        .collect();
    let children: Vec<String> = store.children(&id)?.into_iter().map(|n| n.id).collect();
    let config = node
        .config_json
        .as_deref()
        .map(|c| serde_json::from_str::<Value>(c).unwrap_or_else(|_| Value::String(c.to_owned())));
    let value = json!({
        "id": node.id,
        "parent_id": node.parent_id,
        "role": node.role,
        "timestamp": node.timestamp,
        "external_id": node.external_id,
        "system_prompt_hash": node.system_prompt_hash,
        "config": config,
        "thought_signatures": node.thought_signatures,
        "parts": parts,
        "children": children,
    });
    Ok(serde_json::to_string_pretty(&value)?)
}

fn stats(store: &Store) -> Result<String> {
    let s = store.stats()?;
    let mut lines = Vec::new();
    lines.push(format!("nodes: {}", s.roles.values().sum::<u64>()));
    lines.extend(s.roles.iter().map(|(k, v)| format!("  {k}: {v}")));
    lines.push(format!("blobs: {}", s.blob_types.values().sum::<u64>()));
    lines.extend(s.blob_types.iter().map(|(k, v)| format!("  {k}: {v}")));
    lines.push(format!("actions: {}", s.actions));
    lines.push(format!("leaves: {}", s.leaves));
    lines.push(format!("refs: {}", s.refs.len()));
    lines.extend(s.refs.iter().map(|(k, v)| format!("  {k} -> {v}")));
    lines.push(format!("size: {} bytes", s.db_bytes));
    Ok(lines.join("\n"))
}

/// What can be read from a damaged database, and how to recover it.
fn damaged(d: &filo_dag::Diagnosis, out: &mut dyn Write) -> Result<()> {
    writeln!(
        out,
        "{}: SQLite reports this database as damaged (it was not changed)",
        d.path.display()
    )?;
    if let Some(e) = &d.open_error {
        writeln!(out, "cannot open it: {e}")?;
    } else {
        writeln!(out, "integrity check:")?;
        for line in d.integrity.iter().flat_map(|l| l.lines()) {
            writeln!(out, "  {line}")?;
        }
        writeln!(out, "readable rows:")?;
        for (table, n) in &d.tables {
            match n {
                Ok(n) => writeln!(out, "  {table}: {n}")?,
                Err(e) => writeln!(out, "  {table}: unreadable ({e})")?,
            }
        }
    }
    writeln!(out, "{}", d.recovery_hint())?;
    Ok(())
}

/// The current path of a session file (root first), read without changing the file.
fn session_path(file: &std::path::Path) -> Result<Vec<PathEntry>> {
    let manager = filo_session::SessionManager::open_read_only(file)
        .with_context(|| format!("reading the session file {}", file.display()))?;
    Ok(manager
        .branch_path(None)
        .into_iter()
        .map(|e| PathEntry {
            id: e.id.clone(),
            parent_id: e.parent_id.clone(),
        })
        .collect())
}

fn fsck(store: &Store, sessions: &[PathBuf], out: &mut dyn Write) -> Result<ExitCode> {
    let mut report = store.fsck()?;
    for file in sessions {
        let path = session_path(file)?;
        let found = store.check_session_path(&path)?;
        writeln!(
            out,
            "session {}: {} entries on its path, {} problem(s)",
            file.display(),
            path.len(),
            found.len()
        )?;
        report.problems.extend(found);
    }
    for p in &report.problems {
        writeln!(out, "{} {}: {}", p.kind, p.key, p.message)?;
    }
    let shapes: Vec<String> = report
        .shapes
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    writeln!(
        out,
        "checked {} blobs ({} playtiss skipped), {} nodes (shapes: {}): {} problem(s)",
        report.blobs_checked,
        report.blobs_skipped,
        report.nodes_checked,
        shapes.join(", "),
        report.problems.len()
    )?;
    Ok(if report.is_clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_db_lives_under_home() {
        let home = OsString::from("/home/u");
        assert_eq!(
            default_db_path(Some(&home)),
            Some(PathBuf::from("/home/u/.playfilo/playfilo.db"))
        );
        assert_eq!(default_db_path(Some(&OsString::new())), None);
        assert_eq!(default_db_path(None), None);
    }
}
