//! C13 — thinking-level fallback (design §3 C13, spec §7.7): when a provider rejects the
//! requested reasoning level and lists the ones it supports, pick the next level to try.

use filo_ai::ThinkingLevel;

use super::patterns::Pattern;

static SUPPORTED_ARE: Pattern = Pattern::new(r"(?i)supported values are:\s*([^\n.]+)");
static SUPPORTED: Pattern = Pattern::new(r"(?i)supported values:\s*([^\n.]+)");
static QUOTED: Pattern = Pattern::new(r#"['"]([^'"]+)['"]"#);
static NOT_SUPPORTED: Pattern = Pattern::new(r"(?i)not supported");

/// `normalizeThinkLevel`: a user's or provider's word for a level, or `None` when unknown.
/// Case, surrounding space and (for `xhigh`) inner separators do not matter.
pub fn normalize_think_level(raw: &str) -> Option<ThinkingLevel> {
    let key = raw.trim().to_lowercase();
    let level = match key.as_str() {
        "off" => ThinkingLevel::Off,
        "on" | "enable" | "enabled" => ThinkingLevel::Low,
        "min" | "minimal" | "think" => ThinkingLevel::Minimal,
        "low" | "thinkhard" | "think-hard" | "think_hard" => ThinkingLevel::Low,
        "mid" | "med" | "medium" | "thinkharder" | "think-harder" | "harder" => {
            ThinkingLevel::Medium
        }
        "high" | "ultra" | "ultrathink" | "thinkhardest" | "highest" | "max" => ThinkingLevel::High,
        _ => {
            let collapsed: String = key
                .chars()
                .filter(|c| !matches!(c, ' ' | '_' | '-'))
                .collect();
            match collapsed.as_str() {
                "xhigh" | "extrahigh" => ThinkingLevel::Xhigh,
                _ => return None,
            }
        }
    };
    Some(level)
}

/// Providers whose reasoning switch is binary (Z.AI): any level other than off means low.
pub fn clamp_for_binary_provider(level: ThinkingLevel, provider: &str) -> ThinkingLevel {
    let binary = matches!(
        provider.trim().to_lowercase().as_str(),
        "zai" | "z.ai" | "z-ai"
    );
    match level {
        ThinkingLevel::Off => ThinkingLevel::Off,
        ThinkingLevel::Minimal
        | ThinkingLevel::Low
        | ThinkingLevel::Medium
        | ThinkingLevel::High
        | ThinkingLevel::Xhigh
        | ThinkingLevel::Max => {
            if binary {
                ThinkingLevel::Low
            } else {
                level
            }
        }
    }
}

/// How far the fallback goes beyond the supported-values list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnsupportedWithoutList {
    /// Baseline: without a list of supported values there is no fallback.
    #[default]
    NoFallback,
    /// (later trees) "… not supported …" without a list falls back to `off` once.
    TryOff,
}

/// `pickFallbackThinkingLevel`: the first supported level named in `message` that was not
/// attempted yet; `None` when the message names none (or is empty).
pub fn pick_fallback_thinking_level(
    message: Option<&str>,
    attempted: &[ThinkingLevel],
    without_list: UnsupportedWithoutList,
) -> Option<ThinkingLevel> {
    let message = message?.trim();
    if message.is_empty() {
        return None;
    }
    // filo-ai keeps a provider's raw error body (`400 {"error":{"message":…}}`) where pi's SDKs
    // hand over the decoded message; the levels are read from the decoded one.
    let decoded = super::copy::parse_api_error_payload(message).map(|i| i.message);
    let message = decoded.as_deref().unwrap_or(message);
    let list = [&SUPPORTED_ARE, &SUPPORTED].iter().find_map(|p| {
        let caps = p.get()?.captures(message)?;
        Some(caps.get(1)?.as_str())
    });
    let Some(list) = list else {
        return match without_list {
            UnsupportedWithoutList::TryOff
                if NOT_SUPPORTED.is_match(message) && !attempted.contains(&ThinkingLevel::Off) =>
            {
                Some(ThinkingLevel::Off)
            }
            UnsupportedWithoutList::TryOff | UnsupportedWithoutList::NoFallback => None,
        };
    };
    supported_values(list)
        .into_iter()
        .filter_map(|v| normalize_think_level(&v))
        .find(|level| !attempted.contains(level))
}

/// The values of a "supported values" list: the quoted ones if any, else the comma / "and"
/// separated words with non-letters trimmed off both ends.
fn supported_values(list: &str) -> Vec<String> {
    let quoted: Vec<String> = QUOTED
        .get()
        .map(|re| {
            re.captures_iter(list)
                .filter_map(|c| Some(c.get(1)?.as_str().to_owned()))
                .collect()
        })
        .unwrap_or_default();
    if !quoted.is_empty() {
        return quoted;
    }
    list.split(',')
        .flat_map(split_on_and)
        .map(|part| part.trim_matches(|c: char| !c.is_alphabetic()).to_owned())
        .filter(|part| !part.is_empty())
        .collect()
}

/// Split on the standalone word "and" (case-insensitive).
fn split_on_and(part: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    // Offsets of the lower-cased copy match the original only for ASCII; other text is not
    // split (level names are ASCII anyway).
    if !part.is_ascii() {
        return vec![part];
    }
    let lower = part.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let mut i = 0;
    while let Some(found) = lower[i..].find("and") {
        let at = i + found;
        let end = at + 3;
        let before_ok = at == 0 || !bytes[at - 1].is_ascii_alphanumeric();
        let after_ok = end == bytes.len() || !bytes[end].is_ascii_alphanumeric();
        if before_ok && after_ok {
            out.push(&part[start..at]);
            start = end;
        }
        i = end;
    }
    out.push(&part[start..]);
    out
}

#[cfg(test)]
pub(crate) fn all_patterns() -> [&'static Pattern; 4] {
    [&SUPPORTED_ARE, &SUPPORTED, &QUOTED, &NOT_SUPPORTED]
}

#[cfg(test)]
#[path = "thinking_tests.rs"]
mod thinking_tests;
