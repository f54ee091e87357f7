//! D10 and the HTTP routes: token, OpenAI chat completions (streaming and not), Responses,
//! session routes, metrics.

use filo_testkit::Turn;
use serde_json::{Value, json};

use super::{Gw, TOKEN, http, request_texts, transcript};

/// The state dir of a transcript (`<state>/agents/<agent>/sessions/<id>.jsonl`).
fn dir_of(file: &std::path::Path) -> std::path::PathBuf {
    file.ancestors().nth(4).unwrap().to_path_buf()
}

#[tokio::test]
async fn health_is_open_and_every_other_route_needs_the_token() {
    let gw = Gw::start(vec![], json!({})).await;
    let h = http(gw.addr, "GET", "/health", None, &[]).await;
    assert_eq!(h.status, 200);
    assert_eq!(h.json()["ok"], true);
    assert_eq!(h.json()["status"], "live");
    for (method, path) in [
        ("POST", "/v1/chat/completions"),
        ("POST", "/v1/responses"),
        ("GET", "/v1/sessions"),
        ("GET", "/metrics"),
        ("POST", "/v1/sessions/main/messages"),
    ] {
        let r = http(gw.addr, method, path, Some(&json!({})), &[]).await;
        assert_eq!(r.status, 401, "{method} {path}: {}", r.body);
        assert_eq!(r.header("www-authenticate"), Some("Bearer"));
        let wrong = http(
            gw.addr,
            method,
            path,
            Some(&json!({})),
            &[("authorization", "Bearer nope".into())],
        )
        .await;
        assert_eq!(wrong.status, 401, "{method} {path}");
    }
    assert!(gw.mock.requests().is_empty());
    gw.stop().await;
}

#[tokio::test]
async fn d10_streamed_completion_equals_the_final_text_and_a_key_routes_into_one_history() {
    let gw = Gw::start(
        vec![
            Turn::text("Hello from the mock model, streamed word by word."),
            Turn::text("Second answer."),
        ],
        json!({}),
    )
    .await;
    let body = json!({"model": "filo", "stream": true, "messages": [{"role": "user", "content": "first question"}]});
    let r = gw
        .http(
            "POST",
            "/v1/chat/completions",
            Some(&body),
            &[("x-filo-session-key", "d10")],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.header("content-type")
            .unwrap()
            .starts_with("text/event-stream")
    );
    let data = r.sse_data();
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"), "{data:?}");
    let chunks: Vec<Value> = data[..data.len() - 1]
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let joined: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(joined, "Hello from the mock model, streamed word by word.");
    assert!(
        chunks
            .iter()
            .filter(|c| c["choices"][0]["delta"]["content"]
                .as_str()
                .is_some_and(|t| !t.is_empty()))
            .count()
            > 2,
        "deltas arrive as the model streams: {chunks:?}"
    );
    assert!(
        chunks
            .iter()
            .all(|c| c["object"] == "chat.completion.chunk")
    );
    let last = chunks.last().unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], "stop");
    assert!(last["usage"]["total_tokens"].as_u64().is_some(), "{last}");

    let body =
        json!({"model": "filo", "messages": [{"role": "user", "content": "second question"}]});
    let r = gw
        .http(
            "POST",
            "/v1/chat/completions",
            Some(&body),
            &[("x-filo-session-key", "d10")],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["choices"][0]["message"]["content"], "Second answer.");
    let sent = request_texts(&gw.mock.requests()[1].body);
    let sent: Vec<(&str, &str)> = sent
        .iter()
        .filter(|(r, _)| r != "system")
        .map(|(r, t)| (r.as_str(), t.as_str()))
        .collect();
    assert_eq!(
        sent,
        [
            ("user", "first question"),
            (
                "assistant",
                "Hello from the mock model, streamed word by word."
            ),
            ("user", "second question")
        ]
    );
    let file = gw.session_file("agent:main:d10");
    let t = transcript(&file);
    assert_eq!(t.len(), 4, "{t:?}");
    // The session key kept its Playfilo memory: its head points at the last turn.
    let session_id = file.file_stem().unwrap().to_string_lossy().into_owned();
    let store = filo_dag::Store::open(dir_of(&file).join("playfilo.db")).unwrap();
    assert!(
        store
            .get_ref(&format!("PI_HEAD:{session_id}"))
            .unwrap()
            .is_some()
    );
    drop(store);
    gw.stop().await;
}

#[tokio::test]
async fn the_user_field_picks_the_session_and_a_new_session_starts_from_the_earlier_messages() {
    let gw = Gw::start(vec![Turn::text("three"), Turn::text("four")], json!({})).await;
    let body = json!({"model": "filo", "user": "alice", "messages": [
        {"role": "system", "content": "Answer in one word."},
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": "two"},
        {"role": "user", "content": "and next?"}]});
    let r = gw
        .http("POST", "/v1/chat/completions", Some(&body), &[])
        .await;
    assert_eq!(
        r.json()["choices"][0]["message"]["content"],
        "three",
        "{}",
        r.body
    );
    let first = &gw.mock.requests()[0].body;
    let texts = request_texts(first);
    assert!(
        texts
            .iter()
            .any(|(r, t)| r == "system" && t.contains("Answer in one word.")),
        "{texts:?}"
    );
    let convo: Vec<_> = texts
        .iter()
        .filter(|(r, _)| r != "system")
        .cloned()
        .collect();
    assert_eq!(convo.len(), 3, "{convo:?}");
    assert_eq!(convo[0], ("user".to_owned(), "one".to_owned()));
    // Same user, whole chat resent: the session already has it, only the last message is new.
    let body = json!({"model": "filo", "user": "alice", "messages": [
        {"role": "user", "content": "one"}, {"role": "assistant", "content": "two"},
        {"role": "user", "content": "and next?"}, {"role": "assistant", "content": "three"},
        {"role": "user", "content": "again"}]});
    let r = gw
        .http("POST", "/v1/chat/completions", Some(&body), &[])
        .await;
    assert_eq!(r.json()["choices"][0]["message"]["content"], "four");
    let convo: Vec<_> = request_texts(&gw.mock.requests()[1].body)
        .into_iter()
        .filter(|(r, _)| r != "system")
        .collect();
    assert_eq!(convo.len(), 5, "{convo:?}");
    assert_eq!(convo[4].1, "again");
    gw.stop().await;
}

#[tokio::test]
async fn responses_api_streaming_and_not() {
    let gw = Gw::start(
        vec![Turn::text("Answer one."), Turn::text("Answer two.")],
        json!({}),
    )
    .await;
    let r = gw
        .http(
            "POST",
            "/v1/responses",
            Some(&json!({"model": "filo", "input": "hi", "user": "bob"})),
            &[],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["object"], "response");
    assert_eq!(v["status"], "completed");
    assert_eq!(v["output"][0]["content"][0]["text"], "Answer one.");
    let r = gw
        .http(
            "POST",
            "/v1/responses",
            Some(&json!({"model": "filo", "input": "more", "user": "bob", "stream": true})),
            &[],
        )
        .await;
    let events = r.sse_events();
    let names: Vec<&str> = events.iter().map(|(e, _)| e.as_str()).collect();
    assert_eq!(names.first(), Some(&"response.created"));
    assert_eq!(names.last(), Some(&"response.completed"));
    let deltas: String = events
        .iter()
        .filter(|(e, _)| e == "response.output_text.delta")
        .map(|(_, d)| {
            serde_json::from_str::<Value>(d).unwrap()["delta"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(deltas, "Answer two.");
    let seqs: Vec<u64> = events
        .iter()
        .map(|(_, d)| {
            serde_json::from_str::<Value>(d).unwrap()["sequence_number"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
    gw.stop().await;
}

#[tokio::test]
async fn session_routes_messages_history_patch_reset_list_and_metrics() {
    let gw = Gw::start(
        vec![Turn::text("routed answer"), Turn::text("after reset")],
        json!({}),
    )
    .await;
    let r = gw
        .http(
            "POST",
            "/v1/sessions/agent:main:ops/messages",
            Some(&json!({"message": "status?", "idempotencyKey": "k-1"})),
            &[],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(
        (
            v["status"].as_str(),
            v["text"].as_str(),
            v["runId"].as_str()
        ),
        (Some("ok"), Some("routed answer"), Some("k-1"))
    );
    // The same idempotency key answers the same run without a new request.
    let again = gw
        .http(
            "POST",
            "/v1/sessions/agent:main:ops/messages",
            Some(&json!({"message": "status?", "idempotencyKey": "k-1"})),
            &[],
        )
        .await;
    assert_eq!(again.json()["text"], "routed answer");
    assert_eq!(gw.mock.requests().len(), 1);
    let h = gw
        .http(
            "GET",
            "/v1/sessions/agent:main:ops/history?limit=10",
            None,
            &[],
        )
        .await
        .json();
    let msgs = h["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 2, "{h}");
    assert_eq!(msgs[1]["content"][0]["text"], "routed answer");
    let p = gw
        .http(
            "PATCH",
            "/v1/sessions/agent:main:ops",
            Some(&json!({"thinkingLevel": "low", "label": "ops"})),
            &[],
        )
        .await;
    assert_eq!(p.json()["entry"]["thinkingLevel"], "low", "{}", p.body);
    let bad = gw
        .http(
            "PATCH",
            "/v1/sessions/agent:main:ops",
            Some(&json!({"thinkingLevel": "extreme"})),
            &[],
        )
        .await;
    assert_eq!(bad.status, 400);
    let old_id = h["sessionId"].as_str().unwrap().to_owned();
    let reset = gw
        .http("POST", "/v1/sessions/agent:main:ops/reset", None, &[])
        .await
        .json();
    assert_ne!(reset["entry"]["sessionId"].as_str().unwrap(), old_id);
    let r = gw
        .http(
            "POST",
            "/v1/sessions/agent:main:ops/messages",
            Some(&json!({"message": "fresh"})),
            &[],
        )
        .await;
    assert_eq!(r.json()["text"], "after reset");
    let convo: Vec<_> = request_texts(&gw.mock.requests()[1].body)
        .into_iter()
        .filter(|(r, _)| r != "system")
        .collect();
    assert_eq!(convo.len(), 1, "a reset session starts empty: {convo:?}");
    let list = gw.http("GET", "/v1/sessions", None, &[]).await.json();
    let row = &list["sessions"][0];
    assert_eq!(
        (row["key"].as_str(), row["label"].as_str()),
        (Some("agent:main:ops"), Some("ops")),
        "{list}"
    );
    let m = gw.http("GET", "/metrics", None, &[]).await;
    assert!(m.header("content-type").unwrap().starts_with("text/plain"));
    for line in [
        "filo_gateway_runs_started_total 2",
        "filo_gateway_runs_finished_total{status=\"ok\"} 2",
        "filo_gateway_active_runs 0",
        "filo_gateway_turn_seconds_count 2",
    ] {
        assert!(
            m.body.lines().any(|l| l == line),
            "missing {line} in\n{}",
            m.body
        );
    }
    assert!(m.body.contains("filo_gateway_auth_failures_total"));
    let _ = TOKEN;
    gw.stop().await;
}

#[tokio::test]
async fn what_a_run_could_not_keep_reaches_every_client() {
    // The memory database cannot be opened (its directory is a file): the turn is answered,
    // and every client is told the memory did not get it.
    let blocker = tempfile::tempdir().unwrap();
    std::fs::write(blocker.path().join("not-a-dir"), "x").unwrap();
    let db = blocker.path().join("not-a-dir/playfilo.db");
    let gw = Gw::start(
        vec![Turn::text("answered"), Turn::text("answered again")],
        json!({"memory": {"db": db.display().to_string()}}),
    )
    .await;
    let body =
        json!({"model": "filo", "user": "w", "messages": [{"role": "user", "content": "hi"}]});
    let v = gw
        .http("POST", "/v1/chat/completions", Some(&body), &[])
        .await
        .json();
    assert_eq!(v["choices"][0]["message"]["content"], "answered");
    let w = v["warnings"]
        .as_array()
        .unwrap_or_else(|| panic!("no warnings in {v}"));
    assert!(
        w.iter()
            .any(|x| x.as_str().unwrap().to_lowercase().contains("memory")),
        "{v}"
    );
    let mut ws = gw.ws().await;
    ws.chat_send(json!({"sessionKey": "w2", "message": "hi", "idempotencyKey": "w-1"}))
        .await;
    let end = ws.chat_until_terminal("w-1").await;
    let p = &end.last().unwrap()["payload"];
    assert_eq!(p["state"], "final");
    assert!(
        p["warnings"].as_array().is_some_and(|w| !w.is_empty()),
        "{p}"
    );
    let m = gw.http("GET", "/metrics", None, &[]).await;
    assert!(
        m.body
            .lines()
            .any(|l| l == "filo_gateway_runs_with_warnings_total 2"),
        "{}",
        m.body
    );
    gw.stop().await;
}
