//! Each caller gets the answer to its own message: idempotency keys belong to one session, and
//! concurrent OpenAI-compatible callers on one session are not merged into one prompt.

use std::collections::BTreeMap;
use std::time::Duration;

use filo_testkit::{Fault, Reply, Turn};
use serde_json::{Value, json};

use super::{Gw, request_texts};

/// The text of the last user message of a recorded model request.
fn last_user_text(body: &Value) -> String {
    request_texts(body)
        .into_iter()
        .rev()
        .find(|(role, _)| role == "user")
        .map(|(_, t)| t)
        .unwrap_or_default()
}

#[tokio::test]
async fn a_reused_idempotency_key_on_another_session_runs_that_sessions_message() {
    let gw = Gw::start(
        vec![
            Turn::text("answer for alice"),
            Turn::text("answer for bob"),
            Turn::text("ws answer for alice"),
            Turn::text("ws answer for bob"),
        ],
        json!({}),
    )
    .await;
    // HTTP: the same key on alice, then on bob.
    let post = |who: &'static str| {
        let body =
            json!({"message": format!("question from {who}"), "idempotencyKey": "shared-key"});
        let path = format!("/v1/sessions/{who}/messages");
        let gw = &gw;
        async move { gw.http("POST", &path, Some(&body), &[]).await.json() }
    };
    assert_eq!(post("alice").await["text"], "answer for alice");
    let bob = post("bob").await;
    assert_eq!(bob["text"], "answer for bob", "{bob}");
    assert_eq!(gw.mock.requests().len(), 2);
    assert_eq!(
        last_user_text(&gw.mock.requests()[1].body),
        "question from bob"
    );
    // On its own session the key still names the run it answered: nothing runs again.
    assert_eq!(post("alice").await["text"], "answer for alice");
    assert_eq!(post("bob").await["text"], "answer for bob");
    assert_eq!(gw.mock.requests().len(), 2);

    // WebSocket: `agent` and `chat.send` with one key on two sessions.
    let mut ws = gw.ws().await;
    let id = ws
        .send(
            "agent",
            json!({"sessionKey": "ws-alice", "message": "ws question from alice", "idempotencyKey": "ws-key"}),
        )
        .await;
    let accepted = ws.until_res(&id).await;
    assert_eq!(accepted["payload"]["status"], "accepted", "{accepted}");
    let done = ws.until_res(&id).await;
    assert_eq!(
        done["payload"]["result"]["payloads"][0]["text"],
        "ws answer for alice"
    );
    let ack = ws
        .chat_send(
            json!({"sessionKey": "ws-bob", "message": "ws question from bob", "idempotencyKey": "ws-key"}),
        )
        .await;
    assert_eq!(ack["payload"]["status"], "started", "{ack}");
    let end = ws
        .until_event(|v| {
            v["event"] == "chat"
                && v["payload"]["runId"] == "ws-key"
                && v["payload"]["state"] == "final"
                && v["payload"]["sessionKey"]
                    .as_str()
                    .is_some_and(|k| k.ends_with("ws-bob"))
        })
        .await;
    assert_eq!(
        end["payload"]["message"]["content"][0]["text"],
        "ws answer for bob"
    );
    assert_eq!(
        last_user_text(&gw.mock.requests()[3].body),
        "ws question from bob"
    );
    gw.stop().await;
}

#[tokio::test]
async fn five_concurrent_openai_callers_on_one_session_get_five_answers_to_five_messages() {
    // The first turn stalls so the other four arrive while it runs; the session's queue mode
    // is collect (the default), which must not merge callers that did not ask for it.
    let mut turns: Vec<Turn> = vec![
        Fault::Stall {
            after_events: 2,
            reply: Reply::text("reply number 0"),
            stall: Duration::from_millis(800),
        }
        .into(),
    ];
    turns.extend((1..5).map(|i| Turn::text(format!("reply number {i}"))));
    let gw = Gw::start(
        turns,
        json!({"messages": {"queue": {"mode": "collect", "debounceMs": 0}}}),
    )
    .await;
    let call = |i: usize| {
        let addr = gw.addr;
        async move {
            let body = json!({"model": "filo", "messages": [{"role": "user", "content": format!("message {i}")}]});
            let headers = [
                ("authorization", format!("Bearer {}", super::TOKEN)),
                ("x-filo-session-key", "shared-session".to_owned()),
            ];
            let r = super::http(addr, "POST", "/v1/chat/completions", Some(&body), &headers).await;
            assert_eq!(r.status, 200, "{}", r.body);
            (
                format!("message {i}"),
                r.json()["choices"][0]["message"]["content"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            )
        }
    };
    let first = tokio::spawn(call(0));
    while gw.mock.requests().is_empty() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let rest: Vec<_> = (1..5).map(|i| tokio::spawn(call(i))).collect();
    let mut answers = BTreeMap::new();
    for h in std::iter::once(first).chain(rest) {
        let (asked, got) = h.await.unwrap();
        answers.insert(asked, got);
    }
    let requests = gw.mock.requests();
    assert_eq!(requests.len(), 5, "one model request per caller");
    // Request n carried one caller's message and was answered "reply number n": that caller
    // got exactly that answer.
    for (n, r) in requests.iter().enumerate() {
        let asked = last_user_text(&r.body);
        assert_eq!(
            answers.get(&asked).map(String::as_str),
            Some(format!("reply number {n}").as_str()),
            "request {n} asked {asked:?}; answers {answers:?}"
        );
    }
    gw.stop().await;
}
