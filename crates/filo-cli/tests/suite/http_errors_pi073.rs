//! What a non-2xx provider answer looks like, compared with pi 0.73.1 (fixture
//! `pi073/http-errors.json`, recorded by `scripts/record-pi/record.py http_error_cases`):
//! the text print mode writes on stderr and the assistant message's `errorMessage` in JSON mode,
//! per wire API, byte for byte.

use filo_testkit::{Fault, MockProvider, Protocol, Turn};
use serde_json::{Value, json};

use super::common::Home;

fn fixture() -> Vec<Value> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/pi073/http-errors.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn protocol(api: &str) -> Protocol {
    match api {
        "openai-completions" => Protocol::OpenAiCompletions,
        "openai-responses" => Protocol::OpenAiResponses,
        "anthropic-messages" => Protocol::AnthropicMessages,
        "google-generative-ai" => Protocol::GoogleGenerativeAi,
        other => panic!("no mock protocol for {other}"),
    }
}

/// The answer the recorder's mock gave: a string body as text/plain, anything else as JSON.
fn fault(case: &Value) -> Turn {
    let status = u16::try_from(case["status"].as_u64().unwrap()).unwrap();
    let (content_type, body) = match &case["body"] {
        Value::String(s) => ("text/plain", s.clone()),
        other => ("application/json", other.to_string()),
    };
    Turn::Fault(Fault::Raw {
        status,
        headers: vec![("content-type".into(), content_type.into())],
        body,
    })
}

/// A home whose provider `p-<api>` speaks `api` to the mock.
fn home_for(mock: &MockProvider, api: &str) -> Home {
    let home = Home::new(mock);
    let models = json!({"providers": {format!("p-{api}"): {
        "baseUrl": mock.base_url(protocol(api)),
        "api": api,
        "apiKey": "MOCK_API_KEY",
        "models": [{"id": "mock-model", "contextWindow": 100000, "maxTokens": 1000}]
    }}});
    std::fs::write(
        home.path().join(".filo/agent/models.json"),
        models.to_string(),
    )
    .unwrap();
    home
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_http_errors_read_as_pi_073_words_them() {
    for case in fixture() {
        let name = case["name"].as_str().unwrap();
        let api = case["api"].as_str().unwrap();
        let mock = MockProvider::start(vec![fault(&case), fault(&case)]).await;
        let home = home_for(&mock, api);
        let provider = format!("p-{api}");
        let base = [
            "--provider",
            &provider,
            "--model",
            "mock-model",
            "--no-session",
            "--no-dag",
        ];

        let mut print = base.to_vec();
        print.extend(["-p", "hi"]);
        let (code, out, err) = home.filo(&print).await;
        let pi = &case["print"];
        assert_eq!(code, pi["code"].as_i64().unwrap() as i32, "{name}: {err}");
        assert_eq!(out, pi["stdout"].as_str().unwrap(), "{name}");
        assert_eq!(err, pi["stderr"].as_str().unwrap(), "{name}");

        let mut json_mode = base.to_vec();
        json_mode.extend(["--mode", "json", "hi"]);
        let (_, out, err) = home.filo(&json_mode).await;
        let end = out
            .lines()
            .rev()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|e| e["type"] == "message_end" && e["message"]["role"] == "assistant")
            .unwrap_or_else(|| panic!("{name}: no assistant message_end: {out}\n{err}"));
        assert_eq!(
            end["message"]["stopReason"], case["json"]["stopReason"],
            "{name}"
        );
        assert_eq!(
            end["message"]["errorMessage"], case["json"]["errorMessage"],
            "{name}"
        );
        assert_eq!(mock.requests().len(), 2, "{name}: a 4xx is not retried");
    }
}
