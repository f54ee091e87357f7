//! The shared token: compared in constant time, on every route but `/health` and in the
//! WebSocket `connect` frame. Session keys are never credentials.

/// Why a token was refused (OpenClaw's `details.code`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthFailure {
    Missing,
    Mismatch,
}

impl AuthFailure {
    pub fn code(self) -> &'static str {
        match self {
            AuthFailure::Missing => "AUTH_TOKEN_MISSING",
            AuthFailure::Mismatch => "AUTH_TOKEN_MISMATCH",
        }
    }

    pub fn message(self) -> &'static str {
        match self {
            AuthFailure::Missing => {
                "unauthorized: gateway token missing (set the token the gateway was started with)"
            }
            AuthFailure::Mismatch => {
                "unauthorized: gateway token mismatch (use the token the gateway was started with)"
            }
        }
    }
}

/// Checks `given` against the configured token; no token configured means auth is off.
pub fn check(expected: Option<&str>, given: Option<&str>) -> Result<(), AuthFailure> {
    let Some(expected) = expected else {
        return Ok(());
    };
    match given.filter(|g| !g.is_empty()) {
        None => Err(AuthFailure::Missing),
        Some(g) if constant_time_eq(expected.as_bytes(), g.as_bytes()) => Ok(()),
        Some(_) => Err(AuthFailure::Mismatch),
    }
}

/// The token of an `Authorization: Bearer <token>` header value.
pub fn bearer(header: Option<&str>) -> Option<&str> {
    let h = header?.trim();
    let (scheme, token) = h.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// Equality whose time depends on the lengths only, never on where the bytes differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = (a.len() ^ b.len()) as u64;
    for i in 0..a.len().max(b.len()) {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0xff);
        diff |= u64::from(x ^ y);
    }
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens() {
        assert_eq!(check(None, None), Ok(()));
        assert_eq!(check(Some("t"), None), Err(AuthFailure::Missing));
        assert_eq!(check(Some("t"), Some("")), Err(AuthFailure::Missing));
        assert_eq!(
            check(Some("secret"), Some("secreT")),
            Err(AuthFailure::Mismatch)
        );
        assert_eq!(
            check(Some("secret"), Some("secret2")),
            Err(AuthFailure::Mismatch)
        );
        assert_eq!(
            check(Some("secret"), Some("secre")),
            Err(AuthFailure::Mismatch)
        );
        assert_eq!(check(Some("secret"), Some("secret")), Ok(()));
        assert_eq!(bearer(Some("Bearer abc")), Some("abc"));
        assert_eq!(bearer(Some("bearer  abc ")), Some("abc"));
        assert_eq!(bearer(Some("Basic abc")), None);
        assert_eq!(bearer(None), None);
    }
}
