//! Migration of old session files to version 3 (pi spec §3.6), on raw JSON so nothing is lost:
//! v1 → v2 gives every entry a fresh 8-hex id and chains `parentId` linearly (and turns a numeric
//! `firstKeptEntryIndex`, counted with the header at index 0, into `firstKeptEntryId`); v2 → v3
//! renames the `hookMessage` role to `custom`. Migrating a v3 list changes nothing.
//!
//! The linear chain runs through the lines the loader keeps (`is_entry`): a line it skips (an
//! unknown message role, say) is not made the parent of the next entry, so one unreadable line
//! does not cut everything before it out of the context.

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::ids::new_entry_id;

/// Migrate `lines` (header first) in place. Returns true when anything changed. `is_entry` says
/// whether a line (with its new id) is an entry the loader keeps.
pub fn migrate_to_current(lines: &mut [Value], is_entry: &dyn Fn(&Value) -> bool) -> bool {
    let version = lines
        .first()
        .and_then(|h| h.get("version"))
        .and_then(Value::as_u64)
        .unwrap_or(1);
    if version >= 3 {
        return false;
    }
    if version < 2 {
        v1_to_v2(lines, is_entry);
    }
    v2_to_v3(lines);
    true
}

fn v1_to_v2(lines: &mut [Value], is_entry: &dyn Fn(&Value) -> bool) {
    let mut used = HashSet::new();
    let mut ids: Vec<Option<String>> = vec![None; lines.len()];
    let mut previous: Option<String> = None;
    for (i, line) in lines.iter_mut().enumerate().skip(1) {
        let Some(obj) = line.as_object_mut() else {
            continue;
        };
        let id = new_entry_id(|x| used.contains(x));
        used.insert(id.clone());
        obj.insert("id".into(), id.clone().into());
        obj.insert(
            "parentId".into(),
            previous.clone().map_or(Value::Null, Value::String),
        );
        ids[i] = Some(id.clone());
        if is_entry(line) {
            previous = Some(id);
        }
    }
    for line in lines.iter_mut().skip(1) {
        let Some(obj) = line.as_object_mut() else {
            continue;
        };
        if obj.get("type").and_then(Value::as_str) != Some("compaction") {
            continue;
        }
        if let Some(index) = obj.get("firstKeptEntryIndex").and_then(Value::as_u64) {
            let kept = usize::try_from(index)
                .ok()
                .and_then(|i| ids.get(i).cloned().flatten());
            if let Some(kept) = kept {
                obj.insert("firstKeptEntryId".into(), kept.into());
            }
            obj.remove("firstKeptEntryIndex");
        }
    }
    set_version(lines, 2);
}

fn v2_to_v3(lines: &mut [Value]) {
    for line in lines.iter_mut().skip(1) {
        let role = line.get_mut("message").and_then(Value::as_object_mut);
        if let Some(msg) = role
            && msg.get("role").and_then(Value::as_str) == Some("hookMessage")
        {
            msg.insert("role".into(), "custom".into());
        }
    }
    set_version(lines, 3);
}

/// Set the header's version, keeping `version` right after `type` as pi writes it.
fn set_version(lines: &mut [Value], version: u64) {
    let Some(Value::Object(header)) = lines.first_mut() else {
        return;
    };
    if header.contains_key("version") {
        header.insert("version".into(), version.into());
        return;
    }
    let mut rebuilt = Map::new();
    for (k, v) in std::mem::take(header) {
        let is_type = k == "type";
        rebuilt.insert(k, v);
        if is_type {
            rebuilt.insert("version".into(), version.into());
        }
    }
    *header = rebuilt;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn v1_gets_linear_chain_and_kept_id() {
        let mut lines = vec![
            json!({"type":"session","id":"s","timestamp":"t","cwd":"/p","provider":"anthropic"}),
            json!({"type":"message","timestamp":"t","message":{"role":"user","content":"a","timestamp":1}}),
            json!({"type":"message","timestamp":"t","message":{"role":"hookMessage","customType":"x","content":"c","display":true,"timestamp":1}}),
            json!({"type":"compaction","timestamp":"t","summary":"s","firstKeptEntryIndex":2,"tokensBefore":5}),
        ];
        assert!(migrate_to_current(&mut lines, &|_| true));
        assert_eq!(lines[0]["version"], 3);
        let keys: Vec<_> = lines[0].as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys[..2], ["type".to_string(), "version".to_string()]);
        let id1 = lines[1]["id"].as_str().unwrap().to_string();
        let id2 = lines[2]["id"].as_str().unwrap().to_string();
        assert_eq!(id1.len(), 8);
        assert_eq!(lines[1]["parentId"], Value::Null);
        assert_eq!(lines[2]["parentId"], json!(id1));
        assert_eq!(lines[3]["parentId"], json!(id2));
        assert_eq!(lines[3]["firstKeptEntryId"], json!(id2));
        assert!(lines[3].get("firstKeptEntryIndex").is_none());
        assert_eq!(lines[2]["message"]["role"], "custom");
        let again = lines.clone();
        assert!(!migrate_to_current(&mut lines, &|_| true));
        assert_eq!(lines, again);
    }
}
