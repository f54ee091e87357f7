//! The wire APIs pi 0.73 added, against what pi 0.73.1 itself does: for each, the mock streams
//! one text + thinking + tool-call reply (the exact bytes in `fixtures/pi073-apis/<api>.stream`),
//! and filo's request and accumulated message must equal the ones pi sent and built for the same
//! bytes (`<api>.pi.json`, recorded by `scripts/record-pi/record-apis.mjs`).

use std::path::PathBuf;

use filo_ai::{
    Client, Context, Env, Model, ModelClient, ProviderRegistry, StreamOptions, ThinkingLevel,
};
use filo_testkit::{Block, MockProvider, Protocol, Reply, StreamContext, Turn, Usage};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::common::{AWS_KEY_ID, AWS_SECRET, check, pi_catalog_model};

/// The APIs with a recorded pi fixture.
const APIS: [Protocol; 4] = [
    Protocol::AzureOpenAiResponses,
    Protocol::GoogleVertex,
    Protocol::MistralConversations,
    Protocol::BedrockConverseStream,
];

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pi073-apis")
}

/// The id of the tool call in the conversation's earlier turn, as that API spells ids.
fn previous_call_id(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::AzureOpenAiResponses | Protocol::OpenAiResponses => "call_prev|fc_prev",
        Protocol::AnthropicMessages
        | Protocol::OpenAiCompletions
        | Protocol::GoogleGenerativeAi
        | Protocol::GoogleVertex
        | Protocol::MistralConversations
        | Protocol::BedrockConverseStream => "call_prev",
    }
}

/// The reply every API streams: thinking with a signature, text, a tool call, usage.
fn reply(protocol: Protocol) -> Reply {
    let call_id = match protocol {
        Protocol::AzureOpenAiResponses | Protocol::OpenAiResponses => "call_read|fc_read",
        Protocol::AnthropicMessages
        | Protocol::OpenAiCompletions
        | Protocol::GoogleGenerativeAi
        | Protocol::GoogleVertex
        | Protocol::BedrockConverseStream => "call_read",
        Protocol::MistralConversations => "callread1",
    };
    Reply::default()
        .with_block(Block::Thinking {
            text: "The user wants the exports; read the file.".into(),
            signature: "c2lnbmF0dXJlLWJ5dGVzLzEyMys=".into(),
        })
        .with_text("Reading src/lib.rs now.")
        .with_tool_call(call_id, "read", json!({"path": "src/lib.rs"}))
        .with_usage(Usage::new(120, 45).with_cache(30, 0))
}

/// The model and environment pi was recorded with, pointed at `base`.
fn setup(protocol: Protocol, mock: &MockProvider) -> (Model, Env) {
    let mut model = pi_catalog_model(protocol).unwrap();
    let env = match protocol {
        Protocol::AzureOpenAiResponses => Env::from_vars([
            ("AZURE_OPENAI_API_KEY", "azure-test".to_string()),
            ("AZURE_OPENAI_BASE_URL", mock.base_url(protocol)),
        ]),
        Protocol::GoogleVertex => {
            model.base_url = mock.base_url(protocol);
            Env::from_vars([("GOOGLE_CLOUD_API_KEY", "vertex-test")])
        }
        Protocol::MistralConversations => {
            model.base_url = mock.base_url(protocol);
            Env::from_vars([("MISTRAL_API_KEY", "mistral-test")])
        }
        // The catalog's standard URL stays: with a region configured, the SDK's endpoint
        // override variable points it at the mock.
        Protocol::BedrockConverseStream => Env::from_vars([
            ("AWS_ACCESS_KEY_ID", AWS_KEY_ID.to_string()),
            ("AWS_SECRET_ACCESS_KEY", AWS_SECRET.to_string()),
            ("AWS_REGION", "us-west-2".to_string()),
            ("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", mock.url()),
        ]),
        Protocol::AnthropicMessages
        | Protocol::OpenAiCompletions
        | Protocol::OpenAiResponses
        | Protocol::GoogleGenerativeAi => unreachable!("no pi fixture for {protocol:?}"),
    };
    if protocol == Protocol::AzureOpenAiResponses {
        model.base_url = String::new();
    }
    (model, env)
}

fn context(model: &Model, protocol: Protocol) -> Context {
    let text = std::fs::read_to_string(dir().join("context.json"))
        .unwrap()
        .replace("$API", &model.api)
        .replace("$PROVIDER", &model.provider)
        .replace("$MODEL", &model.id)
        .replace("$CALL_ID", previous_call_id(protocol));
    serde_json::from_str(&text).unwrap()
}

/// The bytes the mock sends for the fixture reply.
fn stream_bytes(protocol: Protocol, model_in_request: &str) -> Vec<u8> {
    let ctx = StreamContext::new(model_in_request);
    filo_testkit::encode(
        protocol,
        &filo_testkit::frames(protocol, &reply(protocol), &ctx),
    )
}

#[test]
fn pi073_apis_stream_files_are_the_mock_bytes() {
    for protocol in APIS {
        let model = pi_catalog_model(protocol).unwrap();
        let want = stream_bytes(protocol, &model.id);
        let path = dir().join(format!("{}.stream", protocol.api_name()));
        if std::env::var_os("FILO_UPDATE_FIXTURES").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        let have = std::fs::read(&path).unwrap();
        assert!(
            have == want,
            "{}: the mock no longer sends the recorded bytes",
            path.display()
        );
    }
}

/// Headers whose values pi and filo must agree on (the rest is transport noise or SDK identity).
const HEADERS: [&str; 6] = [
    "content-type",
    "api-key",
    "authorization",
    "x-goog-api-key",
    "x-affinity",
    "accept",
];

#[tokio::test]
async fn pi073_apis_requests_and_messages_equal_pis() {
    for protocol in APIS {
        let api = protocol.api_name();
        let pi: Value = serde_json::from_str(
            &std::fs::read_to_string(dir().join(format!("{api}.pi.json"))).unwrap(),
        )
        .unwrap();
        let mock = MockProvider::start(vec![Turn::Reply(reply(protocol))]).await;
        let (model, env) = setup(protocol, &mock);
        let client = Client::new(ProviderRegistry::builtin().unwrap(), env).unwrap();
        let options = StreamOptions {
            reasoning: ThinkingLevel::High,
            session_id: Some("session-1".into()),
            max_retries: Some(0),
            ..StreamOptions::default()
        };
        let events: Vec<_> = client
            .stream(
                &model,
                &context(&model, protocol),
                &options,
                CancellationToken::new(),
            )
            .collect()
            .await;
        let message = filo_ai::Message::Assistant(check(&events));
        let mut message = serde_json::to_value(message).unwrap();
        message["timestamp"] = json!(0);
        let mut pi_message = pi["message"].clone();
        if protocol == Protocol::AzureOpenAiResponses {
            // Recorded with pi 0.73.1's provider id; pi 1.6 (and filo) name it `azure`.
            pi_message["provider"] = json!("azure");
        }
        // serde_json reads pi's shortest-round-trip floats to within an ulp; compare costs apart.
        let cost = message["usage"]["cost"].take();
        let pi_cost = pi_message["usage"]["cost"].take();
        assert_eq!(message, pi_message, "{api}: the accumulated message");
        for part in ["input", "output", "cacheRead", "cacheWrite", "total"] {
            let (a, b) = (
                cost[part].as_f64().unwrap(),
                pi_cost[part].as_f64().unwrap(),
            );
            assert!((a - b).abs() <= 1e-15, "{api}: cost.{part} {a} != {b}");
        }
        let request = mock.requests().remove(0);
        let pi_request = &pi["request"];
        assert_eq!(
            request.method,
            pi_request["method"].as_str().unwrap(),
            "{api}"
        );
        assert_eq!(request.path, pi_request["path"].as_str().unwrap(), "{api}");
        assert_eq!(request.body, pi_request["body"], "{api}: the body");
        for name in HEADERS {
            let pi_value = pi_request["headers"].get(name).and_then(Value::as_str);
            // reqwest's default `accept: */*` where the AWS SDK sends none is transport noise.
            if name == "accept"
                && (pi_value.is_some() || protocol == Protocol::BedrockConverseStream)
            {
                continue;
            }
            // SigV4 signatures depend on the time; see `pi073_bedrock_signature_is_the_sdks`.
            if name == "authorization" && protocol == Protocol::BedrockConverseStream {
                continue;
            }
            assert_eq!(request.header(name), pi_value, "{api}: header {name}");
        }
    }
}

/// pi's recorded Bedrock request was signed by the AWS SDK (`@smithy/signature-v4`); filo's
/// signer, given the same request (method, path, the headers the SDK signed, the raw body's
/// hash) and time, computes the same `authorization` header.
#[test]
fn pi073_bedrock_signature_is_the_sdks() {
    use filo_ai::aws_sigv4::{Credentials, Scope, Signable, authorization, sha256_hex};
    let pi: Value = serde_json::from_str(
        &std::fs::read_to_string(dir().join("bedrock-converse-stream.pi.json")).unwrap(),
    )
    .unwrap();
    let request = &pi["request"];
    let raw = request["rawBody"].as_str().unwrap();
    let hash = request["headers"]["x-amz-content-sha256"].as_str().unwrap();
    assert_eq!(sha256_hex(raw.as_bytes()), hash);
    let signed: Vec<(String, String)> = request["signedHeaders"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
        .collect();
    let date = request["headers"]["x-amz-date"].as_str().unwrap();
    let time = filo_ai::aws_sigv4::parse_amz_date(date).unwrap();
    let credentials = Credentials {
        access_key_id: AWS_KEY_ID.into(),
        secret_access_key: AWS_SECRET.into(),
        session_token: None,
    };
    let ours = authorization(
        &Signable {
            method: "POST",
            path: request["path"].as_str().unwrap(),
            query: Vec::new(),
            headers: &signed,
            payload_hash: hash,
        },
        &Scope {
            credentials: &credentials,
            region: "us-west-2",
            service: "bedrock",
            time,
        },
    );
    assert_eq!(ours, request["headers"]["authorization"].as_str().unwrap());
}
