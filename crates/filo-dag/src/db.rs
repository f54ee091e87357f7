//! The two backends behind [`Store`]: SQLite (a file, the reference's format) and PostgreSQL
//! (several hosts). Code above this module is written once: a statement is a [`Q`] with both
//! texts, its parameters are [`P`] values, and a row is read through [`Cols`].
//!
//! Transactions: [`Store::write`] is SQLite's `BEGIN IMMEDIATE` or, on PostgreSQL, a transaction
//! that first takes the DAG's advisory write lock, so writers are serialised on both backends
//! and a compare-and-set of a ref means the same thing. [`Store::read`] is a snapshot (a
//! deferred transaction; `REPEATABLE READ READ ONLY`). Either nests: an inner call joins the
//! outer transaction.

use std::cell::Cell;

use rusqlite::Connection;
use rusqlite::types::{ToSqlOutput, Value, ValueRef};

use crate::error::{DagError, Result};
use crate::pg::Pg;
use crate::store::Store;

/// One statement in both dialects (`?N` and `$N` parameters).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Q {
    pub(crate) sqlite: &'static str,
    pub(crate) pg: &'static str,
}

/// A statement parameter.
#[derive(Debug, Clone, Copy)]
pub(crate) enum P<'a> {
    Text(&'a str),
    OptText(Option<&'a str>),
    Int(i64),
    /// A list of strings: a JSON array for SQLite's `json_each`, a `text[]` for PostgreSQL.
    List(&'a [&'a str]),
    /// A list or NULL.
    OptList(Option<&'a [&'a str]>),
}

/// A row, whatever the backend: text and integer columns by index.
pub(crate) trait Cols {
    /// A text column (`None` for NULL).
    fn text(&self, i: usize) -> Result<Option<&str>>;
    /// An integer column (`None` for NULL).
    fn int(&self, i: usize) -> Result<Option<i64>>;

    /// A text column that must not be NULL (NULL reads as empty).
    fn string(&self, i: usize) -> Result<String> {
        Ok(self.text(i)?.unwrap_or_default().to_owned())
    }

    /// A nullable text column, owned.
    fn opt_string(&self, i: usize) -> Result<Option<String>> {
        Ok(self.text(i)?.map(str::to_owned))
    }

    /// An integer column that must not be NULL (NULL reads as 0).
    fn i64(&self, i: usize) -> Result<i64> {
        Ok(self.int(i)?.unwrap_or(0))
    }
}

impl Cols for rusqlite::Row<'_> {
    fn text(&self, i: usize) -> Result<Option<&str>> {
        Ok(match self.get_ref(i)? {
            // Every blob's content passes here (tens of MB for a long lineage): the vectorised
            // check accepts exactly what `std::str::from_utf8` accepts, several times faster.
            ValueRef::Text(t) => simdutf8::basic::from_utf8(t).ok(),
            _ => None,
        })
    }

    fn int(&self, i: usize) -> Result<Option<i64>> {
        Ok(match self.get_ref(i)? {
            ValueRef::Integer(v) => Some(v),
            // SQLite is typeless: a timestamp written as text by another tool still reads.
            ValueRef::Real(f) => Some(f as i64),
            ValueRef::Text(t) => std::str::from_utf8(t).ok().and_then(|s| s.parse().ok()),
            ValueRef::Null | ValueRef::Blob(_) => None,
        })
    }
}

/// Where a [`Store`] keeps its data.
#[derive(Debug)]
pub(crate) enum Db {
    Sqlite(Connection),
    Postgres(Box<Pg>),
}

/// How deep the current transaction is (0: none).
#[derive(Debug, Default)]
pub(crate) struct TxDepth(Cell<u32>);

/// The parameters as SQLite values, text borrowed (lists become JSON arrays for `json_each`).
fn sqlite_params<'a>(params: &[P<'a>]) -> Vec<ToSqlOutput<'a>> {
    let text = |s: &'a str| ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes()));
    let list = |l: &[&str]| {
        ToSqlOutput::Owned(Value::Text(
            serde_json::to_string(l).unwrap_or_else(|_| "[]".into()),
        ))
    };
    params
        .iter()
        .map(|p| match *p {
            P::Text(s) => text(s),
            P::OptText(s) => s.map_or(ToSqlOutput::Owned(Value::Null), text),
            P::Int(i) => ToSqlOutput::Owned(Value::Integer(i)),
            P::List(l) => list(l),
            P::OptList(l) => l.map_or(ToSqlOutput::Owned(Value::Null), list),
        })
        .collect()
}

impl Store {
    /// The SQLite connection, `None` on PostgreSQL.
    pub(crate) fn sqlite(&self) -> Option<&Connection> {
        match &self.db {
            Db::Sqlite(c) => Some(c),
            Db::Postgres(_) => None,
        }
    }

    /// True when this store lives in PostgreSQL.
    pub fn is_postgres(&self) -> bool {
        matches!(self.db, Db::Postgres(_))
    }

    /// Runs `q` and calls `visit` on each row until it returns `false`.
    pub(crate) fn each(
        &self,
        q: &Q,
        params: &[P<'_>],
        mut visit: impl FnMut(&dyn Cols) -> Result<bool>,
    ) -> Result<()> {
        match &self.db {
            Db::Sqlite(conn) => {
                let mut stmt = conn.prepare_cached(q.sqlite)?;
                let values = sqlite_params(params);
                let mut rows = stmt.query(rusqlite::params_from_iter(values.iter()))?;
                while let Some(row) = rows.next()? {
                    if !visit(row)? {
                        break;
                    }
                }
                Ok(())
            }
            Db::Postgres(pg) => pg.each(q.pg, params, &mut visit),
        }
    }

    /// Every row of `q`, mapped.
    pub(crate) fn rows<T>(
        &self,
        q: &Q,
        params: &[P<'_>],
        mut map: impl FnMut(&dyn Cols) -> Result<T>,
    ) -> Result<Vec<T>> {
        let mut out = Vec::new();
        self.each(q, params, |row| {
            out.push(map(row)?);
            Ok(true)
        })?;
        Ok(out)
    }

    /// The first row of `q`, mapped; `None` when there is none.
    pub(crate) fn first<T>(
        &self,
        q: &Q,
        params: &[P<'_>],
        map: impl FnOnce(&dyn Cols) -> Result<T>,
    ) -> Result<Option<T>> {
        let mut map = Some(map);
        let mut out = None;
        self.each(q, params, |row| {
            if let Some(map) = map.take() {
                out = Some(map(row)?);
            }
            Ok(false)
        })?;
        Ok(out)
    }

    /// Runs a statement without rows; returns how many rows it changed.
    pub(crate) fn exec(&self, q: &Q, params: &[P<'_>]) -> Result<u64> {
        match &self.db {
            Db::Sqlite(conn) => {
                let values = sqlite_params(params);
                let n = conn
                    .prepare_cached(q.sqlite)?
                    .execute(rusqlite::params_from_iter(values.iter()))?;
                Ok(u64::try_from(n).unwrap_or(0))
            }
            Db::Postgres(pg) => pg.exec(q.pg, params),
        }
    }

    /// Runs an insert and returns the new row's id (SQLite's `last_insert_rowid`; the PostgreSQL
    /// text ends in `RETURNING id`).
    pub(crate) fn insert_id(&self, q: &Q, params: &[P<'_>]) -> Result<i64> {
        match &self.db {
            Db::Sqlite(conn) => {
                self.exec(q, params)?;
                Ok(conn.last_insert_rowid())
            }
            Db::Postgres(_) => self
                .first(q, params, |r| r.i64(0))?
                .ok_or_else(|| DagError::Postgres("an insert returned no id".into())),
        }
    }

    /// Runs `f` inside one write transaction; commits on `Ok`, rolls back on `Err`.
    pub(crate) fn write<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        self.transaction(true, f)
    }

    /// Runs `f` inside one read transaction (a consistent snapshot for multi-query reads).
    pub(crate) fn read<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        self.transaction(false, f)
    }

    fn transaction<T>(&self, write: bool, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let depth = self.depth.0.get();
        if depth > 0 {
            // Inside another transaction: join it (a write inside a read is refused by the
            // backend itself: SQLite's deferred read upgrades, PostgreSQL's read-only refuses).
            self.depth.0.set(depth + 1);
            let out = f();
            self.depth.0.set(depth);
            return out;
        }
        match &self.db {
            Db::Sqlite(conn) => conn.execute_batch(if write {
                "BEGIN IMMEDIATE"
            } else {
                "BEGIN DEFERRED"
            })?,
            Db::Postgres(pg) => pg.begin(write)?,
        }
        self.depth.0.set(1);
        let out = f();
        self.depth.0.set(0);
        let end = match (&self.db, out.is_ok()) {
            (Db::Sqlite(conn), true) => conn.execute_batch("COMMIT").map_err(DagError::from),
            (Db::Sqlite(conn), false) => conn.execute_batch("ROLLBACK").map_err(DagError::from),
            (Db::Postgres(pg), ok) => pg.end(ok),
        };
        match (out, end) {
            (Ok(v), Ok(())) => Ok(v),
            (Ok(_), Err(e)) => {
                // A failed COMMIT leaves SQLite's transaction open: end it, keep the first error.
                if let Db::Sqlite(conn) = &self.db
                    && !conn.is_autocommit()
                {
                    let _ = conn.execute_batch("ROLLBACK");
                }
                Err(e)
            }
            (Err(e), _) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Cols;

    /// A text column reads as text exactly when `std::str::from_utf8` accepts its bytes: short
    /// and long (the vectorised check works in 64-byte blocks), valid and broken at every place.
    #[test]
    fn text_columns_are_checked_as_std_checks_utf8() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let mut stmt = conn.prepare("SELECT CAST(?1 AS TEXT)").unwrap();
        let long = "plain ascii, then é, 字, 🙂 and more ascii ".repeat(9);
        let mut cases: Vec<Vec<u8>> = vec![
            Vec::new(),
            b"ascii".to_vec(),
            "é字🙂".as_bytes().to_vec(),
            long.as_bytes().to_vec(),
            vec![0xff],
            vec![0xc3],
            vec![0xed, 0xa0, 0x80],
            vec![0xf4, 0x90, 0x80, 0x80],
        ];
        for at in [0, 1, 63, 64, 65, 200, long.len() - 1] {
            for bad in [0x80, 0xc0, 0xff] {
                let mut b = long.as_bytes().to_vec();
                b[at] = bad;
                cases.push(b);
            }
            // A multi-byte character cut by the end of a block.
            let mut b = long.as_bytes()[..at].to_vec();
            b.extend_from_slice(&"🙂".as_bytes()[..2]);
            cases.push(b);
        }
        for bytes in cases {
            let got = stmt
                .query_row([&bytes], |r| {
                    Ok(Cols::text(r, 0).unwrap().map(str::to_owned))
                })
                .unwrap();
            let want = std::str::from_utf8(&bytes).ok().map(str::to_owned);
            assert_eq!(got, want, "{bytes:?}");
        }
    }
}
