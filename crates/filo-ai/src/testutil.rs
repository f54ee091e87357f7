//! Helpers for the codec unit tests: run the real client over canned bytes.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::RetryPolicy;
use crate::client::{Client, ModelClient, StreamOptions};
use crate::env::Env;
use crate::event::{Accumulator, AssistantEvent};
use crate::message::{AssistantMessage, Context};
use crate::model::Model;
use crate::registry::ProviderRegistry;
use crate::transport::{FixtureResponse, FixtureTransport, HttpRequest};

pub fn model(provider: &str, api: &str, id: &str) -> Model {
    serde_json::from_value(json!({
        "id": id, "name": id, "api": api, "provider": provider, "baseUrl": "http://127.0.0.1:1/v1",
        "reasoning": true, "input": ["text", "image"],
        "cost": {"input": 1.0, "output": 2.0, "cacheRead": 0.5, "cacheWrite": 1.0},
        "contextWindow": 100000, "maxTokens": 8000
    }))
    .unwrap()
}

/// SSE bytes from `(event, data)` pairs (empty event = no `event:` line).
pub fn sse(frames: &[(&str, &str)]) -> Bytes {
    let mut s = String::new();
    for (event, data) in frames {
        if !event.is_empty() {
            s.push_str(&format!("event: {event}\n"));
        }
        s.push_str(&format!("data: {data}\n\n"));
    }
    Bytes::from(s)
}

/// Split bytes into chunks of `n` bytes, to exercise framing across chunk borders.
pub fn chunked(bytes: &Bytes, n: usize) -> Vec<Bytes> {
    bytes.chunks(n).map(Bytes::copy_from_slice).collect()
}

pub struct Run {
    pub events: Vec<AssistantEvent>,
    pub requests: Vec<HttpRequest>,
    pub message: AssistantMessage,
}

pub async fn run(model: &Model, ctx: &Context, responses: Vec<FixtureResponse>) -> Run {
    run_with(model, ctx, responses, &StreamOptions::default()).await
}

pub async fn run_with(
    model: &Model,
    ctx: &Context,
    responses: Vec<FixtureResponse>,
    options: &StreamOptions,
) -> Run {
    let transport = Arc::new(FixtureTransport::new(responses));
    let client = Client::with_transport(
        ProviderRegistry::empty(),
        Env::from_vars([("ANY", "x")]),
        transport.clone(),
    )
    .with_retry(RetryPolicy {
        max_retries: 2,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
    })
    .with_idle_timeout(Duration::from_millis(200));
    let options = StreamOptions {
        api_key: Some("test-key".into()),
        ..options.clone()
    };
    let events: Vec<AssistantEvent> = client
        .stream(model, ctx, &options, CancellationToken::new())
        .collect()
        .await;
    let message = check_contract(&events);
    Run {
        events,
        requests: transport.requests(),
        message,
    }
}

/// Assert the stream contract and that a consumer-side accumulator agrees with the terminal message.
pub fn check_contract(events: &[AssistantEvent]) -> AssistantMessage {
    // A call that failed before the provider answered is its error alone.
    if let [AssistantEvent::Error { message }] = events {
        assert!(message.content.is_empty(), "{events:?}");
        return message.clone();
    }
    let Some(AssistantEvent::Start { message }) = events.first() else {
        panic!("first event is not Start: {events:?}");
    };
    let terminals = events.iter().filter(|e| e.is_terminal()).count();
    assert_eq!(terminals, 1, "{events:?}");
    let last = events.last().unwrap();
    assert!(last.is_terminal());
    let mut acc = Accumulator::new(message.clone());
    for e in &events[..events.len() - 1] {
        acc.apply(e);
    }
    let (AssistantEvent::Done { message: fin } | AssistantEvent::Error { message: fin }) = last
    else {
        unreachable!()
    };
    assert_eq!(
        acc.partial().content,
        fin.content,
        "accumulated content differs"
    );
    fin.clone()
}

pub fn user_ctx(text: &str) -> Context {
    serde_json::from_value(json!({"messages": [{"role": "user", "content": text, "timestamp": 1}]}))
        .unwrap()
}
