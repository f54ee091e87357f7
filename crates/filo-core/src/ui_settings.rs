//! Settings keys of pi 0.73 that only the terminal UI (and the start-up scope of models) reads,
//! read from the merged settings with pi's defaults. The typed core settings are in
//! [`crate::settings`]; these read its typed values with pi's defaults, and are written with
//! [`Settings::set`] / [`Settings::set_nested`] like any other key.

use crate::Settings;
use crate::settings::{DoubleEscapeAction, TreeFilterMode};

/// `enabledModels`: the patterns ctrl+p cycles through when `--models` is not given; `None`
/// when unset or empty (every model).
pub fn enabled_models(s: &Settings) -> Option<Vec<String>> {
    s.values().enabled_models.clone().filter(|v| !v.is_empty())
}

/// The values of `doubleEscapeAction` (the first is the default).
pub const DOUBLE_ESCAPE_ACTIONS: &[&str] = &["tree", "fork", "none"];
/// The values of `treeFilterMode` (the first is the default).
pub const TREE_FILTER_MODES: &[&str] = &["default", "no-tools", "user-only", "labeled-only", "all"];

/// `doubleEscapeAction`: what two Escapes on an empty editor open.
pub fn double_escape_action(s: &Settings) -> &'static str {
    match s.values().double_escape_action {
        None | Some(DoubleEscapeAction::Tree) => "tree",
        Some(DoubleEscapeAction::Fork) => "fork",
        Some(DoubleEscapeAction::None) => "none",
    }
}

/// `treeFilterMode`: the filter `/tree` opens with.
pub fn tree_filter_mode(s: &Settings) -> &'static str {
    match s.values().tree_filter_mode {
        None | Some(TreeFilterMode::Default) => "default",
        Some(TreeFilterMode::NoTools) => "no-tools",
        Some(TreeFilterMode::UserOnly) => "user-only",
        Some(TreeFilterMode::LabeledOnly) => "labeled-only",
        Some(TreeFilterMode::All) => "all",
    }
}

/// `quietStartup`: no start-up banner.
pub fn quiet_startup(s: &Settings) -> bool {
    s.values().quiet_startup.unwrap_or(false)
}

/// `enableSkillCommands`: skills offered as `/skill:name` commands (default on).
pub fn enable_skill_commands(s: &Settings) -> bool {
    s.values().enable_skill_commands.unwrap_or(true)
}

/// `hideThinkingBlock`: thinking blocks collapsed (`true`) or shown (`false`); `None` when unset.
pub fn hide_thinking_block(s: &Settings) -> Option<bool> {
    s.values().hide_thinking_block
}

/// `images.autoResize`: fit images into 2000×2000 before sending them (default on).
pub fn images_auto_resize(s: &Settings) -> bool {
    s.values().auto_resize_images()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_and_values() {
        let s = Settings::in_memory(json!({}));
        assert_eq!(enabled_models(&s), None);
        assert_eq!(double_escape_action(&s), "tree");
        assert_eq!(tree_filter_mode(&s), "default");
        assert!(!quiet_startup(&s) && enable_skill_commands(&s) && images_auto_resize(&s));
        let s = Settings::in_memory(json!({
            "enabledModels": ["a/*", "b/c:high"], "doubleEscapeAction": "fork",
            "treeFilterMode": "user-only", "quietStartup": true, "enableSkillCommands": false,
            "hideThinkingBlock": true, "images": {"autoResize": false}
        }));
        assert_eq!(
            enabled_models(&s),
            Some(vec!["a/*".into(), "b/c:high".into()])
        );
        assert_eq!(double_escape_action(&s), "fork");
        assert_eq!(tree_filter_mode(&s), "user-only");
        assert!(quiet_startup(&s) && !enable_skill_commands(&s));
        assert_eq!(hide_thinking_block(&s), Some(true));
        assert!(!images_auto_resize(&s));
        let bad =
            Settings::in_memory(json!({"doubleEscapeAction": "explode", "enabledModels": []}));
        assert_eq!(double_escape_action(&bad), "tree");
        assert_eq!(enabled_models(&bad), None);
    }
}
