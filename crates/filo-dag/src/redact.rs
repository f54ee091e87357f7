//! Passwords out of connection strings, wherever one may be shown: one function for every
//! surface (errors, warnings, logs, metrics, HTTP answers).
//!
//! [`redact`] takes any text (a bare connection string, or a message that quotes one) and
//! replaces each password it can find with `***`:
//!
//! - the user-info password of a URL: `postgres://user:secret@host/db` →
//!   `postgres://user:***@host/db` (also `postgresql://`);
//! - a `password` parameter, in a URL's query (`?sslmode=require&password=secret`) or in the
//!   key-value form of a connection string (`host=db password=secret`, `password='a b'`).
//!
//! Everything else is left as it is, so a message still names the server, the port, the
//! database and the user.

const MASK: &str = "***";

/// `text` with every connection-string password replaced by `***`.
pub fn redact(text: &str) -> String {
    mask_password_params(&mask_userinfo(text))
}

/// True where a URL or parameter token ends in free text.
fn ends_token(c: char) -> bool {
    c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '<' | '>' | ')' | ']' | ',')
}

/// Masks the password of every `postgres://user:password@…` URL in `text`.
fn mask_userinfo(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let found = ["postgres://", "postgresql://"]
            .iter()
            .filter_map(|s| rest.find(s).map(|i| (i, s.len())))
            .min();
        let Some((start, scheme_len)) = found else {
            out.push_str(rest);
            return out;
        };
        let after = start + scheme_len;
        out.push_str(&rest[..after]);
        let tail = &rest[after..];
        let token_end = tail.find(ends_token).unwrap_or(tail.len());
        let token = &tail[..token_end];
        // The user info ends at the last `@` before the query (a query value may hold an `@`).
        let query = token.find('?').unwrap_or(token.len());
        match token[..query].rfind('@') {
            Some(at) => {
                let userinfo = &token[..at];
                match userinfo.split_once(':') {
                    Some((user, _)) => {
                        out.push_str(user);
                        out.push(':');
                        out.push_str(MASK);
                    }
                    None => out.push_str(userinfo),
                }
                out.push_str(&token[at..]);
            }
            None => out.push_str(token),
        }
        rest = &tail[token_end..];
    }
}

/// Masks the value of every `password=` parameter (URL query or key-value form) in `text`.
fn mask_password_params(text: &str) -> String {
    const KEY: &str = "password=";
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut from = 0;
    while let Some(i) = lower[from..].find(KEY).map(|i| i + from) {
        from = i + KEY.len();
        // A parameter of its own: at the start, or after `?`, `&`, a space or a quote (not
        // `sslpassword=` or `my_password=`).
        let own = text[..i]
            .chars()
            .next_back()
            .is_none_or(|c| matches!(c, '?' | '&' | ';' | '"' | '\'') || c.is_whitespace());
        if !own {
            continue;
        }
        let value = &text[from..];
        let len = if let Some(quoted) = value.strip_prefix('\'') {
            // Key-value form: `password='a b'`, `\'` escaping a quote.
            let mut end = quoted.len();
            let mut escaped = false;
            for (j, c) in quoted.char_indices() {
                match c {
                    '\\' if !escaped => escaped = true,
                    '\'' if !escaped => {
                        end = j + 1;
                        break;
                    }
                    _ => escaped = false,
                }
            }
            1 + end
        } else {
            value
                .find(|c: char| c == '&' || c == '#' || ends_token(c))
                .unwrap_or(value.len())
        };
        out.push_str(&text[copied..from]);
        out.push_str(MASK);
        copied = from + len;
        from = copied;
    }
    out.push_str(&text[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn userinfo_passwords_are_masked() {
        assert_eq!(
            redact("postgres://u:secret@h:5432/db"),
            "postgres://u:***@h:5432/db"
        );
        assert_eq!(
            redact("postgresql://u:p@ss:w0rd@h/db?sslmode=require"),
            "postgresql://u:***@h/db?sslmode=require"
        );
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(redact("postgres://h/db"), "postgres://h/db");
        assert_eq!(
            redact("postgres://h/db?application_name=a@b"),
            "postgres://h/db?application_name=a@b"
        );
    }

    #[test]
    fn password_parameters_are_masked() {
        assert_eq!(
            redact("postgres://u@h/db?password=secret&sslmode=disable"),
            "postgres://u@h/db?password=***&sslmode=disable"
        );
        assert_eq!(
            redact("postgres://u@h/db?sslmode=disable&PASSWORD=secret"),
            "postgres://u@h/db?sslmode=disable&PASSWORD=***"
        );
        assert_eq!(
            redact("host=h user=u password=secret dbname=d"),
            "host=h user=u password=*** dbname=d"
        );
        assert_eq!(
            redact("host=h password='se cr\\'et' user=u"),
            "host=h password=*** user=u"
        );
        // Other keys that end in "password" are not touched; nothing else changes.
        assert_eq!(redact("sslpassword=x"), "sslpassword=x");
        assert_eq!(redact("no url here"), "no url here");
    }

    #[test]
    fn urls_inside_messages_are_masked() {
        let text = "memory disabled for this run: cannot open postgres://u:pw1@h:1/d \
                    (`filo dag --db postgres://u:pw1@h:1/d?password=pw2 fsck`)";
        let shown = redact(text);
        assert!(!shown.contains("pw1") && !shown.contains("pw2"), "{shown}");
        assert!(shown.contains("postgres://u:***@h:1/d"), "{shown}");
        assert!(shown.contains("password=*** fsck"), "{shown}");
        // Idempotent.
        assert_eq!(redact(&shown), shown);
    }
}
