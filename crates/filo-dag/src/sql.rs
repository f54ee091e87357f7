//! The SQL of the read paths (life, recall, trace, session loading), in one place so that
//! `plan_tests` can check the query plan of every statement they run.
//!
//! Every walk is driven from a small CTE queue into a primary-key or `idx_nodes_parent` lookup.
//! Where the planner could instead scan `nodes` (to skip a sort, or because it guesses the CTE is
//! large), the join is written as `CROSS JOIN` with the CTE on the left: SQLite never reorders
//! the two sides of a `CROSS JOIN`.

use crate::db::Q;
use crate::walk::WalkSql;

/// The columns [`crate::read::node_from_row`] maps, for a table aliased `n`.
macro_rules! node_columns {
    () => {
        "n.id, n.parent_id, n.role, n.parts_list, n.timestamp, n.config_json, \
         n.thought_signatures, n.system_prompt_hash, n.external_id"
    };
}

/// The recursive CTE of a lineage (`?1` head id, `?2` maximum number of nodes): one primary-key
/// lookup per step, rows in walk order (the recursion queue is FIFO). The queue only carries
/// `(depth, rowid, parent_id)`; callers join `nodes` back on the rowid, which hits the page the
/// step just read.
#[cfg(test)]
macro_rules! lineage_cte {
    () => {
        "WITH RECURSIVE chain(depth, rid, parent_id) AS ( \
           SELECT 0, n.rowid, n.parent_id FROM nodes n WHERE n.id = ?1 \
           UNION ALL SELECT c.depth + 1, n.rowid, n.parent_id \
             FROM chain c CROSS JOIN nodes n ON n.id = c.parent_id WHERE c.depth + 1 < ?2) "
    };
}

pub(crate) const SELECT_REF: &str = "SELECT node_id FROM refs WHERE name = ?1";

pub(crate) const NODE_BY_ID: &str =
    concat!("SELECT ", node_columns!(), " FROM nodes n WHERE n.id = ?1");

pub(crate) const BLOB_BY_HASH: &str =
    "SELECT hash, type, content, thought_signature FROM blobs WHERE hash = ?1";

/// `?1` a JSON array of hashes.
pub(crate) const BLOBS_BY_HASHES: &str = "SELECT b.hash, b.type, b.content, b.thought_signature \
     FROM json_each(?1) j CROSS JOIN blobs b ON b.hash = j.value";

/// The highest rowid of `blobs` (an upper bound of its row count), from the end of the table.
pub(crate) const BLOBS_LAST_ROWID: &str = "SELECT max(rowid) FROM blobs";

/// Every blob from rowid `?1` up, in rowid order: session loading reads the blobs this way when
/// its lineage needs a large share of them (a sequential read instead of a lookup per blob).
pub(crate) const BLOBS_FROM_ROWID: &str =
    "SELECT hash, type, content FROM blobs WHERE rowid >= ?1 ORDER BY rowid";

pub(crate) const ID_EXACT: &str = "SELECT id FROM nodes WHERE id = ?1";

pub(crate) const IDS_IN_RANGE: &str =
    "SELECT id FROM nodes WHERE id >= ?1 AND id < ?2 ORDER BY id LIMIT 2";

pub(crate) const COUNT_IN_RANGE: &str = "SELECT COUNT(*) FROM nodes WHERE id >= ?1 AND id < ?2";

pub(crate) const ID_BY_EXTERNAL_ID: &str =
    "SELECT id FROM nodes WHERE external_id = ?1 ORDER BY rowid LIMIT 1";

/// `?1` a JSON array of external ids.
pub(crate) const IDS_BY_EXTERNAL_IDS: &str = "SELECT j.value, (SELECT n.id FROM nodes n \
     WHERE n.external_id = j.value ORDER BY n.rowid LIMIT 1) FROM json_each(?1) j \
     WHERE j.value <> ''";

pub(crate) const CHILDREN: &str = concat!(
    "SELECT ",
    node_columns!(),
    " FROM nodes n WHERE n.parent_id = ?1 ORDER BY n.rowid"
);

/// [`CHILDREN`] without the columns `life` does not show (config, thought signatures, system
/// prompt hash: read as NULL), which are most of a row's bytes.
pub(crate) const CHILDREN_SHOWN: &str = "SELECT n.id, n.parent_id, n.role, n.parts_list, \
     n.timestamp, NULL, NULL, NULL, n.external_id FROM nodes n WHERE n.parent_id = ?1 \
     ORDER BY n.rowid";

/// `?1` the root (excluded), `?2` the deepest depth (children are depth 0). The queue carries
/// rowids, so the final join is a rowid lookup and the sort is over the (small) result. The root
/// is never expanded again: on a forged cycle through it, it comes back once as a row (the
/// caller's sign of the cycle) and the recursion ends.
pub(crate) const SUBTREE: &str = concat!(
    "WITH RECURSIVE sub(rid, id, depth) AS ( \
       SELECT rowid, id, 0 FROM nodes WHERE parent_id = ?1 \
       UNION ALL SELECT n.rowid, n.id, s.depth + 1 FROM sub s CROSS JOIN nodes n \
         ON n.parent_id = s.id WHERE s.depth < ?2 AND s.id <> ?1) \
     SELECT s.depth, ",
    node_columns!(),
    " FROM sub s CROSS JOIN nodes n ON n.rowid = s.rid ORDER BY s.rid"
);

/// `?1` the parent, `?2` the depth bound: descendants per child, and how often the parent itself
/// was met below it (a forged cycle; the parent is never expanded again).
pub(crate) const DESCENDANT_COUNTS: &str = "WITH RECURSIVE d(root, id, depth) AS ( \
       SELECT rowid, id, 0 FROM nodes WHERE parent_id = ?1 \
       UNION ALL SELECT d.root, n.id, d.depth + 1 FROM d CROSS JOIN nodes n \
         ON n.parent_id = d.id WHERE d.depth < ?2 AND d.id <> ?1) \
     SELECT n.id, g.c, g.loops FROM (SELECT root, COUNT(*) - 1 AS c, \
       SUM(CASE WHEN id = ?1 THEN 1 ELSE 0 END) AS loops FROM d GROUP BY root) g \
     CROSS JOIN nodes n ON n.rowid = g.root";

/// [`crate::counts`]: the rowids of a node's children, from `idx_nodes_parent` alone.
pub(crate) const CHILD_ROWIDS: &str = "SELECT rowid FROM nodes WHERE parent_id = ?1 ORDER BY rowid";

/// [`crate::counts`]'s sequential pass: the rows from rowid `?1` up, in rowid order (the caller
/// stops stepping when it has read enough).
pub(crate) const ROWS_FROM_ROWID: &str =
    "SELECT rowid, id, parent_id FROM nodes WHERE rowid >= ?1 ORDER BY rowid";

/// The lowest rowid of `nodes`, from the start of the table.
pub(crate) const NODES_FIRST_ROWID: &str = "SELECT min(rowid) FROM nodes";

/// `?1` a JSON array of rowids: their ids.
pub(crate) const IDS_BY_ROWIDS: &str =
    "SELECT n.id FROM json_each(?1) j CROSS JOIN nodes n ON n.rowid = j.value";

/// `?1` a JSON array of ids: how many nodes have one of them as parent, counted in
/// `idx_nodes_parent` alone.
pub(crate) const CHILDREN_TOTAL: &str = "SELECT count(*) FROM json_each(?1) j \
     CROSS JOIN nodes n ON n.parent_id = j.value";

/// `?1` a JSON array of ids: each one's position in the array and its number of children,
/// counted in `idx_nodes_parent` alone.
pub(crate) const CHILD_COUNTS: &str = "SELECT j.key, \
     (SELECT count(*) FROM nodes n WHERE n.parent_id = j.value) FROM json_each(?1) j";

/// `?1` a JSON array of ids: the position of the parent in the array and each child's id.
pub(crate) const CHILD_IDS: &str =
    "SELECT j.key, n.id FROM json_each(?1) j CROSS JOIN nodes n ON n.parent_id = j.value";

#[cfg(test)]
pub(crate) const LINEAGE: &str = concat!(
    lineage_cte!(),
    "SELECT c.depth, ",
    node_columns!(),
    " FROM chain c CROSS JOIN nodes n ON n.rowid = c.rid"
);

/// [`crate::walk`] over what counting and matching need: rowid, id, parent id, role.
pub(crate) const WALK_ROLES: WalkSql = WalkSql {
    by_id: "SELECT rowid, id, parent_id, role FROM nodes WHERE id = ?1",
    window: "SELECT rowid, id, parent_id, role FROM nodes \
             WHERE rowid < ?1 AND rowid >= ?2 ORDER BY rowid DESC",
};

/// [`crate::walk`] over what session entries need (columns 3…: role, timestamp, config_json,
/// external_id, parts_list, thought_signatures).
pub(crate) const WALK_ENTRIES: WalkSql = WalkSql {
    by_id: "SELECT rowid, id, parent_id, role, timestamp, config_json, external_id, parts_list, \
            thought_signatures FROM nodes WHERE id = ?1",
    window: "SELECT rowid, id, parent_id, role, timestamp, config_json, external_id, parts_list, \
             thought_signatures FROM nodes WHERE rowid < ?1 AND rowid >= ?2 ORDER BY rowid DESC",
};

/// [`crate::walk`] over whole nodes (columns 3…: role, timestamp, config_json, external_id,
/// parts_list, thought_signatures, system_prompt_hash), for [`crate::Store::lineage`].
pub(crate) const WALK_NODES: WalkSql = WalkSql {
    by_id: "SELECT rowid, id, parent_id, role, timestamp, config_json, external_id, parts_list, \
            thought_signatures, system_prompt_hash FROM nodes WHERE id = ?1",
    window: "SELECT rowid, id, parent_id, role, timestamp, config_json, external_id, parts_list, \
             thought_signatures, system_prompt_hash FROM nodes \
             WHERE rowid < ?1 AND rowid >= ?2 ORDER BY rowid DESC",
};

/// trace: the actions that point at a node, of the types in the JSON array `?1` (NULL: all).
pub(crate) const ACTIONS_TO_NODES: &str = "SELECT id, timestamp, action_type, from_node, to_node, metadata FROM action_log \
     WHERE to_node IS NOT NULL AND (?1 IS NULL OR action_type IN (SELECT value FROM json_each(?1)))";

/// The columns of a node row in PostgreSQL, for a table aliased `n` (same order as SQLite's).
macro_rules! pg_node_columns {
    () => {
        "n.id, n.parent_id, n.role, n.parts_list, n.timestamp, n.config_json, \
         n.thought_signatures, n.system_prompt_hash, n.external_id"
    };
}

/// PostgreSQL's lineage: every step is a primary-key lookup carrying the whole row, so the
/// result needs no join back (`$1` head, `$2` maximum number of nodes).
macro_rules! pg_lineage_cte {
    () => {
        "WITH RECURSIVE chain(depth, seq, id, parent_id, role, parts_list, timestamp, config_json, \
           thought_signatures, system_prompt_hash, external_id) AS ( \
           SELECT 0::bigint, n.seq, n.id, n.parent_id, n.role, n.parts_list, n.timestamp, \
             n.config_json, n.thought_signatures, n.system_prompt_hash, n.external_id \
             FROM nodes n WHERE n.id = $1 AND $2::bigint > 0 \
           UNION ALL SELECT c.depth + 1, n.seq, n.id, n.parent_id, n.role, n.parts_list, \
             n.timestamp, n.config_json, n.thought_signatures, n.system_prompt_hash, n.external_id \
             FROM chain c JOIN nodes n ON n.id = c.parent_id WHERE c.depth + 1 < $2::bigint) "
    };
}

pub(crate) const Q_SELECT_REF: Q = Q {
    sqlite: SELECT_REF,
    pg: "SELECT node_id FROM refs WHERE name = $1",
};

pub(crate) const Q_ALL_REFS: Q = Q {
    sqlite: "SELECT name, node_id FROM refs ORDER BY name",
    pg: "SELECT name, node_id FROM refs ORDER BY name",
};

pub(crate) const Q_NODE_BY_ID: Q = Q {
    sqlite: NODE_BY_ID,
    pg: concat!(
        "SELECT ",
        pg_node_columns!(),
        " FROM nodes n WHERE n.id = $1"
    ),
};

pub(crate) const Q_BLOB_BY_HASH: Q = Q {
    sqlite: BLOB_BY_HASH,
    pg: "SELECT hash, type, content, thought_signature FROM blobs WHERE hash = $1",
};

pub(crate) const Q_BLOBS_BY_HASHES: Q = Q {
    sqlite: BLOBS_BY_HASHES,
    pg: "SELECT hash, type, content, thought_signature FROM blobs WHERE hash = ANY($1::text[])",
};

/// trace: whether `?1` is a node or some node's parent (the primary key, then `idx_nodes_parent`).
pub(crate) const NODE_OR_PARENT: &str = "SELECT EXISTS (SELECT 1 FROM nodes WHERE id = ?1) \
     OR EXISTS (SELECT 1 FROM nodes WHERE parent_id = ?1)";

pub(crate) const Q_NODE_OR_PARENT: Q = Q {
    sqlite: NODE_OR_PARENT,
    pg: "SELECT (EXISTS (SELECT 1 FROM nodes WHERE id = $1) \
         OR EXISTS (SELECT 1 FROM nodes WHERE parent_id = $1))::int",
};

pub(crate) const Q_ID_EXACT: Q = Q {
    sqlite: ID_EXACT,
    pg: "SELECT id FROM nodes WHERE id = $1",
};

pub(crate) const Q_IDS_IN_RANGE: Q = Q {
    sqlite: IDS_IN_RANGE,
    pg: "SELECT id FROM nodes WHERE id >= $1 AND id < $2 ORDER BY id LIMIT 2",
};

pub(crate) const Q_COUNT_IN_RANGE: Q = Q {
    sqlite: COUNT_IN_RANGE,
    pg: "SELECT COUNT(*) FROM nodes WHERE id >= $1 AND id < $2",
};

pub(crate) const Q_ID_BY_EXTERNAL_ID: Q = Q {
    sqlite: ID_BY_EXTERNAL_ID,
    pg: "SELECT id FROM nodes WHERE external_id = $1 ORDER BY seq LIMIT 1",
};

pub(crate) const Q_IDS_BY_EXTERNAL_IDS: Q = Q {
    sqlite: IDS_BY_EXTERNAL_IDS,
    pg: "SELECT j.v, (SELECT n.id FROM nodes n WHERE n.external_id = j.v ORDER BY n.seq LIMIT 1) \
         FROM unnest($1::text[]) AS j(v) WHERE j.v <> ''",
};

pub(crate) const Q_CHILDREN: Q = Q {
    sqlite: CHILDREN,
    pg: concat!(
        "SELECT ",
        pg_node_columns!(),
        " FROM nodes n WHERE n.parent_id = $1 ORDER BY n.seq"
    ),
};

/// PostgreSQL reads the whole rows (the same nodes; life ignores the other columns).
pub(crate) const Q_CHILDREN_SHOWN: Q = Q {
    sqlite: CHILDREN_SHOWN,
    pg: Q_CHILDREN.pg,
};

pub(crate) const Q_SUBTREE: Q = Q {
    sqlite: SUBTREE,
    pg: concat!(
        "WITH RECURSIVE sub(seq, id, depth) AS ( \
           SELECT seq, id, 0::bigint FROM nodes WHERE parent_id = $1 \
           UNION ALL SELECT n.seq, n.id, s.depth + 1 FROM sub s JOIN nodes n \
             ON n.parent_id = s.id WHERE s.depth < $2::bigint AND s.id <> $1) \
         SELECT s.depth, ",
        pg_node_columns!(),
        " FROM sub s JOIN nodes n ON n.seq = s.seq ORDER BY s.seq"
    ),
};

pub(crate) const Q_DESCENDANT_COUNTS: Q = Q {
    sqlite: DESCENDANT_COUNTS,
    pg: "WITH RECURSIVE d(root, id, depth) AS ( \
           SELECT seq, id, 0::bigint FROM nodes WHERE parent_id = $1 \
           UNION ALL SELECT d.root, n.id, d.depth + 1 FROM d JOIN nodes n \
             ON n.parent_id = d.id WHERE d.depth < $2::bigint AND d.id <> $1) \
         SELECT n.id, g.c, g.loops FROM (SELECT root, COUNT(*) - 1 AS c, \
           SUM(CASE WHEN id = $1 THEN 1 ELSE 0 END) AS loops FROM d GROUP BY root) g \
         JOIN nodes n ON n.seq = g.root",
};

#[cfg(test)]
pub(crate) const Q_LINEAGE: Q = Q {
    sqlite: LINEAGE,
    pg: concat!(
        pg_lineage_cte!(),
        "SELECT depth, id, parent_id, role, parts_list, timestamp, config_json, \
         thought_signatures, system_prompt_hash, external_id FROM chain ORDER BY depth"
    ),
};

/// The walk's columns: 0 the insertion order, 1 id, 2 parent id, 3 role, 4 timestamp,
/// 5 config_json, 6 external_id, 7 parts_list, 8 thought_signatures, 9 system_prompt_hash (as
/// `WALK_NODES`).
pub(crate) const PG_WALK: &str = concat!(
    pg_lineage_cte!(),
    "SELECT seq, id, parent_id, role, timestamp, config_json, external_id, parts_list, \
     thought_signatures, system_prompt_hash FROM chain ORDER BY depth"
);

pub(crate) const Q_ACTIONS: Q = Q {
    sqlite: "SELECT id, timestamp, action_type, from_node, to_node, metadata \
             FROM action_log ORDER BY id",
    pg: "SELECT id, timestamp, action_type, from_node, to_node, metadata \
         FROM action_log ORDER BY id",
};

pub(crate) const Q_ACTIONS_TO_NODES: Q = Q {
    sqlite: ACTIONS_TO_NODES,
    pg: "SELECT id, timestamp, action_type, from_node, to_node, metadata FROM action_log \
         WHERE to_node IS NOT NULL AND ($1::text[] IS NULL OR action_type = ANY($1::text[]))",
};

/// Every statement of the read paths, by name.
#[cfg(test)]
pub(crate) const ALL: &[(&str, &str)] = &[
    ("SELECT_REF", SELECT_REF),
    ("NODE_BY_ID", NODE_BY_ID),
    ("BLOB_BY_HASH", BLOB_BY_HASH),
    ("BLOBS_BY_HASHES", BLOBS_BY_HASHES),
    ("ID_EXACT", ID_EXACT),
    ("IDS_IN_RANGE", IDS_IN_RANGE),
    ("COUNT_IN_RANGE", COUNT_IN_RANGE),
    ("ID_BY_EXTERNAL_ID", ID_BY_EXTERNAL_ID),
    ("IDS_BY_EXTERNAL_IDS", IDS_BY_EXTERNAL_IDS),
    ("CHILDREN", CHILDREN),
    ("CHILDREN_SHOWN", CHILDREN_SHOWN),
    ("SUBTREE", SUBTREE),
    ("DESCENDANT_COUNTS", DESCENDANT_COUNTS),
    ("CHILD_ROWIDS", CHILD_ROWIDS),
    ("ROWS_FROM_ROWID", ROWS_FROM_ROWID),
    ("NODES_FIRST_ROWID", NODES_FIRST_ROWID),
    ("IDS_BY_ROWIDS", IDS_BY_ROWIDS),
    ("CHILDREN_TOTAL", CHILDREN_TOTAL),
    ("CHILD_COUNTS", CHILD_COUNTS),
    ("CHILD_IDS", CHILD_IDS),
    ("LINEAGE", LINEAGE),
    ("WALK_ROLES.by_id", WALK_ROLES.by_id),
    ("WALK_ROLES.window", WALK_ROLES.window),
    ("WALK_ENTRIES.by_id", WALK_ENTRIES.by_id),
    ("WALK_ENTRIES.window", WALK_ENTRIES.window),
    ("WALK_NODES.by_id", WALK_NODES.by_id),
    ("WALK_NODES.window", WALK_NODES.window),
    ("ACTIONS_TO_NODES", ACTIONS_TO_NODES),
    ("NODE_OR_PARENT", NODE_OR_PARENT),
];
