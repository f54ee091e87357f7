//! A run's reply sink ([`GatewaySink`]): every callback becomes a [`RunEvent`] for the run's
//! listeners and, when someone watches the key, an OpenClaw `agent`/`chat` frame.
//!
//! A long reply must cost a small multiple of its size, however it is read. Listeners (the
//! HTTP routes) get what each partial adds, never the text so far. OpenClaw's `chat` delta
//! carries the whole text so far, so those frames are throttled as OpenClaw throttles them
//! (150 ms), and past that only sent once the text grew by an eighth since the last one (or
//! two seconds went by): the bytes of a reply streamed in quick succession stay within about
//! nine times its text. The `agent` `assistant` frames go out with them, their `delta` covering
//! everything since the last. In a connection's outbox a waiting partial of a run is replaced by
//! the next one (see [`crate::hub`]), so a slow reader holds one copy.

use std::sync::Arc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use filo_embed::sink::{AgentStreamEvent, PartialReply, ReplySink};
use serde_json::{Value, json};

use crate::core::{Core, Pending, lock};
use crate::frames;
use crate::hub::EventFrame;
use crate::outcome::RunEvent;
use crate::run::now_ms;

/// OpenClaw's minimum gap between two `chat` deltas of a run.
pub const CHAT_DELTA_INTERVAL: Duration = Duration::from_millis(150);
/// The longest a watcher waits for the text to grow by an eighth before it sees it anyway.
pub const CHAT_DELTA_MAX_WAIT: Duration = Duration::from_secs(2);

/// What the sink knows of the reply being streamed.
#[derive(Default)]
struct Stream {
    /// The visible text of the current assistant message.
    text: String,
    /// A new assistant message started: its first partial replaces the text.
    fresh: bool,
    /// What the text gained since the last frame sent to watchers.
    unsent: String,
    /// The text was replaced since the last frame sent.
    unsent_replace: bool,
    /// The length of the text the last frame carried, and when it went.
    sent_len: usize,
    sent_at: Option<Instant>,
    /// The `agent` lifecycle start, held until the run's first `chat` frame has gone out
    /// (`chat_sent`). OpenClaw's TUI makes the run of a lifecycle start its active
    /// run, and a `chat` event of the active run no longer clears the message it is sending:
    /// with the `chat.send` ack, the start and the final in one socket read it would wait for
    /// that ack's run forever ("agent is busy"). The start keeps the seq it was given; a run
    /// without text sends no start.
    held_start: Option<(Value, u64)>,
    chat_sent: bool,
    seq: u64,
}

impl Stream {
    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Whether watchers should get a frame now.
    fn due(&self, now: Instant) -> bool {
        let Some(at) = self.sent_at else {
            return true;
        };
        if self.unsent_replace {
            return true;
        }
        let waited = now.duration_since(at);
        let grown = self.text.len().saturating_sub(self.sent_len);
        waited >= CHAT_DELTA_INTERVAL
            && (grown >= self.sent_len / 8 || waited >= CHAT_DELTA_MAX_WAIT)
    }
}

pub(crate) struct GatewaySink {
    core: Arc<Core>,
    pending: Pending,
    key: String,
    agent: String,
    stream: Mutex<Stream>,
}

impl GatewaySink {
    pub(crate) fn new(core: Arc<Core>, pending: Pending, key: &str, agent: &str) -> Self {
        Self {
            core,
            pending,
            key: key.to_owned(),
            agent: agent.to_owned(),
            stream: Mutex::default(),
        }
    }

    /// The run's last event seq.
    pub(crate) fn last_seq(&self) -> u64 {
        lock(&self.stream).seq
    }

    fn agent_frame(&self, stream: &str, data: &Value, seq: u64) -> EventFrame {
        let payload = json!({
            "runId": self.pending.submit.run_id, "sessionKey": self.key, "agentId": self.agent,
            "stream": stream, "data": data, "seq": seq, "ts": now_ms(),
        });
        EventFrame::new("agent", &payload)
    }

    fn publish_agent(&self, stream: &str, data: &Value, seq: u64) {
        if self.core.hub.has_watchers(&self.key) {
            let frame = self.agent_frame(stream, data, seq);
            self.core.hub.publish(&self.key, &frame);
        }
    }

    /// The frames for what the text gained since the last ones: a `chat` delta (unless
    /// `agent_only`) and an `agent` `assistant` event.
    fn send_unsent(&self, st: &mut Stream, agent_only: bool) {
        if st.unsent.is_empty() && !st.unsent_replace {
            return;
        }
        let delta = std::mem::take(&mut st.unsent);
        let replace = std::mem::take(&mut st.unsent_replace);
        st.sent_len = st.text.len();
        st.sent_at = Some(Instant::now());
        if !self.core.hub.has_watchers(&self.key) {
            return;
        }
        let run_id = self.pending.submit.run_id.as_str();
        let mut frames_out = Vec::with_capacity(3);
        if !agent_only {
            let seq = st.next_seq();
            let payload = frames::chat_delta(
                run_id,
                &self.key,
                &self.agent,
                seq,
                &st.text,
                &delta,
                replace,
            );
            let mut chat = EventFrame::new("chat", &payload);
            chat.coalesce = Some(format!("chat\u{1f}{run_id}").into());
            frames_out.push(chat);
            st.chat_sent = true;
            if let Some((start, start_seq)) = st.held_start.take() {
                frames_out.push(self.agent_frame("lifecycle", &start, start_seq));
            }
        }
        let seq = st.next_seq();
        let mut assistant =
            self.agent_frame("assistant", &json!({"text": st.text, "delta": delta}), seq);
        assistant.coalesce = Some(format!("assistant\u{1f}{run_id}").into());
        frames_out.push(assistant);
        for f in &frames_out {
            self.core.hub.publish(&self.key, f);
        }
    }

    /// The run ended: what the text gained since the last frame reaches the `agent` stream
    /// (the terminal `chat` event carries the whole text).
    pub(crate) fn flush(&self) {
        let mut st = lock(&self.stream);
        self.send_unsent(&mut st, true);
    }
}

impl ReplySink for GatewaySink {
    fn assistant_message_start(&self) {
        lock(&self.stream).fresh = true;
    }

    fn partial_reply(&self, p: &PartialReply) {
        if p.delta.is_empty() {
            return;
        }
        let mut st = lock(&self.stream);
        let replace = st.fresh && !st.text.is_empty();
        if st.fresh {
            st.fresh = false;
            st.text.clear();
        }
        st.text.push_str(&p.delta);
        if replace {
            st.unsent.clear();
            st.unsent_replace = true;
        }
        st.unsent.push_str(&p.delta);
        if st.due(Instant::now()) {
            self.send_unsent(&mut st, false);
        }
        drop(st);
        self.pending.emit(&RunEvent::Delta {
            delta: p.delta.as_str().into(),
            replace,
        });
    }

    fn agent_event(&self, e: &AgentStreamEvent) {
        // The reply text reaches listeners as deltas and watchers through `partial_reply`.
        if e.stream == "assistant" {
            return;
        }
        let seq = {
            let mut st = lock(&self.stream);
            let seq = st.next_seq();
            let is_start = e.stream == "lifecycle"
                && e.data.get("phase").and_then(Value::as_str) == Some("start");
            if is_start && !st.chat_sent {
                st.held_start = Some((e.data.clone(), seq));
                None
            } else {
                Some(seq)
            }
        };
        if let Some(seq) = seq {
            self.publish_agent(e.stream, &e.data, seq);
        }
        self.pending.emit(&RunEvent::Agent {
            stream: e.stream,
            data: e.data.clone(),
        });
    }
}
