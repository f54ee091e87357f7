//! A forged cycle in the shared memory (raw SQL, as another program could write it): the model's
//! `life` tool fails with an error naming a node, the turn is answered, and the gateway keeps
//! serving other callers (it once overflowed the stack and died).

use filo_testkit::Turn;
use serde_json::json;

use super::{Gw, http, request_texts};

async fn ask(gw: &Gw, key: &str, text: &str) -> super::HttpResponse {
    let body = json!({"model": "filo", "messages": [{"role": "user", "content": text}]});
    gw.http(
        "POST",
        "/v1/chat/completions",
        Some(&body),
        &[("x-filo-session-key", key)],
    )
    .await
}

#[tokio::test]
async fn a_forged_cycle_fails_the_life_tool_and_the_gateway_keeps_serving() {
    let gw = Gw::start(
        vec![
            Turn::text("First answer."),
            Turn::tool_call(
                "call_1",
                "life",
                json!({"ancestors": 1000, "max_depth": 100000}),
            ),
            Turn::text("After life."),
            Turn::text("Still serving."),
        ],
        json!({}),
    )
    .await;
    let r = ask(&gw, "cyc", "first question").await;
    assert_eq!(r.status, 200, "{}", r.body);
    // Close the lineage into a loop: its root now hangs under its head.
    let db = gw.dir.path().join("state/playfilo.db");
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        let head: String = conn
            .query_row(
                "SELECT node_id FROM refs WHERE name LIKE 'PI_HEAD:%' LIMIT 1",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let changed = conn
            .execute(
                "UPDATE nodes SET parent_id = ?1 WHERE parent_id IS NULL",
                [&head],
            )
            .unwrap();
        assert!(changed >= 1);
    }
    let r = ask(&gw, "cyc", "second question").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["choices"][0]["message"]["content"], "After life.");
    // The model got the error as the tool's result.
    let requests = gw.mock.requests();
    let sent = request_texts(&requests[2].body);
    let (_, result) = sent
        .iter()
        .find(|(role, _)| role == "tool")
        .unwrap_or_else(|| panic!("no tool result in {sent:?}"));
    assert!(
        result.contains("loops: node") && result.contains("own ancestor"),
        "{result}"
    );
    // The gateway is alive and answers another caller.
    assert_eq!(http(gw.addr, "GET", "/health", None, &[]).await.status, 200);
    let r = ask(&gw, "other", "are you there").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.json()["choices"][0]["message"]["content"],
        "Still serving."
    );
    gw.stop().await;
}
