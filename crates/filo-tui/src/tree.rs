//! `/tree`: the session file's tree as a selectable list — every branch, indented where the
//! conversation forks, the current leaf marked. Choosing an entry moves the session there
//! (`AgentSession::navigate_tree`), optionally summarizing the branch left behind.

use filo_ai::{ContentBlock, Message, UserContent};
use filo_session::{EntryKind, SessionEntry, SessionManager, SessionMessage};

use crate::overlay::SelectItem;
use crate::text::truncate;

fn one_line(s: &str) -> String {
    truncate(&s.split_whitespace().collect::<Vec<_>>().join(" "), 120)
}

/// What a tree row says about an entry; `None` for entries not worth a row (tool results,
/// settings changes) — their children are still listed.
fn label(e: &SessionEntry) -> Option<String> {
    match &e.kind {
        EntryKind::Message(SessionMessage::Llm(Message::User(u))) => {
            let text = match &u.content {
                UserContent::Text(t) => t.clone(),
                UserContent::Blocks(b) => b.iter().filter_map(ContentBlock::as_text).collect(),
            };
            Some(format!("user: {}", one_line(&text)))
        }
        EntryKind::Message(SessionMessage::Llm(Message::Assistant(a))) => {
            let text = a.text();
            let calls: Vec<&str> = a.tool_calls().map(|t| t.name.as_str()).collect();
            Some(match (text.trim().is_empty(), calls.is_empty()) {
                (false, _) => format!("assistant: {}", one_line(&text)),
                (true, false) => format!("assistant: → {}", calls.join(", ")),
                (true, true) => "assistant: (empty)".to_string(),
            })
        }
        EntryKind::BranchSummary { .. } => Some("[branch summary]".into()),
        EntryKind::Compaction { .. } => Some("[compaction]".into()),
        _ => None,
    }
}

/// The rows of the tree, depth first, and the index of the row of the current leaf (or its
/// nearest listed ancestor).
pub fn tree_items(m: &SessionManager) -> (Vec<SelectItem>, usize) {
    let leaf_path: Vec<String> = m.branch_path(None).iter().map(|e| e.id.clone()).collect();
    let mut items = Vec::new();
    let mut selected = 0;
    // (entry, depth)
    let mut stack: Vec<(&SessionEntry, usize)> =
        m.roots().into_iter().rev().map(|e| (e, 0)).collect();
    while let Some((e, depth)) = stack.pop() {
        let children = m.children(&e.id);
        let child_depth = if children.len() > 1 { depth + 1 } else { depth };
        for c in children.into_iter().rev() {
            stack.push((c, child_depth));
        }
        let Some(text) = label(e) else {
            continue;
        };
        let on_path = leaf_path.contains(&e.id);
        if on_path {
            selected = items.len();
        }
        let marker = if m.leaf_id() == Some(e.id.as_str()) {
            "● "
        } else if on_path {
            "│ "
        } else {
            "  "
        };
        let tag = m
            .label(&e.id)
            .map(|l| format!("[{l}] "))
            .unwrap_or_default();
        items.push(SelectItem {
            label: format!("{}{marker}{tag}{text}", "  ".repeat(depth)),
            detail: String::new(),
            value: e.id.clone(),
            search: String::new(),
        });
    }
    (items, selected)
}

#[cfg(test)]
mod tests {
    use super::*;
    use filo_ai::UserMessage;

    fn user(m: &mut SessionManager, t: &str) -> String {
        m.append_message(SessionMessage::Llm(Message::User(UserMessage {
            content: UserContent::Text(t.into()),
            timestamp: 0,
        })))
        .unwrap()
    }

    #[test]
    fn branches_are_indented_and_the_leaf_is_selected() {
        let mut m = SessionManager::in_memory("/tmp");
        let a = user(&mut m, "first");
        user(&mut m, "second, abandoned");
        m.branch(&a).unwrap();
        user(&mut m, "second, kept");
        let (items, selected) = tree_items(&m);
        let labels: Vec<&str> = items.iter().map(|i| i.label.as_str()).collect();
        assert_eq!(
            labels,
            vec![
                "│ user: first",
                "    user: second, abandoned",
                "  ● user: second, kept",
            ]
        );
        assert_eq!(selected, 2);
    }
}
