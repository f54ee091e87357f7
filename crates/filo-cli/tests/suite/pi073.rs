//! filo against fixtures recorded from pi 0.73.1 (`tests/fixtures/pi073/README.md`): the edit
//! tool's results and definition, the system prompt, and resuming a session pi wrote with
//! multi-edit calls.

use std::path::Path;

use filo_testkit::{MockProvider, Reply, Turn};
use serde_json::{Value, json};

use super::common::Home;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/pi073");

pub fn fixture(name: &str) -> Value {
    let text = std::fs::read_to_string(Path::new(FIXTURES).join(name)).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The seven `edit` calls pi's mock sent, replayed verbatim (argument text included).
fn pi_edit_calls() -> (Reply, Vec<Value>) {
    let requests = fixture("edit.requests.json");
    let assistant = &requests[1]["messages"][2];
    assert_eq!(assistant["role"], "assistant");
    let calls = assistant["tool_calls"].as_array().unwrap().clone();
    let mut reply = Reply::empty();
    for c in &calls {
        reply = reply.with_raw_tool_call(
            c["id"].as_str().unwrap(),
            c["function"]["name"].as_str().unwrap(),
            c["function"]["arguments"].as_str().unwrap(),
        );
    }
    (reply, calls)
}

fn write_edit_project(home: &Home) {
    for (name, text) in [
        ("a.txt", "one\ntwo\nthree\nfour\n"),
        ("b.txt", "x = 1\ny = 2\n"),
        ("c.txt", "left right\n"),
        ("d.txt", "same same\n"),
        ("e.txt", "keep\n"),
    ] {
        std::fs::write(home.project().join(name), text).unwrap();
    }
}

/// The tool-result messages of a request, in order.
fn tool_messages(body: &Value) -> Vec<Value> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .cloned()
        .collect()
}

fn system_prompt(body: &Value) -> String {
    let first = &body["messages"][0];
    assert_eq!(first["role"], "system");
    first["content"].as_str().unwrap().to_string()
}

/// pi's prompt with its harness name and its own documentation block replaced by filo's, the
/// recording's directory and date by this run's.
fn pi_prompt_as_filo(pi: &str, cwd: &Path, date: &str) -> String {
    let start = pi.find("\n\nPi documentation").unwrap();
    let end = pi.find("\nCurrent date:").unwrap();
    let without_docs = format!("{}{}", &pi[..start], &pi[end..]);
    without_docs
        .replace(
            "operating inside pi, a coding",
            "operating inside filo, a coding",
        )
        .replace("<TMP>/project", &cwd.to_string_lossy())
        .replace("<DATE>", date)
}

fn date_of(prompt: &str) -> String {
    let at = prompt.find("Current date: ").unwrap() + "Current date: ".len();
    prompt[at..at + 10].to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edit_calls_answer_byte_for_byte_as_pi_073() {
    let (reply, _) = pi_edit_calls();
    let mock = MockProvider::start(vec![Turn::Reply(reply), Turn::text("Done.")]).await;
    let home = Home::new(&mock);
    write_edit_project(&home);
    let (code, out, err) = home
        .filo(&[
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "--no-dag",
            "-p",
            "apply the edits",
        ])
        .await;
    assert_eq!(code, 0, "{out}\n{err}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let pi = fixture("edit.requests.json");
    // Tool results: the same texts, for the same ids, in the same order.
    assert_eq!(tool_messages(&requests[1].body), tool_messages(&pi[1]));
    // The files end as pi left them.
    let after = fixture("edit.files-after.json");
    for (name, text) in after.as_object().unwrap() {
        let got = std::fs::read_to_string(home.project().join(name)).unwrap();
        assert_eq!(&got, text.as_str().unwrap(), "{name}");
    }
    // The results as the session keeps them (diff details included) are pi's.
    let sessions = home.sessions();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let session = &sessions[0];
    let results = |lines: Vec<Value>| -> Vec<Value> {
        lines
            .into_iter()
            .filter(|e| e["type"] == "message" && e["message"]["role"] == "toolResult")
            .map(|e| {
                let m = &e["message"];
                json!([m["toolCallId"], m["content"], m["details"], m["isError"]])
            })
            .collect()
    };
    let pi_session = std::fs::read_to_string(Path::new(FIXTURES).join("edit.session.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let pi_results = results(pi_session);
    assert_eq!(pi_results.len(), 7);
    assert_eq!(results(super::common::jsonl(session)), pi_results);
    // The edit tool's definition is pi's.
    let edit = |body: &Value| {
        body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["function"]["name"] == "edit")
            .map(|t| {
                (
                    t["function"]["description"].clone(),
                    t["function"]["parameters"].clone(),
                )
            })
            .unwrap()
    };
    // pi 1.6 dropped `additionalProperties: false` from it: the request filo sends now carries
    // pi 1.6.0's declaration (recorded), not 0.73.1's.
    let pi16: Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(FIXTURES).join("../pi-1.6.0/requests.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        edit(&requests[0].body),
        edit(&pi16["openai-completions"][0]["body"])
    );
    assert_ne!(edit(&pi16["openai-completions"][0]["body"]), edit(&pi[0]));
    // The whole system prompt is pi's, but for the harness name and pi's documentation block.
    let filo_prompt = system_prompt(&requests[0].body);
    let cwd = std::fs::canonicalize(home.project()).unwrap();
    let expected = pi_prompt_as_filo(&system_prompt(&pi[0]), &cwd, &date_of(&filo_prompt));
    assert_eq!(filo_prompt, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_pi_073_wrote_with_multi_edit_calls_resumes_with_pis_context() {
    let mock = MockProvider::start(vec![Turn::text("Resumed.")]).await;
    let home = Home::new(&mock);
    let session = home.path().join("pi-session.jsonl");
    std::fs::copy(Path::new(FIXTURES).join("edit.session.jsonl"), &session).unwrap();
    let (code, out, err) = home
        .filo(&[
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "--no-dag",
            "-p",
            "--session",
            &session.to_string_lossy(),
            "what did you change?",
        ])
        .await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(out.trim(), "Resumed.");
    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    let pi = fixture("edit.resume.requests.json");
    let messages = |body: &Value| body["messages"].as_array().unwrap()[1..].to_vec();
    assert_eq!(messages(&requests[0].body), messages(&pi[0]));
    // The file kept pi's lines and gained filo's turn after them.
    let lines = std::fs::read_to_string(&session).unwrap();
    let original = std::fs::read_to_string(Path::new(FIXTURES).join("edit.session.jsonl")).unwrap();
    assert!(lines.starts_with(&original));
    assert!(lines.len() > original.len());
}

/// Whether each assistant `message_start` / `message_update` / `message_end` event carries a
/// `responseId`, in order.
fn response_id_presence(events: &[Value]) -> Vec<(String, bool)> {
    events
        .iter()
        .filter(|v| {
            v["message"]["role"] == "assistant"
                && ["message_start", "message_end"]
                    .iter()
                    .any(|t| v["type"] == *t)
        })
        .map(|v| {
            let kind = v["type"].as_str().unwrap().to_string();
            (kind, v["message"].get("responseId").is_some())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn response_id_reaches_events_and_the_session_file_as_in_pi_073() {
    let mock = MockProvider::start(vec![Turn::text("hello")]).await;
    let home = Home::new(&mock);
    let (code, out, err) = home
        .filo(&[
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "--no-dag",
            "--mode",
            "json",
            "hi",
        ])
        .await;
    assert_eq!(code, 0, "{out}\n{err}");
    let events: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // pi 0.73.1 on the same one-word answer (recorded over RPC, which prints the same events):
    // no id at message_start (announced before the response arrives), the id on every update
    // and at message_end.
    let pi: Vec<Value> = fixture("rpc-session.json").as_array().unwrap().clone();
    assert_eq!(response_id_presence(&events), response_id_presence(&pi));
    let end = events
        .iter()
        .find(|v| v["type"] == "message_end" && v["message"]["role"] == "assistant")
        .unwrap();
    assert_eq!(end["message"]["responseId"], "chatcmpl-mock-1");
    // The session line has the field where pi writes it: right after the message's timestamp.
    let sessions = home.sessions();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let text = std::fs::read_to_string(&sessions[0]).unwrap();
    let line = text
        .lines()
        .find(|l| l.contains(r#""role":"assistant""#))
        .unwrap();
    let timestamp = end["message"]["timestamp"].as_i64().unwrap();
    assert!(
        line.ends_with(&format!(
            r#""timestamp":{timestamp},"responseId":"chatcmpl-mock-1"}}}}"#
        )),
        "{line}"
    );
}
