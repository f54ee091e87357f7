//! An SSE reader written from the spec, independent of the crate's encoder.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub event: Option<String>,
    pub data: String,
}

impl Event {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data)
            .unwrap_or_else(|e| panic!("frame {:?} is not JSON: {e}", self.data))
    }

    /// The `type` field of a JSON frame.
    pub fn kind(&self) -> String {
        self.json()["type"].as_str().unwrap_or_default().to_owned()
    }
}

/// Split an SSE body into events (lines end in `\n`, `\r\n` or `\r`; a blank line ends an event).
pub fn parse(body: &str) -> Vec<Event> {
    let normalized = body.replace("\r\n", "\n").replace('\r', "\n");
    let mut events = Vec::new();
    let mut event = None;
    let mut data: Option<String> = None;
    for line in normalized.split('\n') {
        if line.is_empty() {
            if let Some(d) = data.take() {
                events.push(Event {
                    event: event.take(),
                    data: d,
                });
            }
            event = None;
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => event = Some(value.to_owned()),
            "data" => match &mut data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => data = Some(value.to_owned()),
            },
            _ => {}
        }
    }
    events
}

/// Whether the body ends with a complete event (a blank line).
pub fn ends_cleanly(body: &str) -> bool {
    body.ends_with("\n\n") || body.ends_with("\r\n\r\n")
}
