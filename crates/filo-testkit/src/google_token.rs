//! Google's OAuth token endpoint, as far as a refresh-token exchange goes: `POST …/token` with
//! a form body `grant_type=refresh_token&client_id=…&client_secret=…&refresh_token=…`.
//!
//! The answer is `{"access_token": "ya29.mock-<n>", "expires_in": 3599, "token_type": "Bearer"}`
//! for the `n`-th exchange. A body without those four fields gets HTTP 400
//! `invalid_request`; the refresh token `revoked` gets HTTP 400 `invalid_grant`, as Google
//! answers for an expired or revoked grant. Exchanges do not consume turns.

use serde_json::{Value, json};

/// One token exchange the mock received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRequest {
    /// Path and query.
    pub path: String,
    /// The `content-type` header.
    pub content_type: Option<String>,
    /// The decoded form fields, in order.
    pub form: Vec<(String, String)>,
}

impl TokenRequest {
    /// The value of form field `name`.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.form
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Whether a request path is the token endpoint's.
pub(crate) fn is_token_path(path: &str) -> bool {
    path.trim_end_matches('/').ends_with("/token")
}

/// Decode `application/x-www-form-urlencoded` text (`+` is a space, `%XX` a byte).
pub(crate) fn decode_form(text: &str) -> Vec<(String, String)> {
    let decode = |s: &str| {
        let bytes = s.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'+' => out.push(b' '),
                b'%' if i + 2 < bytes.len() => {
                    let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                    match u8::from_str_radix(hex, 16) {
                        Ok(b) => {
                            out.push(b);
                            i += 2;
                        }
                        Err(_) => out.push(b'%'),
                    }
                }
                b => out.push(b),
            }
            i += 1;
        }
        String::from_utf8_lossy(&out).into_owned()
    };
    text.split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(k), decode(v))
        })
        .collect()
}

/// The status and JSON body answering exchange number `n` (1-based).
pub(crate) fn answer(request: &TokenRequest, n: usize) -> (u16, Value) {
    let complete = ["grant_type", "client_id", "client_secret", "refresh_token"]
        .iter()
        .all(|f| request.field(f).is_some_and(|v| !v.is_empty()));
    if !complete || request.field("grant_type") != Some("refresh_token") {
        return (
            400,
            json!({"error": "invalid_request", "error_description": "mock token endpoint: a refresh-token exchange needs grant_type=refresh_token, client_id, client_secret and refresh_token"}),
        );
    }
    if request.field("refresh_token") == Some("revoked") {
        return (
            400,
            json!({"error": "invalid_grant", "error_description": "Token has been expired or revoked."}),
        );
    }
    (
        200,
        json!({"access_token": format!("ya29.mock-{n}"), "expires_in": 3599, "token_type": "Bearer"}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_decode_and_exchanges_answer() {
        let form = decode_form(
            "grant_type=refresh_token&client_id=a+b&client_secret=%2F%zz&refresh_token=r%C3%A9",
        );
        let request = TokenRequest {
            path: "/token".into(),
            content_type: None,
            form,
        };
        assert_eq!(request.field("client_id"), Some("a b"));
        assert_eq!(request.field("client_secret"), Some("/%zz"));
        assert_eq!(request.field("refresh_token"), Some("ré"));
        assert_eq!(answer(&request, 2).1["access_token"], "ya29.mock-2");
        let revoked = TokenRequest {
            form: decode_form(
                "grant_type=refresh_token&client_id=a&client_secret=b&refresh_token=revoked",
            ),
            ..request.clone()
        };
        assert_eq!(answer(&revoked, 1).0, 400);
        let bare = TokenRequest {
            form: Vec::new(),
            ..request
        };
        assert_eq!(answer(&bare, 1).1["error"], "invalid_request");
        assert!(is_token_path("/oauth2/token") && !is_token_path("/v1/tokens"));
    }
}
