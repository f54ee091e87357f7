use rusqlite::params;

use super::*;
use crate::render::preview::FilterMode;
use crate::test_support::Lcg;

const ROLES: [&str; 5] = [
    "user",
    "assistant",
    "assistant",
    "toolResult",
    "pi_internal",
];

/// A DAG written row by row in a shuffled order (children before parents, as a copied file can
/// hold them): a few hubs with many children, deep chains and bushes below them, every role,
/// text / tool-call / tool-result / meta blobs, some parts whose blob is missing.
fn shuffled_dag(seed: u64) -> (Store, Vec<String>) {
    let mut rng = Lcg(seed);
    let store = Store::open_in_memory().unwrap();
    let conn = store.sqlite().unwrap();
    let blobs = [
        ("b-text", "text", r#""some text\nwith a line break""#),
        (
            "b-call",
            "tool_call",
            r#"{"id":"c1","name":"bash","arguments":{"command":"ls"}}"#,
        ),
        (
            "b-result",
            "tool_result",
            r#"{"toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":"ok"}]}"#,
        ),
        ("b-meta", "pi_meta", r#"{"type":"model_change"}"#),
    ];
    for (hash, kind, content) in blobs {
        conn.execute(
            "INSERT INTO blobs (hash, type, content) VALUES (?1, ?2, ?3)",
            params![hash, kind, content],
        )
        .unwrap();
    }
    let n = 400;
    let parents: Vec<Option<usize>> = (0..n)
        .map(|i| match rng.below(10) {
            _ if i == 0 => None,
            0..=3 => Some(rng.below(i.min(4))),
            4..=5 => Some(rng.below(i)),
            _ => Some(i - 1),
        })
        .collect();
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        if rng.below(3) == 0 {
            order.swap(i, rng.below(i + 1));
        }
    }
    for i in order {
        let parts = match rng.below(6) {
            0 => r#"["b-text","b-call"]"#,
            1 => r#"["b-call"]"#,
            2 => r#"["b-result"]"#,
            3 => r#"["b-meta"]"#,
            4 => r#"["b-missing","b-text"]"#,
            _ => r#"["b-text"]"#,
        };
        let external = (rng.below(3) > 0).then(|| format!("e{i}"));
        conn.execute(
            "INSERT INTO nodes (id, parent_id, role, parts_list, timestamp, external_id) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                format!("n{i:03}"),
                parents[i].map(|p| format!("n{p:03}")),
                ROLES[rng.below(ROLES.len())],
                parts,
                i64::try_from(i).unwrap() * 1_000,
                external,
            ],
        )
        .unwrap();
    }
    store.set_ref("PI_HEAD", &format!("n{:03}", n - 1)).unwrap();
    (store, (0..n).map(|i| format!("n{i:03}")).collect())
}

/// `life` with the descendant counts of the rowid-order pass prints what it prints with the
/// recursive CTE's, for many focuses and every option.
#[test]
fn life_with_the_counting_pass_prints_what_the_cte_gives() {
    let mut compared = 0;
    for seed in [3, 4] {
        let (store, ids) = shuffled_dag(seed);
        let mut rng = Lcg(seed + 100);
        for k in 0..80 {
            let focus = match k {
                0 => None,
                _ => Some(ids[rng.below(ids.len())].clone()),
            };
            let filter = [
                FilterMode::Default,
                FilterMode::NoTools,
                FilterMode::UserOnly,
                FilterMode::All,
            ][k % 4];
            let opts = LifeOptions {
                focus,
                ancestors: [0, 1, 3][k % 3],
                max_depth: [10, 0, 2][k % 3],
                filter,
                descend_hidden: k % 5 != 0,
                ..LifeOptions::default()
            };
            store.cte_counts.set(false);
            let fast = life(&store, &opts, 500_000).unwrap();
            store.cte_counts.set(true);
            let oracle = life(&store, &opts, 500_000).unwrap();
            assert_eq!(fast, oracle, "{opts:?}");
            compared += usize::from(fast.contains("descendant"));
        }
    }
    assert!(
        compared > 20,
        "only {compared} outputs showed descendant counts"
    );
}
