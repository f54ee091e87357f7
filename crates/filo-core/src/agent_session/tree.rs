//! Moving through the session tree (pi spec §3.12 `navigateTree`, §5.5 branch summaries).

use filo_ai::{ContentBlock, Message, UserContent};
use filo_session::{EntryKind, SessionMessage};
use tokio_util::sync::CancellationToken;

use super::{AgentSession, lock};
use crate::CoreError;
use crate::compaction::{
    collect_entries_for_branch_summary, generate_branch_summary, prepare_branch_entries,
};

/// Options of [`AgentSession::navigate_tree`].
#[derive(Debug, Clone, Default)]
pub struct NavigateOptions {
    /// Summarize the branch being left (through the model).
    pub summarize: bool,
    pub custom_instructions: Option<String>,
    /// Use `custom_instructions` instead of the built-in prompt.
    pub replace_instructions: bool,
    /// Label the new position (the summary entry, or the target).
    pub label: Option<String>,
}

/// What navigating did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NavigateResult {
    /// The text of a user message navigated to, for the editor (the leaf moved to its parent).
    pub editor_text: Option<String>,
    pub cancelled: bool,
}

fn user_text(m: &SessionMessage) -> Option<String> {
    let content = match m {
        SessionMessage::Llm(Message::User(u)) => &u.content,
        SessionMessage::Custom(c) => &c.content,
        _ => return None,
    };
    Some(match content {
        UserContent::Text(t) => t.clone(),
        UserContent::Blocks(b) => b.iter().filter_map(ContentBlock::as_text).collect(),
    })
}

impl AgentSession {
    /// Move the session to another entry of its tree. Navigating to a user message puts its text
    /// back in the editor and moves the leaf to its parent; any other entry becomes the leaf.
    /// With `summarize`, the branch left behind is summarized into a `branch_summary` entry.
    pub async fn navigate_tree(
        &self,
        target_id: &str,
        opts: NavigateOptions,
    ) -> Result<NavigateResult, CoreError> {
        self.abort().await;
        let (old_leaf, target, prep) = {
            let store = lock(&self.inner.store);
            let target = store
                .entry(target_id)
                .cloned()
                .ok_or_else(|| CoreError::Refused(format!("Entry {target_id} not found")))?;
            let old_leaf = store.leaf_id().map(str::to_string);
            if old_leaf.as_deref() == Some(target_id) {
                return Ok(NavigateResult::default());
            }
            let prep = opts.summarize.then(|| {
                let entries =
                    collect_entries_for_branch_summary(&store, old_leaf.as_deref(), target_id);
                let window = self.model().map_or(128_000, |m| {
                    if m.context_window > 0 {
                        m.context_window
                    } else {
                        128_000
                    }
                });
                let reserve = lock(&self.inner.settings)
                    .values()
                    .branch_summary_reserve_tokens();
                prepare_branch_entries(&entries, window.saturating_sub(reserve))
            });
            (old_leaf, target, prep)
        };
        let summary = match prep {
            Some(prep) if old_leaf.is_some() => {
                let model = self
                    .model()
                    .ok_or_else(|| CoreError::Refused("No model selected".into()))?;
                let key = (self.inner.api_key)(&model.provider).filter(|k| !k.is_empty());
                let result = generate_branch_summary(
                    self.inner.client.as_ref(),
                    &model,
                    key,
                    &prep,
                    opts.custom_instructions.as_deref(),
                    opts.replace_instructions,
                    CancellationToken::new(),
                )
                .await;
                match result {
                    Ok(text) => Some((text, prep)),
                    Err(crate::compaction::SummaryError::Cancelled) => {
                        return Ok(NavigateResult {
                            editor_text: None,
                            cancelled: true,
                        });
                    }
                    Err(e) => return Err(CoreError::Summary(e)),
                }
            }
            _ => None,
        };
        let editor_text = match &target.kind {
            EntryKind::Message(m) if m.role() == "user" => user_text(m),
            EntryKind::CustomMessage { content, .. } => Some(match content {
                UserContent::Text(t) => t.clone(),
                UserContent::Blocks(b) => b.iter().filter_map(ContentBlock::as_text).collect(),
            }),
            _ => None,
        };
        let new_leaf = if editor_text.is_some() {
            target.parent_id.clone()
        } else {
            Some(target.id.clone())
        };
        {
            let mut store = lock(&self.inner.store);
            match &new_leaf {
                Some(id) => store.branch(id).map_err(CoreError::Session)?,
                None => store.reset_leaf(),
            }
        }
        let labelled = match summary {
            Some((text, prep)) => {
                let details = serde_json::json!({
                    "readFiles": prep.read_files.iter().collect::<Vec<_>>(),
                    "modifiedFiles": prep.modified_files.iter().collect::<Vec<_>>(),
                });
                self.append_entry(EntryKind::BranchSummary {
                    from_id: new_leaf.clone().unwrap_or_else(|| "root".into()),
                    summary: text,
                    details: Some(details),
                    from_hook: Some(false),
                    usage: None,
                })
            }
            None => new_leaf.clone(),
        };
        if let (Some(label), Some(on)) = (opts.label.filter(|l| !l.is_empty()), labelled) {
            self.append_entry(EntryKind::Label {
                target_id: on,
                label: Some(label),
            });
        }
        self.reload_messages_from_session();
        Ok(NavigateResult {
            editor_text,
            cancelled: false,
        })
    }
}
