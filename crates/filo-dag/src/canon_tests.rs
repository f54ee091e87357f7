use super::*;
use pretty_assertions::assert_eq;
use proptest::prelude::*;
use serde_json::json;

const H1: &str = "d3167d7e7b608d25db586005b1bdc1cfd12f1ffe39da11919fa112440d875a70";
const H2: &str = "f87aaf552d39047ef165d69921477b2d68996792266b22f143027c1dfda7fa32";
const H3: &str = "e4a303c3f3770ce4da05591f1de1d18fbb9809d3884f7defe8eef456f9cbda3d";
const H4: &str = "54ecb184eca9f86b25c4a27c4c28a6c5dc181208aeb1cdb88dc2347d88de0f06";
const H5: &str = "1c6e7cf6cf60fecbf58f283b9ef3e0f1a4f7f00e61e2e464b53df79b68d9fd23";
const H6: &str = "4318789867f7c37d6e36d4f7a493028efc808bb3d53aa2ba75c69859413c59b9";
const H7: &str = "8943393cf8a742a452c75369528f96c4262d0ecbaabab966949b01c98ab30573";
const H9: &str = "c5798e17f5d0d64e3688c7aab90d3f16c12f4dbb8e9a763c276e3c63be1ba05b";
const H11: &str = "b2dd7d433d97c8e60b0e4ad80501eaeb1fef3a617b9576499ed8382320efd332";

fn blob_canonical(blob_type: &str, content: Value) -> String {
    canonical_json(&json!({ "type": blob_type, "content": content }))
}

/// Checks a blob vector three ways: the canonical text, `hash_value` of `{type, content}`
/// and the allocation-free `blob_hash`.
fn check_blob(blob_type: &str, content: Value, canonical: &str, hash: &str) {
    assert_eq!(blob_canonical(blob_type, content.clone()), canonical);
    assert_eq!(
        hash_value(&json!({ "type": blob_type, "content": content.clone() })),
        hash
    );
    assert_eq!(blob_hash(blob_type, &content), hash);
}

fn node(
    parent: Option<&str>,
    parts: &[&str],
    role: &str,
    timestamp: i64,
    ext: Option<&str>,
    sph: Option<&str>,
) -> String {
    let parts: Vec<String> = parts.iter().map(|p| (*p).to_owned()).collect();
    let input = NodeHashInput {
        parent_id: parent,
        parts: &parts,
        role,
        timestamp,
        external_id: ext,
        system_prompt_hash: sph,
    };
    // The dedicated writer and the generic canonicalizer must agree.
    let mut generic = serde_json::Map::new();
    if let Some(e) = ext {
        generic.insert("external_id".into(), json!(e));
    }
    generic.insert("timestamp".into(), json!(timestamp));
    generic.insert("role".into(), json!(role));
    generic.insert("parts_list".into(), json!(parts));
    generic.insert("parent_id".into(), json!(parent));
    if let Some(s) = sph.filter(|s| !s.is_empty()) {
        generic.insert("system_prompt_hash".into(), json!(s));
    }
    assert_eq!(
        node_canonical_json(&input),
        canonical_json(&Value::Object(generic))
    );
    node_hash(&input)
}

#[test]
fn vectors_1_to_5_simple_blobs() {
    check_blob(
        "text",
        json!("hello"),
        r#"{"content":"hello","type":"text"}"#,
        H1,
    );
    check_blob(
        "thinking",
        json!("Let me think."),
        r#"{"content":"Let me think.","type":"thinking"}"#,
        H2,
    );
    check_blob(
        "tool_call",
        json!({"id":"toolu_01","name":"bash","arguments":{"command":"ls -la","timeout":30}}),
        r#"{"content":{"arguments":{"command":"ls -la","timeout":30},"id":"toolu_01","name":"bash"},"type":"tool_call"}"#,
        H3,
    );
    check_blob(
        "tool_result",
        json!({"toolCallId":"toolu_01","toolName":"bash","content":[{"type":"text","text":"total 0"}],"isError":false}),
        r#"{"content":{"content":[{"text":"total 0","type":"text"}],"isError":false,"toolCallId":"toolu_01","toolName":"bash"},"type":"tool_result"}"#,
        H4,
    );
    check_blob(
        "system_prompt",
        json!("You are Filo."),
        r#"{"content":"You are Filo.","type":"system_prompt"}"#,
        H5,
    );
}

#[test]
fn vectors_6_to_8_pi_nodes() {
    let v6 = node(
        None,
        &[H1],
        "user",
        1_700_000_000_000,
        Some("a1b2c3d4"),
        None,
    );
    assert_eq!(v6, H6);
    let v7 = node(
        Some(H6),
        &[H2, H3],
        "assistant",
        1_700_000_001_000,
        Some("e5f6a7b8"),
        Some(H5),
    );
    assert_eq!(v7, H7);
    let v8 = node(
        Some(H7),
        &[H4],
        "toolResult",
        1_700_000_002_000,
        Some("c9d0e1f2"),
        Some(H5),
    );
    assert_eq!(
        v8,
        "84ee9f8712a96f88c577852066e7b9ab7231de58d9a70be76766615c56f4cbe7"
    );
    // An empty system prompt hash is falsy: the key is left out.
    let empty = node(
        None,
        &[H1],
        "user",
        1_700_000_000_000,
        Some("a1b2c3d4"),
        Some(""),
    );
    assert_eq!(empty, H6);
}

#[test]
fn vectors_9_and_10_departure() {
    check_blob(
        "tool_result",
        json!({"toolCallId":"tobe_departure","toolName":"tobe","content":[{"type":"text","text":"Incarnation initiated → 4318789867f7"}],"isError":false}),
        r#"{"content":{"content":[{"text":"Incarnation initiated → 4318789867f7","type":"text"}],"isError":false,"toolCallId":"tobe_departure","toolName":"tobe"},"type":"tool_result"}"#,
        H9,
    );
    let v10 = node(Some(H7), &[H9], "toolResult", 1_700_000_003_000, None, None);
    assert_eq!(
        v10,
        "d4e2a3cb71a34be13d12e735e59b496219d30d6d86f17e37ff966ead4631c10c"
    );
}

#[test]
fn vectors_11_and_12_carryover() {
    let text = "[SYSTEM / INCARNATION NOTE]: try plan B\n[SYSTEM WARNING]: State transitioned. \
                The file system (World) may not match your memory. Check the environment before \
                executing tasks.";
    assert_eq!(blob_hash("text", &json!(text)), H11);
    let ext = "123e4567-e89b-12d3-a456-426614174000";
    let v12 = node(Some(H6), &[H11], "user", 1_700_000_004_000, Some(ext), None);
    assert_eq!(
        v12,
        "8b08f007a776484055513caf5139db156f13c7e8d70ece213968534b42ec3493"
    );
}

#[test]
fn vector_13_pi_meta_entry() {
    check_blob(
        "pi_meta",
        json!({"type":"thinking_level_change","id":"0a1b2c3d","parentId":null,"timestamp":"2024-01-01T00:00:00.000Z","thinkingLevel":"high"}),
        r#"{"content":{"id":"0a1b2c3d","parentId":null,"thinkingLevel":"high","timestamp":"2024-01-01T00:00:00.000Z","type":"thinking_level_change"},"type":"pi_meta"}"#,
        "f51fba83e919adab043cc71ac2f58a8f8443c2c9015823905de1200e1b8554ae",
    );
}

#[test]
fn vector_14_string_escapes() {
    let text = "héllo 世界 😀 \u{2028} \u{7} \t\"\\/ \u{7f}";
    check_blob(
        "text",
        json!(text),
        "{\"content\":\"héllo 世界 😀 \u{2028} \\u0007 \\t\\\"\\\\/ \u{7f}\",\"type\":\"text\"}",
        "96c866f96c9fc336a74b873d1df147b76db481490c9165de4e2a32ab67219df4",
    );
}

#[test]
fn vector_15_lone_surrogate() {
    let mut out = String::from("{\"content\":");
    write_js_string_units(&[u16::from(b'a'), 0xD800, u16::from(b'b')], &mut out);
    out.push_str(",\"type\":\"text\"}");
    assert_eq!(out, r#"{"content":"a\ud800b","type":"text"}"#);
    assert_eq!(
        sha256_hex(out.as_bytes()),
        "745ce70dc50a03778b1122a52ef5b474914daa7c26a2f57d31880919df36bbb6"
    );
    // Valid pairs and escapes go through the same rules as `&str`.
    let mut pair = String::new();
    let units: Vec<u16> = "😀\n\"".encode_utf16().collect();
    write_js_string_units(&units, &mut pair);
    assert_eq!(pair, "\"😀\\n\\\"\"");
}

#[test]
fn vector_16_numbers() {
    let args = json!({
        "a": 1e21, "b": 1e-7, "c": 0.1 + 0.2, "d": -0.0,
        "e": serde_json::from_str::<Value>("123456789012345678901").unwrap(),
        "f": 1.5e300, "g": 5e-324, "h": 100, "i": 1.0, "j": f64::NAN, "k": f64::INFINITY,
    });
    check_blob(
        "tool_call",
        json!({"id":"x","name":"n","arguments":args}),
        r#"{"content":{"arguments":{"a":1e+21,"b":1e-7,"c":0.30000000000000004,"d":0,"e":123456789012345680000,"f":1.5e+300,"g":5e-324,"h":100,"i":1,"j":null,"k":null},"id":"x","name":"n"},"type":"tool_call"}"#,
        "ba2da0f970307aaddf17ada6bc5076bc2c5b0b8bae0c5502d350c725bc4ea7b6",
    );
}

#[test]
fn vector_17_undefined_and_nesting() {
    // `u: undefined` is absent; an `undefined` array element is written as null.
    check_blob(
        "tool_call",
        json!({"id":"x","name":"n","arguments":{"n":null,"arr":[null,null,1,[2,[3,{"z":1,"y":2}]]]}}),
        r#"{"content":{"arguments":{"arr":[null,null,1,[2,[3,{"y":2,"z":1}]]],"n":null},"id":"x","name":"n"},"type":"tool_call"}"#,
        "2a92425501370294fce70e93fee99a90adfae5d4604a099732bcd64f70245371",
    );
}

#[test]
fn vector_18_key_order() {
    let content: Value = serde_json::from_str(
        r#"{"b":1,"a":2,"10":3,"9":4,"B":5,"_":6,"｡":7,"😀":8,"":9,"-1":10,"01":11}"#,
    )
    .unwrap();
    check_blob(
        "pi_meta",
        content,
        r#"{"content":{"9":4,"10":3,"":9,"-1":10,"01":11,"B":5,"_":6,"a":2,"b":1,"😀":8,"｡":7},"type":"pi_meta"}"#,
        "78508f1d9ebf8dd2fac78793ff03d3309b369b27644fe12945136793e30fb99f",
    );
}

#[test]
fn vector_19_empty_containers() {
    check_blob(
        "pi_meta",
        json!({"o":{},"a":[],"s":""}),
        r#"{"content":{"a":[],"o":{},"s":""},"type":"pi_meta"}"#,
        "50a8789d345fdacdea606850b85a48d561acb299401dbeef7b30f34117bc6659",
    );
}

#[test]
fn proto_key_is_dropped_only_when_sorting() {
    let v: Value =
        serde_json::from_str(r#"{"__proto__":1,"b":2,"4294967296":3,"4294967295":4}"#).unwrap();
    assert_eq!(
        canonical_json(&v),
        r#"{"4294967295":4,"4294967296":3,"b":2}"#
    );
    assert_eq!(
        js_json(&v),
        r#"{"4294967295":4,"__proto__":1,"b":2,"4294967296":3}"#
    );
}

#[test]
fn stored_content_keeps_insertion_order() {
    let v = json!({"id":"toolu_01","name":"bash","arguments":{"timeout":30,"command":"ls -la"}});
    assert_eq!(
        js_json(&v),
        r#"{"id":"toolu_01","name":"bash","arguments":{"timeout":30,"command":"ls -la"}}"#
    );
}

#[test]
fn pretty_text_matches_json_stringify_indent_2() {
    let v = json!({"trigger":"human","n":[1,{"a":[]}],"o":{},"2":null});
    assert_eq!(
        js_json_pretty(&v, 2),
        "{\n  \"2\": null,\n  \"trigger\": \"human\",\n  \"n\": [\n    1,\n    {\n      \"a\": []\n    }\n  ],\n  \"o\": {}\n}"
    );
    assert_eq!(js_json_pretty(&json!(42), 2), "42");
}

#[test]
fn big_integers_round_like_javascript() {
    let v: Value =
        serde_json::from_str("[9007199254740993,-9223372036854775808,18446744073709551615]")
            .unwrap();
    assert_eq!(
        canonical_json(&v),
        "[9007199254740992,-9223372036854776000,18446744073709552000]"
    );
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-(1i64 << 53)..(1i64 << 53)).prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "\\PC{0,8}".prop_map(Value::String),
        "[\\x00-\\x1f\"\\\\a😀｡]{0,4}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec(("[a-c0-9_😀｡-]{0,3}", inner), 0..6).prop_map(|pairs| {
                Value::Object(
                    pairs
                        .into_iter()
                        .filter(|(k, _)| k != "__proto__")
                        .collect(),
                )
            }),
        ]
    })
}

/// The same value with every object's insertion order reversed.
fn reversed(v: &Value) -> Value {
    match v {
        Value::Array(items) => Value::Array(items.iter().map(reversed).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .rev()
                .map(|(k, v)| (k.clone(), reversed(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Equality with numbers compared as doubles (`1` and `1.0` are the same JS number).
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_json(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

proptest! {
    #[test]
    fn key_order_never_changes_the_hash(v in arb_json()) {
        let r = reversed(&v);
        prop_assert_eq!(canonical_json(&v), canonical_json(&r));
        prop_assert_eq!(hash_value(&v), hash_value(&r));
        prop_assert_eq!(blob_hash("pi_meta", &v), blob_hash("pi_meta", &r));
    }

    #[test]
    fn canonical_text_parses_back_to_the_same_value(v in arb_json()) {
        let text = canonical_json(&v);
        let parsed: Value = serde_json::from_str(&text).unwrap();
        prop_assert!(same_json(&parsed, &v), "{} vs {}", parsed, v);
        // Canonicalization is idempotent (needs serde_json's correctly rounded `float_roundtrip`).
        prop_assert_eq!(canonical_json(&parsed), text);
        let stored: Value = serde_json::from_str(&js_json(&v)).unwrap();
        prop_assert!(same_json(&stored, &v));
    }
}

/// A JSON text with a few bytes overwritten, inserted or cut: mostly invalid, sometimes valid in
/// a way no generator above produces (huge exponents, `-0`, big integers, escapes).
fn mutated_json() -> impl Strategy<Value = Vec<u8>> {
    (
        arb_json(),
        prop::collection::vec((any::<usize>(), any::<u8>(), 0u8..3), 0..6),
        any::<usize>(),
    )
        .prop_map(|(v, edits, cut)| {
            let mut bytes = canonical_json(&v).into_bytes();
            for (at, byte, how) in edits {
                let at = at % (bytes.len() + 1);
                match how {
                    0 if at < bytes.len() => bytes[at] = byte,
                    1 => bytes.insert(at, byte),
                    _ if at < bytes.len() => {
                        bytes.remove(at);
                    }
                    _ => bytes.push(byte),
                }
            }
            if cut % 4 == 0 {
                bytes.truncate(cut % (bytes.len() + 1));
            }
            bytes
        })
}

proptest! {
    /// Hostile input: whatever a stored or received JSON text turns out to be, hashing it never
    /// panics, and a text that parses hashes the same as its canonical form.
    #[test]
    fn mutated_json_never_panics_the_hasher(bytes in mutated_json()) {
        if let Ok(v) = serde_json::from_slice::<Value>(&bytes) {
            let text = canonical_json(&v);
            let back: Value = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(hash_value(&back), hash_value(&v));
            let _ = blob_hash("pi_meta", &v);
            let _ = js_json_pretty(&v, 2);
        }
    }

    /// Raw numbers and UTF-16 units (lone surrogates included) at the writers' edges.
    #[test]
    fn numbers_and_utf16_units_never_panic(f in any::<f64>(), units in prop::collection::vec(any::<u16>(), 0..16)) {
        let mut out = String::new();
        write_f64(f, &mut out);
        prop_assert!(!out.is_empty());
        out.clear();
        write_js_string_units(&units, &mut out);
        let parsed: Result<Value, _> = serde_json::from_str(&out);
        prop_assert!(parsed.is_ok() || units.iter().any(|u| (0xD800..0xE000).contains(u)), "{}", out);
    }

    /// Node ids from arbitrary text fields never panic and depend on every field.
    #[test]
    fn node_hash_takes_any_text(parent in proptest::option::of("\\PC{0,12}"), role in "\\PC{0,8}", ext in proptest::option::of("\\PC{0,12}"), ts in any::<i64>()) {
        let parts = vec!["a".to_string()];
        let input = NodeHashInput {
            parent_id: parent.as_deref(),
            parts: &parts,
            role: &role,
            timestamp: ts,
            external_id: ext.as_deref(),
            system_prompt_hash: None,
        };
        let id = node_hash(&input);
        prop_assert_eq!(id.len(), 64);
        let other = NodeHashInput { timestamp: ts.wrapping_add(1), ..input };
        prop_assert_ne!(node_hash(&other), id);
    }
}
