//! A provider that refuses the first request (a non-2xx status before any stream) as pi 0.73.1
//! reports it in JSON mode and over RPC (fixture `pi073/refusal.json`, recorded by
//! `scripts/record-pi/record.py refusal_case`): the failed assistant message still gets its
//! `message_start` (already holding the error) and `message_end`, then `turn_end` and
//! `agent_end`; every event equal to pi's but for timestamps.

use filo_testkit::{Fault, MockProvider, Turn};
use serde_json::{Value, json};

use super::common::Home;
use super::pi073::fixture;
use super::rpc::Rpc;

/// The answer pi's recorder gave: a string body as text/plain, anything else as JSON.
fn refusal(status: u16, body: &Value) -> Turn {
    let (content_type, body) = match body {
        Value::String(s) => ("text/plain", s.clone()),
        other => ("application/json", other.to_string()),
    };
    Turn::Fault(Fault::Raw {
        status,
        headers: vec![("content-type".into(), content_type.into())],
        body,
    })
}

/// Events with every `timestamp` replaced, so that two runs compare.
fn stable(events: &[Value]) -> Vec<Value> {
    fn walk(v: &mut Value) {
        match v {
            Value::Object(map) => {
                for (k, v) in map.iter_mut() {
                    if k == "timestamp" {
                        assert!(v.is_number(), "{v}");
                        *v = "<TS>".into();
                    } else {
                        walk(v);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    let mut events = super::common::as_pi073(events);
    events.iter_mut().for_each(walk);
    events
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_mode_reports_a_refused_request_as_pi_073_does() {
    let pi = fixture("refusal.json");
    for (case, status, body) in [
        (
            "json 400",
            400,
            json!({"error": {"message": "Invalid value for 'temperature'.",
                "type": "invalid_request_error", "param": "temperature", "code": null}}),
        ),
        ("json 404", 404, json!("no such route")),
    ] {
        let recorded = &pi[case];
        let mock = MockProvider::start(vec![refusal(status, &body)]).await;
        let home = Home::new(&mock);
        let (code, stdout, stderr) = home
            .filo(&[
                "--provider",
                "mock",
                "--model",
                "mock-model",
                "--no-session",
                "--no-dag",
                "--mode",
                "json",
                "hi",
            ])
            .await;
        // On purpose unlike pi (which exits 0 here): filo's JSON mode exits 1 when an answer
        // failed, so that a script can tell; the failure itself is in the events, as in pi.
        assert_eq!(recorded["code"], 0);
        assert_eq!(code, 1, "{stderr}");
        let events: Vec<Value> = stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let pi_events = recorded["events"].as_array().unwrap();
        assert_eq!(events[0]["type"], "session");
        assert_eq!(stable(&events[1..]), stable(&pi_events[1..]), "{case}");
        let asked = u64::try_from(mock.requests().len()).unwrap();
        assert_eq!(asked, recorded["requests"].as_u64().unwrap(), "{case}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpc_reports_a_refused_request_as_pi_073_does() {
    let pi = fixture("refusal.json");
    let body = json!({"error": {"message": "Invalid value for 'temperature'.",
        "type": "invalid_request_error"}});
    let mock = MockProvider::start(vec![refusal(400, &body)]).await;
    let home = Home::new(&mock);
    let mut rpc = Rpc::start(&home, &["--no-session", "--no-dag"]);
    rpc.call("p1", json!({"type": "prompt", "message": "hi"}))
        .await;
    rpc.event("agent_end").await;
    let recorded = pi["rpc 400"].as_array().unwrap();
    assert_eq!(stable(&rpc.seen), stable(recorded));
    assert_eq!(rpc.close().await, 0);
}
