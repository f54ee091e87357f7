//! Helpers the unit tests share.

use rusqlite::params;

use crate::store::Store;

/// A small deterministic generator (no dependency on an RNG crate's stream).
pub(crate) struct Lcg(pub u64);

impl Lcg {
    /// The next number below `n`.
    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        usize::try_from((self.0 >> 33) % n as u64).unwrap()
    }
}

/// A bare `user` node row with no parts, written straight into an SQLite store.
pub(crate) fn insert_node(store: &Store, id: &str, parent: Option<&str>) {
    store
        .sqlite()
        .unwrap()
        .execute(
            "INSERT INTO nodes (id, parent_id, role, parts_list, timestamp) \
             VALUES (?1, ?2, 'user', '[]', 0)",
            params![id, parent],
        )
        .unwrap();
}
