//! The one stream driver every codec runs through: send with retry and backoff, read the body with
//! an idle timeout, frame SSE, let the codec's decoder turn frames into events, apply them to the
//! single [`Accumulator`], and end with exactly one terminal event. Cancellation at any point ends
//! the stream with an `aborted` message that keeps the partial content.

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::{Stream, StreamExt};
use tokio_util::sync::CancellationToken;

use crate::codec::WireApi;
use crate::error::{AiError, parse_retry_after};
use crate::event::{Accumulator, AssistantEvent, AssistantStream};
use crate::eventstream::EventStreamParser;
use crate::message::{AssistantMessage, StopReason, Usage};
use crate::model::ModelCost;
use crate::sse::{SseFrame, SseParser};
use crate::transport::{HttpRequest, HttpResponse, Transport};

/// What a decoder reports while it reads frames.
#[derive(Debug, Default)]
pub struct DecodeOut {
    /// Events decoded from the frames fed so far and not yet forwarded.
    pub events: Vec<AssistantEvent>,
    /// Token counts as the provider reported them (cost is filled in by the driver).
    pub usage: Usage,
    /// The mapped stop reason, once the provider sent one.
    pub stop: Option<StopReason>,
    /// No more frames are expected (e.g. `message_stop`, `[DONE]`); the driver stops reading.
    pub ended: bool,
    /// A price factor the provider's answer implies (OpenAI service tiers: flex 0.5, priority 2).
    pub cost_multiplier: Option<f64>,
    /// The provider's id for this response, once a frame carried it (pi's `responseId`).
    pub response_id: Option<String>,
}

/// Turns one protocol's SSE frames into events.
pub trait Decoder: Send {
    /// Decode one frame.
    fn frame(&mut self, frame: &SseFrame, out: &mut DecodeOut) -> Result<(), AiError>;
    /// The body ended (or the terminal frame arrived): close open blocks.
    fn finish(&mut self, out: &mut DecodeOut) -> Result<(), AiError>;
}

/// Retry policy for failures before anything was streamed to the consumer.
///
/// # Requests per failure
///
/// The client retries a failure only while nothing of the answer has been streamed: an HTTP
/// error with a retryable status (408, 409, 429, 5xx, 529), a refused or reset connection, or
/// silence before the first event. A persistent failure of that kind makes exactly
/// `max_retries + 1` requests (default 3). Each wait is the server's `retry-after-ms` /
/// `retry-after` (seconds or HTTP-date) when it sent one, else `base_delay · 2^n` capped at
/// `max_delay`. A requested wait above the call's `max_retry_delay_ms` (default 60 s) fails at
/// once with [`AiError::RetryDelayTooLong`]; after the last retry the error is
/// [`AiError::GaveUp`]. Both are final: [`crate::error::client_gave_up`] tells the session layer
/// (filo-core's auto-retry) not to retry them again, so a persistent 429 costs `max_retries + 1`
/// requests in total, not `(max_retries + 1) · (session retries + 1)`. A failure after the
/// answer began streaming (a cut, a stall, an error event) is never retried here; the session
/// may run the turn again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (the SDKs pi uses default to 2; settings key
    /// `retry.provider.maxRetries`).
    pub max_retries: u32,
    /// First backoff delay; doubled on every retry.
    pub base_delay: Duration,
    /// Upper bound of the exponential backoff.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 2,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(8),
        }
    }
}

/// Everything the driver needs for one call.
pub(crate) struct Call {
    /// The wire API, for the wording of error messages.
    pub api: WireApi,
    pub transport: Arc<dyn Transport>,
    pub request: HttpRequest,
    pub new_decoder: Box<dyn Fn() -> Box<dyn Decoder> + Send + Sync>,
    pub initial: AssistantMessage,
    pub prices: ModelCost,
    pub retry: RetryPolicy,
    pub idle_timeout: Duration,
    /// A server-requested delay above this fails at once instead of waiting.
    pub max_retry_delay: Option<Duration>,
    pub cancel: CancellationToken,
    /// Finishes the request before each attempt (an OAuth access token, …); its failure is the
    /// attempt's failure.
    pub prepare: Option<Prepare>,
}

/// A step that completes a request right before it is sent, with the call's transport at hand
/// (e.g. exchanging a refresh token for an access token).
pub(crate) type Prepare = Arc<
    dyn Fn(HttpRequest, Arc<dyn Transport>) -> BoxFuture<'static, Result<HttpRequest, AiError>>
        + Send
        + Sync,
>;

/// Prepare (when the call needs it) and send one attempt.
async fn send(call: &Call) -> Result<HttpResponse, AiError> {
    match &call.prepare {
        Some(prepare) => {
            let request = prepare(call.request.clone(), call.transport.clone()).await?;
            call.transport.send(&request).await
        }
        None => call.transport.send(&call.request).await,
    }
}

/// Run a call as a stream of events.
pub(crate) fn run(call: Call) -> AssistantStream {
    let slot = Slot::default();
    let sender = Sender {
        slot: Arc::clone(&slot),
        started: false,
    };
    let driver: BoxFuture<'static, ()> = Box::pin(drive(call, sender));
    Box::pin(DriverStream {
        driver: Some(driver),
        slot,
        batch: Vec::new(),
    })
}

/// A stream that yields a message that failed before any request was made (missing key, …):
/// the error alone, without `Start`, like every failure before the provider answered.
pub(crate) fn failed(initial: AssistantMessage, error: &AiError) -> AssistantStream {
    let mut message = initial;
    message.stop_reason = StopReason::Error;
    message.error_message = Some(error.to_string());
    message.error_status = error.http_status();
    Box::pin(futures::stream::iter([AssistantEvent::Error { message }]))
}

/// Where the driver leaves one batch of events (one per body chunk) for [`DriverStream`]. `full`
/// says whether a batch is there, so the stream's look at an empty slot and the driver's wait for
/// it to be taken are an atomic load each. The batch's `Vec` is swapped, never dropped: the
/// driver gets back the empty `Vec` the stream gave the slot when it took the last batch, so
/// after the first two batches no batch allocates.
#[derive(Default)]
struct SlotInner {
    full: std::sync::atomic::AtomicBool,
    /// The batch while `full`, else an empty `Vec` kept for the next one.
    batch: Mutex<Vec<AssistantEvent>>,
}

type Slot = Arc<SlotInner>;

/// Leave `events` in the slot; `events` becomes the slot's spare (empty) `Vec`.
fn put(slot: &Slot, events: &mut Vec<AssistantEvent>) {
    let mut batch = slot.batch.lock().unwrap_or_else(PoisonError::into_inner);
    std::mem::swap(&mut *batch, events);
    events.clear();
    slot.full.store(true, std::sync::atomic::Ordering::Release);
}

fn is_full(slot: &Slot) -> bool {
    slot.full.load(std::sync::atomic::Ordering::Acquire)
}

/// Take the batch, if one is there, into `into` (whose `Vec`, emptied, becomes the spare).
fn take(slot: &Slot, into: &mut Vec<AssistantEvent>) -> bool {
    if !is_full(slot) {
        return false;
    }
    into.clear();
    std::mem::swap(
        &mut *slot.batch.lock().unwrap_or_else(PoisonError::into_inner),
        into,
    );
    slot.full.store(false, std::sync::atomic::Ordering::Release);
    true
}

/// Polls the driver future and hands out the batches it leaves in the slot; ends when the driver
/// is done and its last batch is out. The driver runs inside this stream's `poll_next` (the
/// consumer's task), so handing a batch over needs no channel and wakes nobody: the driver leaves
/// a batch and waits (see [`Sender::send_all`]) until the stream took it, which it does in the
/// same poll, and the stream polls the driver again only once that batch is consumed. So the
/// driver is never more than one batch ahead of the consumer, and events come in the order they
/// were sent.
struct DriverStream {
    driver: Option<BoxFuture<'static, ()>>,
    slot: Slot,
    /// The batch being handed out, in reverse (the next event last).
    batch: Vec<AssistantEvent>,
}

impl Stream for DriverStream {
    type Item = AssistantEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(event) = this.batch.pop() {
                return Poll::Ready(Some(event));
            }
            let Some(driver) = this.driver.as_mut() else {
                return Poll::Ready(None);
            };
            let done = driver.as_mut().poll(cx).is_ready();
            if done {
                this.driver = None;
            }
            if take(&this.slot, &mut this.batch) {
                this.batch.reverse();
            } else if done {
                return Poll::Ready(None);
            } else {
                return Poll::Pending;
            }
        }
    }
}

/// Forwards events to the consumer, sending `Start` before the first one.
struct Sender {
    slot: Slot,
    started: bool,
}

impl Sender {
    /// Send a batch (Start first if nothing was sent yet). The `Start` message carries the
    /// response id when the frames before the first event held one (every protocol sends it
    /// first), so a consumer's partial message has it from the start, as pi's does. Returns once
    /// the stream took the batch: [`DriverStream`] takes it in the poll that left it, so the wait
    /// needs no waker.
    async fn send_all(
        &mut self,
        initial: &AssistantMessage,
        response_id: Option<&str>,
        events: &mut Vec<AssistantEvent>,
    ) {
        if !self.started {
            self.started = true;
            let mut message = initial.clone();
            message.response_id = response_id.map(str::to_string);
            events.insert(0, AssistantEvent::Start { message });
        }
        if !events.is_empty() {
            put(&self.slot, events);
            let slot = &self.slot;
            std::future::poll_fn(|_| {
                if is_full(slot) {
                    Poll::Pending
                } else {
                    Poll::Ready(())
                }
            })
            .await;
        }
    }

    async fn send(&mut self, initial: &AssistantMessage, event: AssistantEvent) {
        let response_id = match &event {
            AssistantEvent::Done { message } | AssistantEvent::Error { message } => {
                message.response_id.clone()
            }
            _ => None,
        };
        self.send_all(initial, response_id.as_deref(), &mut vec![event])
            .await;
    }
}

/// How one attempt ended.
enum Attempt {
    Done(Accumulator, DecodeOut),
    Failed(Accumulator, DecodeOut, AiError),
}

async fn drive(call: Call, mut sender: Sender) {
    let mut attempt: u32 = 0;
    loop {
        let outcome = tokio::select! {
            biased;
            () = call.cancel.cancelled() => Err(AiError::Aborted),
            r = tokio::time::timeout(call.idle_timeout, send(&call)) => {
                r.unwrap_or(Err(AiError::IdleTimeout(call.idle_timeout)))
            }
        };
        let error = match outcome {
            Ok(response) if (200..300).contains(&response.status) => {
                match read_stream(&call, response, &mut sender).await {
                    Attempt::Done(acc, out) => {
                        return finish_ok(&call, acc, out, &mut sender).await;
                    }
                    Attempt::Failed(acc, out, error) => {
                        if sender.started || !error.is_retryable() {
                            return finish_err(&call, acc, &out, &error, &mut sender).await;
                        }
                        error
                    }
                }
            }
            Ok(response) => http_error(&call, response).await,
            Err(error) => error,
        };
        if !error.is_retryable() {
            return fail_before_stream(&call, &error, &mut sender).await;
        }
        if attempt >= call.retry.max_retries {
            let error = if attempt == 0 {
                error
            } else {
                AiError::GaveUp {
                    requests: attempt + 1,
                    last: Box::new(error),
                }
            };
            return fail_before_stream(&call, &error, &mut sender).await;
        }
        let delay = match error.retry_after() {
            Some(asked) => {
                let cap = call.max_retry_delay.unwrap_or(DEFAULT_MAX_RETRY_DELAY);
                if !cap.is_zero() && asked > cap {
                    let error = AiError::RetryDelayTooLong {
                        requested: asked,
                        max: cap,
                        last: Box::new(error),
                    };
                    return fail_before_stream(&call, &error, &mut sender).await;
                }
                asked
            }
            None => backoff(&call.retry, attempt),
        };
        attempt += 1;
        tokio::select! {
            biased;
            () = call.cancel.cancelled() => {
                return fail_before_stream(&call, &AiError::Aborted, &mut sender).await;
            }
            () = tokio::time::sleep(delay) => {}
        }
    }
}

/// The cap on a server-requested retry delay when the call sets none (pi's 60 s).
pub const DEFAULT_MAX_RETRY_DELAY: Duration = Duration::from_secs(60);

fn backoff(policy: &RetryPolicy, attempt: u32) -> Duration {
    let factor = 2u32.saturating_pow(attempt.min(16));
    policy
        .base_delay
        .saturating_mul(factor)
        .min(policy.max_delay)
}

/// Read a non-success response's body (bounded) into an HTTP error.
async fn http_error(call: &Call, mut response: HttpResponse) -> AiError {
    const LIMIT: usize = 64 * 1024;
    let retry_after = parse_retry_after(
        response.header("retry-after"),
        response.header("retry-after-ms"),
        std::time::SystemTime::now(),
    );
    let mut body = Vec::new();
    loop {
        let next = tokio::select! {
            biased;
            () = call.cancel.cancelled() => return AiError::Aborted,
            n = tokio::time::timeout(call.idle_timeout, response.body.next()) => n,
        };
        match next {
            Ok(Some(Ok(chunk))) => {
                body.extend_from_slice(&chunk);
                if body.len() >= LIMIT {
                    body.truncate(LIMIT);
                    break;
                }
            }
            Ok(Some(Err(_)) | None) | Err(_) => break,
        }
    }
    let mut text = String::from_utf8_lossy(&body).trim().to_string();
    if call.api == WireApi::BedrockConverseStream && !text.is_empty() {
        text = crate::bedrock::error_body(response.header("x-amzn-errortype"), text);
    }
    let content_type = response.header("content-type").unwrap_or_default();
    let body = if text.is_empty() {
        "status code (no body)".to_string()
    } else if is_html(content_type) {
        // A proxy's or gateway's error page: its start says enough, the rest is markup.
        let mut end = text.len().min(crate::error::BODY_PREVIEW_BYTES);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        format!(
            "(HTML page, {} bytes, content-type `{content_type}`) {}",
            body.len(),
            &text[..end]
        )
    } else {
        text
    };
    AiError::Http {
        status: response.status,
        body,
        retry_after,
    }
}

/// Whether a success response's content type cannot be an event stream.
fn is_html(content_type: &str) -> bool {
    let lower = content_type.to_ascii_lowercase();
    lower.contains("text/html") || lower.contains("application/xhtml")
}

/// The first bytes of a body seen so far, kept to explain a body that is not an event stream.
#[derive(Default)]
struct BodyStart {
    bytes: Vec<u8>,
    saw_frame: bool,
}

impl BodyStart {
    fn keep(&mut self, chunk: &[u8]) {
        let room = crate::error::BODY_PREVIEW_BYTES.saturating_sub(self.bytes.len());
        self.bytes
            .extend_from_slice(&chunk[..chunk.len().min(room)]);
    }

    fn error(&self, response_status: u16, content_type: &str) -> AiError {
        AiError::UnexpectedBody {
            status: response_status,
            content_type: if content_type.is_empty() {
                "(none)".into()
            } else {
                content_type.into()
            },
            start: String::from_utf8_lossy(&self.bytes).trim().to_string(),
        }
    }
}

/// How a protocol's body is cut into frames: SSE, or AWS event-stream messages (Bedrock).
enum Framer {
    Sse(SseParser),
    EventStream(EventStreamParser),
}

impl Framer {
    fn for_api(api: WireApi) -> Framer {
        match api {
            WireApi::BedrockConverseStream => Framer::EventStream(EventStreamParser::new()),
            WireApi::AnthropicMessages
            | WireApi::OpenAiCompletions
            | WireApi::OpenAiResponses
            | WireApi::GoogleGenerativeAi
            | WireApi::AzureOpenAiResponses
            | WireApi::GoogleVertex
            | WireApi::MistralConversations => Framer::Sse(SseParser::new()),
        }
    }

    fn feed(
        &mut self,
        chunk: &[u8],
        on_frame: &mut dyn FnMut(&SseFrame) -> Result<(), AiError>,
    ) -> Result<(), AiError> {
        match self {
            Framer::Sse(p) => p.feed(chunk, on_frame),
            Framer::EventStream(p) => p.feed(chunk, on_frame),
        }
    }

    fn finish(
        &mut self,
        on_frame: &mut dyn FnMut(&SseFrame) -> Result<(), AiError>,
    ) -> Result<(), AiError> {
        match self {
            Framer::Sse(p) => p.finish(on_frame),
            Framer::EventStream(p) => p.finish(),
        }
    }

    fn is_binary(&self) -> bool {
        matches!(self, Framer::EventStream(_))
    }
}

/// Stream the body of a successful response through the decoder. A body that is HTML, or that
/// ends without a single SSE frame although it had content, is an [`AiError::UnexpectedBody`].
async fn read_stream(call: &Call, mut response: HttpResponse, sender: &mut Sender) -> Attempt {
    let mut acc = Accumulator::new(call.initial.clone());
    let mut out = DecodeOut::default();
    let mut decoder = (call.new_decoder)();
    let mut parser = Framer::for_api(call.api);
    let content_type = response
        .header("content-type")
        .unwrap_or_default()
        .to_string();
    let html = is_html(&content_type);
    let mut start = BodyStart::default();
    // One cancellation watch and one idle timer for the whole body: a stream of many small
    // chunks would otherwise register a fresh timer per chunk, and ask the token every time. The timer is re-armed only when
    // it fires early, from the time the last chunk came.
    let cancelled = CancelWatch::new(&call.cancel);
    tokio::pin!(cancelled);
    let idle = tokio::time::sleep(call.idle_timeout);
    tokio::pin!(idle);
    let mut last_chunk = tokio::time::Instant::now();
    loop {
        let next = tokio::select! {
            biased;
            () = &mut cancelled => return Attempt::Failed(acc, out, AiError::Aborted),
            n = response.body.next() => Ok(n),
            () = &mut idle => {
                let deadline = last_chunk + call.idle_timeout;
                if tokio::time::Instant::now() < deadline {
                    idle.as_mut().reset(deadline);
                    continue;
                }
                Err(())
            }
        };
        last_chunk = tokio::time::Instant::now();
        let step = match next {
            Err(()) => Err(AiError::IdleTimeout(call.idle_timeout)),
            Ok(Some(Err(e))) => Err(e),
            Ok(Some(Ok(chunk))) if html => {
                start.keep(&chunk);
                if start.bytes.len() < crate::error::BODY_PREVIEW_BYTES {
                    continue;
                }
                Err(start.error(response.status, &content_type))
            }
            Ok(None) if html => Err(start.error(response.status, &content_type)),
            Ok(Some(Ok(chunk))) => {
                start.keep(&chunk);
                let saw = &mut start.saw_frame;
                let fed = parser.feed(&chunk, &mut |frame| {
                    *saw = true;
                    decoder.frame(frame, &mut out)
                });
                // Bytes that do not even frame as a first event-stream message are some
                // other body (a JSON error from a proxy, …), not a corrupt stream.
                match fed {
                    Err(AiError::Decode(_)) if parser.is_binary() && !start.saw_frame => {
                        Err(start.error(response.status, &content_type))
                    }
                    other => other,
                }
            }
            Ok(None) => {
                let saw = &mut start.saw_frame;
                let finished = parser.finish(&mut |frame| {
                    *saw = true;
                    decoder.frame(frame, &mut out)
                });
                match finished {
                    Ok(()) | Err(AiError::Decode(_))
                        if !start.saw_frame && !start.bytes.trim_ascii().is_empty() =>
                    {
                        Err(start.error(response.status, &content_type))
                    }
                    Ok(()) => {
                        out.ended = true;
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
        };
        let step = step.and_then(|()| {
            if out.ended {
                decoder.finish(&mut out)
            } else {
                Ok(())
            }
        });
        if !out.events.is_empty() {
            for event in &out.events {
                acc.apply(event);
            }
            // Hands the batch over and leaves `out.events` empty (a reused `Vec`).
            sender
                .send_all(&call.initial, out.response_id.as_deref(), &mut out.events)
                .await;
        }
        match step {
            Err(error) => return Attempt::Failed(acc, out, error),
            Ok(()) if out.ended => return Attempt::Done(acc, out),
            Ok(()) => {}
        }
    }
}

/// Waits for a cancellation token across many polls at the price of an atomic load: the
/// token's own future (which locks the token and its waiters on every poll) is polled on the
/// first poll and again only after it woke its waker, a flag that passes the wake-up on to the
/// task polling the watch. Ready exactly when the token's future is. Used by the driver for
/// each body and by the agent loop for each stream.
pub struct CancelWatch<'a> {
    future: Pin<Box<tokio_util::sync::WaitForCancellationFuture<'a>>>,
    flag: Arc<WakeFlag>,
    waker: std::task::Waker,
    /// The token's future was polled with `waker` and has not woken it since.
    armed: bool,
}

/// The waker the token's future holds: records the wake-up and wakes the watching task.
#[derive(Default)]
struct WakeFlag {
    woken: std::sync::atomic::AtomicBool,
    task: futures::task::AtomicWaker,
}

impl std::task::Wake for WakeFlag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, std::sync::atomic::Ordering::Release);
        self.task.wake();
    }
}

impl<'a> CancelWatch<'a> {
    /// A watch on `token` (its future is made now and first polled on the watch's first poll).
    pub fn new(token: &'a CancellationToken) -> Self {
        let flag = Arc::new(WakeFlag::default());
        CancelWatch {
            future: Box::pin(token.cancelled()),
            waker: std::task::Waker::from(Arc::clone(&flag)),
            flag,
            armed: false,
        }
    }
}

impl Future for CancelWatch<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<()> {
        use std::sync::atomic::Ordering;
        // Register first, then look at the flag: a wake-up between the two still wakes this task.
        self.flag.task.register(cx.waker());
        if self.armed && !self.flag.woken.load(Ordering::Acquire) {
            return Poll::Pending;
        }
        self.flag.woken.store(false, Ordering::Relaxed);
        let this = &mut *self;
        let mut inner = TaskContext::from_waker(&this.waker);
        match this.future.as_mut().poll(&mut inner) {
            Poll::Ready(()) => Poll::Ready(()),
            Poll::Pending => {
                this.armed = true;
                Poll::Pending
            }
        }
    }
}

/// Fill in what the decoder learnt about the whole response: usage with its cost, the response id.
fn with_usage(call: &Call, acc: &mut Accumulator, out: &DecodeOut) {
    let message = acc.message_mut();
    message.response_id.clone_from(&out.response_id);
    message.usage = out.usage;
    let mut cost = crate::model::calculate_cost(&call.prices, &out.usage);
    if let Some(f) = out.cost_multiplier {
        cost.input *= f;
        cost.output *= f;
        cost.cache_read *= f;
        cost.cache_write *= f;
        cost.total *= f;
    }
    message.usage.cost = cost;
}

async fn finish_ok(call: &Call, mut acc: Accumulator, out: DecodeOut, sender: &mut Sender) {
    let error = match out.stop {
        Some(StopReason::Stop | StopReason::Length | StopReason::ToolUse) => None,
        // No codec ends a stream deferred or pending (pi 1.6's deferred responses are not
        // supported): treat either like a failed stream rather than a finished answer.
        Some(
            StopReason::Error | StopReason::Aborted | StopReason::Deferred | StopReason::Pending,
        ) => Some(AiError::Unknown),
        None => Some(AiError::Transport(
            "the stream ended before the response was complete".into(),
        )),
    };
    if let Some(error) = error {
        return finish_err(call, acc, &out, &error, sender).await;
    }
    with_usage(call, &mut acc, &out);
    let message = acc.finish(out.stop.unwrap_or_default(), None);
    sender
        .send(&call.initial, AssistantEvent::Done { message })
        .await;
}

async fn finish_err(
    call: &Call,
    mut acc: Accumulator,
    out: &DecodeOut,
    error: &AiError,
    sender: &mut Sender,
) {
    with_usage(call, &mut acc, out);
    let reason = match error {
        AiError::Aborted => StopReason::Aborted,
        _ => StopReason::Error,
    };
    let mut message = acc.finish(reason, Some(error.message_for(call.api)));
    message.error_status = error.http_status();
    sender
        .send(&call.initial, AssistantEvent::Error { message })
        .await;
}

/// A failure before the provider answered with a stream (a refusal, a transport error, an
/// abort while waiting): the stream is only the error, no `Start` first, as pi's providers push
/// `start` only once the response is there. Events already sent stay as they are.
async fn fail_before_stream(call: &Call, error: &AiError, sender: &mut Sender) {
    sender.started = true;
    let acc = Accumulator::new(call.initial.clone());
    finish_err(call, acc, &DecodeOut::default(), error, sender).await;
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Wake, Waker};

    use bytes::Bytes;

    use super::*;
    use crate::client::{Client, ModelClient, StreamOptions};
    use crate::env::Env;
    use crate::registry::ProviderRegistry;
    use crate::testutil::{model, sse, user_ctx};

    #[derive(Default)]
    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn counting() -> (Arc<Count>, Waker) {
        let count = Arc::new(Count::default());
        (Arc::clone(&count), Waker::from(count))
    }

    fn poll(watch: &mut Pin<Box<CancelWatch<'_>>>, waker: &Waker) -> Poll<()> {
        watch.as_mut().poll(&mut TaskContext::from_waker(waker))
    }

    #[test]
    fn a_cancel_watch_is_ready_at_once_for_a_cancelled_token() {
        let token = CancellationToken::new();
        token.cancel();
        let (_, waker) = counting();
        let mut watch = Box::pin(CancelWatch::new(&token));
        assert_eq!(poll(&mut watch, &waker), Poll::Ready(()));
    }

    #[test]
    fn a_cancel_watch_wakes_the_task_that_polled_it_last_and_is_then_ready() {
        let parent = CancellationToken::new();
        let token = parent.child_token();
        let (first, first_waker) = counting();
        let (second, second_waker) = counting();
        let mut watch = Box::pin(CancelWatch::new(&token));
        for _ in 0..3 {
            assert_eq!(poll(&mut watch, &first_waker), Poll::Pending);
        }
        assert_eq!(poll(&mut watch, &second_waker), Poll::Pending);
        assert_eq!(first.0.load(Ordering::SeqCst), 0);
        assert_eq!(second.0.load(Ordering::SeqCst), 0);
        parent.cancel();
        assert_eq!(
            first.0.load(Ordering::SeqCst),
            0,
            "a waker no longer registered"
        );
        assert_eq!(second.0.load(Ordering::SeqCst), 1);
        assert_eq!(poll(&mut watch, &second_waker), Poll::Ready(()));
    }

    #[test]
    fn a_cancel_watch_stays_pending_while_the_token_is_not_cancelled() {
        let token = CancellationToken::new();
        let other = CancellationToken::new();
        let (count, waker) = counting();
        let mut watch = Box::pin(CancelWatch::new(&token));
        for _ in 0..5 {
            assert_eq!(poll(&mut watch, &waker), Poll::Pending);
        }
        other.cancel();
        assert_eq!(poll(&mut watch, &waker), Poll::Pending);
        assert_eq!(count.0.load(Ordering::SeqCst), 0);
        token.cancel();
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert_eq!(poll(&mut watch, &waker), Poll::Ready(()));
    }

    /// A body whose chunks are always ready, counting how many were read.
    struct CountingTransport {
        chunks: Vec<Bytes>,
        read: Arc<AtomicUsize>,
    }

    impl Transport for CountingTransport {
        fn send(&self, _: &HttpRequest) -> BoxFuture<'static, Result<HttpResponse, AiError>> {
            let read = Arc::clone(&self.read);
            let body = futures::stream::iter(self.chunks.clone()).map(move |chunk| {
                read.fetch_add(1, Ordering::SeqCst);
                Ok(chunk)
            });
            let response = HttpResponse {
                status: 200,
                headers: vec![("content-type".into(), "text/event-stream".into())],
                body: Box::pin(body),
            };
            Box::pin(async move { Ok(response) })
        }
    }

    /// The driver runs inside the stream's poll and leaves one batch (one body chunk's events)
    /// at a time: a body that is always ready is not read ahead of the consumer, and the events
    /// come whole and in order.
    #[tokio::test]
    async fn the_driver_is_at_most_one_body_chunk_ahead_of_the_consumer() {
        let mut frames = vec![format!(
            r#"{{"id":"c1","choices":[{{"index":0,"delta":{{"role":"assistant","content":"w0 "}}}}]}}"#
        )];
        for i in 1..40 {
            frames.push(format!(
                r#"{{"id":"c1","choices":[{{"index":0,"delta":{{"content":"w{i} "}}}}]}}"#
            ));
        }
        frames.push(
            r#"{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#.into(),
        );
        frames.push("[DONE]".into());
        let chunks: Vec<Bytes> = frames.iter().map(|f| sse(&[("", f)])).collect();
        let read = Arc::new(AtomicUsize::new(0));
        let transport = Arc::new(CountingTransport {
            chunks: chunks.clone(),
            read: Arc::clone(&read),
        });
        let client = Client::with_transport(
            ProviderRegistry::empty(),
            Env::from_vars([("ANY", "x")]),
            transport,
        );
        let options = StreamOptions {
            api_key: Some("test-key".into()),
            ..StreamOptions::default()
        };
        let m = model("p", "openai-completions", "m");
        let mut stream = client.stream(&m, &user_ctx("hi"), &options, CancellationToken::new());
        let mut events = Vec::new();
        let mut deltas = 0;
        while let Some(event) = stream.next().await {
            if let AssistantEvent::TextDelta { delta, .. } = &event {
                assert_eq!(delta, &format!("w{deltas} "));
                deltas += 1;
                // The chunk of this delta has been read, and none after it.
                assert_eq!(
                    read.load(Ordering::SeqCst),
                    deltas,
                    "read ahead of delta {deltas}"
                );
            }
            events.push(event);
        }
        assert_eq!(deltas, 40);
        assert_eq!(read.load(Ordering::SeqCst), chunks.len());
        let message = crate::testutil::check_contract(&events);
        assert_eq!(
            message.text(),
            (0..40).map(|i| format!("w{i} ")).collect::<String>()
        );
        assert_eq!(message.stop_reason, StopReason::Stop);
    }
}
