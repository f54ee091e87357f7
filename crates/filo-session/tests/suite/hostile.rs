//! Hostile inputs for the session reader: random bytes, and real files with random and mutated
//! lines mixed in. The reader never panics, yields at most one entry or warning per line, loads
//! every well-formed line, reads a file the same whether streamed or whole (or lazily, as a
//! session opens it), and a migration keeps every line it does not understand verbatim.

use filo_session::SessionManager;
use filo_session::file::{parse_session_bytes, read_session_file};
use proptest::prelude::*;

use super::{assistant, user};

/// The lines (without newlines) of a real v3 session with `n` exchanges.
fn good_v3_lines(n: usize) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let mut s = SessionManager::create("/p", dir.path());
    for i in 0..n {
        s.append_message(user(&format!("good-q{i}"))).unwrap();
        s.append_message(assistant(&format!("good-a{i}"))).unwrap();
    }
    let text = std::fs::read_to_string(s.session_file().unwrap()).unwrap();
    text.lines().map(str::to_string).collect()
}

/// A mutation of a line: bytes flipped, cut, or spliced in.
fn mutate(line: &[u8], ops: &[(usize, u8, u8)]) -> Vec<u8> {
    let mut out = line.to_vec();
    for &(pos, byte, op) in ops {
        if out.is_empty() {
            out.push(byte);
            continue;
        }
        let at = pos % out.len();
        match op % 3 {
            0 => out[at] = byte,
            1 => out.truncate(at),
            _ => out.insert(at, byte),
        }
    }
    out.retain(|b| *b != b'\n');
    out
}

#[derive(Debug, Clone)]
enum Junk {
    Random(Vec<u8>),
    Mutated(usize, Vec<(usize, u8, u8)>),
}

fn junk() -> impl Strategy<Value = Junk> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..200).prop_map(Junk::Random),
        (
            any::<usize>(),
            proptest::collection::vec((any::<usize>(), any::<u8>(), any::<u8>()), 1..6)
        )
            .prop_map(|(i, ops)| Junk::Mutated(i, ops)),
    ]
}

/// Good lines in order with junk lines placed between them.
fn mix(good: &[String], junk: &[(usize, Junk)]) -> (Vec<u8>, Vec<Vec<u8>>) {
    let mut body: Vec<Vec<u8>> = good[1..].iter().map(|l| l.as_bytes().to_vec()).collect();
    let mut junk_lines = Vec::new();
    for (at, j) in junk {
        let bytes = match j {
            Junk::Random(b) => b.iter().copied().filter(|b| *b != b'\n').collect(),
            Junk::Mutated(i, ops) => mutate(good[i % good.len()].as_bytes(), ops),
        };
        let at = at % (body.len() + 1);
        body.insert(at, bytes.clone());
        junk_lines.push(bytes);
    }
    let mut file = good[0].as_bytes().to_vec();
    for l in body {
        file.push(b'\n');
        file.extend_from_slice(&l);
    }
    file.push(b'\n');
    (file, junk_lines)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        let f = parse_session_bytes(&bytes);
        let lines = bytes.split(|b| *b == b'\n').count();
        prop_assert!(f.entries.len() + f.warnings.len() <= lines);
    }

    #[test]
    fn every_well_formed_line_survives_junk_around_it(
        junk in proptest::collection::vec((any::<usize>(), junk()), 0..12),
    ) {
        let good = good_v3_lines(3);
        let (file, _) = mix(&good, &junk);
        let loaded = parse_session_bytes(&file);
        prop_assert!(loaded.header.is_some());
        let ids: Vec<&str> = loaded.entries.iter().map(|e| e.id.as_str()).collect();
        for line in &good[1..] {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            prop_assert!(ids.contains(&v["id"].as_str().unwrap()), "lost {line}");
        }
        let lines = file.split(|b| *b == b'\n').count();
        prop_assert!(loaded.entries.len() + loaded.warnings.len() <= lines);

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, &file).unwrap();
        let streamed = read_session_file(&path).unwrap();
        prop_assert_eq!(streamed.entries, loaded.entries);
        prop_assert_eq!(streamed.warnings, loaded.warnings);
    }

    #[test]
    fn a_lazily_opened_session_reads_junk_as_the_eager_reader_does(
        junk in proptest::collection::vec((any::<usize>(), junk()), 0..12),
    ) {
        let good = good_v3_lines(4);
        let (file, _) = mix(&good, &junk);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, &file).unwrap();
        let eager = read_session_file(&path).unwrap();
        let lazy = SessionManager::open_read_only(&path).unwrap();
        prop_assert_eq!(lazy.warnings(), eager.warnings.as_slice());
        let mut index = std::collections::HashMap::new();
        let mut entries: Vec<filo_session::SessionEntry> = Vec::new();
        for e in &eager.entries {
            match index.get(&e.id) {
                Some(&i) => entries[i] = e.clone(),
                None => {
                    index.insert(e.id.clone(), entries.len());
                    entries.push(e.clone());
                }
            }
        }
        let leaf = eager.entries.last().map(|e| e.id.as_str());
        prop_assert_eq!(
            lazy.build_context(),
            filo_session::build_session_context(&entries, &index, leaf)
        );
        let all: Vec<filo_session::SessionEntry> = lazy.entries().cloned().collect();
        prop_assert_eq!(all, entries);
    }

    #[test]
    fn a_migration_keeps_every_line_it_cannot_read(
        junk in proptest::collection::vec((any::<usize>(), junk()), 1..8),
    ) {
        // The same session as a v1 file: no version, no ids.
        let good: Vec<String> = good_v3_lines(2)
            .iter()
            .map(|l| {
                let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
                let o = v.as_object_mut().unwrap();
                for k in ["version", "id", "parentId"] {
                    if o.get("type").and_then(|t| t.as_str()) != Some("session") || k == "version" {
                        o.remove(k);
                    }
                }
                v.to_string()
            })
            .collect();
        let (file, junk_lines) = mix(&good, &junk);
        let loaded = parse_session_bytes(&file);
        let rewrite = loaded.rewrite.clone().unwrap();
        let rewritten: Vec<&[u8]> = rewrite.split(|b| *b == b'\n').collect();
        for j in &junk_lines {
            let blank = std::str::from_utf8(j).is_ok_and(|t| t.trim().is_empty());
            if blank || serde_json::from_slice::<serde_json::Value>(j).is_ok() {
                continue;
            }
            prop_assert!(rewritten.contains(&j.as_slice()), "dropped {:?}", String::from_utf8_lossy(j));
        }
        let text = String::from_utf8_lossy(&rewrite);
        for i in 0..2 {
            for marker in [format!("good-q{i}"), format!("good-a{i}")] {
                prop_assert!(loaded.entries.iter().any(|e| e.to_line().contains(&marker)));
                prop_assert!(text.contains(&marker));
            }
        }
    }
}

#[test]
fn a_file_of_garbage_keeps_a_bounded_number_of_warnings_and_counts_the_rest() {
    let good = good_v3_lines(1);
    let mut file = good[0].clone();
    for i in 0..(filo_session::file::MAX_WARNINGS + 500) {
        file.push_str(&format!("\ngarbage {i}"));
    }
    for l in &good[1..] {
        file.push('\n');
        file.push_str(l);
    }
    file.push('\n');
    let loaded = parse_session_bytes(file.as_bytes());
    assert_eq!(loaded.entries.len(), good.len() - 1);
    assert_eq!(loaded.warnings.len(), filo_session::file::MAX_WARNINGS);
    assert_eq!(loaded.warnings_dropped, 500);
}

#[test]
fn garbage_before_an_old_header_is_held_only_up_to_a_bound() {
    let line = "x".repeat(1000);
    let mut file = String::new();
    for _ in 0..3000 {
        file.push_str(&line);
        file.push('\n');
    }
    file.push_str(r#"{"type":"session","id":"s","timestamp":"t","cwd":"/p"}"#);
    file.push('\n');
    file.push_str(r#"{"type":"session_info","timestamp":"t","name":"n"}"#);
    file.push('\n');
    let loaded = parse_session_bytes(file.as_bytes());
    assert_eq!(loaded.entries.len(), 1);
    let rewrite = loaded.rewrite.unwrap();
    assert!(rewrite.len() < 1_100_000, "{}", rewrite.len());
    assert!(rewrite.starts_with(br#"{"type":"session""#));
}
