use std::io::Write;

use super::*;
use crate::clock::ManualClock;

fn setup(capacity: usize, ttl: i64) -> (tempfile::TempDir, ManualClock, SessionCache<String, u32>) {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_000);
    let cache = SessionCache::new(capacity, ttl, Arc::new(clock.clone()));
    (dir, clock, cache)
}

fn file(dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(name);
    fs::write(&p, "{\"type\":\"session\"}\n").unwrap();
    p
}

#[test]
fn a_returned_session_is_taken_once() {
    let (dir, _clock, cache) = setup(4, DEFAULT_CACHE_TTL_MS);
    let f = file(dir.path(), "a.jsonl");
    cache.put(&f, "session-a".into(), 1).unwrap();
    assert_eq!(cache.take(&f, &1), Take::Hit("session-a".to_owned()));
    assert_eq!(cache.take(&f, &1), Take::Miss(Miss::Absent));
}

#[test]
fn misses_for_ttl_fingerprint_and_another_writer() {
    let (dir, clock, cache) = setup(4, 45_000);
    let f = file(dir.path(), "a.jsonl");

    cache.put(&f, "s".into(), 1).unwrap();
    clock.advance(45_000);
    assert_eq!(cache.take(&f, &1), Take::Hit("s".to_owned()), "at the TTL");
    cache.put(&f, "s".into(), 1).unwrap();
    clock.advance(45_001);
    assert_eq!(cache.take(&f, &1), Take::Miss(Miss::Expired));

    cache.put(&f, "s".into(), 1).unwrap();
    assert_eq!(cache.take(&f, &2), Take::Miss(Miss::FingerprintChanged));

    cache.put(&f, "s".into(), 1).unwrap();
    let mut other = fs::OpenOptions::new().append(true).open(&f).unwrap();
    other.write_all(b"{\"type\":\"message\"}\n").unwrap();
    assert_eq!(cache.take(&f, &1), Take::Miss(Miss::FileChanged));

    cache.put(&f, "s".into(), 1).unwrap();
    fs::remove_file(&f).unwrap();
    assert_eq!(cache.take(&f, &1), Take::Miss(Miss::FileChanged));
}

#[test]
fn capacity_evicts_the_least_recently_returned() {
    let (dir, _clock, cache) = setup(2, DEFAULT_CACHE_TTL_MS);
    let (a, b, c) = (
        file(dir.path(), "a.jsonl"),
        file(dir.path(), "b.jsonl"),
        file(dir.path(), "c.jsonl"),
    );
    cache.put(&a, "a".into(), 0).unwrap();
    cache.put(&b, "b".into(), 0).unwrap();
    cache.put(&c, "c".into(), 0).unwrap();
    assert_eq!(cache.len(), 2);
    assert_eq!(cache.take(&a, &0), Take::Miss(Miss::Absent));
    assert_eq!(cache.take(&b, &0), Take::Hit("b".to_owned()));
    assert_eq!(cache.take(&c, &0), Take::Hit("c".to_owned()));
}

#[test]
fn disabled_cache_hands_the_session_back() {
    for (capacity, ttl) in [(4, 0), (4, -1), (0, 45_000)] {
        let (dir, _clock, cache) = setup(capacity, ttl);
        let f = file(dir.path(), "a.jsonl");
        assert_eq!(cache.put(&f, "s".into(), 0), Err("s".to_owned()));
        assert!(cache.is_empty());
    }
}

#[test]
fn invalidate_and_evict_expired() {
    let (dir, clock, cache) = setup(8, 1_000);
    let (a, b) = (file(dir.path(), "a.jsonl"), file(dir.path(), "b.jsonl"));
    cache.put(&a, "a".into(), 0).unwrap();
    assert!(cache.invalidate(&a));
    assert!(!cache.invalidate(&a));
    cache.put(&a, "a".into(), 0).unwrap();
    clock.advance(600);
    cache.put(&b, "b".into(), 0).unwrap();
    clock.advance(600);
    assert_eq!(cache.evict_expired(), 1);
    assert_eq!(cache.take(&b, &0), Take::Hit("b".to_owned()));
}

#[test]
fn ttl_env_values() {
    let cases = [
        (None, DEFAULT_CACHE_TTL_MS),
        (Some("1000"), 1_000),
        (Some(" 0 "), 0),
        (Some("-5"), -5),
        (Some("soon"), DEFAULT_CACHE_TTL_MS),
    ];
    for (value, want) in cases {
        assert_eq!(ttl_from_env_value(value), want, "{value:?}");
    }
}
