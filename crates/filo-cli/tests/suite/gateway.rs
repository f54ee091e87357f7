//! `filo gateway` as a process: it refuses a public bind without a token, serves a turn with
//! the agent directory's providers and the state dir's `filo-embed.json`, keeps its
//! `sessions.json` and transcript in the state dir, and drains on SIGTERM with exit 0.

use std::process::Stdio;
use std::time::Duration;

use filo_testkit::{MockProvider, Turn};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use super::common::Home;

#[tokio::test]
async fn a_public_bind_without_a_token_refuses_to_start() {
    let mock = MockProvider::start(vec![]).await;
    let home = Home::new(&mock);
    let (code, _, err) = home.filo(&["gateway", "--bind", "0.0.0.0:0"]).await;
    assert_ne!(code, 0);
    assert!(err.contains("without a token"), "{err}");
    let (code, _, err) = home.filo(&["gateway", "--bind", "nonsense"]).await;
    assert_ne!(code, 0);
    assert!(err.contains("invalid --bind"), "{err}");
}

/// Reads a gateway's stderr until it says where it listens; that address.
async fn listening_addr(
    lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStderr>>,
) -> String {
    tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let line = lines.next_line().await.unwrap();
            let line = line.expect("the gateway exited before listening");
            if let Some(rest) = line.strip_prefix("filo gateway listening on ") {
                return rest.split_whitespace().next().unwrap().to_owned();
            }
        }
    })
    .await
    .expect("the gateway never said where it listens")
}

async fn post(addr: &str, path: &str, token: &str, body: &Value) -> (u16, String) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let body = body.to_string();
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).await.unwrap();
    let status = raw.split(' ').nth(1).unwrap().parse().unwrap();
    let body = raw
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

#[tokio::test]
async fn serves_a_turn_from_the_agent_dirs_providers_and_drains_on_sigterm() {
    let mock = MockProvider::start(vec![Turn::text("served by filo gateway")]).await;
    let home = Home::new(&mock);
    let state = home.path().join("state");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::write(
        state.join("filo-embed.json"),
        json!({"agents": {"defaults": {"model": {"primary": "mock/mock-model"}}},
               "memory": {"db": state.join("playfilo.db")}})
        .to_string(),
    )
    .unwrap();
    let mut child = home
        .command(&["gateway", "--bind", "127.0.0.1:0"])
        .env("FILO_STATE_DIR", &state)
        .env("FILO_GATEWAY_TOKEN", "cli-token")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = listening_addr(&mut lines).await;
    let body = json!({"model": "filo", "messages": [{"role": "user", "content": "hello"}]});
    let (status, _) = post(&addr, "/v1/chat/completions", "wrong", &body).await;
    assert_eq!(status, 401);
    let (status, text) = post(&addr, "/v1/chat/completions", "cli-token", &body).await;
    assert_eq!(status, 200, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        v["choices"][0]["message"]["content"],
        "served by filo gateway"
    );
    let auth = mock.requests()[0]
        .header("authorization")
        .map(str::to_owned);
    assert_eq!(auth.as_deref(), Some("Bearer mock-secret"));
    let store = std::fs::read_to_string(state.join("agents/main/sessions/sessions.json")).unwrap();
    assert!(store.contains("agent:main:openai:"), "{store}");
    let pid = child.id().unwrap();
    std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("no exit within 20 s of SIGTERM")
        .unwrap();
    assert_eq!(status.code(), Some(0));
    let mut rest = String::new();
    while let Ok(Some(l)) = lines.next_line().await {
        rest.push_str(&l);
        rest.push('\n');
    }
    assert!(rest.contains("SIGTERM, draining"), "{rest}");
}

/// A `filo gateway --store postgres://…` process; killed (SIGKILL) when dropped.
struct Host {
    child: tokio::process::Child,
    addr: String,
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

async fn start_host(home: &Home, state: &std::path::Path, url: &str) -> Host {
    std::fs::create_dir_all(state).unwrap();
    std::fs::write(
        state.join("filo-embed.json"),
        json!({"agents": {"defaults": {"model": {"primary": "mock/mock-model"}}}}).to_string(),
    )
    .unwrap();
    let mut child = home
        .command(&["gateway", "--bind", "127.0.0.1:0", "--store", url])
        .env("FILO_STATE_DIR", state)
        .env("FILO_GATEWAY_TOKEN", "t")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = listening_addr(&mut lines).await;
    // Keep reading stderr so the process never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Host { child, addr }
}

/// `GET path` with the token; the JSON body (status 200 asserted).
async fn get(addr: &str, path: &str, token: &str) -> Value {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAuthorization: Bearer {token}\r\n\r\n"
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).await.unwrap();
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    let body = raw
        .split_once("\r\n\r\n")
        .map(|(_, b)| b)
        .unwrap_or_default();
    serde_json::from_str(body).unwrap()
}

/// One turn through a host's session route; the reply text.
async fn say(addr: &str, key: &str, message: &str) -> String {
    say_with(addr, key, &json!({ "message": message })).await
}

/// One turn with a whole request body (e.g. an idempotency key); the reply text.
async fn say_with(addr: &str, key: &str, body: &Value) -> String {
    let (status, text) = post(addr, &format!("/v1/sessions/{key}/messages"), "t", body).await;
    assert_eq!(status, 200, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert!(
        v["warnings"].as_array().is_none_or(Vec::is_empty),
        "a run could not keep something: {v}"
    );
    v["text"].as_str().unwrap_or_default().to_owned()
}

/// The user texts of a session's shared transcript, in order.
fn shared_user_texts(pg: &filo_testkit::pg::PgServer, key: &str) -> Vec<String> {
    every_shared_user_text(pg, &format!("agent:main:{key}"))
        .remove(&format!("agent:main:{key}"))
        .unwrap_or_default()
}

/// The user texts of every shared transcript whose key starts with `prefix`, by key, in
/// order (one query).
fn every_shared_user_text(
    pg: &filo_testkit::pg::PgServer,
    prefix: &str,
) -> std::collections::HashMap<String, Vec<String>> {
    let rows = pg
        .psql(&format!(
            "SELECT s.key || E'\\t' || t.line FROM filo_gateway.transcript_lines t \
             JOIN filo_gateway.sessions s ON t.session_id = s.entry::json->>'sessionId' \
             WHERE starts_with(s.key, '{prefix}') ORDER BY s.key, t.n"
        ))
        .unwrap();
    let mut out = std::collections::HashMap::<String, Vec<String>>::new();
    for row in rows.lines() {
        let Some((key, line)) = row.split_once('\t') else {
            continue;
        };
        let Ok(e) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if e["message"]["role"] == "user" {
            let text = e["message"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default();
            out.entry(key.to_owned()).or_default().push(text.to_owned());
        }
    }
    out
}

/// Two gateway processes on one PostgreSQL: sessions alternate between them and keep their
/// history; a host killed mid-run leaves no lock, no half turn, and its session goes on on the
/// other host; the shared memory passes fsck.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_gateways_share_sessions_through_postgres() {
    let Some(pg) = filo_testkit::pg::PgServer::start().unwrap() else {
        return;
    };
    const SESSIONS: usize = 200;
    let mut script: Vec<Turn> = (0..SESSIONS * 2)
        .map(|i| Turn::text(format!("answer {i}")))
        .collect();
    script.push(Turn::text("paid once"));
    script.push(Turn::Fault(filo_testkit::Fault::Stall {
        after_events: 1,
        reply: filo_testkit::Reply::text("never finished"),
        stall: Duration::from_secs(60),
    }));
    script.push(Turn::text("after the crash"));
    // Then every tenth session goes on on host B too.
    let continued: Vec<usize> = (1..SESSIONS).step_by(10).collect();
    script.extend(continued.iter().map(|_| Turn::text("continued")));
    let mock = MockProvider::start(script).await;
    let home = Home::new(&mock);
    let url = pg.url();
    let a = start_host(&home, &home.path().join("host-a"), &url).await;
    let b = start_host(&home, &home.path().join("host-b"), &url).await;

    // Turn 1 of every session on host A, turn 2 on host B, many sessions at once.
    for (turn, addr) in [&a.addr, &b.addr].into_iter().enumerate() {
        let mut runs = tokio::task::JoinSet::new();
        for i in 0..SESSIONS {
            let addr = addr.clone();
            runs.spawn(async move {
                say(&addr, &format!("s{i}"), &format!("s{i} turn {}", turn + 1)).await
            });
        }
        while let Some(r) = runs.join_next().await {
            r.unwrap();
        }
    }
    let transcripts = every_shared_user_text(&pg, "agent:main:s");
    assert_eq!(transcripts.len(), SESSIONS);
    for i in 0..SESSIONS {
        assert_eq!(
            transcripts[&format!("agent:main:s{i}")],
            [format!("s{i} turn 1"), format!("s{i} turn 2")]
        );
    }
    // Host B saw host A's turn: its request for turn 2 carried turn 1.
    let bodies: Vec<String> = mock.requests().iter().map(|r| r.body.to_string()).collect();
    for i in 0..SESSIONS {
        let second = bodies
            .iter()
            .find(|b| b.contains(&format!("\"s{i} turn 2\"")))
            .unwrap();
        assert!(second.contains(&format!("\"s{i} turn 1\"")));
    }

    // An idempotency key answered on host A is answered from the record on host B: the same
    // reply, no second call to the model, one turn in the transcript.
    let pay = json!({ "message": "pay once", "idempotencyKey": "pay-1" });
    assert_eq!(say_with(&a.addr, "pay", &pay).await, "paid once");
    let calls = mock.requests().len();
    assert_eq!(say_with(&b.addr, "pay", &pay).await, "paid once");
    assert_eq!(mock.requests().len(), calls, "the repeated key ran nothing");
    assert_eq!(shared_user_texts(&pg, "pay"), ["pay once"]);

    // Host A is killed while its run for s0 is waiting on the model.
    let a_addr = a.addr.clone();
    let stalled = tokio::spawn(async move {
        let body = json!({ "message": "s0 turn 3 (lost)" });
        let mut s = tokio::net::TcpStream::connect(&a_addr).await.unwrap();
        let body = body.to_string();
        let req = format!(
            "POST /v1/sessions/s0/messages HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer t\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        s.write_all(req.as_bytes()).await.unwrap();
        let mut raw = Vec::new();
        let _ = s.read_to_end(&mut raw).await;
    });
    let started = std::time::Instant::now();
    while mock.requests().len() < SESSIONS * 2 + 2 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the stalled run never reached the model"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let held = pg
        .psql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")
        .unwrap();
    assert_eq!(held.trim(), "1", "host A holds s0's lane during its run");
    let mut a = a;
    a.child.start_kill().unwrap();
    a.child.wait().await.unwrap();
    let _ = stalled.await;
    let started = std::time::Instant::now();
    loop {
        let held = pg
            .psql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")
            .unwrap();
        if held.trim() == "0" {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the dead host's lock was never released"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Nothing of the killed run is visible; the session goes on on host B with its history.
    let dump = || {
        pg.psql(
            "SELECT t.n, left(t.line, 160) FROM filo_gateway.transcript_lines t JOIN filo_gateway.sessions s \
             ON t.session_id = s.entry::json->>'sessionId' WHERE s.key = 'agent:main:s0' ORDER BY t.n",
        )
        .unwrap()
    };
    assert_eq!(
        shared_user_texts(&pg, "s0"),
        ["s0 turn 1", "s0 turn 2"],
        "{}",
        dump()
    );
    assert_eq!(say(&b.addr, "s0", "s0 turn 3").await, "after the crash");
    assert_eq!(
        shared_user_texts(&pg, "s0"),
        ["s0 turn 1", "s0 turn 2", "s0 turn 3"],
        "{}",
        dump()
    );
    let last = mock.requests().pop().unwrap().body.to_string();
    assert!(
        last.contains("s0 turn 2\"") && !last.contains("(lost)"),
        "{last}"
    );
    let mut runs = tokio::task::JoinSet::new();
    for &i in &continued {
        let addr = b.addr.clone();
        runs.spawn(async move { say(&addr, &format!("s{i}"), &format!("s{i} turn 3")).await });
    }
    while let Some(r) = runs.join_next().await {
        assert_eq!(r.unwrap(), "continued");
    }
    let transcripts = every_shared_user_text(&pg, "agent:main:s");
    for &i in &continued {
        assert_eq!(
            transcripts[&format!("agent:main:s{i}")],
            [
                format!("s{i} turn 1"),
                format!("s{i} turn 2"),
                format!("s{i} turn 3")
            ]
        );
    }
    // A host that never served s0 shows its history from the shared store.
    let c = start_host(&home, &home.path().join("host-c"), &url).await;
    let history = get(&c.addr, "/v1/sessions/s0/history", "t").await;
    let texts: Vec<String> = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| {
            m["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert_eq!(texts, ["s0 turn 1", "s0 turn 2", "s0 turn 3"], "{history}");
    drop(c);
    // `filo gateway export` writes the shared transcript as the JSONL file host B ran the
    // session's last turn on, byte for byte, by key or by session id.
    let sid = pg
        .psql("SELECT entry::json->>'sessionId' FROM filo_gateway.sessions WHERE key = 'agent:main:s0'")
        .unwrap();
    let sid = sid.trim();
    let local = find_file(&home.path().join("host-b"), &format!("{sid}.jsonl"))
        .expect("host B's copy of s0");
    let (code, exported, err) = home
        .filo(&["gateway", "export", "s0", "--store", &url])
        .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(exported, std::fs::read_to_string(&local).unwrap());
    let out = home.path().join("s0-export.jsonl");
    let (code, _, err) = home
        .filo(&[
            "gateway",
            "export",
            sid,
            "--store",
            &url,
            "-o",
            out.to_str().unwrap(),
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&local).unwrap());
    let (code, _, err) = home
        .filo(&["gateway", "export", "nope", "--store", &url])
        .await;
    assert_eq!(code, 1);
    assert!(err.contains("no shared session \"nope\""), "{err}");
    // A host on the shared store drains and exits 0 on SIGTERM (its pool closes off the runtime).
    let mut b = b;
    let pid = b.child.id().unwrap();
    std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    let status = tokio::time::timeout(Duration::from_secs(20), b.child.wait())
        .await
        .expect("no exit within 20 s of SIGTERM")
        .unwrap();
    assert_eq!(status.code(), Some(0));
    // The shared memory holds every turn and is consistent.
    let (code, out, err) = home.filo(&["dag", "fsck", "--db", &url]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.ends_with("0 problem(s)\n"), "{out}");
}

/// Auth profiles' rotation state is shared by the hosts of one PostgreSQL: a profile rate
/// limited on host A is skipped by host B while it cools down; each host's credentials stay in
/// its own `auth-profiles.json`, which the runs do not rewrite.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_profile_rate_limited_on_one_gateway_cools_down_on_the_other() {
    let Some(pg) = filo_testkit::pg::PgServer::start().unwrap() else {
        return;
    };
    let script = vec![
        filo_testkit::Fault::rate_limited(0).into(),
        Turn::text("p2 on host a"),
        Turn::text("p2 on host b"),
    ];
    let mock = MockProvider::start(script).await;
    let home = Home::new(&mock);
    let url = pg.url();
    let profiles = json!({
        "version": 1,
        "profiles": {
            "mock:p1": {"type": "api_key", "provider": "mock", "key": "sk-one"},
            "mock:p2": {"type": "api_key", "provider": "mock", "key": "sk-two"}
        },
        "usageStats": {"mock:p1": {"lastUsed": 1}, "mock:p2": {"lastUsed": 2}}
    })
    .to_string();
    let mut files = Vec::new();
    for host in ["host-a", "host-b"] {
        let dir = home.path().join(host).join("agents/main");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("auth-profiles.json"), &profiles).unwrap();
        files.push(dir.join("auth-profiles.json"));
    }
    let a = start_host(&home, &home.path().join("host-a"), &url).await;
    let b = start_host(&home, &home.path().join("host-b"), &url).await;

    assert_eq!(say(&a.addr, "one", "hello a").await, "p2 on host a");
    let auth: Vec<String> = mock
        .requests()
        .iter()
        .map(|r| r.header("authorization").unwrap_or_default().to_owned())
        .collect();
    assert_eq!(auth, ["Bearer sk-one", "Bearer sk-two"]);
    // Host B has never seen p1 fail, and its own file still ranks p1 first: the shared
    // cooldown alone makes it go straight to p2.
    assert_eq!(say(&b.addr, "two", "hello b").await, "p2 on host b");
    let last = mock.requests().pop().unwrap();
    assert_eq!(last.header("authorization"), Some("Bearer sk-two"));
    assert_eq!(mock.requests().len(), 3, "host B did not try p1");

    let state: Value = serde_json::from_str(
        &pg.psql("SELECT state FROM filo_gateway.auth_state WHERE agent = 'main'")
            .unwrap(),
    )
    .unwrap();
    let p1 = &state["usageStats"]["mock:p1"];
    assert_eq!(p1["failureCounts"]["rate_limit"], 1, "{state:#}");
    assert!(p1["cooldownUntil"].as_i64().unwrap() > 0, "{state:#}");
    assert_eq!(state["lastGood"]["mock"], "mock:p2");
    assert!(
        state.get("profiles").is_none_or(|p| p == &json!({})),
        "no credential in the database: {state}"
    );
    for f in &files {
        assert_eq!(
            std::fs::read_to_string(f).unwrap(),
            profiles,
            "{} rewritten",
            f.display()
        );
    }
}

/// Waits (up to 30 s) until `sql` answers `want`.
async fn wait_for_sql(pg: &filo_testkit::pg::PgServer, sql: &str, want: &str) {
    let started = std::time::Instant::now();
    loop {
        let got = pg.psql(sql).unwrap();
        if got.trim() == want {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{sql} answered {got:?}, not {want:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits (up to 30 s) until the mock has seen `n` requests.
async fn wait_for_requests(mock: &MockProvider, n: usize) {
    let started = std::time::Instant::now();
    while mock.requests().len() < n {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "only {} of {n} requests reached the model",
            mock.requests().len()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Messages for a session another host is running wait in PostgreSQL's queue table: the host
/// holding the lane runs them after its own run (collect mode: one merged run answering both
/// hosts' callers); when that host dies, the waiting host runs its message itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_for_a_session_running_on_another_gateway_queue_in_postgres() {
    let Some(pg) = filo_testkit::pg::PgServer::start().unwrap() else {
        return;
    };
    let stall = |text: &str, secs: u64| {
        Turn::Fault(filo_testkit::Fault::Stall {
            after_events: 1,
            reply: filo_testkit::Reply::text(text),
            stall: Duration::from_secs(secs),
        })
    };
    let script = vec![
        stall("first answer", 4),
        Turn::text("collected answer"),
        stall("never finished", 60),
        Turn::text("host b ran it itself"),
    ];
    let mock = MockProvider::start(script).await;
    let home = Home::new(&mock);
    let url = pg.url();
    let a = start_host(&home, &home.path().join("host-a"), &url).await;
    let b = start_host(&home, &home.path().join("host-b"), &url).await;
    let c = start_host(&home, &home.path().join("host-c"), &url).await;
    let queued = "SELECT count(*) FROM filo_gateway.queue WHERE state = 'queued'";

    let first = {
        let addr = a.addr.clone();
        tokio::spawn(async move { say(&addr, "q", "first").await })
    };
    wait_for_requests(&mock, 1).await;
    let second = {
        let addr = b.addr.clone();
        tokio::spawn(async move { say(&addr, "q", "second").await })
    };
    wait_for_sql(&pg, queued, "1").await;
    let third = {
        let addr = c.addr.clone();
        tokio::spawn(async move { say(&addr, "q", "third").await })
    };
    wait_for_sql(&pg, queued, "2").await;
    assert_eq!(
        mock.requests().len(),
        1,
        "the queued messages wait for host A's run"
    );
    assert_eq!(first.await.unwrap(), "first answer");
    assert_eq!(second.await.unwrap(), "collected answer");
    assert_eq!(third.await.unwrap(), "collected answer");
    assert_eq!(mock.requests().len(), 2, "one merged run answered both");
    let texts = shared_user_texts(&pg, "q");
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert_eq!(texts[0], "first");
    let (s, t) = (texts[1].find("second"), texts[1].find("third"));
    assert!(
        texts[1].starts_with("[Queued messages while agent was busy]") && s < t && s.is_some(),
        "{}",
        texts[1]
    );
    wait_for_sql(&pg, "SELECT count(*) FROM filo_gateway.queue", "0").await;

    // Host A dies while running session r with host B's message queued behind it: host B
    // takes the lane and runs its message; nothing of A's run is visible.
    let a_addr = a.addr.clone();
    let lost = tokio::spawn(async move {
        let body = json!({ "message": "lost on a" }).to_string();
        let mut s = tokio::net::TcpStream::connect(&a_addr).await.unwrap();
        let req = format!(
            "POST /v1/sessions/r/messages HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer t\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        s.write_all(req.as_bytes()).await.unwrap();
        let mut raw = Vec::new();
        let _ = s.read_to_end(&mut raw).await;
    });
    wait_for_requests(&mock, 3).await;
    let from_b = {
        let addr = b.addr.clone();
        tokio::spawn(async move { say(&addr, "r", "from b").await })
    };
    wait_for_sql(&pg, queued, "1").await;
    let mut a = a;
    a.child.start_kill().unwrap();
    a.child.wait().await.unwrap();
    let _ = lost.await;
    assert_eq!(from_b.await.unwrap(), "host b ran it itself");
    assert_eq!(shared_user_texts(&pg, "r"), ["from b"]);
    wait_for_sql(&pg, "SELECT count(*) FROM filo_gateway.queue", "0").await;
    drop((b, c));
}

/// The first file named `name` under `dir`.
fn find_file(dir: &std::path::Path, name: &str) -> Option<std::path::PathBuf> {
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        let path = e.path();
        if path.is_dir() {
            if let Some(found) = find_file(&path, name) {
                return Some(found);
            }
        } else if e.file_name() == name {
            return Some(path);
        }
    }
    None
}
