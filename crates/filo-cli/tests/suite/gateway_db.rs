//! `filo gateway` when its PostgreSQL goes away and comes back: every caller is answered (an
//! error naming the database while it is away, a normal answer after), `/ready` says so while
//! `/health` stays live, nothing panics, no password reaches a client or the log, and the
//! memory holds every turn of the shared transcript afterwards.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use filo_testkit::pg::PgServer;
use filo_testkit::{Fault, MockProvider, Reply, Turn};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use super::common::Home;

const PASSWORD: &str = "hunter2-secret";

/// A server whose role `filo` logs in with [`PASSWORD`] (SCRAM over TCP; the superuser the
/// test's own `psql` uses stays trusted).
fn server_with_password() -> Option<PgServer> {
    let pg = PgServer::start().unwrap()?;
    pg.psql(&format!(
        "CREATE ROLE filo LOGIN SUPERUSER PASSWORD '{PASSWORD}'"
    ))
    .unwrap();
    std::fs::write(
        pg.data_dir().join("pg_hba.conf"),
        "local all all trust\nhost all postgres 127.0.0.1/32 trust\n\
         host all all 127.0.0.1/32 scram-sha-256\n",
    )
    .unwrap();
    pg.psql("SELECT pg_reload_conf()").unwrap();
    Some(pg)
}

fn url_for(pg: &PgServer, password: &str) -> String {
    format!(
        "postgres://filo:{password}@127.0.0.1:{}/postgres?sslmode=disable",
        pg.port()
    )
}

/// A gateway process whose stderr is kept (to look for panics and passwords).
struct Host {
    child: tokio::process::Child,
    addr: String,
    log: Arc<Mutex<String>>,
}

impl Host {
    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// Starts `filo gateway` with `args` and `env`; `Err(stderr)` when it exits before listening.
async fn start(
    home: &Home,
    state: &std::path::Path,
    args: &[&str],
    env: &[(&str, &str)],
    embed: &Value,
) -> Result<Host, String> {
    std::fs::create_dir_all(state).unwrap();
    std::fs::write(state.join("filo-embed.json"), embed.to_string()).unwrap();
    let mut all = vec!["gateway", "--bind", "127.0.0.1:0"];
    all.extend_from_slice(args);
    let mut cmd = home.command(&all);
    cmd.env("FILO_STATE_DIR", state)
        .env("FILO_GATEWAY_TOKEN", "t")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let log = Arc::new(Mutex::new(String::new()));
    let addr = tokio::time::timeout(Duration::from_secs(60), async {
        while let Ok(Some(line)) = lines.next_line().await {
            log.lock().unwrap().push_str(&line);
            log.lock().unwrap().push('\n');
            if let Some(rest) = line.strip_prefix("filo gateway listening on ") {
                return Some(rest.split_whitespace().next().unwrap().to_owned());
            }
        }
        None
    })
    .await
    .expect("the gateway neither listened nor exited");
    let Some(addr) = addr else {
        let _ = child.wait().await;
        return Err(log.lock().unwrap().clone());
    };
    let keep = log.clone();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            let mut log = keep.lock().unwrap();
            log.push_str(&line);
            log.push('\n');
        }
    });
    Ok(Host { child, addr, log })
}

async fn request(addr: &str, method: &str, path: &str, body: Option<&Value>) -> (u16, String) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let body = body.map(Value::to_string).unwrap_or_default();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAuthorization: Bearer t\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
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

/// One message on the session route: its status and JSON answer.
async fn say(addr: &str, key: &str, message: &str) -> (u16, Value) {
    let body = json!({ "message": message });
    let (status, text) = request(
        addr,
        "POST",
        &format!("/v1/sessions/{key}/messages"),
        Some(&body),
    )
    .await;
    let v = serde_json::from_str(&text).unwrap_or_else(|_| json!({ "raw": text }));
    (status, v)
}

async fn ready(addr: &str) -> u16 {
    request(addr, "GET", "/ready", None).await.0
}

async fn wait_ready(addr: &str, want: u16) {
    let started = std::time::Instant::now();
    while ready(addr).await != want {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "/ready never answered {want}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The user texts of `key`'s shared transcript, in order.
fn shared_user_texts(pg: &PgServer, key: &str) -> Vec<String> {
    let rows = pg
        .psql(&format!(
            "SELECT t.line FROM filo_gateway.transcript_lines t JOIN filo_gateway.sessions s \
             ON t.session_id = s.entry::json->>'sessionId' WHERE s.key = 'agent:main:{key}' \
             ORDER BY t.n"
        ))
        .unwrap();
    rows.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["message"]["role"] == "user")
        .map(|e| {
            e["message"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

fn assert_no_secret(what: &str, text: &str) {
    assert!(
        !text.contains(PASSWORD),
        "{what} carries the password: {text}"
    );
    assert!(!text.contains("panicked"), "{what} shows a panic: {text}");
}

/// A `--store` gateway through a restart between turns and a stop during a turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_store_gateway_outlives_database_restarts() {
    let Some(mut pg) = server_with_password() else {
        return;
    };
    let mock = MockProvider::start(vec![
        Turn::text("answer 1"),
        Turn::text("answer 2"),
        Turn::Fault(Fault::Stall {
            after_events: 1,
            reply: Reply::text("answer 3 (never saved)"),
            stall: Duration::from_secs(2),
        }),
        Turn::text("answer 4"),
        Turn::text("answer 5"),
    ])
    .await;
    let home = Home::new(&mock);
    let url = url_for(&pg, PASSWORD);
    let embed = json!({"agents": {"defaults": {"model": {"primary": "mock/mock-model"}}}});
    // The connection string comes from the environment.
    let host = start(
        &home,
        &home.path().join("state"),
        &[],
        &[("FILO_GATEWAY_STORE", &url)],
        &embed,
    )
    .await
    .unwrap();
    let (status, v) = say(&host.addr, "k", "turn 1").await;
    assert_eq!((status, v["text"].as_str()), (200, Some("answer 1")), "{v}");

    // Restarted between turns: the next turn is served as if nothing happened.
    pg.stop_now();
    pg.start_again().unwrap();
    let (status, v) = say(&host.addr, "k", "turn 2").await;
    assert_eq!((status, v["text"].as_str()), (200, Some("answer 2")), "{v}");
    assert!(v["warnings"].as_array().is_none_or(Vec::is_empty), "{v}");
    assert_eq!(ready(&host.addr).await, 200);

    // Stopped while a turn waits on the model: that caller gets an error naming the database.
    let addr = host.addr.clone();
    let during = tokio::spawn(async move { say(&addr, "k", "turn 3").await });
    let started = std::time::Instant::now();
    while mock.requests().len() < 3 {
        assert!(started.elapsed() < Duration::from_secs(30));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    pg.stop_now();
    let (status, v) = tokio::time::timeout(Duration::from_secs(60), during)
        .await
        .expect("the caller of the cut turn was never answered")
        .unwrap();
    let text = v.to_string();
    assert_eq!(
        (status, v["status"].as_str()),
        (200, Some("error")),
        "{text}"
    );
    assert!(text.contains("is unavailable"), "{text}");
    assert!(text.contains(&format!("127.0.0.1:{}", pg.port())), "{text}");
    assert_no_secret("the cut turn's answer", &text);

    // While it is away: every caller answered with the error, /ready 503, /health 200.
    for key in ["k", "other"] {
        let (status, v) = say(&host.addr, key, "while away").await;
        let text = v.to_string();
        assert_eq!(
            (status, v["status"].as_str()),
            (200, Some("error")),
            "{text}"
        );
        assert!(text.contains("is unavailable"), "{text}");
        assert_no_secret("an answer while away", &text);
    }
    let (status, body) = request(&host.addr, "GET", "/ready", None).await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("store"), "{body}");
    assert_eq!(request(&host.addr, "GET", "/health", None).await.0, 200);

    // Back: ready again, and the key goes on with its saved history.
    pg.start_again().unwrap();
    wait_ready(&host.addr, 200).await;
    let (status, v) = say(&host.addr, "k", "turn 4").await;
    assert_eq!((status, v["text"].as_str()), (200, Some("answer 4")), "{v}");
    let (status, v) = say(&host.addr, "other", "after").await;
    assert_eq!((status, v["text"].as_str()), (200, Some("answer 5")), "{v}");
    assert_eq!(shared_user_texts(&pg, "k"), ["turn 1", "turn 2", "turn 4"]);
    let last = mock.requests().into_iter().nth(3).unwrap().body.to_string();
    assert!(
        last.contains("turn 2") && !last.contains("answer 3"),
        "{last}"
    );

    // No panic, no password in the log or the metrics.
    let (_, metrics) = request(&host.addr, "GET", "/metrics", None).await;
    assert_no_secret("/metrics", &metrics);
    assert_no_secret("the gateway's log", &host.log());

    // The memory: consistent, and every entry of the shared transcript in it, each under its
    // session parent.
    let export = home.path().join("k.jsonl");
    let (code, _, err) = home
        .filo(&[
            "gateway",
            "export",
            "k",
            "--store",
            &url,
            "-o",
            export.to_str().unwrap(),
        ])
        .await;
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = home
        .filo(&[
            "dag",
            "fsck",
            "--db",
            &url,
            "--session",
            export.to_str().unwrap(),
        ])
        .await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.ends_with("0 problem(s)\n"), "{out}");
    assert_no_secret("fsck", &format!("{out}{err}"));
}

/// Wrong passwords and an unreachable server, in every URL form: a gateway on the shared store
/// refuses to start with an error naming the server; a gateway on files whose memory is such a
/// database answers every turn with a warning. No password anywhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_passwords_and_unreachable_servers_are_named_without_the_password() {
    let Some(pg) = server_with_password() else {
        return;
    };
    let mock = MockProvider::start(vec![Turn::text("served"), Turn::text("served again")]).await;
    let home = Home::new(&mock);
    let closed_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let wrong_userinfo = url_for(&pg, PASSWORD).replace(PASSWORD, &format!("{PASSWORD}-no"));
    let wrong_param = format!(
        "postgres://filo@127.0.0.1:{}/postgres?sslmode=disable&password={PASSWORD}-no",
        pg.port()
    );
    let unreachable =
        format!("postgres://filo:{PASSWORD}@127.0.0.1:{closed_port}/postgres?sslmode=disable");
    let model = json!({"agents": {"defaults": {"model": {"primary": "mock/mock-model"}}}});
    for (i, (url, why)) in [
        (&wrong_userinfo, "password authentication failed"),
        (&wrong_param, "password authentication failed"),
        (&unreachable, "is unavailable"),
    ]
    .into_iter()
    .enumerate()
    {
        let state = home.path().join(format!("store-{i}"));
        let err = match start(&home, &state, &["--store", url], &[], &model).await {
            Ok(host) => panic!("started on {url}: {}", host.log()),
            Err(log) => log,
        };
        assert!(err.contains(why), "{err}");
        assert!(err.contains("127.0.0.1:"), "{err}");
        assert_no_secret("a refused start", &err);
    }
    // The memory on such a database: the turn is served, the warning says why, no password.
    for (i, url) in [&wrong_param, &unreachable].into_iter().enumerate() {
        let state = home.path().join(format!("files-{i}"));
        let embed = json!({"agents": {"defaults": {"model": {"primary": "mock/mock-model"}}},
                           "memory": {"db": url}});
        let host = start(&home, &state, &[], &[], &embed).await.unwrap();
        let (status, v) = say(&host.addr, "k", "hello").await;
        let text = v.to_string();
        assert_eq!(status, 200, "{text}");
        assert!(text.contains("memory disabled for this run"), "{text}");
        assert_no_secret("a run's warnings", &text);
        let (_, metrics) = request(&host.addr, "GET", "/metrics", None).await;
        assert_no_secret("/metrics", &metrics);
        assert_no_secret("the gateway's log", &host.log());
    }
}

/// A gateway on files whose memory is in PostgreSQL: turns go on while the database is away
/// (each says the memory could not be written), and once it is back the next turn's resume
/// brings the memory up to the transcript: every entry in it, under its session parent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_made_while_the_memory_database_was_away_reach_it_afterwards() {
    let Some(mut pg) = server_with_password() else {
        return;
    };
    let mock = MockProvider::start(vec![
        Turn::text("answer 1"),
        Turn::text("answer 2"),
        Turn::text("answer 3"),
    ])
    .await;
    let home = Home::new(&mock);
    let url = url_for(&pg, PASSWORD);
    let state = home.path().join("state");
    let embed = json!({"agents": {"defaults": {"model": {"primary": "mock/mock-model"}}},
                       "memory": {"db": url}});
    let host = start(&home, &state, &[], &[], &embed).await.unwrap();
    let (status, v) = say(&host.addr, "k", "turn 1").await;
    assert_eq!((status, v["text"].as_str()), (200, Some("answer 1")), "{v}");
    pg.stop_now();
    let (status, v) = say(&host.addr, "k", "turn 2").await;
    let text = v.to_string();
    assert_eq!(
        (status, v["text"].as_str()),
        (200, Some("answer 2")),
        "{text}"
    );
    assert!(text.contains("is unavailable"), "{text}");
    assert_no_secret("a run's warnings", &text);
    pg.start_again().unwrap();
    let (status, v) = say(&host.addr, "k", "turn 3").await;
    assert_eq!((status, v["text"].as_str()), (200, Some("answer 3")), "{v}");
    assert_no_secret("the gateway's log", &host.log());
    let transcript = find_jsonl(&state).expect("the session's transcript");
    // The memory catches up by itself (its writer tries what waits again every second).
    let started = std::time::Instant::now();
    loop {
        let (code, out, err) = home
            .filo(&[
                "dag",
                "fsck",
                "--db",
                &url,
                "--session",
                transcript.to_str().unwrap(),
            ])
            .await;
        if code == 0 {
            assert!(out.contains("session "), "{out}");
            assert!(out.ends_with("0 problem(s)\n"), "{out}");
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the memory never caught up: {out}{err}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The one session transcript under `dir`.
fn find_jsonl(dir: &std::path::Path) -> Option<std::path::PathBuf> {
    for entry in std::fs::read_dir(dir).ok()? {
        let path = entry.ok()?.path();
        if path.is_dir() {
            if let Some(found) = find_jsonl(&path) {
                return Some(found);
            }
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            return Some(path);
        }
    }
    None
}
