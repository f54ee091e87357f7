use proptest::prelude::*;
use serde_json::Value;

use super::*;
use crate::render::preview_truthy;

/// What `is_canonical` promises: serde_json's own writing of its own reading.
fn round_trip(text: &str) -> Option<String> {
    serde_json::from_str::<Value>(text)
        .ok()
        .map(|v| v.to_string())
}

fn arb_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        prop_oneof![
            Just(0.0),
            Just(-0.0),
            Just(1e21),
            Just(0.1),
            Just(1e-7),
            Just(5e-324)
        ]
        .prop_map(Value::from),
        "\\PC{0,8}".prop_map(Value::String),
        "[\\x00-\\x1f\\x7f\"\\\\/a😀｡\u{2028}]{0,4}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec(("[a-c0-9_\"\\\\😀\\x01]{0,3}", inner), 0..6)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
        ]
    })
}

/// Text that is JSON in another spelling than serde_json's, or not JSON at all: whitespace,
/// other escapes, other number forms, duplicate keys, edits.
fn respelled() -> impl Strategy<Value = String> {
    let pieces = prop_oneof![
        Just(" "),
        Just("\n"),
        Just("\\/"),
        Just("\\u00e9"),
        Just("\\u0041"),
        Just("\\u000a"),
        Just("\\u001F"),
        Just("\\ud83d\\ude00"),
        Just("\\ud800"),
        Just("1e+21"),
        Just("1E5"),
        Just("-0"),
        Just("1.0e0"),
        Just("0.10"),
        Just("18446744073709551616"),
        Just("-9223372036854775809"),
        Just("123456789012345678901"),
        Just("1e400"),
        Just("01"),
        Just("\"a\":1,"),
        Just(","),
        Just("\u{1}"),
    ];
    (
        arb_value(),
        prop::collection::vec((any::<usize>(), pieces), 1..4),
    )
        .prop_map(|(v, edits)| {
            let mut text = v.to_string();
            for (at, piece) in edits {
                let mut at = at % (text.len() + 1);
                while !text.is_char_boundary(at) {
                    at -= 1;
                }
                text.insert_str(at, piece);
            }
            text
        })
}

proptest! {
    #[test]
    fn serde_json_text_is_recognized_and_read_like_its_value(v in arb_value()) {
        let text = v.to_string();
        prop_assert!(is_canonical(&text), "{}", text);
        prop_assert_eq!(truthy(&text), preview_truthy(&v));
        if let Value::Object(map) = &v {
            let pairs: Vec<(String, String)> = fields(&text)
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
            let want: Vec<(String, String)> = map
                .iter()
                .map(|(k, v)| {
                    let quoted = serde_json::to_string(k).unwrap();
                    (quoted[1..quoted.len() - 1].to_owned(), v.to_string())
                })
                .collect();
            prop_assert_eq!(pairs, want);
        } else {
            prop_assert_eq!(fields(&text).count(), 0);
            prop_assert_eq!(get(&text, "a"), None);
        }
        match &v {
            Value::Array(a) => {
                let got: Vec<&str> = items(&text).collect();
                let want: Vec<String> = a.iter().map(Value::to_string).collect();
                prop_assert_eq!(got, want);
            }
            _ => prop_assert_eq!(items(&text).count(), 0),
        }
        match &v {
            Value::String(s) => {
                let mut lit = String::new();
                push_str(&mut lit, s);
                prop_assert_eq!(&lit, &text);
                prop_assert_eq!(as_str(&text), Some(&text[1..text.len() - 1]));
            }
            _ => prop_assert_eq!(as_str(&text), None),
        }
    }

    #[test]
    fn text_taken_as_canonical_is_its_own_round_trip(text in respelled()) {
        if is_canonical(&text) {
            let back = round_trip(&text);
            prop_assert_eq!(back.as_deref(), Some(text.as_str()));
        }
    }

    /// One character of a string spelled another way: never taken as canonical.
    #[test]
    fn a_string_with_one_other_spelling_is_refused(
        s in "[a/é😀 ]{0,6}",
        at in any::<usize>(),
        piece in prop_oneof![
            Just("\\/"), Just("\\u0041"), Just("\\u00e9"), Just("\\u000a"),
            Just("\\u001F"), Just("\\ud83d\\ude00"), Just("\\u0020"), Just("\\U0001")
        ],
    ) {
        let text = serde_json::to_string(&s).unwrap();
        let inner = &text[1..text.len() - 1];
        let mut at = at % (inner.len() + 1);
        while !inner.is_char_boundary(at) {
            at -= 1;
        }
        let respelled = format!("\"{}{piece}{}\"", &inner[..at], &inner[at..]);
        prop_assert!(!is_canonical(&respelled), "{}", respelled);
    }

    #[test]
    fn random_bytes_taken_as_canonical_are_their_own_round_trip(
        text in "[\\[\\]{}\",:\\\\u0-9a-fA-Ftrnul.eE+ -]{0,12}"
    ) {
        if is_canonical(&text) {
            let back = round_trip(&text);
            prop_assert_eq!(back.as_deref(), Some(text.as_str()));
        }
    }
}

#[test]
fn other_spellings_are_refused() {
    for text in [
        " 1",
        "1 ",
        "{\"a\": 1}",
        "\"\\/\"",
        "\"\\u00e9\"",
        "\"\\u000a\"",
        "\"\\u001F\"",
        "\"\\ud83d\\ude00\"",
        "\"\\ud800\"",
        "1E5",
        "-0",
        "1.0e0",
        "0.10",
        "18446744073709551616",
        "-9223372036854775809",
        "1e400",
        "01",
        "{\"a\":1,\"a\":2}",
        "{\"a\":1,\"\\u0061\":2}",
        "[1,]",
        "",
        "\"\u{1}\"",
        "nul",
        "truex",
    ] {
        assert!(!is_canonical(text), "{text}");
    }
    // Floats: taken exactly when serde_json writes them so (its writer has changed between
    // versions: `1e21` or `1e+21`).
    for text in [
        "1e21", "1e+21", "1e-7", "1.5e-7", "5e-324", "0.1", "-0.0", "1.0", "1E21",
    ] {
        assert_eq!(
            is_canonical(text),
            round_trip(text).as_deref() == Some(text),
            "{text}"
        );
    }
    for text in [
        "0.1",
        "-0.0",
        "1.0",
        "18446744073709551615",
        "-9223372036854775808",
        "\"\\u001f\\b\\t\\n\\f\\r\\\"\\\\\u{7f}😀\"",
        "{\"a\":{\"a\":1},\"b\":[{\"a\":2}]}",
    ] {
        assert!(is_canonical(text), "{text}");
        assert_eq!(round_trip(text).as_deref(), Some(text));
    }
    // serde_json's nesting limit: far below it is taken, near it left to the parser.
    let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    assert!(is_canonical(&deep(100)));
    assert!(!is_canonical(&deep(101)));
    let many: String = (0..65)
        .map(|i| format!("\"k{i}\":{i}"))
        .collect::<Vec<_>>()
        .join(",");
    assert!(!is_canonical(&format!("{{{many}}}")));
}

#[test]
fn every_ascii_and_some_unicode_escape_like_serde_json() {
    let mut all: String = (0u8..0x80).map(char::from).collect();
    all.push_str("é😀\u{2028}\u{feff}");
    for c in all.chars() {
        let s = format!("a{c}b{c}");
        let mut lit = String::new();
        push_str(&mut lit, &s);
        assert_eq!(lit, serde_json::to_string(&s).unwrap(), "{c:?}");
    }
    let mut n = String::new();
    push_i64(&mut n, i64::MIN);
    assert_eq!(n, serde_json::to_string(&Value::from(i64::MIN)).unwrap());
}
