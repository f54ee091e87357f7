//! The binary serves the scripted replies over HTTP and exits when its stdin closes.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use filo_bench::TEXT_ANSWER;

/// Kills the server if a test fails before it exits on its own.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(scenario: &str) -> (Server, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_filo-mock-server"))
        .arg(scenario)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let server = Server(child);
    let mut url = String::new();
    BufReader::new(stdout).read_line(&mut url).unwrap();
    (server, url.trim().to_owned())
}

/// One raw HTTP/1.1 streaming chat-completions request; the whole response as text.
fn post(url: &str) -> String {
    let addr = url.strip_prefix("http://").unwrap();
    let body =
        r#"{"model":"mock-model","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

fn wait_exit(server: &mut Server) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = server.0.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "the server did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn tool_scenario_alternates_a_bash_call_and_an_answer_then_exits_on_stdin_eof() {
    let (mut server, url) = start("tool");
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    for round in 0..3 {
        let call = post(&url);
        assert!(call.starts_with("HTTP/1.1 200"), "round {round}: {call}");
        assert!(call.contains(r#""name":"bash""#), "{call}");
        assert!(call.contains(r#""finish_reason":"tool_calls""#), "{call}");
        assert!(call.contains("call_bench_"), "{call}");
        let answer = post(&url);
        assert!(answer.contains(r#""finish_reason":"stop""#), "{answer}");
        assert!(!answer.contains("tool_calls"), "{answer}");
    }
    drop(server.0.stdin.take());
    assert!(wait_exit(&mut server).success());
    let mut log = String::new();
    server
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut log)
        .unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 6, "{log}");
    assert!(
        lines[0].starts_with("request 1: POST /v1/chat/completions messages=1 tools=0 body_bytes="),
        "{log}"
    );
}

#[test]
fn text_scenario_answers_every_request_with_text() {
    let (mut server, url) = start("text");
    // More requests than one batch of the script holds: the refill keeps up.
    for _ in 0..(3 * filo_bench::LOW_WATER) {
        let answer = post(&url);
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.contains(r#""finish_reason":"stop""#), "{answer}");
    }
    let first_word = TEXT_ANSWER.split(' ').next().unwrap();
    assert!(post(&url).contains(first_word));
    drop(server.0.stdin.take());
    assert!(wait_exit(&mut server).success());
}

#[test]
fn an_unknown_scenario_is_refused() {
    let out = Command::new(env!("CARGO_BIN_EXE_filo-mock-server"))
        .arg("chat")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unknown scenario `chat`"), "{stderr}");
}
