//! Long lineage walks that read nodes in rowid order wherever the file allows it.
//!
//! A recursive CTE pays two B-tree descents per ancestor (the `id` index, then the row), from the
//! root page each time. But a parent is almost always written shortly before its child, so its
//! row sits just below the child's rowid. [`walk`] therefore scans the rows below the current
//! node in descending rowid order (`SEARCH nodes USING INTEGER PRIMARY KEY`, one descent per
//! window of rows) and takes the row whose id is the expected parent. When the parent is not
//! among the next [`MAX_MISSES`] rows (interleaved sessions, a parent written later), one
//! primary-key lookup finds it and the scan goes on below it. Ids are unique, so the row found
//! either way is the parent: the result is the lineage, whatever the layout of the file. The
//! worst layout (every parent more than [`MAX_MISSES`] rows away) costs those row reads plus the
//! lookup per node, a few times the CTE's cost; files written by agents, parent right before
//! child, cost one sequential row read per node.

use std::collections::HashSet;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, Row, params};

use crate::db::{Cols, Db, P};
use crate::error::{DagError, Result};
use crate::store::Store;

/// The deepest lineage a walk follows before it fails with [`DagError::TooDeep`] (see
/// [`Store::set_max_depth`]): far beyond any real session, small enough that a forged chain
/// cannot hold a walk for long.
pub const DEFAULT_MAX_DEPTH: usize = 10_000_000;

/// Ids a [`Guard`] remembers exactly (about 0.5 MiB) before it switches to Brent's algorithm.
const EXACT: usize = 4_096;

/// Watches the ids a walk meets, nearest first, and fails on the first sign of a cycle or on a
/// chain deeper than its bound. The first [`EXACT`] ids are kept in a set, so a cycle entered
/// within them is caught at its first repeated node; past them, Brent's cycle detection keeps one
/// id and catches any cycle within twice its length, in constant memory.
pub(crate) struct Guard {
    start: String,
    max: usize,
    steps: usize,
    seen: HashSet<String>,
    /// Brent's checkpoint, the number of steps since it was set, and when it moves next.
    mark: String,
    since: usize,
    power: usize,
}

impl Guard {
    pub(crate) fn new(start: &str, max: usize) -> Self {
        Self {
            start: start.to_owned(),
            max,
            steps: 0,
            seen: HashSet::new(),
            mark: String::new(),
            since: 0,
            power: 1,
        }
    }

    /// Records the next node of the walk; an error when it closes a cycle or is one too many.
    pub(crate) fn step(&mut self, id: &str) -> Result<()> {
        self.steps += 1;
        if self.steps > self.max {
            return Err(DagError::TooDeep {
                start: self.start.clone(),
                node: id.to_owned(),
                limit: self.max,
            });
        }
        if self.steps <= EXACT {
            if !self.seen.insert(id.to_owned()) {
                return Err(DagError::Cycle {
                    node: id.to_owned(),
                });
            }
            if self.steps == EXACT {
                self.mark = id.to_owned();
            }
            return Ok(());
        }
        if id == self.mark || self.seen.contains(id) {
            return Err(DagError::Cycle {
                node: id.to_owned(),
            });
        }
        self.since += 1;
        if self.since == self.power {
            self.mark.clear();
            self.mark.push_str(id);
            self.power = self.power.saturating_mul(2);
            self.since = 0;
        }
        Ok(())
    }
}

/// Rows fetched per range query.
const WINDOW: i64 = 512;

/// Rows read without meeting the expected parent before it is looked up by id instead.
const MAX_MISSES: usize = 64;

/// The two statements of a walk over the same columns: column 0 is the rowid, 1 the id, 2 the
/// parent id; the rest is the caller's.
pub(crate) struct WalkSql {
    /// One node by id (`?1`).
    pub(crate) by_id: &'static str,
    /// The rows with `?2 <= rowid < ?1`, highest rowid first.
    pub(crate) window: &'static str,
}

/// A text column, borrowed from the row (`None` for NULL or a non-text value).
pub(crate) fn text<'r>(row: &'r Row<'_>, i: usize) -> Result<Option<&'r str>> {
    Ok(match row.get_ref(i)? {
        ValueRef::Text(t) => std::str::from_utf8(t).ok(),
        _ => None,
    })
}

/// The first page of a PostgreSQL walk; each next page is four times larger, up to
/// [`PG_PAGE_MAX`]. A walk that stops early reads little; a whole lineage takes few queries.
const PG_PAGE_FIRST: usize = 256;
const PG_PAGE_MAX: usize = 16_384;

impl Store {
    /// Calls `visit` on `start` and then on each ancestor, nearest first, with the columns of
    /// `q` (0 the insertion order, 1 id, 2 parent id, 3 role, then `WALK_ENTRIES`'s), stopping
    /// at a root, at a missing parent, after `limit` nodes, or when `visit` returns `false`.
    /// SQLite reads in rowid order ([`walk`]); PostgreSQL pages through the lineage CTE.
    ///
    /// The graph is untrusted: a node met twice fails with [`DagError::Cycle`], a lineage
    /// deeper than [`Store::max_depth`] with [`DagError::TooDeep`] (see [`Guard`]).
    pub(crate) fn walk(
        &self,
        q: &WalkSql,
        start: &str,
        limit: usize,
        mut visit: impl FnMut(&dyn Cols) -> Result<bool>,
    ) -> Result<()> {
        let mut guard = Guard::new(start, self.max_depth());
        let mut visit = move |row: &dyn Cols| -> Result<bool> {
            guard.step(row.text(1)?.unwrap_or_default())?;
            visit(row)
        };
        let pg = match &self.db {
            Db::Sqlite(conn) => return walk(conn, q, start, limit, |row| visit(row)),
            Db::Postgres(pg) => pg,
        };
        let mut next = Some(start.to_owned());
        let mut left = limit;
        let mut page = PG_PAGE_FIRST;
        while let Some(id) = next.take() {
            let want = page.min(left);
            if want == 0 {
                break;
            }
            let mut seen = 0usize;
            let mut stopped = false;
            let mut parent = None;
            let n = i64::try_from(want).unwrap_or(i64::MAX);
            pg.each(
                crate::sql::PG_WALK,
                &[P::Text(&id), P::Int(n)],
                &mut |row| {
                    seen += 1;
                    parent = row.opt_string(2)?;
                    if !visit(row)? {
                        stopped = true;
                        return Ok(false);
                    }
                    Ok(true)
                },
            )?;
            left -= seen;
            if stopped || seen < want {
                break;
            }
            next = parent;
            page = (page * 4).min(PG_PAGE_MAX);
        }
        Ok(())
    }
}

/// Calls `visit` on `start` and then on each ancestor, nearest first, stopping at a root, at a
/// missing parent, after `limit` nodes, or when `visit` returns `false`.
pub(crate) fn walk(
    conn: &Connection,
    q: &WalkSql,
    start: &str,
    limit: usize,
    mut visit: impl FnMut(&Row<'_>) -> Result<bool>,
) -> Result<()> {
    let mut by_id = conn.prepare_cached(q.by_id)?;
    let mut window = conn.prepare_cached(q.window)?;
    let mut expected = start.to_owned();
    // Where the range scan resumes (exclusive); `None`: look the expected node up by id.
    let mut below: Option<i64> = None;
    let mut misses = 0usize;
    let mut steps = 0usize;
    // Takes a found node: visits it and sets the next expected id. `false` ends the walk.
    let mut take = |row: &Row<'_>, expected: &mut String| -> Result<bool> {
        steps += 1;
        if !visit(row)? || steps >= limit {
            return Ok(false);
        }
        let Some(parent) = text(row, 2)? else {
            return Ok(false);
        };
        expected.clear();
        expected.push_str(parent);
        Ok(true)
    };
    if limit == 0 {
        return Ok(());
    }
    loop {
        let Some(top) = below else {
            let mut rows = by_id.query([expected.as_str()])?;
            let Some(row) = rows.next()? else {
                return Ok(());
            };
            let rowid: i64 = row.get(0)?;
            if !take(row, &mut expected)? {
                return Ok(());
            }
            below = Some(rowid);
            misses = 0;
            continue;
        };
        let mut rows = window.query(params![top, top.saturating_sub(WINDOW)])?;
        let mut last = None;
        while let Some(row) = rows.next()? {
            let rowid: i64 = row.get(0)?;
            last = Some(rowid);
            if text(row, 1)? == Some(expected.as_str()) {
                if !take(row, &mut expected)? {
                    return Ok(());
                }
                misses = 0;
            } else {
                misses += 1;
                if misses >= MAX_MISSES {
                    break;
                }
            }
        }
        below = match last {
            Some(rowid) if misses < MAX_MISSES => Some(rowid),
            _ => None,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::WALK_ROLES;
    use crate::store::Store;
    use crate::test_support::{Lcg, insert_node as insert};

    fn walked(store: &Store, head: &str, limit: usize) -> Vec<String> {
        let mut out = Vec::new();
        walk(store.sqlite().unwrap(), &WALK_ROLES, head, limit, |row| {
            out.push(text(row, 1)?.unwrap_or_default().to_owned());
            Ok(true)
        })
        .unwrap();
        out
    }

    fn expected(store: &Store, head: &str, limit: usize) -> Vec<String> {
        store
            .lineage_cte(head, limit)
            .unwrap()
            .into_iter()
            .map(|n| n.id)
            .collect()
    }

    /// Trees written in every order a file can hold: chains in sequence, sessions interleaved,
    /// parents written long before or after their children, missing parents.
    #[test]
    fn the_walk_is_the_lineage_whatever_the_rowid_order() {
        let mut rng = Lcg(7);
        let n = 3_000;
        let parent_of = |i: usize, rng: &mut Lcg| -> Option<String> {
            match rng.below(20) {
                0 if i > 0 => Some(format!("n{}", rng.below(i))),
                1 => None,
                2 => Some("missing".to_owned()),
                _ if i > 0 => Some(format!("n{}", i - 1)),
                _ => None,
            }
        };
        let parents: Vec<Option<String>> = (0..n).map(|i| parent_of(i, &mut rng)).collect();
        // Insertion orders: sequential, two interleaved halves, sequential blocks shuffled.
        let sequential: Vec<usize> = (0..n).collect();
        let interleaved: Vec<usize> = (0..n / 2).flat_map(|i| [i, i + n / 2]).collect();
        let mut blocks: Vec<Vec<usize>> = (0..n)
            .collect::<Vec<_>>()
            .chunks(100)
            .map(<[usize]>::to_vec)
            .collect();
        for i in (1..blocks.len()).rev() {
            blocks.swap(i, rng.below(i + 1));
        }
        let shuffled: Vec<usize> = blocks.into_iter().flatten().collect();
        for order in [sequential, interleaved, shuffled] {
            let store = Store::open_in_memory().unwrap();
            for &i in &order {
                insert(&store, &format!("n{i}"), parents[i].as_deref());
            }
            for k in 0..60 {
                let head = format!("n{}", rng.below(n));
                let limit = if k % 5 == 0 {
                    1 + rng.below(50)
                } else {
                    usize::MAX
                };
                assert_eq!(
                    walked(&store, &head, limit),
                    expected(&store, &head, limit),
                    "{head} limit {limit}"
                );
            }
            assert!(walked(&store, "absent", usize::MAX).is_empty());
        }
    }

    #[test]
    fn a_forged_cycle_stops_at_the_limit() {
        let store = Store::open_in_memory().unwrap();
        insert(&store, "a", Some("b"));
        insert(&store, "b", Some("a"));
        assert_eq!(walked(&store, "a", 5), ["a", "b", "a", "b", "a"]);
        assert_eq!(walked(&store, "a", 5), expected(&store, "a", 5));
        assert!(walked(&store, "a", 0).is_empty());
    }
}
