//! Follow-up queue modes for messages that arrive while a session is running (C8, OpenClaw
//! `auto-reply/reply/queue/*` and `utils/queue-helpers.ts`): the queue, its cap and drop policy,
//! the overflow summary, and the collect prompt. The gateway (issue 12) drives it; this module
//! is pure and owns no timers or tasks.
//!
//! Summary lines are cut at 160 UTF-16 units, as OpenClaw counts, never through a character.

use std::collections::HashSet;

/// What a message that arrives during a run does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueueMode {
    /// Abort the running turn, then run the new message.
    Interrupt,
    /// Hand it to the running turn (`runs().queue_message`); a follow-up when that fails.
    Steer,
    /// One follow-up run per message.
    Followup,
    /// Queue them; one follow-up run for everything queued.
    #[default]
    Collect,
}

impl QueueMode {
    /// The mode a setting names (`abort` is `interrupt`, `coalesce` is `collect`, …).
    pub fn parse(raw: &str) -> Option<Self> {
        match raw.trim().to_lowercase().as_str() {
            "interrupt" | "interrupts" | "abort" => Some(Self::Interrupt),
            "steer" | "steering" => Some(Self::Steer),
            "followup" | "follow-ups" | "followups" => Some(Self::Followup),
            "collect" | "coalesce" => Some(Self::Collect),
            _ => None,
        }
    }
}

/// What to drop when the queue is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DropPolicy {
    /// Drop the oldest.
    Old,
    /// Refuse the newcomer.
    New,
    /// Drop the oldest and keep a one-line summary of each.
    #[default]
    Summarize,
}

impl DropPolicy {
    pub fn parse(raw: &str) -> Option<Self> {
        match raw.trim().to_lowercase().as_str() {
            "old" | "oldest" => Some(Self::Old),
            "new" | "newest" => Some(Self::New),
            "summarize" | "summary" => Some(Self::Summarize),
            _ => None,
        }
    }
}

/// Default quiet time before a queue drains, in ms.
pub const DEFAULT_DEBOUNCE_MS: u64 = 1_000;
/// Default number of pending messages.
pub const DEFAULT_CAP: usize = 20;
/// The collect prompt's first line.
pub const COLLECT_TITLE: &str = "[Queued messages while agent was busy]";

/// A queue's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueSettings {
    pub mode: QueueMode,
    pub debounce_ms: u64,
    pub cap: usize,
    pub drop: DropPolicy,
}

impl Default for QueueSettings {
    fn default() -> Self {
        Self {
            mode: QueueMode::Collect,
            debounce_ms: DEFAULT_DEBOUNCE_MS,
            cap: DEFAULT_CAP,
            drop: DropPolicy::Summarize,
        }
    }
}

impl QueueSettings {
    /// `applyQueueRuntimeSettings`: the mode always; the debounce floored at 0; the cap only
    /// when positive (floored); the drop policy when given.
    pub fn apply(
        &mut self,
        mode: QueueMode,
        debounce_ms: Option<f64>,
        cap: Option<f64>,
        drop: Option<DropPolicy>,
    ) {
        self.mode = mode;
        if let Some(d) = debounce_ms.filter(|d| !d.is_nan()) {
            self.debounce_ms = d.max(0.0).min(u64::MAX as f64) as u64;
        }
        if let Some(c) = cap.filter(|c| *c > 0.0) {
            self.cap = c.floor().min(usize::MAX as f64) as usize;
        }
        if let Some(p) = drop {
            self.drop = p;
        }
    }
}

/// One queued message with its identity.
#[derive(Debug, Clone, PartialEq)]
pub struct Queued<T> {
    pub id: u64,
    pub item: T,
    /// Never dropped to make room (a priority retry).
    pub protected: bool,
}

/// The follow-up queue of one session key.
#[derive(Debug, Clone)]
pub struct FollowupQueue<T> {
    pub settings: QueueSettings,
    pub items: Vec<Queued<T>>,
    /// Items being delivered now: they count as done for the cap and are never dropped.
    pub in_flight: HashSet<u64>,
    pub dropped_count: usize,
    pub summary_lines: Vec<String>,
    next_id: u64,
}

/// What [`FollowupQueue::admit`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct Admission<T> {
    /// The newcomer may be enqueued.
    pub admitted: bool,
    pub dropped: Vec<T>,
    /// Summary lines that fell off the bounded summary.
    pub elided: Vec<String>,
}

impl<T: Clone> FollowupQueue<T> {
    pub fn new(settings: QueueSettings) -> Self {
        Self {
            settings,
            items: Vec::new(),
            in_flight: HashSet::new(),
            dropped_count: 0,
            summary_lines: Vec::new(),
            next_id: 0,
        }
    }

    /// Items waiting (not being delivered).
    pub fn pending(&self) -> usize {
        self.items
            .iter()
            .filter(|q| !self.in_flight.contains(&q.id))
            .count()
    }

    /// `applyQueueDropPolicy`: make room for one more under the cap. `summarize` renders a
    /// dropped item for the summary; `summary_limit` bounds the summary (default: the cap; NaN
    /// keeps everything). Nothing changes when not enough unprotected, idle items can go.
    pub fn admit(
        &mut self,
        summarize: impl Fn(&T) -> String,
        summary_limit: Option<f64>,
    ) -> Admission<T> {
        let cap = self.settings.cap;
        let pending = self.pending();
        let mut out = Admission {
            admitted: true,
            dropped: Vec::new(),
            elided: Vec::new(),
        };
        if cap == 0 || pending < cap {
            return out;
        }
        if self.settings.drop == DropPolicy::New {
            out.admitted = false;
            return out;
        }
        let need = pending - cap + 1;
        let victims: Vec<usize> = self
            .items
            .iter()
            .enumerate()
            .filter(|(_, q)| !self.in_flight.contains(&q.id) && !q.protected)
            .map(|(i, _)| i)
            .take(need)
            .collect();
        if victims.len() < need {
            out.admitted = false;
            return out;
        }
        for i in victims.into_iter().rev() {
            out.dropped.insert(0, self.items.remove(i).item);
        }
        if self.settings.drop == DropPolicy::Summarize {
            for item in &out.dropped {
                self.dropped_count += 1;
                self.summary_lines.push(summary_line(&summarize(item), 160));
            }
            let limit = summary_limit.unwrap_or(cap as f64);
            if !limit.is_nan() && (self.summary_lines.len() as f64) > limit {
                let keep = limit.max(0.0).floor() as usize;
                let cut = self.summary_lines.len() - keep.min(self.summary_lines.len());
                out.elided = self.summary_lines.drain(..cut).collect();
            }
        }
        out
    }

    /// Enqueues `item` after [`FollowupQueue::admit`] said yes; returns its id.
    pub fn push(&mut self, item: T, protected: bool) -> u64 {
        self.next_id += 1;
        self.items.push(Queued {
            id: self.next_id,
            item,
            protected,
        });
        self.next_id
    }

    /// The next item to deliver, marked in flight (`None` when empty or already delivering).
    pub fn begin_next(&mut self) -> Option<Queued<T>> {
        let next = self
            .items
            .iter()
            .find(|q| !self.in_flight.contains(&q.id))?
            .clone();
        self.in_flight.insert(next.id);
        Some(next)
    }

    /// Delivery of `id` ended: removed when it succeeded (or must not be retried), kept in
    /// place for the next drain when it failed.
    pub fn finish(&mut self, id: u64, delivered_or_discarded: bool) {
        self.in_flight.remove(&id);
        if delivered_or_discarded {
            self.items.retain(|q| q.id != id);
        }
    }

    /// The overflow summary (`[Queue overflow] Dropped <n> message(s) due to cap.` + lines),
    /// without clearing it.
    pub fn summary_prompt(&self, noun: &str) -> Option<String> {
        if self.dropped_count == 0 {
            return None;
        }
        let plural = if self.dropped_count == 1 { "" } else { "s" };
        let mut lines = vec![format!(
            "[Queue overflow] Dropped {} {noun}{plural} due to cap.",
            self.dropped_count
        )];
        if !self.summary_lines.is_empty() {
            lines.push("Summary:".to_owned());
            lines.extend(self.summary_lines.iter().map(|l| format!("- {l}")));
        }
        Some(lines.join("\n"))
    }
}

/// Whitespace collapsed; at most `limit` UTF-16 units, ending `…` when cut (never through a
/// character).
pub fn summary_line(text: &str, limit: usize) -> String {
    let cleaned = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if cleaned.encode_utf16().count() <= limit {
        return cleaned;
    }
    let budget = limit.saturating_sub(1);
    let mut units = 0;
    let mut end = 0;
    for (i, c) in cleaned.char_indices() {
        if units + c.len_utf16() > budget {
            break;
        }
        units += c.len_utf16();
        end = i + c.len_utf8();
    }
    format!("{}…", cleaned[..end].trim_end())
}

/// `buildCollectPrompt`: the title, the overflow summary, then each item, joined by blank lines.
pub fn collect_prompt(prompts: &[&str], summary: Option<&str>) -> String {
    let mut blocks = vec![COLLECT_TITLE.to_owned()];
    blocks.extend(summary.map(str::to_owned));
    blocks.extend(
        prompts
            .iter()
            .enumerate()
            .map(|(i, p)| format!("---\nQueued #{}\n{p}", i + 1)),
    );
    blocks.join("\n\n")
}

/// `hasCrossChannelItems`: the items come from more than one route (or one says so), so they
/// are delivered one by one to keep each route's order. Items without a route join any.
pub fn has_cross_channel<'a>(routes: impl IntoIterator<Item = (Option<&'a str>, bool)>) -> bool {
    let mut first: Option<&str> = None;
    for (key, cross) in routes {
        if cross || key.is_some_and(|k| first.is_some_and(|f| f != k)) {
            return true;
        }
        first = first.or(key);
    }
    false
}

#[cfg(test)]
#[path = "queue_tests.rs"]
mod tests;
