//! AWS Signature Version 4 for a request with a body, as the AWS SDK for JavaScript signs
//! Bedrock's calls: `x-amz-date`, `x-amz-content-sha256` (the body's SHA-256),
//! `x-amz-security-token` for temporary credentials, and an `authorization` header over every
//! header the request carries plus `host`. HMAC-SHA256 is written here over `sha2`.
//!
//! The canonical request is the method, the path with each segment URI-encoded again (the
//! SDK's `uriEscapePath`, so `%3A` is signed as `%253A`), the sorted query, the sorted lower-case
//! headers with trimmed values, their names, and the payload hash.

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

use crate::error::AiError;

/// Long-term or temporary AWS credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: Option<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .field(
                "session_token",
                &self.session_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// Who signs, for which region and service, and when.
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    pub credentials: &'a Credentials,
    pub region: &'a str,
    pub service: &'a str,
    pub time: SystemTime,
}

/// Headers never signed (the SDK's `ALWAYS_UNSIGNABLE_HEADERS`).
const UNSIGNED: [&str; 15] = [
    "authorization",
    "cache-control",
    "connection",
    "expect",
    "from",
    "keep-alive",
    "max-forwards",
    "pragma",
    "referer",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "user-agent",
    "x-amzn-trace-id",
];

pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

pub fn sha256_hex(data: &[u8]) -> String {
    hex(&Sha256::digest(data))
}

/// HMAC-SHA256 (RFC 2104).
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut block = [0u8; BLOCK];
    if key.len() > BLOCK {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let mut inner = Sha256::new();
    inner.update(block.map(|b| b ^ 0x36));
    inner.update(message);
    let mut outer = Sha256::new();
    outer.update(block.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

/// `(YYYYMMDDTHHMMSSZ, YYYYMMDD)` in UTC.
pub fn amz_date(time: SystemTime) -> (String, String) {
    let secs = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let date = format!("{year:04}{month:02}{day:02}");
    let stamp = format!(
        "{date}T{:02}{:02}{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    );
    (stamp, date)
}

/// The time an `x-amz-date` value (`YYYYMMDDTHHMMSSZ`) names.
pub fn parse_amz_date(stamp: &str) -> Option<SystemTime> {
    let b = stamp.as_bytes();
    if b.len() != 16 || b[8] != b'T' || b[15] != b'Z' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| stamp.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (num(0..4)?, num(4..6)?, num(6..8)?);
    let (hh, mm, ss) = (num(9..11)?, num(11..13)?, num(13..15)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    // Days since 1970-01-01 from a civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = u64::try_from(days * 86_400 + hh * 3600 + mm * 60 + ss).ok()?;
    Some(UNIX_EPOCH + std::time::Duration::from_secs(secs))
}

/// The SDK's `escapeUri`: everything but `A-Z a-z 0-9 - _ . ~` percent-encoded (UTF-8).
pub fn uri_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The canonical path: `.` and `..` resolved, empty segments dropped, each segment escaped.
fn canonical_path(path: &str) -> String {
    let mut segments: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            s => segments.push(s),
        }
    }
    let mut out = String::from("/");
    out.push_str(
        &segments
            .iter()
            .map(|s| uri_escape(s))
            .collect::<Vec<_>>()
            .join("/"),
    );
    if !segments.is_empty() && path.ends_with('/') {
        out.push('/');
    }
    out
}

fn canonical_query(pairs: &[(String, String)]) -> String {
    let mut encoded: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| (uri_escape(k), uri_escape(v)))
        .collect();
    encoded.sort();
    encoded
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// The parts of a request that are signed.
#[derive(Debug, Clone)]
pub struct Signable<'a> {
    pub method: &'a str,
    /// The path as sent (percent-encoded).
    pub path: &'a str,
    /// Decoded query pairs.
    pub query: Vec<(String, String)>,
    /// Every header to sign, `host` and `x-amz-date` included.
    pub headers: &'a [(String, String)],
    /// Hex SHA-256 of the body (or the value of `x-amz-content-sha256`).
    pub payload_hash: &'a str,
}

/// The canonical request, string to sign and `authorization` value for `request`.
pub fn authorization(request: &Signable<'_>, scope: &Scope<'_>) -> String {
    let (stamp, date) = amz_date(scope.time);
    let mut headers: Vec<(String, String)> = request
        .headers
        .iter()
        .map(|(k, v)| {
            let value = v.split_whitespace().collect::<Vec<_>>().join(" ");
            (k.to_ascii_lowercase(), value)
        })
        .filter(|(k, _)| !UNSIGNED.contains(&k.as_str()))
        .collect();
    headers.sort();
    let signed: Vec<&str> = headers.iter().map(|(k, _)| k.as_str()).collect();
    let signed = signed.join(";");
    let canonical_headers: String = headers.iter().map(|(k, v)| format!("{k}:{v}\n")).collect();
    let canonical = format!(
        "{}\n{}\n{}\n{canonical_headers}\n{signed}\n{}",
        request.method,
        canonical_path(request.path),
        canonical_query(&request.query),
        request.payload_hash
    );
    let credential_scope = format!("{date}/{}/{}/aws4_request", scope.region, scope.service);
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{stamp}\n{credential_scope}\n{}",
        sha256_hex(canonical.as_bytes())
    );
    let secret = format!("AWS4{}", scope.credentials.secret_access_key);
    let key = hmac_sha256(secret.as_bytes(), date.as_bytes());
    let key = hmac_sha256(&key, scope.region.as_bytes());
    let key = hmac_sha256(&key, scope.service.as_bytes());
    let key = hmac_sha256(&key, b"aws4_request");
    let signature = hex(&hmac_sha256(&key, string_to_sign.as_bytes()));
    format!(
        "AWS4-HMAC-SHA256 Credential={}/{credential_scope}, SignedHeaders={signed}, Signature={signature}",
        scope.credentials.access_key_id
    )
}

/// The `host` header a client sends for `url` (the port only when it is not the scheme's).
pub fn host_header(url: &reqwest::Url) -> Option<String> {
    let host = url.host_str()?;
    Some(match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    })
}

/// Sign a POST of `body` to `url`: replaces any earlier `x-amz-date`, `x-amz-content-sha256`,
/// `x-amz-security-token` and `authorization` headers with fresh ones.
pub fn sign_post(
    url: &str,
    headers: &mut Vec<(String, String)>,
    body: &[u8],
    scope: &Scope<'_>,
) -> Result<(), AiError> {
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| AiError::Request(format!("cannot sign a request to `{url}`: {e}")))?;
    let host = host_header(&parsed)
        .ok_or_else(|| AiError::Request(format!("cannot sign a request to `{url}`: no host")))?;
    headers.retain(|(k, _)| {
        !matches!(
            k.to_ascii_lowercase().as_str(),
            "x-amz-date"
                | "x-amz-content-sha256"
                | "x-amz-security-token"
                | "authorization"
                | "host"
        )
    });
    let payload_hash = sha256_hex(body);
    headers.push(("x-amz-date".into(), amz_date(scope.time).0));
    headers.push(("x-amz-content-sha256".into(), payload_hash.clone()));
    if let Some(token) = &scope.credentials.session_token {
        headers.push(("x-amz-security-token".into(), token.clone()));
    }
    let mut signed = headers.clone();
    signed.push(("host".into(), host));
    let signable = Signable {
        method: "POST",
        path: parsed.path(),
        query: parsed
            .query_pairs()
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect(),
        headers: &signed,
        payload_hash: &payload_hash,
    };
    let value = authorization(&signable, scope);
    headers.push(("authorization".into(), value));
    Ok(())
}

#[cfg(test)]
#[path = "aws_sigv4_tests.rs"]
mod tests;
