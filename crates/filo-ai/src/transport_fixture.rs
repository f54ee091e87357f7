//! Canned responses for tests and benchmarks (feature `testing`): the real driver and parsers
//! run over bytes held in memory.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use futures::future::BoxFuture;

use super::{ByteStream, HttpRequest, HttpResponse, Transport};
use crate::error::AiError;

/// How a canned body ends after its chunks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FixtureEnd {
    /// The body ends normally.
    Close,
    /// The connection stays open and silent forever.
    Stall,
    /// Reading fails with a connection error carrying this text.
    Reset(String),
}

/// One canned response.
#[derive(Debug, Clone)]
pub struct FixtureResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub chunks: Vec<Bytes>,
    pub end: FixtureEnd,
    /// Time before the status line arrives.
    pub delay: Duration,
}

impl FixtureResponse {
    /// A 200 SSE response whose body arrives in these chunks.
    pub fn sse(chunks: Vec<Bytes>) -> Self {
        FixtureResponse {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            chunks,
            end: FixtureEnd::Close,
            delay: Duration::ZERO,
        }
    }

    /// An error response with a body.
    pub fn status(status: u16, body: &str) -> Self {
        FixtureResponse {
            status,
            headers: Vec::new(),
            chunks: vec![Bytes::copy_from_slice(body.as_bytes())],
            end: FixtureEnd::Close,
            delay: Duration::ZERO,
        }
    }

    /// Answer only after `delay` (a server slow to send its headers).
    pub fn delayed(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Add a header (lower-case name).
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_ascii_lowercase(), value.into()));
        self
    }

    /// Change how the body ends.
    pub fn ending(mut self, end: FixtureEnd) -> Self {
        self.end = end;
        self
    }
}

/// Replays canned responses in order and records every request; when none are left, sending
/// fails with a connection error.
#[derive(Debug, Default)]
pub struct FixtureTransport {
    responses: Mutex<VecDeque<FixtureResponse>>,
    requests: Mutex<Vec<HttpRequest>>,
}

impl FixtureTransport {
    pub fn new(responses: Vec<FixtureResponse>) -> Self {
        FixtureTransport {
            responses: Mutex::new(responses.into()),
            requests: Mutex::new(Vec::new()),
        }
    }

    /// The requests sent so far.
    pub fn requests(&self) -> Vec<HttpRequest> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Transport for FixtureTransport {
    fn send(&self, request: &HttpRequest) -> BoxFuture<'static, Result<HttpResponse, AiError>> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(request.clone());
        let next = self
            .responses
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front();
        Box::pin(async move {
            let Some(canned) = next else {
                return Err(AiError::Transport("fixture: no response left".into()));
            };
            if !canned.delay.is_zero() {
                tokio::time::sleep(canned.delay).await;
            }
            let chunks = futures::stream::iter(canned.chunks.into_iter().map(Ok));
            let body: ByteStream = match canned.end {
                FixtureEnd::Close => Box::pin(chunks),
                FixtureEnd::Stall => Box::pin(chunks.chain(futures::stream::pending())),
                FixtureEnd::Reset(text) => Box::pin(chunks.chain(futures::stream::once(async {
                    Err(AiError::Transport(text))
                }))),
            };
            Ok(HttpResponse {
                status: canned.status,
                headers: canned.headers,
                body,
            })
        })
    }
}
