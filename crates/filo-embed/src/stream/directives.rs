//! C22 — reply directives (design §3 C22, spec §11.1–§11.3; OpenClaw `utils/directive-tags.ts`,
//! `auto-reply/reply/reply-directives.ts`, `streaming-directives.ts`): `[[reply_to_current]]`,
//! `[[reply_to:<id>]]` and `[[audio_as_voice]]` tags in a reply, plus its media and silence.

use super::media::split_media_from_output;
use super::silent::{
    SILENT_REPLY_TOKEN, is_silent_reply_prefix_text, is_silent_reply_text, strip_silent_token,
};
use crate::pattern::Pattern;

static AUDIO_TAG: Pattern = Pattern::new(r"(?i)\[\[\s*audio_as_voice\s*\]\]");
/// A reply tag; it only counts at the start of the text or after whitespace (checked by hand:
/// Rust's `regex` has no look-behind).
static REPLY_TAG: Pattern =
    Pattern::new(r"(?i)\[\[\s*(?:reply_to_current|reply_to\s*:\s*([^\]\n]+))\s*\]\]");

/// The result of removing `[[audio_as_voice]]` tags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AudioTag {
    pub text: String,
    pub had_tag: bool,
}

/// Remove `[[audio_as_voice]]` tags (each becomes a space) and normalise whitespace.
pub fn parse_audio_tag(text: &str) -> AudioTag {
    let Some(re) = AUDIO_TAG.get() else {
        return AudioTag {
            text: text.to_owned(),
            had_tag: false,
        };
    };
    let had_tag = re.is_match(text);
    let replaced = if had_tag {
        re.replace_all(text, " ").into_owned()
    } else {
        text.to_owned()
    };
    AudioTag {
        text: normalize_directive_whitespace(&replaced),
        had_tag,
    }
}

/// `[ \t]+` → one space, blanks around newlines removed, trimmed.
fn normalize_directive_whitespace(text: &str) -> String {
    let mut collapsed = String::with_capacity(text.len());
    for c in text.chars() {
        if c == ' ' || c == '\t' {
            if !collapsed.ends_with(' ') {
                collapsed.push(' ');
            }
        } else {
            collapsed.push(c);
        }
    }
    collapsed
        .split('\n')
        .map(|line| line.trim_matches(' '))
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_owned()
}

/// Reply tags that count (start of text or after whitespace): (range, explicit id).
fn reply_tags(text: &str) -> Vec<(std::ops::Range<usize>, Option<String>)> {
    let Some(re) = REPLY_TAG.get() else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(caps) = re.captures_at(text, from) {
        let Some(m) = caps.get(0) else { break };
        let counts = text[..m.start()]
            .chars()
            .next_back()
            .is_none_or(char::is_whitespace);
        if counts {
            let id = caps.get(1).map(|id| id.as_str().trim().to_owned());
            found.push((m.range(), id));
            from = m.end();
        } else {
            from = m.start() + 1;
        }
    }
    found
}

/// What the reply tags of a text say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplyTags {
    pub text: String,
    /// The last non-empty `reply_to:<id>`.
    pub explicit_id: Option<String>,
    pub reply_to_current: bool,
    pub had_tag: bool,
}

/// Replace every counting reply tag by a space and normalise whitespace (text untouched when
/// there was no tag).
pub fn parse_reply_tags(text: &str) -> ReplyTags {
    let tags = reply_tags(text);
    if tags.is_empty() {
        return ReplyTags {
            text: text.to_owned(),
            ..ReplyTags::default()
        };
    }
    let mut out = ReplyTags {
        had_tag: true,
        ..ReplyTags::default()
    };
    let mut stripped = String::with_capacity(text.len());
    let mut last = 0;
    for (range, id) in tags {
        stripped.push_str(&text[last..range.start]);
        stripped.push(' ');
        last = range.end;
        match id {
            None => out.reply_to_current = true,
            Some(id) if !id.is_empty() => out.explicit_id = Some(id),
            Some(_) => {}
        }
    }
    stripped.push_str(&text[last..]);
    out.text = normalize_directive_whitespace(&stripped);
    out
}

/// `stripInlineDirectiveTagsForDisplay`: tags removed (not replaced), nothing else touched.
pub fn strip_inline_directive_tags_for_display(text: &str) -> (String, bool) {
    let without_audio = match AUDIO_TAG.get() {
        Some(re) => re.replace_all(text, "").into_owned(),
        None => text.to_owned(),
    };
    let mut out = String::with_capacity(without_audio.len());
    let mut last = 0;
    for (range, _) in reply_tags(&without_audio) {
        out.push_str(&without_audio[last..range.start]);
        last = range.end;
    }
    out.push_str(&without_audio[last..]);
    let changed = out != text;
    (out, changed)
}

/// A reply after directives, media and silence are resolved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplyDirectives {
    pub text: String,
    pub media_urls: Vec<String>,
    /// The message to reply to: the explicit id, else the current message for
    /// `[[reply_to_current]]`.
    pub reply_to_id: Option<String>,
    pub reply_to_current: bool,
    pub reply_to_tag: bool,
    pub audio_as_voice: bool,
    pub is_silent: bool,
}

impl ReplyDirectives {
    /// Something to deliver: text, media or a voice flag.
    pub fn is_renderable(&self) -> bool {
        !self.text.is_empty() || !self.media_urls.is_empty() || self.audio_as_voice
    }
}

/// `parseReplyDirectives(raw, {currentMessageId, silentToken})`.
pub fn parse_reply_directives(
    raw: &str,
    current_message_id: Option<&str>,
    silent_token: Option<&str>,
) -> ReplyDirectives {
    let split = split_media_from_output(raw);
    let tags = parse_reply_tags(&split.text);
    let current = current_message_id
        .map(str::trim)
        .filter(|id| !id.is_empty());
    let reply_to_id = tags
        .explicit_id
        .clone()
        .or_else(|| current.filter(|_| tags.reply_to_current).map(str::to_owned));
    let token = silent_token.unwrap_or(SILENT_REPLY_TOKEN);
    let is_silent = is_silent_reply_text(Some(&tags.text), token);
    ReplyDirectives {
        text: if is_silent { String::new() } else { tags.text },
        media_urls: split.media_urls,
        reply_to_id,
        reply_to_current: tags.reply_to_current,
        reply_to_tag: tags.had_tag,
        audio_as_voice: split.audio_as_voice,
        is_silent,
    }
}

/// Reply state pending from a tag-only chunk, or active for the rest of the message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct ReplyContext {
    id: Option<String>,
    current: bool,
    tag: bool,
}

/// `createStreamingDirectiveAccumulator`: directives across the chunks of one message. A tag
/// split across chunks is held back until it closes; a chunk holding only a tag passes its reply
/// target on to the next renderable chunk; once a chunk renders, its target holds for the rest
/// of the message.
#[derive(Debug, Clone, Default)]
pub struct DirectiveAccumulator {
    tail: String,
    pending: Option<ReplyContext>,
    active: Option<ReplyContext>,
}

impl DirectiveAccumulator {
    pub fn new() -> Self {
        Self::default()
    }

    /// A new message starts (`message_start`).
    pub fn reset(&mut self) {
        *self = Self::default();
    }

    /// Parse the next chunk; `None` when nothing in it (yet) renders. `last` marks the final
    /// chunk of the message: nothing is held back then.
    pub fn consume(
        &mut self,
        chunk: &str,
        last: bool,
        current_message_id: Option<&str>,
    ) -> Option<ReplyDirectives> {
        let mut text = std::mem::take(&mut self.tail);
        text.push_str(chunk);
        if !last && let Some(open) = unterminated_tag_start(&text) {
            self.tail = text.split_off(open);
        }
        let mut parsed = parse_reply_directives(&text, current_message_id, None);
        let stripped = strip_silent_token(&parsed.text, SILENT_REPLY_TOKEN);
        if parsed.is_silent || is_silent_reply_prefix_text(Some(&parsed.text), SILENT_REPLY_TOKEN) {
            parsed.text.clear();
        } else if stripped != parsed.text {
            parsed.text = stripped;
        }
        let fallback = self.pending.clone().or_else(|| self.active.clone());
        let merged = ReplyContext {
            id: parsed
                .reply_to_id
                .clone()
                .or_else(|| fallback.as_ref().and_then(|c| c.id.clone())),
            current: parsed.reply_to_current || fallback.as_ref().is_some_and(|c| c.current),
            tag: parsed.reply_to_tag || fallback.as_ref().is_some_and(|c| c.tag),
        };
        if !parsed.is_renderable() {
            if parsed.reply_to_tag {
                self.pending = Some(merged);
            }
            return None;
        }
        parsed.reply_to_id = merged.id.clone();
        parsed.reply_to_current = merged.current;
        parsed.reply_to_tag = merged.tag;
        self.pending = None;
        self.active = Some(merged);
        Some(parsed)
    }
}

/// Where a directive that the next chunk may complete starts: the last `[[` whose rest (one
/// line, no `]]`) has no `]` before its end, or a final lone `[`. Text that can no longer become
/// a directive (`[[E1008]timeout]`) is not held back.
fn unterminated_tag_start(text: &str) -> Option<usize> {
    if let Some(open) = text.rfind("[[") {
        let inner = &text[open + 2..];
        let still_open = !inner.contains('\n')
            && !inner.contains("]]")
            && inner.find(']').is_none_or(|close| close + 1 == inner.len());
        if still_open {
            return Some(open);
        }
    }
    text.ends_with('[').then(|| text.len() - 1)
}

#[cfg(test)]
pub(crate) fn all_patterns() -> Vec<&'static Pattern> {
    vec![&AUDIO_TAG, &REPLY_TAG]
}
