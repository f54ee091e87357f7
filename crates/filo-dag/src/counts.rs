//! `life`'s descendant counts on SQLite: for every child of a node, how many nodes lie below it.
//!
//! The recursive CTE ([`crate::sql::DESCENDANT_COUNTS`]) pays, per descendant, an
//! `idx_nodes_parent` descent plus a row read (the step needs the child's `id`, which the index
//! does not hold) and its queue: ~1 µs a node, 4 ms for 1,000 siblings of 3 descendants each.
//! But descendants are nearly always written after their ancestors, so [`descendant_counts`]
//! reads the rows from the first child on in rowid order (one sequential pass, ~0.1–0.3 µs a
//! row) and grows the subtrees as it goes: a row joins when its parent already has. When few
//! rows lie below the first child, the pass starts at the first row of the table instead.
//!
//! The pass can miss a descendant written before its parent joined, below where it started or
//! beyond where it stopped (it stops after [`SCAN_SLACK`] rows plus four per node taken, so that
//! a subtree spread thinly over a large file costs no more than the index walk). When it read the
//! whole table, a missed descendant is one of the rows it passed over, whose parent ids it kept.
//! Otherwise every node it took is checked against the index: one statement counts the children
//! of the whole batch in `idx_nodes_parent` (the index alone, no row read), and only when that
//! total differs from what the pass found are they counted one by one. A node with more children
//! than the pass found, and a child of the parent that the pass never reached, is then expanded
//! level by level through the index, the exact way. Whatever the layout of the file, the result
//! is every child's number of descendants, as the CTE gives it.
//!
//! `life` passes its focus as `except`: it shows no count for the focus, whose subtree (the
//! rest of a long lineage when the focus is an old node) is then not walked at all.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use rusqlite::types::ValueRef;
use rusqlite::{Connection, Row};

use crate::error::Result;
use crate::recover::PartHasher;
use crate::sql;

/// Rows the pass reads beyond four per node taken before it gives up.
const SCAN_SLACK: usize = 1_024;

/// Nodes per statement of the checks and the expansion (one JSON array parameter each).
const BATCH: usize = 4_096;

/// [`SCAN_SLACK`] and [`BATCH`]; the tests make them small to reach every branch.
#[derive(Debug, Clone, Copy)]
struct Tuning {
    slack: usize,
    batch: usize,
}

const TUNING: Tuning = Tuning {
    slack: SCAN_SLACK,
    batch: BATCH,
};

/// No slot (the end of a chain of slots whose ids share a hash).
const NONE: u32 = u32::MAX;

fn hash_of(id: &[u8]) -> u64 {
    let mut h = PartHasher::default();
    h.write(id);
    h.finish()
}

/// The subtrees found so far: every node once, with the child of the focus's parent it is under.
/// Ids live back to back in one buffer, found through their hash (no allocation per node).
#[derive(Default)]
struct Forest {
    /// Id hash → the last slot added with that hash.
    heads: HashMap<u64, u32, BuildHasherDefault<PartHasher>>,
    /// Slot → the previous slot with the same id hash, or [`NONE`].
    next: Vec<u32>,
    /// Every id (UTF-8: any other id makes the caller use the CTE), back to back.
    text: String,
    /// Slot → where its id ends in `text` (it starts where the previous one ends).
    ends: Vec<usize>,
    /// Slot → subtree (index into `roots`).
    root: Vec<u32>,
    /// Slot → children found by the pass.
    found: Vec<u32>,
    /// Subtree → its top node's slot and its number of nodes (itself included).
    roots: Vec<(u32, u64)>,
}

impl Forest {
    fn len(&self) -> usize {
        self.ends.len()
    }

    fn id(&self, slot: u32) -> &str {
        let slot = slot as usize;
        let start = slot.checked_sub(1).map_or(0, |p| self.ends[p]);
        &self.text[start..self.ends[slot]]
    }

    fn find(&self, id: &[u8]) -> Option<u32> {
        let mut slot = *self.heads.get(&hash_of(id))?;
        while slot != NONE {
            if self.id(slot).as_bytes() == id {
                return Some(slot);
            }
            slot = self.next[slot as usize];
        }
        None
    }

    /// Adds a node under subtree `root` (a new subtree when `None`); `None` if it is already in.
    fn add(&mut self, id: &str, root: Option<u32>) -> Option<u32> {
        if self.find(id.as_bytes()).is_some() {
            return None;
        }
        let slot = u32::try_from(self.len()).ok().filter(|&s| s != NONE)?;
        let root = match root {
            Some(r) => r,
            None => {
                self.roots.push((slot, 0));
                u32::try_from(self.roots.len() - 1).ok()?
            }
        };
        let previous = self.heads.insert(hash_of(id.as_bytes()), slot);
        self.next.push(previous.unwrap_or(NONE));
        self.text.push_str(id);
        self.ends.push(self.text.len());
        self.root.push(root);
        self.found.push(0);
        self.roots[root as usize].1 += 1;
        Some(slot)
    }

    fn into_counts(self) -> HashMap<String, u64> {
        self.roots
            .iter()
            .map(|&(slot, n)| (self.id(slot).to_owned(), n - 1))
            .collect()
    }
}

/// The id of a row as text, `Err(())` when it is not UTF-8 text or holds a NUL (such an id goes
/// through `json_each` in the checks, which might not give it back byte for byte: the caller
/// falls back to the CTE).
fn id_text<'r>(row: &'r Row<'_>, i: usize) -> Result<std::result::Result<&'r str, ()>> {
    Ok(match row.get_ref(i)? {
        ValueRef::Text(t) if memchr::memchr(0, t).is_none() => {
            std::str::from_utf8(t).map_err(|_| ())
        }
        _ => Err(()),
    })
}

/// A text column's bytes (empty for anything else).
fn row_bytes<'r>(row: &'r Row<'_>, i: usize) -> Result<&'r [u8]> {
    Ok(match row.get_ref(i)? {
        ValueRef::Text(t) => t,
        _ => &[],
    })
}

/// A parent id as bytes (`None` for NULL or a non-text value, which matches no id).
fn parent_bytes<'r>(row: &'r Row<'_>, i: usize) -> Result<Option<&'r [u8]>> {
    Ok(match row.get_ref(i)? {
        ValueRef::Text(t) => Some(t),
        _ => None,
    })
}

/// For every child of `parent` but `except`: its number of descendants (`except`'s subtree, the
/// focus's in `life`, which shows no count for it, is not walked). `None` when it meets an id that
/// is not UTF-8 text or holds a NUL (the caller then runs the CTE, which compares raw values).
pub(crate) fn descendant_counts(
    conn: &Connection,
    parent: &str,
    except: Option<&str>,
) -> Result<Option<HashMap<String, u64>>> {
    counts_with(conn, parent, except, TUNING, &mut Route::default())
}

/// How a count was reached (the tests check that they reach every branch).
#[derive(Debug, Default, Clone, Copy)]
struct Route {
    /// The pass read the whole table.
    whole: bool,
    /// Nodes expanded through the index after the pass.
    expanded: usize,
}

fn counts_with(
    conn: &Connection,
    parent: &str,
    except: Option<&str>,
    tuning: Tuning,
    route: &mut Route,
) -> Result<Option<HashMap<String, u64>>> {
    let Tuning { slack, batch } = tuning;
    let mut kids: Vec<i64> = Vec::new();
    {
        let mut stmt = conn.prepare_cached(sql::CHILD_ROWIDS)?;
        let mut rows = stmt.query([parent])?;
        while let Some(row) = rows.next()? {
            kids.push(row.get(0)?);
        }
    }
    let Some(&first) = kids.first() else {
        return Ok(Some(HashMap::new()));
    };
    // Few rows below the first child: read them too, and the pass sees the whole table.
    let lowest: i64 = conn
        .prepare_cached(sql::NODES_FIRST_ROWID)?
        .query_row([], |r| r.get::<_, Option<i64>>(0))?
        .unwrap_or(first);
    let below = usize::try_from(first.saturating_sub(lowest)).unwrap_or(usize::MAX);
    let start = if below <= slack + 2 * kids.len() {
        lowest
    } else {
        first
    };
    let mut forest = Forest::default();
    // Room for a few descendants per child before the first rehash.
    forest.heads.reserve(4 * kids.len());
    let allowance = usize::try_from(first - start).unwrap_or(usize::MAX);
    let kid = Kid { parent, except };
    let Some(pass) = scan(conn, kid, start, allowance + slack, &mut forest)? else {
        return Ok(None);
    };
    // The nodes the pass took; everything added from here on is expanded exactly.
    let scanned = forest.len();
    let mut frontier: Vec<u32> = Vec::new();
    let unreached: Vec<i64> = kids.into_iter().filter(|&r| r > pass.last).collect();
    for chunk in unreached.chunks(batch) {
        let list = serde_json::to_string(chunk).unwrap_or_else(|_| "[]".into());
        let mut stmt = conn.prepare_cached(sql::IDS_BY_ROWIDS)?;
        let mut rows = stmt.query([list])?;
        while let Some(row) = rows.next()? {
            let Ok(id) = id_text(row, 0)? else {
                return Ok(None);
            };
            if Some(id) != except {
                frontier.extend(forest.add(id, None));
            }
        }
    }
    if start == lowest && pass.last == i64::MAX {
        // Every row was read: a child the pass missed was read before its parent joined.
        for range in &pass.skipped {
            if let Some(slot) = forest.find(&pass.parents[range.clone()]) {
                frontier.push(slot);
            }
        }
        frontier.sort_unstable();
        frontier.dedup();
    } else {
        // Rows were left unread: check every node the pass took against the index.
        for start in (0..scanned).step_by(batch) {
            check(
                conn,
                &forest,
                start..(start + batch).min(scanned),
                &mut frontier,
            )?;
        }
    }
    route.whole = start == lowest && pass.last == i64::MAX;
    route.expanded = frontier.len();
    if !expand(conn, &mut forest, frontier, batch)? {
        return Ok(None);
    }
    // Met below itself, the parent is on a forged cycle (the forest takes every node once, so
    // the pass ended all the same).
    if forest.find(parent.as_bytes()).is_some() {
        return Err(crate::error::DagError::Cycle {
            node: parent.to_owned(),
        });
    }
    Ok(Some(forest.into_counts()))
}

/// What the sequential pass saw besides the nodes it took.
struct Pass {
    /// The last rowid read (`i64::MAX` when it read to the end of the table).
    last: i64,
    /// The parent ids of the rows it did not take (their parent had not joined when they were
    /// read), as ranges of `parents`.
    skipped: Vec<std::ops::Range<usize>>,
    parents: Vec<u8>,
}

/// Pushes onto `frontier` the nodes of `slots` that have more children than the pass found. The
/// pass never finds more than there are, so equal totals mean every node's count is right: one
/// index-only statement for the batch, and one more for the batches where some are missing.
fn check(
    conn: &Connection,
    forest: &Forest,
    slots: std::ops::Range<usize>,
    frontier: &mut Vec<u32>,
) -> Result<()> {
    let ids: Vec<&str> = slots
        .clone()
        .filter_map(|s| u32::try_from(s).ok())
        .map(|s| forest.id(s))
        .collect();
    let list = serde_json::to_string(&ids).unwrap_or_else(|_| "[]".into());
    let found: u64 = forest.found[slots.clone()]
        .iter()
        .map(|&n| u64::from(n))
        .sum();
    let total: i64 = conn
        .prepare_cached(sql::CHILDREN_TOTAL)?
        .query_row([&list], |r| r.get(0))?;
    if u64::try_from(total).ok() == Some(found) {
        return Ok(());
    }
    let mut stmt = conn.prepare_cached(sql::CHILD_COUNTS)?;
    let mut rows = stmt.query([&list])?;
    while let Some(row) = rows.next()? {
        let key = usize::try_from(row.get::<_, i64>(0)?).unwrap_or(usize::MAX);
        let count: i64 = row.get(1)?;
        if let Some(slot) = key.checked_add(slots.start).filter(|s| slots.contains(s))
            && i64::from(forest.found[slot]) != count
        {
            frontier.extend(u32::try_from(slot).ok());
        }
    }
    Ok(())
}

/// Which rows start a subtree: those under `parent`, but `except`.
#[derive(Clone, Copy)]
struct Kid<'a> {
    parent: &'a str,
    except: Option<&'a str>,
}

/// The sequential pass from rowid `start`; `None` for an id that is not UTF-8 text.
/// It stops once it has read `allowance` rows plus four per node taken.
fn scan(
    conn: &Connection,
    kid: Kid<'_>,
    start: i64,
    allowance: usize,
    forest: &mut Forest,
) -> Result<Option<Pass>> {
    let mut stmt = conn.prepare_cached(sql::ROWS_FROM_ROWID)?;
    let mut rows = stmt.query([start])?;
    let mut pass = Pass {
        last: start.saturating_sub(1),
        skipped: Vec::new(),
        parents: Vec::new(),
    };
    let mut read = 0usize;
    while let Some(row) = rows.next()? {
        if read >= allowance + 4 * forest.len() {
            return Ok(Some(pass));
        }
        read += 1;
        pass.last = row.get(0)?;
        let Some(parent_id) = parent_bytes(row, 2)? else {
            continue;
        };
        let root = if parent_id == kid.parent.as_bytes() {
            if let Some(e) = kid.except
                && e.as_bytes() == row_bytes(row, 1)?
            {
                continue;
            }
            None
        } else if let Some(p) = forest.find(parent_id) {
            Some((p, forest.root[p as usize]))
        } else {
            let at = pass.parents.len();
            pass.parents.extend_from_slice(parent_id);
            pass.skipped.push(at..pass.parents.len());
            continue;
        };
        let Ok(id) = id_text(row, 1)? else {
            return Ok(None);
        };
        if forest.add(id, root.map(|(_, r)| r)).is_some()
            && let Some((p, _)) = root
        {
            forest.found[p as usize] += 1;
        }
    }
    pass.last = i64::MAX;
    Ok(Some(pass))
}

/// Adds every descendant of the `frontier` nodes through the index, level by level; `false` for
/// an id that is not UTF-8 text.
fn expand(
    conn: &Connection,
    forest: &mut Forest,
    mut frontier: Vec<u32>,
    batch: usize,
) -> Result<bool> {
    while !frontier.is_empty() {
        let mut next = Vec::new();
        for chunk in frontier.chunks(batch) {
            let ids: Vec<&str> = chunk.iter().map(|&s| forest.id(s)).collect();
            let list = serde_json::to_string(&ids).unwrap_or_else(|_| "[]".into());
            let mut stmt = conn.prepare_cached(sql::CHILD_IDS)?;
            let mut rows = stmt.query([list])?;
            let mut found: Vec<(usize, Box<str>)> = Vec::new();
            while let Some(row) = rows.next()? {
                let key = usize::try_from(row.get::<_, i64>(0)?).unwrap_or(usize::MAX);
                let Ok(id) = id_text(row, 1)? else {
                    return Ok(false);
                };
                found.push((key, id.into()));
            }
            drop(rows);
            for (key, id) in found {
                if let Some(&p) = chunk.get(key) {
                    let root = forest.root[p as usize];
                    next.extend(forest.add(&id, Some(root)));
                }
            }
        }
        frontier = next;
    }
    Ok(true)
}

#[cfg(test)]
#[path = "counts_tests.rs"]
mod tests;
