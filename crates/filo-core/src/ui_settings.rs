//! Settings keys of pi 0.73 that only the terminal UI (and the start-up scope of models) reads,
//! read from the merged settings with pi's defaults. The typed core settings are in
//! [`crate::settings`]; these are plain reads of [`Settings::get`], written with
//! [`Settings::set`] / [`Settings::set_nested`] like any other key.

use serde_json::Value;

use crate::Settings;

fn bool_at(s: &Settings, key: &str, sub: Option<&str>, default: bool) -> bool {
    let v = match sub {
        None => s.get(key),
        Some(k) => s.get(key).and_then(|o| o.get(k)),
    };
    v.and_then(Value::as_bool).unwrap_or(default)
}

fn one_of(s: &Settings, key: &str, allowed: &[&'static str]) -> &'static str {
    let v = s.get(key).and_then(Value::as_str).unwrap_or_default();
    allowed
        .iter()
        .copied()
        .find(|a| *a == v)
        .unwrap_or(allowed[0])
}

/// `enabledModels`: the patterns ctrl+p cycles through when `--models` is not given; `None`
/// when unset or empty (every model).
pub fn enabled_models(s: &Settings) -> Option<Vec<String>> {
    let v: Vec<String> = s
        .get("enabledModels")?
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    (!v.is_empty()).then_some(v)
}

/// The values of `doubleEscapeAction` (the first is the default).
pub const DOUBLE_ESCAPE_ACTIONS: &[&str] = &["tree", "fork", "none"];
/// The values of `treeFilterMode` (the first is the default).
pub const TREE_FILTER_MODES: &[&str] = &["default", "no-tools", "user-only", "labeled-only", "all"];

/// `doubleEscapeAction`: what two Escapes on an empty editor open.
pub fn double_escape_action(s: &Settings) -> &'static str {
    one_of(s, "doubleEscapeAction", DOUBLE_ESCAPE_ACTIONS)
}

/// `treeFilterMode`: the filter `/tree` opens with.
pub fn tree_filter_mode(s: &Settings) -> &'static str {
    one_of(s, "treeFilterMode", TREE_FILTER_MODES)
}

/// `quietStartup`: no start-up banner.
pub fn quiet_startup(s: &Settings) -> bool {
    bool_at(s, "quietStartup", None, false)
}

/// `enableSkillCommands`: skills offered as `/skill:name` commands (default on).
pub fn enable_skill_commands(s: &Settings) -> bool {
    bool_at(s, "enableSkillCommands", None, true)
}

/// `hideThinkingBlock`: thinking blocks collapsed (`true`) or shown (`false`); `None` when unset.
pub fn hide_thinking_block(s: &Settings) -> Option<bool> {
    s.get("hideThinkingBlock").and_then(Value::as_bool)
}

/// `images.autoResize`: fit images into 2000×2000 before sending them (default on).
pub fn images_auto_resize(s: &Settings) -> bool {
    bool_at(s, "images", Some("autoResize"), true)
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
