//! RPC mode (`filo --mode rpc`, pi spec §6.4): JSON commands on stdin, one per line; responses
//! and session events on stdout, one JSON object per line.
//!
//! Framing is strict JSONL: records end at `\n` only (one trailing `\r` is dropped, U+2028 and
//! U+2029 are ordinary characters), and a last line without `\n` is still read at end of input.
//! A blank line is answered as pi answers it (a parse error). Every line written to stdout goes through one writer task, so a
//! response never lands inside an event line. Commands that finish at once answer in order;
//! the ones that wait (prompt runs, abort, compaction, bash, session switches) run as tasks so
//! `abort`, `abort_bash` and queries keep working meanwhile. End of input aborts whatever still
//! runs (agent, retry, compaction, bash), waits for it, flushes stdout and exits 0.

mod commands;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use filo_core::{AgentSession, SessionEvent};
use serde_json::{Map, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

/// The stdout side: lines queued for the single writer task.
#[derive(Clone)]
struct Output {
    tx: mpsc::UnboundedSender<String>,
}

impl Output {
    fn line(&self, line: String) {
        let _ = self.tx.send(line);
    }

    fn event(&self, ev: &SessionEvent) {
        if let Ok(line) = serde_json::to_string(ev) {
            self.line(line);
        }
    }

    /// A response line (`{id?, type:"response", command?, success, data? | error}`, in that
    /// order; absent fields omitted).
    fn respond(
        &self,
        id: Option<Value>,
        command: Option<&str>,
        result: Result<Option<Value>, String>,
    ) {
        let mut m = Map::new();
        if let Some(id) = id {
            m.insert("id".into(), id);
        }
        m.insert("type".into(), "response".into());
        if let Some(c) = command {
            m.insert("command".into(), c.into());
        }
        match result {
            Ok(data) => {
                m.insert("success".into(), true.into());
                if let Some(d) = data {
                    m.insert("data".into(), d);
                }
            }
            Err(e) => {
                m.insert("success".into(), false.into());
                m.insert("error".into(), e.into());
            }
        }
        self.line(Value::Object(m).to_string());
    }

    fn success(&self, id: Option<Value>, command: &str, data: Option<Value>) {
        self.respond(id, Some(command), Ok(data));
    }

    fn error(&self, id: Option<Value>, command: Option<&str>, error: String) {
        self.respond(id, command, Err(error));
    }

    /// A line that is not a command (not JSON, not UTF-8, too long): pi's parse error, no id.
    fn parse_error(&self, message: &str) {
        self.error(
            None,
            Some("parse"),
            format!("Failed to parse command: {message}"),
        );
    }
}

/// Write queued lines until every sender is gone; flush whenever the queue runs dry.
async fn write_lines<W: AsyncWrite + Unpin>(
    mut rx: mpsc::UnboundedReceiver<String>,
    out: W,
) -> std::io::Result<()> {
    let mut out = tokio::io::BufWriter::new(out);
    while let Some(line) = rx.recv().await {
        out.write_all(line.as_bytes()).await?;
        out.write_all(b"\n").await?;
        while let Ok(more) = rx.try_recv() {
            out.write_all(more.as_bytes()).await?;
            out.write_all(b"\n").await?;
        }
        out.flush().await?;
    }
    out.flush().await
}

/// The longest input line RPC mode accepts (64 MiB: room for a prompt with large images). A
/// longer line is skipped up to its `\n`, never held in memory, and answered with an error.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// One input record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// A line without its `\n` (and one trailing `\r`).
    Line(Vec<u8>),
    /// A line longer than the limit, skipped; `bytes` is its length.
    TooLong { bytes: usize },
}

/// Splits a byte stream into records at `\n`, holding at most the limit plus one read.
pub struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    eof: bool,
    limit: usize,
    /// Bytes of an over-long line dropped so far (its end has not been seen yet).
    skipped: Option<usize>,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    pub fn new(inner: R) -> Self {
        Self::with_limit(inner, MAX_LINE_BYTES)
    }

    /// A reader whose lines may hold at most `limit` bytes.
    pub fn with_limit(inner: R, limit: usize) -> Self {
        LineReader {
            inner,
            buf: Vec::new(),
            eof: false,
            limit,
            skipped: None,
        }
    }

    #[cfg(test)]
    /// Bytes of memory the buffer holds (its capacity, so it shows the peak since the start):
    /// bounded by about twice the limit plus one read.
    pub fn buffered(&self) -> usize {
        self.buf.capacity()
    }

    /// The next record; the unterminated rest at end of input; `None` after that.
    pub async fn next_line(&mut self) -> std::io::Result<Option<Record>> {
        let mut scanned = 0;
        loop {
            if let Some(pos) = self.buf[scanned..].iter().position(|&b| b == b'\n') {
                let end = scanned + pos;
                let mut line: Vec<u8> = self.buf.drain(..=end).collect();
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                if self.skipped.is_some() || line.len() > self.limit {
                    let skipped = self.skipped.take().unwrap_or(0);
                    return Ok(Some(Record::TooLong {
                        bytes: skipped + line.len(),
                    }));
                }
                return Ok(Some(Record::Line(line)));
            }
            scanned = self.buf.len();
            if self.buf.len() > self.limit || (self.skipped.is_some() && !self.buf.is_empty()) {
                *self.skipped.get_or_insert(0) += self.buf.len();
                self.buf.clear();
                scanned = 0;
            }
            if self.eof {
                if let Some(bytes) = self.skipped.take() {
                    return Ok(Some(Record::TooLong { bytes }));
                }
                if self.buf.is_empty() {
                    return Ok(None);
                }
                let mut line = std::mem::take(&mut self.buf);
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return Ok(Some(Record::Line(line)));
            }
            let mut chunk = [0u8; 64 * 1024];
            let n = self.inner.read(&mut chunk).await?;
            if n == 0 {
                self.eof = true;
            } else {
                self.buf.extend_from_slice(&chunk[..n]);
            }
        }
    }
}

/// Serve RPC on stdin/stdout until stdin ends.
pub async fn run(session: AgentSession) -> anyhow::Result<ExitCode> {
    use std::os::fd::AsFd;
    // Duplicates of fd 0 and 1 read and written on tokio's blocking pool.
    let stdin = std::fs::File::from(std::io::stdin().as_fd().try_clone_to_owned()?);
    let stdout = std::fs::File::from(std::io::stdout().as_fd().try_clone_to_owned()?);
    serve(
        session,
        tokio::fs::File::from_std(stdin),
        tokio::fs::File::from_std(stdout),
    )
    .await?;
    Ok(ExitCode::SUCCESS)
}

/// Serve RPC commands from `input`, writing responses and events to `output`.
pub async fn serve<R, W>(session: AgentSession, input: R, output: W) -> anyhow::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, rx) = mpsc::unbounded_channel();
    let writer = tokio::spawn(write_lines(rx, output));
    let out = Output { tx };
    let events = out.clone();
    let subscription = session.subscribe(Arc::new(move |ev: &SessionEvent| events.event(ev)));
    let mut tasks = JoinSet::new();
    let mut reader = LineReader::new(input);
    let read_result = loop {
        let line = match reader.next_line().await {
            Ok(Some(Record::Line(line))) => line,
            Ok(Some(Record::TooLong { bytes })) => {
                out.parse_error(&format!(
                    "line of {bytes} bytes is longer than the {MAX_LINE_BYTES}-byte limit"
                ));
                continue;
            }
            Ok(None) => break Ok(()),
            Err(e) => break Err(e),
        };
        while tasks.try_join_next().is_some() {}
        match String::from_utf8(line) {
            // JSON.parse of a blank line fails, and pi answers it as any unparsable line.
            Ok(text) if text.trim().is_empty() => out.parse_error("Unexpected end of JSON input"),
            Ok(text) => commands::handle(&session, &out, &mut tasks, &text).await,
            Err(e) => out.parse_error(&e.to_string()),
        }
    };
    while !tasks.is_empty() {
        session.abort_bash();
        session.abort().await;
        let _ = tokio::time::timeout(Duration::from_millis(100), tasks.join_next()).await;
    }
    session.shutdown().await;
    session.unsubscribe(subscription);
    drop(out);
    writer.await??;
    read_result?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines_of(input: &[u8]) -> Vec<Vec<u8>> {
        let mut r = LineReader::new(input);
        let mut out = Vec::new();
        while let Some(record) = r.next_line().await.unwrap() {
            match record {
                Record::Line(l) => out.push(l),
                Record::TooLong { bytes } => panic!("a {bytes}-byte line is not too long"),
            }
        }
        out
    }

    /// Records of `input` read with `limit`, checking the buffer never holds more than the limit
    /// plus one read.
    async fn records_with_limit(input: &[u8], limit: usize) -> Vec<Record> {
        let mut r = LineReader::with_limit(input, limit);
        let mut out = Vec::new();
        while let Some(record) = r.next_line().await.unwrap() {
            assert!(r.buffered() <= 2 * (limit + 64 * 1024), "{}", r.buffered());
            out.push(record);
        }
        out
    }

    #[tokio::test]
    async fn an_over_long_line_is_skipped_to_its_end_and_reported() {
        let mut input = b"{\"a\":1}\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', 300_000));
        input.extend_from_slice(b"\r\nafter\n");
        input.extend(std::iter::repeat_n(b'y', 200_000));
        let got = records_with_limit(&input, 1000).await;
        assert_eq!(
            got,
            [
                Record::Line(b"{\"a\":1}".to_vec()),
                Record::TooLong { bytes: 300_000 },
                Record::Line(b"after".to_vec()),
                Record::TooLong { bytes: 200_000 },
            ]
        );
    }

    #[tokio::test]
    async fn an_endless_line_never_fills_memory() {
        use tokio::io::AsyncReadExt;
        let endless = tokio::io::repeat(b'z').take(20 * 1024 * 1024);
        let mut r = LineReader::with_limit(endless, 4096);
        let first = r.next_line().await.unwrap();
        assert_eq!(
            first,
            Some(Record::TooLong {
                bytes: 20 * 1024 * 1024
            })
        );
        // The capacity is the most the buffer ever held.
        assert!(r.buffered() <= 2 * (4096 + 64 * 1024), "{}", r.buffered());
        assert_eq!(r.next_line().await.unwrap(), None);
    }

    #[tokio::test]
    async fn splits_on_lf_only_and_keeps_the_last_unterminated_line() {
        let text = "{\"a\":\"x\u{2028}y\u{2029}z\"}\r\n{\"b\":1}\n\n{\"c\":2}\r";
        let got = lines_of(text.as_bytes()).await;
        let got: Vec<String> = got
            .into_iter()
            .map(|l| String::from_utf8(l).unwrap())
            .collect();
        assert_eq!(
            got,
            [
                "{\"a\":\"x\u{2028}y\u{2029}z\"}",
                "{\"b\":1}",
                "",
                "{\"c\":2}"
            ]
        );
    }

    #[tokio::test]
    async fn a_lone_cr_is_not_a_separator() {
        let got = lines_of(b"a\rb\n").await;
        assert_eq!(got, [b"a\rb".to_vec()]);
    }

    #[test]
    fn responses_omit_missing_fields_and_keep_pi_order() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let out = Output { tx };
        out.success(Some(Value::from("7")), "get_state", None);
        out.parse_error("expected value");
        out.success(None, "cycle_model", Some(Value::Null));
        assert_eq!(
            rx.try_recv().unwrap(),
            r#"{"id":"7","type":"response","command":"get_state","success":true}"#
        );
        assert_eq!(
            rx.try_recv().unwrap(),
            r#"{"type":"response","command":"parse","success":false,"error":"Failed to parse command: expected value"}"#
        );
        assert_eq!(
            rx.try_recv().unwrap(),
            r#"{"type":"response","command":"cycle_model","success":true,"data":null}"#
        );
    }

    #[test]
    fn serialization_leaves_line_separators_unescaped() {
        let s = serde_json::to_string(&Value::from("a\u{2028}b")).unwrap();
        assert_eq!(s, "\"a\u{2028}b\"");
    }
}
