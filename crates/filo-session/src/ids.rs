//! Entry ids, session ids and timestamps as pi makes them.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A fresh session id (UUID v4).
pub fn new_session_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// An 8-hex entry id (the first 8 chars of a UUID v4) for which `taken` is false; after 100
/// collisions, a whole UUID, as pi does.
pub fn new_entry_id(taken: impl Fn(&str) -> bool) -> String {
    for _ in 0..100 {
        let id = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
        if !taken(&id) {
            return id;
        }
    }
    uuid::Uuid::new_v4().to_string()
}

/// `Date.toISOString()` of a time in ms since the epoch, e.g. `2025-12-09T00:53:29.825Z`.
pub fn iso_from_ms(ms: i64) -> String {
    let t = if ms >= 0 {
        UNIX_EPOCH + Duration::from_millis(ms.unsigned_abs())
    } else {
        UNIX_EPOCH - Duration::from_millis(ms.unsigned_abs())
    };
    humantime::format_rfc3339_millis(t).to_string()
}

/// `Date.parse` of an ISO timestamp, in ms; `None` when it is not one.
pub fn ms_from_iso(iso: &str) -> Option<i64> {
    let t = humantime::parse_rfc3339_weak(iso.trim_end_matches('Z')).ok()?;
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).ok(),
        Err(e) => i64::try_from(e.duration().as_millis()).ok().map(|v| -v),
    }
}

/// Milliseconds since the epoch now.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The session file name stem for a header timestamp: `:` and `.` replaced by `-`.
pub fn file_timestamp(iso: &str) -> String {
    iso.replace([':', '.'], "-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_round_trip() {
        assert_eq!(iso_from_ms(1767258000000), "2026-01-01T09:00:00.000Z");
        assert_eq!(iso_from_ms(1733705609825), "2024-12-09T00:53:29.825Z");
        assert_eq!(ms_from_iso("2026-01-01T09:01:08.000Z"), Some(1767258068000));
        assert_eq!(ms_from_iso("2026-01-01T09:01:08Z"), Some(1767258068000));
        assert_eq!(ms_from_iso("nonsense"), None);
        assert_eq!(
            file_timestamp("2025-12-09T00:52:54.397Z"),
            "2025-12-09T00-52-54-397Z"
        );
    }

    #[test]
    fn entry_ids_are_eight_hex() {
        let id = new_entry_id(|_| false);
        assert_eq!(id.len(), 8);
        assert!(
            id.chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
    }
}
