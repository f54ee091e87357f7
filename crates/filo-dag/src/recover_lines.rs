//! The pi session entries of a lineage as JSON lines, written straight from the rows: the same
//! entries as [`Store::load_entries`], each line the exact text `serde_json::to_string` gives
//! for that entry's `Value`, without building the `Value`s (issue 16: at 100,000 entries they
//! were ~540 MB and most of the load).
//!
//! A blob's content is already JSON text; when it is in serde_json's own form
//! ([`json_text::is_canonical`], true of what filo and the reference write but for some
//! numbers) it is copied as it is, else parsed and written back once. What the entry builder
//! must know of a part (a `type`, a tool call's `id`, a tool result's texts, …) is read from
//! that text in place. `recover_tests` compares every line with the `Value` path.

use std::ops::Range;

use serde_json::Value;

use crate::canon;
use crate::error::Result;
use crate::json_text::{self as jt, as_str, get, truthy};
use crate::model::{blob_type, role};
use crate::recover::{BlobRead, ENTRY_TYPES, Step, carries_signature, provider_model, steps};
use crate::store::Store;
use crate::text::iso_utc;

/// Session entries as compact JSON lines (no newline), root first, in one buffer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EntryLines {
    text: String,
    /// Where each line ends in `text` (the next one starts there).
    ends: Vec<usize>,
}

impl EntryLines {
    /// How many entries.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The line of entry `i`.
    pub fn get(&self, i: usize) -> Option<&str> {
        let end = *self.ends.get(i)?;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        self.text.get(start..end)
    }

    /// The lines in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        (0..self.ends.len()).map(|i| self.get(i).unwrap_or_default())
    }

    /// The bytes of all lines together.
    pub fn text_len(&self) -> usize {
        self.text.len()
    }
}

impl Store {
    /// [`Store::load_entries`] as JSON lines: line `i` is `serde_json::to_string` of entry `i`.
    pub fn load_entry_lines(&self, head: Option<&str>) -> Result<EntryLines> {
        let Some(head) = head else {
            return Ok(EntryLines::default());
        };
        self.load_entry_lines_after(head, None)
    }

    /// [`Store::load_entries_after`] as JSON lines.
    pub fn load_entry_lines_after(
        &self,
        head: &str,
        after: Option<(&str, &str)>,
    ) -> Result<EntryLines> {
        self.entry_lines_with(head, after, BlobRead::Auto)
    }

    /// [`Store::load_entry_lines_after`] with the blobs read as `how` says.
    pub(crate) fn entry_lines_with(
        &self,
        head: &str,
        after: Option<(&str, &str)>,
        how: BlobRead,
    ) -> Result<EntryLines> {
        self.lines_each(head, after, how, true, &mut |_| true)
    }

    /// The lines [`Store::load_entry_lines`] gives, handed to `line` one at a time, root first
    /// (each without its newline), without holding them all: `filo dag entries` writes them as
    /// they come. `line` gives `false` to stop early (e.g. its output failed).
    pub fn each_entry_line(&self, head: &str, line: &mut dyn FnMut(&str) -> bool) -> Result<()> {
        self.lines_each(head, None, BlobRead::Auto, false, &mut |lines| {
            let go = lines.iter().all(&mut *line);
            lines.text.clear();
            lines.ends.clear();
            go
        })?;
        Ok(())
    }

    /// The walk behind both: `each` sees the lines buffered so far after every entry (and may
    /// drain them); `keep` sizes the buffer for all of them.
    fn lines_each(
        &self,
        head: &str,
        after: Option<(&str, &str)>,
        how: BlobRead,
        keep: bool,
        each: &mut dyn FnMut(&mut EntryLines) -> bool,
    ) -> Result<EntryLines> {
        self.read(|| {
            let stop = after.map(|(node, _)| node);
            // Every read blob's content, in serde_json's form, one after another.
            let mut arena = String::new();
            let mut decode = |content: &str| -> Option<Range<usize>> {
                let start = arena.len();
                if jt::is_canonical(content) {
                    arena.push_str(content);
                } else {
                    let v = serde_json::from_str::<Value>(content).ok()?;
                    arena.push_str(&v.to_string());
                }
                Some(start..arena.len())
            };
            let steps = steps(self, head, stop, how, &mut decode)?;
            let met = stop.is_some() && steps.last().is_some_and(|s| s.stopped_before);
            let mut parent: Option<&str> = match after {
                Some((_, entry)) if met => Some(entry),
                _ => None,
            };
            let (text, lines) = match keep {
                true => (arena.len() + steps.len() * 256, steps.len()),
                false => (64 * 1024, 1),
            };
            let mut writer = Writer {
                arena: &arena,
                out: EntryLines {
                    text: String::with_capacity(text),
                    ends: Vec::with_capacity(lines),
                },
                content: String::new(),
                models: Models::default(),
            };
            for step in steps.iter().rev() {
                writer.entry(step, parent);
                parent = Some(&step.entry_id);
                if !each(&mut writer.out) {
                    break;
                }
            }
            Ok(writer.out)
        })
    }
}

/// The last config_json seen and its provider and model, as JSON string literals.
#[derive(Default)]
struct Models {
    config: Option<String>,
    literals: String,
}

impl Models {
    /// `"provider":"…","model":"…"` for `config`.
    fn get(&mut self, config: Option<&str>) -> &str {
        if self.config.as_deref() != config || self.literals.is_empty() {
            let (provider, model) = provider_model(config);
            self.literals.clear();
            self.literals.push_str("\"provider\":");
            jt::push_str(&mut self.literals, &provider);
            self.literals.push_str(",\"model\":");
            jt::push_str(&mut self.literals, &model);
            self.config = config.map(str::to_owned);
        }
        &self.literals
    }
}

/// The zero usage of every rebuilt assistant message, as `plain_message` writes it.
const USAGE: &str = r#""usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}"#;

struct Writer<'a> {
    arena: &'a str,
    out: EntryLines,
    /// The content blocks of the entry being written, comma-separated.
    content: String,
    models: Models,
}

impl Writer<'_> {
    /// Appends the line of `step`'s entry (none for a content-less `pi_internal` node); the
    /// same decisions as `recover::entry_of`, in the same order.
    fn entry(&mut self, step: &Step<Range<usize>>, parent: Option<&str>) {
        let arena = self.arena;
        let mut meta: Option<&str> = None;
        let mut whole_message: Option<&str> = None;
        let mut last_result: Option<&str> = None;
        self.content.clear();
        let mut blocks = 0usize;
        for (index, kind, range) in &step.parts {
            let v = &arena[range.clone()];
            let before = self.content.len();
            let mut pushed = true;
            match *kind {
                blob_type::PI_META if is_meta(step, v) => {
                    meta = Some(v);
                    pushed = false;
                }
                blob_type::PI_META if step.found == 1 && get(v, "role").is_some() => {
                    whole_message = Some(v);
                    pushed = false;
                }
                blob_type::PI_META => self.block_raw(blocks, v),
                blob_type::PI_ENTRY => {
                    meta = Some(v);
                    pushed = false;
                }
                blob_type::TEXT => self.block(blocks, &[("type", "\"text\""), ("text", v)]),
                blob_type::THINKING => {
                    self.block(blocks, &[("type", "\"thinking\""), ("thinking", v)]);
                }
                blob_type::TOOL_CALL => self.tool_call(blocks, v),
                blob_type::TOOL_RESULT => {
                    self.tool_result_block(blocks, v);
                    last_result = Some(v);
                }
                _ => pushed = false,
            }
            if !pushed {
                continue;
            }
            blocks += 1;
            // Signatures go back on the block this part became (text, thinking, tool call).
            if let Some(Value::Object(sig)) = step.signatures.get(*index)
                && carries_signature(kind)
            {
                self.sign(before, sig);
            }
        }
        let out = &mut self.out.text;
        let line_start = out.len();
        if let Some(meta) = meta {
            match jt::fields(meta).find(|(k, _)| *k == "parentId") {
                Some((_, old)) => {
                    // `old` lies inside `meta`: copy around it.
                    let at = old.as_ptr() as usize - meta.as_ptr() as usize;
                    out.push_str(&meta[..at]);
                    push_opt_str(out, parent);
                    out.push_str(&meta[at + old.len()..]);
                }
                None => out.push_str(meta),
            }
            self.out.ends.push(out.len());
            return;
        }
        if whole_message.is_none() && step.role == role::PI_INTERNAL && blocks == 0 {
            return;
        }
        out.push_str("{\"type\":\"message\",\"id\":");
        jt::push_str(out, &step.entry_id);
        out.push_str(",\"parentId\":");
        push_opt_str(out, parent);
        out.push_str(",\"timestamp\":\"");
        out.push_str(&iso_utc(step.timestamp));
        out.push('"');
        out.push_str(",\"message\":");
        if let Some(message) = whole_message {
            out.push_str(message);
        } else if step.role == role::TOOL_RESULT {
            tool_result_message(out, last_result, step.timestamp);
        } else {
            out.push_str("{\"role\":");
            jt::push_str(out, &step.role);
            out.push_str(",\"content\":[");
            out.push_str(&self.content);
            out.push(']');
            if step.role == role::ASSISTANT {
                out.push_str(",\"api\":\"chat\",");
                out.push_str(self.models.get(step.config.as_deref()));
                out.push(',');
                out.push_str(USAGE);
                out.push_str(",\"stopReason\":\"stop\"");
            }
            out.push_str(",\"timestamp\":");
            jt::push_i64(out, step.timestamp);
            out.push('}');
        }
        out.push('}');
        debug_assert!(out.len() > line_start);
        self.out.ends.push(out.len());
    }

    fn separator(&mut self, blocks: usize) {
        if blocks > 0 {
            self.content.push(',');
        }
    }

    fn block_raw(&mut self, blocks: usize, v: &str) {
        self.separator(blocks);
        self.content.push_str(v);
    }

    /// An object block from keys that need no escaping and value texts.
    fn block(&mut self, blocks: usize, pairs: &[(&str, &str)]) {
        self.separator(blocks);
        push_object(&mut self.content, pairs.iter().copied());
    }

    /// `recover::tool_call_part`.
    fn tool_call(&mut self, blocks: usize, v: &str) {
        let hashed;
        let id = match get(v, "id") {
            Some(id) if truthy(id) => id,
            _ => {
                let value = serde_json::from_str::<Value>(v).unwrap_or(Value::Null);
                let mut lit = String::with_capacity(66);
                jt::push_str(&mut lit, &canon::hash_value(&value));
                hashed = lit;
                &hashed
            }
        };
        let name = get(v, "name").unwrap_or("null");
        let arguments = match get(v, "arguments") {
            Some(a) if a != "null" => a,
            _ => "{}",
        };
        self.block(
            blocks,
            &[
                ("type", "\"toolCall\""),
                ("id", id),
                ("name", name),
                ("arguments", arguments),
            ],
        );
    }

    /// The text block of a tool result part (`recover::tool_result_text`): its content's text
    /// items joined by newlines (joined in their escaped form, which escaping commutes with),
    /// else the JavaScript JSON of the whole part.
    fn tool_result_block(&mut self, blocks: usize, v: &str) {
        self.separator(blocks);
        let c = &mut self.content;
        c.push_str("{\"type\":\"text\",\"text\":\"");
        let mut texts = 0usize;
        if let Some(items) = get(v, "content").filter(|c| c.starts_with('[')) {
            for item in jt::items(items) {
                if get(item, "type") != Some("\"text\"") {
                    continue;
                }
                let Some(text) = get(item, "text").and_then(as_str) else {
                    continue;
                };
                if texts > 0 {
                    c.push_str("\\n");
                }
                c.push_str(text);
                texts += 1;
            }
        }
        if texts == 0 {
            let value = serde_json::from_str::<Value>(v).unwrap_or(Value::Null);
            jt::push_escaped(c, &canon::js_json(&value));
        }
        c.push_str("\"}");
    }

    /// Inserts the signature's fields into the block written at `start` of `content` as a
    /// preserve-order map does (a key it has keeps its place and takes the new value, others
    /// are appended).
    fn sign(&mut self, start: usize, sig: &serde_json::Map<String, Value>) {
        let mut block = self.content.split_off(start);
        if block.starts_with(',') {
            block.remove(0);
            self.content.push(',');
        }
        let mut pairs: Vec<(String, String)> = jt::fields(&block)
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        for (k, v) in sig {
            let mut key = String::new();
            jt::push_escaped(&mut key, k);
            let text = v.to_string();
            match pairs.iter_mut().find(|(pk, _)| *pk == key) {
                Some(pair) => pair.1 = text,
                None => pairs.push((key, text)),
            }
        }
        push_object(
            &mut self.content,
            pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        );
    }
}

/// Writes `{"k":v,…}` from keys already in their escaped spelling and values as JSON text.
fn push_object<'a>(c: &mut String, pairs: impl IntoIterator<Item = (&'a str, &'a str)>) {
    c.push('{');
    for (i, (k, v)) in pairs.into_iter().enumerate() {
        if i > 0 {
            c.push(',');
        }
        c.push('"');
        c.push_str(k);
        c.push_str("\":");
        c.push_str(v);
    }
    c.push('}');
}

fn push_opt_str(out: &mut String, s: Option<&str>) {
    match s {
        Some(s) => jt::push_str(out, s),
        None => out.push_str("null"),
    }
}

/// `recover::is_meta` on the part's text.
fn is_meta(step: &Step<Range<usize>>, v: &str) -> bool {
    let (mut kind, mut has_role) = (None, false);
    for (k, value) in jt::fields(v) {
        match k {
            "type" => kind = Some(value),
            "role" => has_role = true,
            _ => {}
        }
    }
    let Some(kind) = kind.filter(|t| truthy(t)) else {
        return false;
    };
    !has_role
        && (step.role == role::PI_INTERNAL
            || as_str(kind).is_some_and(|k| ENTRY_TYPES.contains(&k)))
}

/// `recover::tool_result_message`.
fn tool_result_message(out: &mut String, v: Option<&str>, timestamp: i64) {
    let field = |key: &str| v.and_then(|v| get(v, key));
    let or_default = |key: &str, default: &'static str| match field(key) {
        Some(x) if truthy(x) => x,
        _ => default,
    };
    out.push_str("{\"role\":\"toolResult\",\"toolCallId\":");
    out.push_str(or_default("toolCallId", "\"unknown\""));
    out.push_str(",\"toolName\":");
    out.push_str(or_default("toolName", "\"unknown\""));
    out.push_str(",\"content\":");
    out.push_str(or_default("content", "[]"));
    out.push_str(",\"isError\":");
    out.push_str(match field("isError") {
        Some(x) if x != "null" => x,
        _ => "false",
    });
    out.push_str(",\"timestamp\":");
    jt::push_i64(out, timestamp);
    out.push('}');
}
