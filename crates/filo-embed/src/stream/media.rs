//! C22 — `MEDIA:` lines (design §3 C22, spec §11.1; OpenClaw `media/parse.ts`
//! `splitMediaFromOutput`): attachments the model names in its reply, lifted out of the text.
//!
//! A line whose trimmed start begins with `MEDIA:` (any case) carries references after the
//! marker: quoted values (`"…"`, `'…'`, `` `…` ``, spaces allowed) or whitespace-separated parts.
//! Lines inside fenced or indented code are never parsed. Valid references leave the text; an
//! invalid one that looks like a local path leaves it too (internal paths never leak); anything
//! else stays as text.

use super::directives::parse_audio_tag;
use super::fences::parse_fence_spans;
use super::url_guard::is_allowed_remote_media_url;
use crate::pattern::Pattern;

/// Longest accepted reference, in chars.
const MAX_MEDIA_CHARS: usize = 4096;

static MEDIA_TOKEN: Pattern = Pattern::new(r"(?-u:\b)MEDIA:[ \t]*");
static JSON_SUFFIX: Pattern = Pattern::new(r#"(?s)^(.*\.\w{1,10})\\?"(?:[\]},:]|$)"#);
static TRAVERSAL_SEGMENT: Pattern = Pattern::new(r"(?:^|[/\\])\.\.(?:[/\\]|$)");
static WINDOWS_DRIVE: Pattern = Pattern::new(r"^[a-zA-Z]:[\\/]");
static SCHEME: Pattern = Pattern::new(r"^[a-zA-Z][a-zA-Z0-9+.-]*:");
static FILE_EXT: Pattern = Pattern::new(r"\.\w{1,10}$");

/// The text without its `MEDIA:` lines, and what they referenced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SplitMedia {
    pub text: String,
    pub media_urls: Vec<String>,
    /// `[[audio_as_voice]]` was present (and removed).
    pub audio_as_voice: bool,
}

/// `splitMediaFromOutput`.
pub fn split_media_from_output(raw: &str) -> SplitMedia {
    let trimmed = raw.trim_end();
    if trimmed.trim().is_empty() {
        return SplitMedia::default();
    }
    let may_have_media = trimmed.to_ascii_lowercase().contains("media:");
    if !may_have_media && !trimmed.contains("[[") {
        return SplitMedia {
            text: trimmed.to_owned(),
            ..SplitMedia::default()
        };
    }
    let fences = if trimmed.contains("```") || trimmed.contains("~~~") {
        parse_fence_spans(trimmed)
    } else {
        Vec::new()
    };
    let mut media = Vec::new();
    let mut found_token = false;
    let mut kept: Vec<(String, bool)> = Vec::new();
    let mut offset = 0;
    let mut prev_blank_or_code = true;
    for line in trimmed.split('\n') {
        let line_start = offset;
        offset += line.len() + 1;
        let in_fence = fences
            .iter()
            .any(|f| line_start >= f.start && line_start < f.end);
        let indented = prev_blank_or_code && (line.starts_with("    ") || line.starts_with('\t'));
        if in_fence || indented {
            kept.push((line.to_owned(), true));
            prev_blank_or_code = true;
            continue;
        }
        let is_media_line = line
            .trim_start()
            .get(..6)
            .is_some_and(|head| head.eq_ignore_ascii_case("MEDIA:"));
        let token = is_media_line
            .then(|| MEDIA_TOKEN.get()?.find(line))
            .flatten();
        let Some(token) = token else {
            kept.push((line.to_owned(), false));
            prev_blank_or_code = line.trim().is_empty();
            continue;
        };
        let payload = &line[token.end()..];
        let parsed = parse_payload(payload);
        found_token |= !parsed.media.is_empty() || parsed.drop_token;
        let mut pieces = line[..token.start()].to_owned();
        if parsed.media.is_empty() && !parsed.drop_token {
            pieces.push_str(&line[token.start()..]);
        } else if !parsed.kept_text.is_empty() {
            pieces.push(' ');
            pieces.push_str(&parsed.kept_text);
        }
        media.extend(parsed.media);
        let cleaned = collapse_blanks(&pieces).trim().to_owned();
        if !cleaned.is_empty() {
            kept.push((cleaned, false));
        }
        prev_blank_or_code = false;
    }
    let mut text = tidy_lines(&kept);
    let audio = parse_audio_tag(&text);
    if audio.had_tag {
        text = strip_leading_blank(&collapse_newlines(&audio.text))
            .trim_end()
            .to_owned();
    }
    if media.is_empty() && !found_token && !audio.had_tag {
        text = trimmed.to_owned();
    }
    SplitMedia {
        text,
        media_urls: media,
        audio_as_voice: audio.had_tag,
    }
}

struct Payload {
    media: Vec<String>,
    /// Invalid references kept as text (without the marker).
    kept_text: String,
    /// Remove the marker even though no reference was valid (a local-looking path).
    drop_token: bool,
}

/// Split a payload into references: a quoted value ends at its quote followed by whitespace or
/// the end; unquoted parts group while the group has no file extension yet, or when the next
/// part is a bare name (`render final.png`, `/tmp/My Files/a.png`).
///
/// (from source, newer than the spec) OpenClaw's current `parse.test.ts` keeps several quoted
/// references on one line apart and groups space-separated path fragments this way.
fn references(payload: &str) -> Vec<(String, bool)> {
    let mut refs: Vec<(String, bool)> = Vec::new();
    let mut open_group: Option<(usize, usize)> = None;
    let bytes = payload.as_bytes();
    let mut i = 0;
    let flush = |group: &mut Option<(usize, usize)>, refs: &mut Vec<(String, bool)>| {
        if let Some((s, e)) = group.take() {
            refs.push((payload[s..e].to_owned(), false));
        }
    };
    while i < bytes.len() {
        if let Some(c) = payload[i..].chars().next().filter(|c| c.is_whitespace()) {
            i += c.len_utf8();
            continue;
        }
        let q = bytes[i];
        if matches!(q, b'"' | b'\'' | b'`')
            && let Some(close) = quoted_end(payload, i, q)
        {
            flush(&mut open_group, &mut refs);
            refs.push((payload[i + 1..close].trim().to_owned(), true));
            i = close + 1;
            continue;
        }
        let end = payload[i..]
            .find(|c: char| c.is_whitespace())
            .map_or(payload.len(), |n| i + n);
        let part = &payload[i..end];
        match open_group {
            Some((s, e)) if continues_group(&payload[s..e], part) => open_group = Some((s, end)),
            _ => {
                flush(&mut open_group, &mut refs);
                open_group = Some((i, end));
            }
        }
        i = end;
    }
    flush(&mut open_group, &mut refs);
    refs
}

/// The closing quote of a value opened at `open`: the first `q` followed by whitespace or the end.
fn quoted_end(payload: &str, open: usize, q: u8) -> Option<usize> {
    let bytes = payload.as_bytes();
    (open + 1..bytes.len())
        .find(|&j| bytes[j] == q && bytes.get(j + 1).is_none_or(|b| b.is_ascii_whitespace()))
}

fn continues_group(group: &str, part: &str) -> bool {
    if has_scheme(group) || has_scheme(part) {
        return false;
    }
    let bare = !part.contains('/') && !part.contains('\\') && !part.starts_with('~');
    let group_has_ext = FILE_EXT.is_match(clean_candidate(group));
    bare || !group_has_ext
}

fn parse_payload(payload: &str) -> Payload {
    let refs = references(payload);
    let single = refs.len() == 1;
    let mut out = Payload {
        media: Vec::new(),
        kept_text: String::new(),
        drop_token: false,
    };
    let mut kept: Vec<&str> = Vec::new();
    for (raw, quoted) in &refs {
        let candidate = if *quoted {
            normalize_media_source(raw)
        } else {
            normalize_media_source(clean_candidate(raw))
        };
        let spaces = *quoted || raw.contains(char::is_whitespace);
        if is_valid_media(candidate, spaces, single && !*quoted) {
            out.media.push(candidate.to_owned());
        } else if looks_like_local_file_path(raw.trim()) || raw.trim().starts_with("file://") {
            out.drop_token = true;
        } else {
            kept.push(raw);
        }
    }
    out.kept_text = kept.join(" ");
    out
}

/// Strip wrapping punctuation and serialized-JSON garbage after a file extension.
fn clean_candidate(raw: &str) -> &str {
    let stripped = raw
        .trim_start_matches(['`', '"', '\'', '[', '{', '('])
        .trim_end_matches(['`', '"', '\'', '\\', '}', ')', ']', ',']);
    JSON_SUFFIX
        .get()
        .and_then(|re| re.captures(stripped))
        .and_then(|c| c.get(1))
        .map_or(stripped, |m| m.as_str())
}

fn normalize_media_source(src: &str) -> &str {
    src.strip_prefix("file://").unwrap_or(src)
}

fn has_scheme(candidate: &str) -> bool {
    SCHEME.is_match(candidate) && !WINDOWS_DRIVE.is_match(candidate)
}

fn has_traversal_or_unsupported_home(candidate: &str) -> bool {
    candidate.starts_with("../")
        || candidate == ".."
        || (candidate.starts_with('~')
            && !(candidate.starts_with("~/") || candidate.starts_with("~\\")))
        || TRAVERSAL_SEGMENT.is_match(candidate)
}

fn relative_with_separator(candidate: &str) -> bool {
    !SCHEME.is_match(candidate) && (candidate.contains('/') || candidate.contains('\\'))
}

/// Broad check used only to decide that an invalid reference must not leak as text.
fn looks_like_local_file_path(candidate: &str) -> bool {
    candidate.starts_with('/')
        || candidate.starts_with("./")
        || candidate.starts_with("../")
        || candidate.starts_with('~')
        || WINDOWS_DRIVE.is_match(candidate)
        || candidate.starts_with("\\\\")
        || relative_with_separator(candidate)
}

fn is_likely_local_path(candidate: &str) -> bool {
    if has_traversal_or_unsupported_home(candidate) {
        return false;
    }
    candidate.starts_with('/')
        || candidate.starts_with("./")
        || candidate.starts_with("~/")
        || candidate.starts_with("~\\")
        || WINDOWS_DRIVE.is_match(candidate)
        || candidate.starts_with("\\\\")
        || relative_with_separator(candidate)
}

fn is_valid_media(candidate: &str, allow_spaces: bool, allow_bare_filename: bool) -> bool {
    if candidate.is_empty() || candidate.chars().count() > MAX_MEDIA_CHARS {
        return false;
    }
    if !allow_spaces && candidate.contains(char::is_whitespace) {
        return false;
    }
    let lower_head: String = candidate.chars().take(8).collect::<String>().to_lowercase();
    if lower_head.starts_with("http://") || lower_head.starts_with("https://") {
        return is_allowed_remote_media_url(candidate);
    }
    if is_likely_local_path(candidate) {
        return true;
    }
    if has_traversal_or_unsupported_home(candidate) {
        return false;
    }
    allow_bare_filename && !SCHEME.is_match(candidate) && FILE_EXT.is_match(candidate)
}

fn collapse_blanks(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut run = 0;
    for c in text.chars() {
        if c == ' ' || c == '\t' {
            run += 1;
            if run == 1 {
                out.push(c);
            } else if run == 2 {
                out.pop();
                out.push(' ');
            }
        } else {
            run = 0;
            out.push(c);
        }
    }
    out
}

/// Kept lines: code lines as they are, others without trailing blanks and with blank runs
/// collapsed; blank-line runs collapsed to one newline; leading blank lines and up to three
/// leading spaces dropped; trailing whitespace dropped.
fn tidy_lines(kept: &[(String, bool)]) -> String {
    let lines: Vec<String> = kept
        .iter()
        .map(|(line, code)| {
            if *code {
                line.clone()
            } else {
                collapse_blanks(line.trim_end_matches([' ', '\t']))
            }
        })
        .collect();
    strip_leading_blank(&collapse_newlines(&lines.join("\n")))
        .trim_end()
        .to_owned()
}

fn collapse_newlines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c == '\n' && out.ends_with('\n') {
            continue;
        }
        out.push(c);
    }
    out
}

/// `^(?:[ \t]*\n)*(?:[ ]{0,3}(?=\S))?`
fn strip_leading_blank(text: &str) -> &str {
    let mut rest = text;
    while let Some(nl) = rest.find('\n') {
        if rest[..nl].bytes().all(|b| b == b' ' || b == b'\t') {
            rest = &rest[nl + 1..];
        } else {
            break;
        }
    }
    let spaces = rest.bytes().take(3).take_while(|b| *b == b' ').count();
    match rest[spaces..].chars().next() {
        Some(c) if !c.is_whitespace() => &rest[spaces..],
        _ => rest,
    }
}

#[cfg(test)]
pub(crate) fn all_patterns() -> Vec<&'static Pattern> {
    vec![
        &MEDIA_TOKEN,
        &JSON_SUFFIX,
        &TRAVERSAL_SEGMENT,
        &WINDOWS_DRIVE,
        &SCHEME,
        &FILE_EXT,
    ]
}
