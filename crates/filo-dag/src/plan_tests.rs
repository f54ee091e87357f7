//! `EXPLAIN QUERY PLAN` of every read-path statement: none may scan `nodes` or `blobs` (a full
//! scan makes life, recall and trace slower as the database grows), with no statistics and with
//! the statistics `ANALYZE` would write for a long lineage and for a bushy tree.

use rusqlite::Connection;

use crate::sql;
use crate::store::Store;

/// The names under which a statement refers to the tables that must never be scanned.
fn guarded_names(sql: &str) -> Vec<String> {
    const KEYWORDS: &[&str] = &[
        "WHERE", "ON", "JOIN", "CROSS", "LEFT", "INNER", "ORDER", "GROUP", "LIMIT", "UNION",
    ];
    let tokens: Vec<&str> = sql
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|t| !t.is_empty())
        .collect();
    let mut names = vec!["nodes".to_owned(), "blobs".to_owned()];
    for pair in tokens.windows(2) {
        let alias = pair[1];
        if matches!(pair[0], "nodes" | "blobs")
            && !KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(alias))
        {
            names.push(alias.to_owned());
        }
    }
    names
}

fn plan(conn: &Connection, sql: &str) -> Vec<String> {
    let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
    // Unbound parameters are NULL; the plan does not depend on their values.
    let nulls = vec![rusqlite::types::Null; stmt.parameter_count()];
    stmt.query_map(rusqlite::params_from_iter(nulls), |r| r.get::<_, String>(3))
        .unwrap()
        .collect::<rusqlite::Result<Vec<_>>>()
        .unwrap()
}

/// The plan lines that read all of a guarded table: `SCAN <table>` (with or without a covering
/// index) or an automatic index built on it.
fn full_scans(conn: &Connection, sql: &str) -> Vec<String> {
    let names = guarded_names(sql);
    plan(conn, sql)
        .into_iter()
        .filter(|line| {
            let object = line
                .strip_prefix("SCAN ")
                .or_else(|| line.strip_prefix("SEARCH "))
                .and_then(|rest| rest.split(' ').next());
            let guarded = object.is_some_and(|o| names.iter().any(|n| n == o));
            guarded && (line.starts_with("SCAN ") || line.contains("AUTOMATIC"))
        })
        .collect()
}

/// Writes `sqlite_stat1` rows as `ANALYZE` would for `rows` nodes with `per_parent` children per
/// parent, and makes the connection's planner load them.
fn fake_stats(conn: &Connection, rows: u64, per_parent: u64) {
    conn.execute_batch("ANALYZE sqlite_schema").unwrap();
    conn.execute_batch("DELETE FROM sqlite_stat1").unwrap();
    let stats = [
        ("nodes", "sqlite_autoindex_nodes_1", format!("{rows} 1")),
        ("nodes", "idx_nodes_parent", format!("{rows} {per_parent}")),
        ("nodes", "idx_nodes_external_id", format!("{rows} 1")),
        (
            "blobs",
            "sqlite_autoindex_blobs_1",
            format!("{} 1", rows * 2),
        ),
        ("refs", "sqlite_autoindex_refs_1", "3 1".to_owned()),
        ("action_log", "", "1000".to_owned()),
    ];
    for (table, index, stat) in stats {
        let index = (!index.is_empty()).then_some(index);
        conn.execute(
            "INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES (?1, ?2, ?3)",
            rusqlite::params![table, index, stat],
        )
        .unwrap();
    }
    conn.execute_batch("ANALYZE sqlite_schema").unwrap();
}

fn check_all(conn: &Connection, setting: &str) {
    let bad: Vec<String> = sql::ALL
        .iter()
        .flat_map(|(name, sql)| {
            full_scans(conn, sql)
                .into_iter()
                .map(move |line| format!("{setting}: {name}: {line}"))
        })
        .collect();
    assert!(bad.is_empty(), "full scans:\n{}", bad.join("\n"));
}

#[test]
fn no_read_path_statement_scans_nodes_or_blobs() {
    let store = Store::open_in_memory().unwrap();
    check_all(store.sqlite().unwrap(), "no statistics");
    fake_stats(store.sqlite().unwrap(), 100_000, 1);
    check_all(store.sqlite().unwrap(), "a 100,000-node lineage");
    fake_stats(store.sqlite().unwrap(), 100_000, 1_000);
    check_all(store.sqlite().unwrap(), "1,000 children per parent");
}

#[test]
fn the_check_catches_scans() {
    let store = Store::open_in_memory().unwrap();
    let conn = store.sqlite().unwrap();
    assert_eq!(
        full_scans(conn, "SELECT id FROM nodes WHERE role = 'user'"),
        ["SCAN nodes"]
    );
    assert_eq!(
        full_scans(conn, "SELECT x.id FROM nodes x ORDER BY x.parent_id"),
        ["SCAN x USING INDEX idx_nodes_parent"]
    );
    assert_eq!(
        full_scans(conn, "SELECT b.hash FROM blobs b WHERE b.type = 'text'"),
        ["SCAN b"]
    );
    // The subtree query as it was: the planner walked all of `nodes` in rowid order to skip
    // the sort, probing the CTE for each row.
    let old_subtree = "WITH RECURSIVE sub(id, depth) AS ( \
           SELECT id, 0 FROM nodes WHERE parent_id = ?1 \
           UNION ALL SELECT n.id, s.depth + 1 FROM sub s JOIN nodes n ON n.parent_id = s.id \
             WHERE s.depth < ?2) \
         SELECT s.depth, n.id FROM sub s JOIN nodes n ON n.id = s.id ORDER BY n.rowid";
    assert_eq!(full_scans(conn, old_subtree), ["SCAN n"]);
    // The lineage walk as it was: with statistics the planner drove the final join from `nodes`.
    let old_lineage = "WITH RECURSIVE chain(depth, rid, parent_id) AS ( \
           SELECT 0, n.rowid, n.parent_id FROM nodes n WHERE n.id = ?1 \
           UNION ALL SELECT c.depth + 1, n.rowid, n.parent_id \
             FROM chain c JOIN nodes n ON n.id = c.parent_id WHERE c.depth + 1 < ?2) \
         SELECT c.depth, n.id FROM chain c JOIN nodes n ON n.rowid = c.rid";
    assert!(full_scans(conn, old_lineage).is_empty());
    fake_stats(conn, 100_000, 1);
    assert_eq!(
        full_scans(conn, old_lineage),
        ["SCAN n USING COVERING INDEX sqlite_autoindex_nodes_1"]
    );
    assert!(full_scans(conn, "SELECT id FROM nodes WHERE id = ?1").is_empty());
}

/// Session loading's deliberate pass over `blobs` (when a lineage needs a large share of the
/// table) reads it in rowid order without a sort, and finds the table's end without reading it.
#[test]
fn the_blob_pass_of_session_loading_reads_in_rowid_order() {
    let store = Store::open_in_memory().unwrap();
    let conn = store.sqlite().unwrap();
    for setting in ["no statistics", "statistics"] {
        if setting == "statistics" {
            fake_stats(conn, 100_000, 1);
        }
        assert_eq!(
            plan(conn, sql::BLOBS_FROM_ROWID),
            ["SEARCH blobs USING INTEGER PRIMARY KEY (rowid>?)"],
            "{setting}"
        );
        let last = plan(conn, sql::BLOBS_LAST_ROWID);
        assert!(
            last.iter().all(|l| !l.starts_with("SCAN")),
            "{setting}: {last:?}"
        );
    }
}

/// `life`'s descendant counts ([`crate::counts`]): the children's rowids and the checks read
/// `idx_nodes_parent` alone (no row per node), the pass reads in rowid order without a sort.
#[test]
fn the_descendant_count_statements_read_the_index_alone_or_in_rowid_order() {
    let store = Store::open_in_memory().unwrap();
    let conn = store.sqlite().unwrap();
    for setting in ["no statistics", "lineage", "bushy"] {
        match setting {
            "lineage" => fake_stats(conn, 100_000, 1),
            "bushy" => fake_stats(conn, 100_000, 1_000),
            _ => {}
        }
        let expect: &[(&str, &[&str])] = &[
            (
                sql::CHILD_ROWIDS,
                &["SEARCH nodes USING COVERING INDEX idx_nodes_parent (parent_id=?)"],
            ),
            (
                sql::ROWS_FROM_ROWID,
                &["SEARCH nodes USING INTEGER PRIMARY KEY (rowid>?)"],
            ),
            (
                sql::CHILDREN_TOTAL,
                &[
                    "SCAN j VIRTUAL TABLE INDEX 1:",
                    "SEARCH n USING COVERING INDEX idx_nodes_parent (parent_id=?)",
                ],
            ),
            (
                sql::CHILD_COUNTS,
                &[
                    "SCAN j VIRTUAL TABLE INDEX 1:",
                    "CORRELATED SCALAR SUBQUERY 1",
                    "SEARCH n USING COVERING INDEX idx_nodes_parent (parent_id=?)",
                ],
            ),
            (
                sql::IDS_BY_ROWIDS,
                &[
                    "SCAN j VIRTUAL TABLE INDEX 1:",
                    "SEARCH n USING INTEGER PRIMARY KEY (rowid=?)",
                ],
            ),
            (
                sql::CHILD_IDS,
                &[
                    "SCAN j VIRTUAL TABLE INDEX 1:",
                    "SEARCH n USING INDEX idx_nodes_parent (parent_id=?)",
                ],
            ),
        ];
        for (statement, lines) in expect {
            assert_eq!(plan(conn, statement), *lines, "{setting}: {statement}");
        }
        let first = plan(conn, sql::NODES_FIRST_ROWID);
        assert!(
            first.iter().all(|l| !l.starts_with("SCAN")),
            "{setting}: {first:?}"
        );
    }
}
