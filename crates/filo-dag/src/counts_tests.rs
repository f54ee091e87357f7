use std::hash::Hasher;

use super::*;
use crate::store::Store;
use crate::test_support::{Lcg, insert_node as insert};

const TUNINGS: [Tuning; 4] = [
    TUNING,
    Tuning { slack: 0, batch: 1 },
    Tuning { slack: 3, batch: 7 },
    Tuning {
        slack: 40,
        batch: 4_096,
    },
];

/// Every tuning against the CTE, for one parent; returns the routes taken.
fn compare(store: &Store, parent: &str, routes: &mut Vec<Route>) {
    let expected = store.descendant_counts_cte(parent).unwrap();
    // Leave out each child in turn (and one that is not a child): the others' counts stay.
    let mut excepts: Vec<Option<String>> = vec![None, Some("absent".into())];
    excepts.extend(expected.keys().take(3).cloned().map(Some));
    for except in &excepts {
        let mut want = expected.clone();
        if let Some(e) = except {
            want.remove(e);
        }
        for tuning in TUNINGS {
            let mut route = Route::default();
            let conn = store.sqlite().unwrap();
            let got = counts_with(conn, parent, except.as_deref(), tuning, &mut route).unwrap();
            assert_eq!(got.as_ref(), Some(&want), "{parent} {except:?} {tuning:?}");
            routes.push(route);
        }
    }
    assert_eq!(store.descendant_counts(parent).unwrap(), expected);
}

/// Forests of chains and bushes written in every order a file can hold (sequential, sessions
/// interleaved, blocks shuffled, children before their parents, fully shuffled), with unrelated
/// rows before and between, roots and missing parents: the counts are the CTE's, and the test
/// reaches every branch (whole-table pass or not, with and without expansion).
#[test]
fn the_counts_are_the_cte_s_whatever_the_rowid_order() {
    let mut rng = Lcg(11);
    let n = 700;
    // Node i's parent: mostly the previous node or one of a few hubs (wide fan-out), sometimes
    // any earlier node, a root or a missing parent.
    let parents: Vec<Option<String>> = (0..n)
        .map(|i| match rng.below(20) {
            _ if i == 0 => None,
            0 => None,
            1 => Some("missing".to_owned()),
            2..=7 => Some(format!("n{}", rng.below(i))),
            8..=13 => Some(format!("n{}", rng.below(i.min(5)))),
            _ => Some(format!("n{}", i - 1)),
        })
        .collect();
    let sequential: Vec<usize> = (0..n).collect();
    let reversed: Vec<usize> = (0..n).rev().collect();
    let interleaved: Vec<usize> = (0..n / 2).flat_map(|i| [i, i + n / 2]).collect();
    let mut blocks: Vec<Vec<usize>> = sequential.chunks(50).map(<[usize]>::to_vec).collect();
    for i in (1..blocks.len()).rev() {
        blocks.swap(i, rng.below(i + 1));
    }
    let blocks: Vec<usize> = blocks.into_iter().flatten().collect();
    let mut shuffled = sequential.clone();
    for i in (1..n).rev() {
        shuffled.swap(i, rng.below(i + 1));
    }
    let mut routes = Vec::new();
    for order in [sequential, reversed, interleaved, blocks, shuffled] {
        for unrelated_before in [0, 300] {
            let store = Store::open_in_memory().unwrap();
            for k in 0..unrelated_before {
                let up = (k > 0).then(|| format!("u{}", k / 2));
                insert(&store, &format!("u{k}"), up.as_deref());
            }
            for (k, &i) in order.iter().enumerate() {
                insert(&store, &format!("n{i}"), parents[i].as_deref());
                if k % 97 == 0 {
                    // Unrelated rows between the nodes, some under a node of the forest.
                    for j in 0..30 {
                        let up = (j > 0).then(|| format!("v{k}-{}", j / 3));
                        insert(&store, &format!("v{k}-{j}"), up.as_deref());
                    }
                    let under = format!("n{}", order[rng.below(k + 1)]);
                    insert(&store, &format!("w{k}"), Some(&under));
                }
            }
            for parent in ["n0", "n1", "n2", "n3", "n4", "missing", "absent", "u0"] {
                compare(&store, parent, &mut routes);
            }
            for _ in 0..12 {
                compare(&store, &format!("n{}", rng.below(n)), &mut routes);
            }
        }
    }
    let whole = |w: bool| routes.iter().filter(move |r| r.whole == w);
    assert!(
        whole(true).any(|r| r.expanded > 0),
        "whole pass, missed rows"
    );
    assert!(
        whole(true).any(|r| r.expanded == 0),
        "whole pass, nothing missed"
    );
    assert!(whole(false).any(|r| r.expanded > 0), "checked, expanded");
    assert!(whole(false).any(|r| r.expanded == 0), "checked, all found");
}

/// 1,000 children of 3 descendants each, as the `life` benchmark: one pass, nothing missed.
#[test]
fn siblings_written_in_order_take_one_pass() {
    let store = Store::open_in_memory().unwrap();
    insert(&store, "top", None);
    insert(&store, "p", Some("top"));
    for s in 0..1_000 {
        insert(&store, &format!("s{s}"), Some("p"));
        insert(&store, &format!("s{s}-1"), Some(&format!("s{s}")));
        insert(&store, &format!("s{s}-2"), Some(&format!("s{s}-1")));
        insert(&store, &format!("s{s}-3"), Some(&format!("s{s}-2")));
    }
    let mut route = Route::default();
    let got = counts_with(store.sqlite().unwrap(), "p", None, TUNING, &mut route)
        .unwrap()
        .unwrap();
    assert_eq!(got, store.descendant_counts_cte("p").unwrap());
    assert_eq!(got.len(), 1_000);
    assert!(got.values().all(|&c| c == 3));
    assert!(route.whole && route.expanded == 0, "{route:?}");
}

/// An id that is not UTF-8 text (a blob, or text with invalid bytes) or holds a NUL is compared
/// as SQLite compares it: the fast path steps aside and the CTE answers.
#[test]
fn ids_that_are_not_utf8_text_fall_back_to_the_cte() {
    let store = Store::open_in_memory().unwrap();
    let conn = store.sqlite().unwrap();
    insert(&store, "p", None);
    insert(&store, "a", Some("p"));
    insert(&store, "a1", Some("a"));
    for value in ["X'ff'", "CAST(X'ff' AS TEXT)", "'a' || char(0) || 'b'"] {
        conn.execute_batch(&format!(
            "DELETE FROM nodes WHERE parent_id = 'p' AND id <> 'a'; \
             INSERT INTO nodes (id, parent_id, role, parts_list, timestamp) \
             VALUES ({value}, 'p', 'user', '[]', 0)"
        ))
        .unwrap();
        let got = counts_with(conn, "p", None, TUNING, &mut Route::default()).unwrap();
        assert_eq!(got, None, "{value}");
        let counts = store.descendant_counts("p").unwrap();
        assert_eq!(counts, store.descendant_counts_cte("p").unwrap());
        assert_eq!(counts.get("a"), Some(&1));
    }
}

/// Ids that differ only in their last characters (sequential ids a test or another tool may
/// write) spread over the buckets: hashbrown picks a bucket from the low bits of the hash.
#[test]
fn sequential_ids_spread_over_the_buckets() {
    let mut buckets = vec![0u32; 1 << 10];
    for i in 0..100_000u64 {
        let id = format!("{i:064x}");
        let h = hash_of(id.as_bytes());
        let mut again = PartHasher::default();
        again.write_u64(h);
        buckets[usize::try_from(again.finish() & 1023).unwrap()] += 1;
    }
    let max = buckets.iter().max().copied().unwrap_or(0);
    assert!(max < 200, "a bucket of {max} (mean 98)");
}

/// A forged cycle through the parent (`p → a → b → p`; ids are hashes, so only a forged file
/// holds one): the pass takes every node once, meets the parent below itself and says so; the
/// CTE, which never expands the parent again, says the same.
#[test]
fn a_forged_cycle_through_the_parent_is_an_error() {
    let store = Store::open_in_memory().unwrap();
    insert(&store, "p", Some("b"));
    insert(&store, "a", Some("p"));
    insert(&store, "b", Some("a"));
    for tuning in TUNINGS {
        let got = counts_with(
            store.sqlite().unwrap(),
            "p",
            None,
            tuning,
            &mut Route::default(),
        );
        assert!(
            matches!(&got, Err(crate::DagError::Cycle { node }) if node == "p"),
            "{tuning:?}: {got:?}"
        );
    }
    let cte = store.descendant_counts_cte("p");
    assert!(
        matches!(&cte, Err(crate::DagError::Cycle { node }) if node == "p"),
        "{cte:?}"
    );
}
