//! `/hotkeys`: the keyboard shortcuts as the keybindings have them now (pi's table: navigation,
//! editing, other), so a key rebound in `keybindings.json` shows as rebound.

use crate::keybindings::Keybindings;

/// (keys, what they do); each key is an action id, or `=text` for a key that is not one.
const NAVIGATION: &[(&[&str], &str)] = &[
    (
        &[
            "tui.editor.cursorUp",
            "tui.editor.cursorDown",
            "tui.editor.cursorLeft",
            "tui.editor.cursorRight",
        ],
        "Move cursor / browse history (Up when empty)",
    ),
    (
        &["tui.editor.cursorWordLeft", "tui.editor.cursorWordRight"],
        "Move by word",
    ),
    (&["tui.editor.cursorLineStart"], "Start of line"),
    (&["tui.editor.cursorLineEnd"], "End of line"),
    (&["tui.editor.jumpForward"], "Jump forward to character"),
    (&["tui.editor.jumpBackward"], "Jump backward to character"),
    (
        &["tui.editor.pageUp", "tui.editor.pageDown"],
        "Scroll by page",
    ),
];

const EDITING: &[(&[&str], &str)] = &[
    (&["tui.input.submit"], "Send message"),
    (&["tui.input.newLine"], "New line"),
    (&["tui.editor.deleteWordBackward"], "Delete word backwards"),
    (&["tui.editor.deleteWordForward"], "Delete word forwards"),
    (&["tui.editor.deleteToLineStart"], "Delete to start of line"),
    (&["tui.editor.deleteToLineEnd"], "Delete to end of line"),
    (&["tui.editor.yank"], "Paste the most-recently-deleted text"),
    (
        &["tui.editor.yankPop"],
        "Cycle through the deleted text after pasting",
    ),
    (&["tui.editor.undo"], "Undo"),
];

const OTHER: &[(&[&str], &str)] = &[
    (&["tui.input.tab"], "Path completion / accept autocomplete"),
    (&["app.interrupt"], "Cancel autocomplete / abort streaming"),
    (&["app.clear"], "Clear editor (first) / exit (second)"),
    (&["app.exit"], "Exit (when editor is empty)"),
    (&["app.suspend"], "Suspend to background"),
    (&["app.thinking.cycle"], "Cycle thinking level"),
    (
        &["app.model.cycleForward", "app.model.cycleBackward"],
        "Cycle models",
    ),
    (&["app.model.select"], "Open model selector"),
    (&["app.tools.expand"], "Toggle tool output expansion"),
    (&["app.thinking.toggle"], "Toggle thinking block visibility"),
    (&["app.editor.external"], "Edit message in external editor"),
    (&["app.message.followUp"], "Queue follow-up message"),
    (&["app.message.dequeue"], "Restore queued messages"),
    (&["app.clipboard.pasteImage"], "Paste image from clipboard"),
    (&["=/"], "Slash commands"),
    (&["=!"], "Run bash command"),
    (&["=!!"], "Run bash command (excluded from context)"),
    (&["=@"], "Complete a file path"),
    (
        &["=/life"],
        "The memory graph: enter recall · t travel there",
    ),
];

/// The page's lines: a heading per section, then one `key   action` row per shortcut (an
/// action with no key is left out).
pub fn lines(keys: &Keybindings) -> Vec<String> {
    let mut out = Vec::new();
    for (title, rows) in [
        ("Navigation", NAVIGATION),
        ("Editing", EDITING),
        ("Other", OTHER),
    ] {
        let rows: Vec<(String, &str)> = rows
            .iter()
            .filter_map(|(ids, what)| {
                let shown: Vec<String> = ids
                    .iter()
                    .map(|id| match id.strip_prefix('=') {
                        Some(raw) => raw.to_string(),
                        None => keys.display(id),
                    })
                    .filter(|k| !k.is_empty())
                    .collect();
                (!shown.is_empty()).then(|| (shown.join(" / "), *what))
            })
            .collect();
        let width = rows
            .iter()
            .map(|(k, _)| k.chars().count())
            .max()
            .unwrap_or(0);
        if !out.is_empty() {
            out.push(String::new());
        }
        out.push(title.to_string());
        for (k, what) in rows {
            out.push(format!("  {k:<width$}  {what}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_follows_the_bindings() {
        let page = lines(&Keybindings::default()).join("\n");
        assert!(page.contains("Ctrl+G"), "{page}");
        assert!(
            page.contains("Ctrl+P / Shift+Ctrl+P  Cycle models"),
            "{page}"
        );
        assert!(page.contains("Ctrl+]"), "{page}");
        let (kb, _) = Keybindings::from_json(&serde_json::json!({
            "app.editor.external": "ctrl+x",
            "app.suspend": [],
        }));
        let page = lines(&kb).join("\n");
        assert!(page.contains("Ctrl+X"), "{page}");
        assert!(!page.contains("Ctrl+G"), "{page}");
        assert!(!page.contains("Suspend to background"), "{page}");
    }
}
