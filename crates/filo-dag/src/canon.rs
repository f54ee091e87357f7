//! Canonical JSON and content hashing, bit-identical to the reference `hashContent` (spec §2).
//!
//! `H(x) = lowercase_hex(SHA-256(UTF-8(canonicalJSON(x))))` where `canonicalJSON` is JavaScript's
//! `JSON.stringify` with a replacer that rebuilds every object with `Object.keys(v).sort()`:
//!
//! * object keys: integer-index keys (`0`, `1`, … ≤ 4 294 967 295, canonical decimal) first in
//!   numeric order, then every other key in UTF-16 code-unit order; `__proto__` is dropped;
//! * numbers: ECMAScript `Number::toString` (via `ryu-js`), non-finite numbers become `null`;
//! * strings: `"` `\` and control characters escaped (lowercase `\u00xx`), everything else literal.
//!
//! `serde_json::Value` has no `undefined`, so "absent" is modelled by leaving a key out of the map.
//! A Rust `String` cannot hold a lone surrogate; [`write_js_string_units`] escapes raw UTF-16 for
//! callers that have such input.
//!
//! [`js_json`] is the same writer without key sorting: it reproduces plain `JSON.stringify`, which is
//! what the reference stores in `blobs.content` (insertion order, integer-index keys first).

use serde_json::{Map, Number, Value};
use sha2::{Digest, Sha256};

/// Highest array index V8 treats as an integer-index key.
const MAX_INDEX_KEY: u64 = 4_294_967_295;

/// Canonical (key-sorted) JSON text of a value, as hashed by the reference.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::with_capacity(64);
    write_value(value, KeyOrder::Sorted, &mut out);
    out
}

/// Plain `JSON.stringify(value)` text: keys in V8 enumeration order (integer-index keys first,
/// then insertion order). This is the text the reference writes into `blobs.content`.
pub fn js_json(value: &Value) -> String {
    let mut out = String::with_capacity(64);
    write_value(value, KeyOrder::Insertion, &mut out);
    out
}

/// `JSON.stringify(value, null, indent)`: pretty text in V8 key order (used by trace).
pub fn js_json_pretty(value: &Value, indent: usize) -> String {
    let mut out = String::with_capacity(64);
    write_pretty(value, indent, 0, &mut out);
    out
}

fn write_pretty(value: &Value, indent: usize, level: usize, out: &mut String) {
    let pad = |out: &mut String, level: usize| {
        out.push('\n');
        out.extend(std::iter::repeat_n(' ', indent * level));
    };
    match value {
        Value::Array(items) if !items.is_empty() => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                pad(out, level + 1);
                write_pretty(item, indent, level + 1, out);
            }
            pad(out, level);
            out.push(']');
        }
        Value::Object(map) if !map.is_empty() => {
            let mut keys: Vec<(&String, &Value)> = map.iter().collect();
            keys.sort_by_key(|(k, _)| index_key(k).unwrap_or(u64::MAX));
            out.push('{');
            for (i, (key, item)) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                pad(out, level + 1);
                write_js_string(key, out);
                out.push_str(": ");
                write_pretty(item, indent, level + 1, out);
            }
            pad(out, level);
            out.push('}');
        }
        other => write_value(other, KeyOrder::Insertion, out),
    }
}

/// `H(value)`: SHA-256 of the canonical JSON text, lowercase hex.
pub fn hash_value(value: &Value) -> String {
    sha256_hex(canonical_json(value).as_bytes())
}

/// The address of a blob: `H({type, content})`, i.e. the hash of
/// `{"content":<canonical content>,"type":"<type>"}`.
pub fn blob_hash(blob_type: &str, content: &Value) -> String {
    let mut out = String::with_capacity(64);
    out.push_str("{\"content\":");
    write_value(content, KeyOrder::Sorted, &mut out);
    out.push_str(",\"type\":");
    write_js_string(blob_type, &mut out);
    out.push('}');
    sha256_hex(out.as_bytes())
}

/// The fields that make up a node id (spec §2.7).
///
/// `external_id` is part of the hash whenever it is `Some`; `system_prompt_hash` only when it is
/// `Some` and non-empty (the reference checks truthiness). With both `None` this is the departure
/// (and, inferred, terminal) shape `{parent_id, parts_list, role, timestamp}`.
#[derive(Debug, Clone, Copy)]
pub struct NodeHashInput<'a> {
    /// Parent node id, `None` for a root (written as `null`, never omitted).
    pub parent_id: Option<&'a str>,
    /// Blob hashes in part order.
    pub parts: &'a [String],
    /// Node role.
    pub role: &'a str,
    /// Commit time in ms since the epoch.
    pub timestamp: i64,
    /// Pi entry id, when the writer passed one.
    pub external_id: Option<&'a str>,
    /// Hash of the `system_prompt` blob.
    pub system_prompt_hash: Option<&'a str>,
}

/// The canonical JSON text of a node object (keys are ASCII and already in sorted order).
pub fn node_canonical_json(input: &NodeHashInput<'_>) -> String {
    let mut out = String::with_capacity(128 + 67 * input.parts.len());
    out.push('{');
    if let Some(ext) = input.external_id {
        out.push_str("\"external_id\":");
        write_js_string(ext, &mut out);
        out.push(',');
    }
    out.push_str("\"parent_id\":");
    match input.parent_id {
        Some(p) => write_js_string(p, &mut out),
        None => out.push_str("null"),
    }
    out.push_str(",\"parts_list\":[");
    for (i, part) in input.parts.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_js_string(part, &mut out);
    }
    out.push_str("],\"role\":");
    write_js_string(input.role, &mut out);
    if let Some(sph) = input.system_prompt_hash.filter(|s| !s.is_empty()) {
        out.push_str(",\"system_prompt_hash\":");
        write_js_string(sph, &mut out);
    }
    out.push_str(",\"timestamp\":");
    write_i64(input.timestamp, &mut out);
    out.push('}');
    out
}

/// The node id: `H(node object)` for the shape described by `input`.
pub fn node_hash(input: &NodeHashInput<'_>) -> String {
    sha256_hex(node_canonical_json(input).as_bytes())
}

/// Lowercase hex SHA-256 of raw bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for byte in digest {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum KeyOrder {
    /// `Object.keys(v).sort()` re-inserted into a fresh object (the hashing replacer).
    Sorted,
    /// The object's own order, as plain `JSON.stringify` enumerates it.
    Insertion,
}

fn write_value(value: &Value, order: KeyOrder, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => write_number(n, out),
        Value::String(s) => write_js_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(item, order, out);
            }
            out.push(']');
        }
        Value::Object(map) => write_object(map, order, out),
    }
}

fn write_object(map: &Map<String, Value>, order: KeyOrder, out: &mut String) {
    let mut keys: Vec<(&String, &Value)> = match order {
        // The replacer assigns `__proto__` through the prototype setter: no own property.
        KeyOrder::Sorted => map
            .iter()
            .filter(|(k, _)| k.as_str() != "__proto__")
            .collect(),
        KeyOrder::Insertion => map.iter().collect(),
    };
    match order {
        KeyOrder::Sorted => keys.sort_by(|(a, _), (b, _)| compare_keys_sorted(a, b)),
        // V8 enumerates integer-index keys first (ascending), then the rest in insertion order;
        // a stable sort on "index or not" keeps the insertion order of the rest.
        KeyOrder::Insertion => keys.sort_by_key(|(k, _)| index_key(k).unwrap_or(u64::MAX)),
    }
    out.push('{');
    for (i, (key, value)) in keys.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_js_string(key, out);
        out.push(':');
        write_value(value, order, out);
    }
    out.push('}');
}

/// Order of keys after the replacer's sort and V8's re-enumeration (spec §2.3).
fn compare_keys_sorted(a: &str, b: &str) -> std::cmp::Ordering {
    match (index_key(a), index_key(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.encode_utf16().cmp(b.encode_utf16()),
    }
}

/// `Some(n)` when `key` is a V8 integer-index key: canonical decimal, ≤ 4 294 967 295.
fn index_key(key: &str) -> Option<u64> {
    let bytes = key.as_bytes();
    if bytes.is_empty() || bytes.len() > 10 || !bytes.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if bytes.len() > 1 && bytes[0] == b'0' {
        return None;
    }
    key.parse::<u64>().ok().filter(|n| *n <= MAX_INDEX_KEY)
}

/// ECMAScript `Number::toString` of a JSON number. Integers beyond 2^53 go through `f64`
/// exactly as JavaScript parses them.
fn write_number(n: &Number, out: &mut String) {
    const SAFE: u64 = 1 << 53;
    if let Some(u) = n.as_u64().filter(|u| *u <= SAFE) {
        out.push_str(&u.to_string());
    } else if let Some(i) = n.as_i64().filter(|i| i.unsigned_abs() <= SAFE) {
        write_i64(i, out);
    } else {
        write_f64(n.as_f64().unwrap_or(f64::NAN), out);
    }
}

/// ECMAScript `Number::toString` of a double; NaN and infinities become `null` as in JSON.
pub fn write_f64(f: f64, out: &mut String) {
    if !f.is_finite() {
        out.push_str("null");
    } else if f == 0.0 {
        out.push('0');
    } else {
        let mut buffer = ryu_js::Buffer::new();
        out.push_str(buffer.format_finite(f));
    }
}

fn write_i64(i: i64, out: &mut String) {
    if i < 0 {
        out.push('-');
    }
    out.push_str(&i.unsigned_abs().to_string());
}

/// A JSON string literal as `JSON.stringify` writes it (spec §2.5).
pub fn write_js_string(s: &str, out: &mut String) {
    out.push('"');
    let mut start = 0;
    for (i, byte) in s.bytes().enumerate() {
        let escape: Option<&str> = match byte {
            b'"' => Some("\\\""),
            b'\\' => Some("\\\\"),
            0x08 => Some("\\b"),
            b'\t' => Some("\\t"),
            b'\n' => Some("\\n"),
            0x0c => Some("\\f"),
            b'\r' => Some("\\r"),
            0x00..=0x1f => Some(""),
            _ => None,
        };
        if let Some(esc) = escape {
            out.push_str(&s[start..i]);
            if esc.is_empty() {
                push_unit_escape(u16::from(byte), out);
            } else {
                out.push_str(esc);
            }
            start = i + 1;
        }
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// A JSON string literal from raw UTF-16 units, escaping lone surrogates as `\udxxx`
/// (well-formed `JSON.stringify`, Node ≥ 12).
pub fn write_js_string_units(units: &[u16], out: &mut String) {
    out.push('"');
    for decoded in char::decode_utf16(units.iter().copied()) {
        match decoded {
            Ok(c) => {
                let mut buf = [0u8; 4];
                let text: &str = c.encode_utf8(&mut buf);
                let mut quoted = String::new();
                write_js_string(text, &mut quoted);
                out.push_str(&quoted[1..quoted.len() - 1]);
            }
            Err(lone) => push_unit_escape(lone.unpaired_surrogate(), out),
        }
    }
    out.push('"');
}

fn push_unit_escape(unit: u16, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push_str("\\u");
    for shift in [12u16, 8, 4, 0] {
        out.push(char::from(HEX[usize::from((unit >> shift) & 0xf)]));
    }
}

#[cfg(test)]
#[path = "canon_tests.rs"]
mod tests;
