//! C22 — silent replies (spec §11.1, OpenClaw `auto-reply/tokens.ts`): a reply that is only
//! `NO_REPLY` sends nothing; `HEARTBEAT_OK` is the heartbeat's "nothing to report".

/// The token a model answers with when it chooses not to reply.
pub const SILENT_REPLY_TOKEN: &str = "NO_REPLY";
/// The token a heartbeat run answers with when there is nothing to report.
pub const HEARTBEAT_TOKEN: &str = "HEARTBEAT_OK";

/// The text is the token alone, with optional surrounding whitespace (case-sensitive). A reply
/// that merely ends with the token is not silent.
pub fn is_silent_reply_text(text: Option<&str>, token: &str) -> bool {
    text.is_some_and(|t| !token.is_empty() && t.trim() == token)
}

/// Remove a trailing token preceded by the start, whitespace or `*`s (`**NO_REPLY`), then trim.
pub fn strip_silent_token(text: &str, token: &str) -> String {
    let body = text.trim_end();
    let Some(before) = body.strip_suffix(token).filter(|_| !token.is_empty()) else {
        return text.trim().to_owned();
    };
    let stripped = if before.is_empty() {
        before
    } else if before.ends_with(char::is_whitespace) {
        before.trim_end()
    } else if before.ends_with('*') {
        before.trim_end_matches('*')
    } else {
        return text.trim().to_owned();
    };
    stripped.trim().to_owned()
}

/// While streaming: the text so far may still become the token, so hold it back. Only upper-case
/// letters and `_`, at least two of them, a prefix of the token, and either containing `_` or
/// being `NO` for `NO_REPLY` (or the whole token).
///
/// (from source) OpenClaw's current `isSilentReplyPrefixText` refuses mixed case (`No` is a real
/// word) and guards tokens without an underscore yet (`HEART` is not held for `HEARTBEAT_OK`),
/// letting only `NO` through for the silent token.
pub fn is_silent_reply_prefix_text(text: Option<&str>, token: &str) -> bool {
    let Some(text) = text else {
        return false;
    };
    let candidate = text.trim_start();
    if candidate.len() < 2
        || !candidate
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b == b'_')
    {
        return false;
    }
    if !token.starts_with(candidate) {
        return false;
    }
    candidate.contains('_')
        || candidate == token
        || (token == SILENT_REPLY_TOKEN && candidate == "NO")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silent_text_vectors() {
        for t in ["NO_REPLY", "  NO_REPLY  ", "\nNO_REPLY\n"] {
            assert!(is_silent_reply_text(Some(t), SILENT_REPLY_TOKEN), "{t:?}");
        }
        for t in [
            Some("Here is a helpful response.\n\nNO_REPLY"),
            Some("NO_REPLY but here is more content"),
            Some("Please NO_REPLY to this"),
            Some("no_reply"),
            None,
            Some(""),
        ] {
            assert!(!is_silent_reply_text(t, SILENT_REPLY_TOKEN), "{t:?}");
        }
        assert!(is_silent_reply_text(Some(" HEARTBEAT_OK"), HEARTBEAT_TOKEN));
    }

    #[test]
    fn strip_vectors() {
        let cases = [
            ("Done.\n\nNO_REPLY", "Done."),
            ("NO_REPLY 👍", "NO_REPLY 👍"),
            ("😄 NO_REPLY", "😄"),
            ("interject.NO_REPLY", "interject.NO_REPLY"),
            ("NO_REPLY ok NO_REPLY", "NO_REPLY ok"),
            ("**NO_REPLY", ""),
            ("some text **NO_REPLY", "some text"),
            ("NO_REPLY", ""),
            ("  plain text  ", "plain text"),
            ("text NO_REPLY  \n", "text"),
        ];
        for (input, want) in cases {
            assert_eq!(
                strip_silent_token(input, SILENT_REPLY_TOKEN),
                want,
                "{input:?}"
            );
        }
    }

    #[test]
    fn prefix_vectors() {
        for t in ["NO", "NO_RE", "NO_REPLY", "  NO_"] {
            assert!(
                is_silent_reply_prefix_text(Some(t), SILENT_REPLY_TOKEN),
                "{t:?}"
            );
        }
        for t in ["N", "No", "Hello", "NO_X", "NO-", "no_re", ""] {
            assert!(
                !is_silent_reply_prefix_text(Some(t), SILENT_REPLY_TOKEN),
                "{t:?}"
            );
        }
        assert!(!is_silent_reply_prefix_text(None, SILENT_REPLY_TOKEN));
        assert!(is_silent_reply_prefix_text(
            Some("HEARTBEAT_"),
            HEARTBEAT_TOKEN
        ));
        assert!(!is_silent_reply_prefix_text(Some("HEART"), HEARTBEAT_TOKEN));
        assert!(is_silent_reply_prefix_text(
            Some("HEARTBEAT_OK"),
            HEARTBEAT_TOKEN
        ));
    }
}
