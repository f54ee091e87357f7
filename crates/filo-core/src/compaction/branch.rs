//! Choosing what to summarize when leaving a branch (pi spec §5.5).

use std::collections::{BTreeSet, HashSet};

use filo_ai::Message;
use filo_session::{EntryKind, SessionEntry, SessionManager, SessionMessage};

use super::{collect_file_ops, details_files, entry_as_message, estimate_tokens};

/// The entries from the old leaf back to (not including) the common ancestor with `target`, in
/// chronological order.
pub fn collect_entries_for_branch_summary<'a>(
    session: &'a SessionManager,
    old_leaf: Option<&str>,
    target: &str,
) -> Vec<&'a SessionEntry> {
    let Some(old_leaf) = old_leaf else {
        return Vec::new();
    };
    let old_path = session.branch_path(Some(old_leaf));
    let target_path: HashSet<&str> = session
        .branch_path(Some(target))
        .iter()
        .map(|e| e.id.as_str())
        .collect();
    let ancestor = old_path
        .iter()
        .rposition(|e| target_path.contains(e.id.as_str()));
    match ancestor {
        Some(a) => old_path[a + 1..].to_vec(),
        None => old_path,
    }
}

/// What a branch summary covers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BranchPreparation {
    pub messages: Vec<SessionMessage>,
    pub read_files: BTreeSet<String>,
    pub modified_files: BTreeSet<String>,
    pub total_tokens: u64,
}

/// Newest-first, take messages until the token budget is reached (pi's `prepareBranchEntries`).
pub fn prepare_branch_entries(entries: &[&SessionEntry], budget: u64) -> BranchPreparation {
    let mut p = BranchPreparation::default();
    let (mut read, mut edited) = (BTreeSet::new(), BTreeSet::new());
    for e in entries {
        if let EntryKind::BranchSummary {
            details, from_hook, ..
        } = &e.kind
            && *from_hook != Some(true)
        {
            read.extend(details_files(details, "readFiles"));
            edited.extend(details_files(details, "modifiedFiles"));
        }
        if let Some(m) = e.message() {
            collect_file_ops(std::slice::from_ref(m), &mut read, &mut edited);
        }
    }
    let mut picked = Vec::new();
    for e in entries.iter().rev() {
        if matches!(
            e.message(),
            Some(SessionMessage::Llm(Message::ToolResult(_)))
        ) {
            continue;
        }
        let Some(m) = entry_as_message(e) else {
            continue;
        };
        let t = estimate_tokens(&m);
        if p.total_tokens + t > budget {
            let is_summary = matches!(
                e.kind,
                EntryKind::Compaction { .. } | EntryKind::BranchSummary { .. }
            );
            if is_summary && (p.total_tokens as f64) < 0.9 * budget as f64 {
                picked.push(m);
                p.total_tokens += t;
            }
            break;
        }
        picked.push(m);
        p.total_tokens += t;
    }
    picked.reverse();
    p.messages = picked;
    p.read_files = read.difference(&edited).cloned().collect();
    p.modified_files = edited;
    p
}
