//! The session as pi 1.6's RPC reads it: every entry in append order (`get_entries`), the entry
//! tree (`get_tree`), and emptying the message queues (`clear_queue`).

use std::collections::HashMap;

use filo_session::{EntryKind, SessionEntry};
use serde_json::{Map, Value};

use super::{AgentSession, lock};
use crate::CoreError;

/// What `clear_queue` removed, in queue order (pi's `{steering, followUp}`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClearedQueue {
    pub steering: Vec<String>,
    pub follow_up: Vec<String>,
}

impl AgentSession {
    /// Every entry after the one with id `since` (all of them without it), in append order, as
    /// pi writes them, and the current leaf's id. An unknown `since` is an error, not an empty
    /// list: a client's cursor that matches nothing must not read as "nothing new".
    pub fn entries_since(
        &self,
        since: Option<&str>,
    ) -> Result<(Vec<Value>, Option<String>), CoreError> {
        let store = lock(&self.inner.store);
        let skip = match since {
            None => 0,
            Some(id) => {
                let at = store
                    .entry_ids()
                    .position(|e| e == id)
                    .ok_or_else(|| CoreError::Refused(format!("Entry not found: {id}")))?;
                at + 1
            }
        };
        let entries = store
            .entries()
            .skip(skip)
            .map(SessionEntry::to_value)
            .collect();
        Ok((entries, store.leaf_id().map(str::to_string)))
    }

    /// pi's `getTree()`: one node `{entry, children, label?, labelTimestamp?}` per entry; roots
    /// are entries without a parent, their own parent, or a parent that is not in the session;
    /// children oldest first. Also the current leaf's id.
    pub fn entry_tree(&self) -> (Vec<Value>, Option<String>) {
        let store = lock(&self.inner.store);
        let entries: Vec<&SessionEntry> = store.entries().collect();
        // The latest label of each entry and when it was set (a cleared label removes both).
        let mut labels: HashMap<&str, (&str, &str)> = HashMap::new();
        for e in &entries {
            if let EntryKind::Label { target_id, label } = &e.kind {
                match label {
                    Some(l) => labels.insert(target_id, (l, &e.timestamp)),
                    None => labels.remove(target_id.as_str()),
                };
            }
        }
        let index: HashMap<&str, usize> = entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.id.as_str(), i))
            .collect();
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); entries.len()];
        let mut roots = Vec::new();
        for (i, e) in entries.iter().enumerate() {
            match e.parent_id.as_deref() {
                Some(p) if p != e.id => match index.get(p) {
                    Some(&parent) => children[parent].push(i),
                    None => roots.push(i),
                },
                _ => roots.push(i),
            }
        }
        let stamp = |i: usize| filo_session::ids::ms_from_iso(&entries[i].timestamp).unwrap_or(0);
        for list in &mut children {
            list.sort_by_key(|&i| stamp(i));
        }
        // Built bottom-up without recursion: a long conversation is a very deep tree.
        let mut built: Vec<Option<Value>> = vec![None; entries.len()];
        let mut stack: Vec<(usize, bool)> = roots.iter().rev().map(|&r| (r, false)).collect();
        while let Some((i, expanded)) = stack.pop() {
            if !expanded {
                stack.push((i, true));
                stack.extend(children[i].iter().rev().map(|&c| (c, false)));
                continue;
            }
            let kids: Vec<Value> = children[i]
                .iter()
                .filter_map(|&c| built[c].take())
                .collect();
            let mut node = Map::new();
            node.insert("entry".into(), entries[i].to_value());
            node.insert("children".into(), Value::Array(kids));
            if let Some((label, at)) = labels.get(entries[i].id.as_str()) {
                node.insert("label".into(), (*label).into());
                node.insert("labelTimestamp".into(), (*at).into());
            }
            built[i] = Some(Value::Object(node));
        }
        let tree = roots.iter().filter_map(|&r| built[r].take()).collect();
        (tree, store.leaf_id().map(str::to_string))
    }

    /// Remove every queued steering and follow-up message (pi 1.6's `clearQueue`): the agent
    /// will not deliver them, a `queue_update` says the queues are empty, and their texts are
    /// returned so a client can put them back in its editor.
    pub fn clear_queue(&self) -> ClearedQueue {
        let cleared = {
            let mut st = lock(&self.inner.state);
            ClearedQueue {
                steering: std::mem::take(&mut st.pending_steer),
                follow_up: std::mem::take(&mut st.pending_follow_up),
            }
        };
        self.inner.agent.clear_all_queues();
        self.emit_queue_update();
        cleared
    }
}
