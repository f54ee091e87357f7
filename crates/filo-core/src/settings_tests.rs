use super::*;
use crate::compaction::CompactionSettings;
use serde_json::json;

#[test]
fn project_wins_and_nested_objects_merge_one_level() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join("agent");
    let cwd = dir.path().join("proj");
    fs::create_dir_all(&agent).unwrap();
    fs::create_dir_all(cwd.join(".pi")).unwrap();
    fs::write(
        agent.join("settings.json"),
        r#"{"theme":"dark","compaction":{"enabled":false,"reserveTokens":1},"queueMode":"all"}"#,
    )
    .unwrap();
    fs::write(
        cwd.join(".pi/settings.json"),
        r#"{"theme":"light","compaction":{"reserveTokens":9}}"#,
    )
    .unwrap();
    let s = Settings::load(&agent, Some(&cwd));
    let v = s.values();
    assert_eq!(v.theme(), "light");
    assert!(!v.compaction().enabled);
    assert_eq!(v.compaction().reserve_tokens, 9);
    assert_eq!(v.compaction().keep_recent_tokens, 20_000);
    assert_eq!(v.steering_mode(), QueueMode::All);
    assert!(s.errors.is_empty(), "{:?}", s.errors);
}

#[test]
fn defaults_when_nothing_is_set() {
    let s = Settings::in_memory(json!({}));
    let v = s.values();
    assert_eq!(v.default_thinking_level(), ThinkingLevel::Medium);
    assert_eq!(v.steering_mode(), QueueMode::OneAtATime);
    assert_eq!(v.theme(), "dark");
    assert_eq!(v.compaction(), CompactionSettings::default());
    assert_eq!(v.branch_summary_reserve_tokens(), 16_384);
    assert!(v.retry_enabled());
    assert_eq!(v.retry_max_retries(), 3);
    assert_eq!(v.retry_base_delay_ms(), 2_000);
    assert_eq!(v.provider_max_retry_delay_ms(), 60_000);
    assert_eq!(v.provider_idle_timeout_ms(), None);
    assert_eq!(v.provider_timeout_ms(), None);
    assert!(!v.block_images());
    assert_eq!(v.prefixed_command("ls"), "ls");
}

#[test]
fn retry_provider_keys_and_the_legacy_max_delay() {
    let s = Settings::in_memory(json!({"retry": {"provider": {
        "idleTimeoutMs": 5000, "timeoutMs": 90000, "maxRetries": 1, "maxRetryDelayMs": 7000
    }}}));
    let v = s.values();
    assert_eq!(v.provider_idle_timeout_ms(), Some(5000));
    assert_eq!(v.provider_timeout_ms(), Some(90_000));
    assert_eq!(v.provider_max_retries(), Some(1));
    assert_eq!(v.provider_max_retry_delay_ms(), 7000);
    // pi 0.73 moved retry.maxDelayMs to retry.provider.maxRetryDelayMs.
    let old = Settings::in_memory(json!({"retry": {"maxDelayMs": 1234, "enabled": false}}));
    assert_eq!(old.values().provider_max_retry_delay_ms(), 1234);
    assert!(!old.values().retry_enabled());
}

#[test]
fn a_value_of_the_wrong_type_is_named_and_the_rest_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("settings.json");
    let text = r#"{"compaction":{"enabled":false,"reserveTokens":"big"},"steeringMode":"sometimes","theme":"light"}"#;
    fs::write(&path, text).unwrap();
    let mut s = Settings::load(dir.path(), None);
    let v = s.values();
    assert!(
        !v.compaction().enabled,
        "the valid key of the section is kept"
    );
    assert_eq!(v.compaction().reserve_tokens, 16_384);
    assert_eq!(v.steering_mode(), QueueMode::OneAtATime);
    assert_eq!(v.theme(), "light");
    assert_eq!(s.errors.len(), 2, "{:?}", s.errors);
    let shown = s.errors.join("\n");
    let file = path.display().to_string();
    assert!(
        shown.contains(&format!(
            "{file}: \"compaction.reserveTokens\": invalid type"
        )),
        "{shown}"
    );
    assert!(
        shown.contains(&format!("{file}: \"steeringMode\": unknown variant")),
        "{shown}"
    );
    // The file is the user's: a save changes only the key set, the odd values stay.
    s.set_retry_enabled(false);
    s.save().unwrap();
    let on_disk: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(on_disk["compaction"]["reserveTokens"], "big");
    assert_eq!(on_disk["steeringMode"], "sometimes");
    assert_eq!(on_disk["retry"], json!({"enabled": false}));
}

#[test]
fn save_merges_only_changed_keys_and_keeps_unknown_ones() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("settings.json");
    fs::write(
        &path,
        r#"{"theme":"dark","futureKey":{"a":1},"retry":{"maxRetries":5}}"#,
    )
    .unwrap();
    let mut s = Settings::load(dir.path(), None);
    assert_eq!(s.values().extra.get("futureKey"), Some(&json!({"a":1})));
    // Edited meanwhile, by hand or by another process.
    fs::write(
        &path,
        r#"{"theme":"dark","futureKey":{"a":1},"hideThinkingBlock":true,"retry":{"maxRetries":6}}"#,
    )
    .unwrap();
    s.set_default_model("anthropic", "claude-opus-4-6");
    s.set_retry_enabled(false);
    s.save().unwrap();
    let v: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(
        v,
        json!({"theme":"dark","futureKey":{"a":1},"hideThinkingBlock":true,
               "retry":{"maxRetries":6,"enabled":false},
               "defaultProvider":"anthropic","defaultModel":"claude-opus-4-6"})
    );
    assert!(fs::read_to_string(&path).unwrap().contains("\n  \"theme\""));
}

#[test]
fn a_nested_change_does_not_copy_project_values_into_the_global_file() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join("agent");
    let cwd = dir.path().join("proj");
    fs::create_dir_all(cwd.join(".pi")).unwrap();
    fs::write(
        cwd.join(".pi/settings.json"),
        r#"{"compaction":{"reserveTokens":9}}"#,
    )
    .unwrap();
    let mut s = Settings::load(&agent, Some(&cwd));
    s.set_compaction_enabled(false);
    s.save().unwrap();
    let v: Value =
        serde_json::from_str(&fs::read_to_string(agent.join("settings.json")).unwrap()).unwrap();
    assert_eq!(v, json!({"compaction": {"enabled": false}}));
    assert_eq!(s.values().compaction().reserve_tokens, 9);
}

#[test]
fn unreadable_file_is_never_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("settings.json");
    fs::write(&path, "{broken").unwrap();
    let mut s = Settings::load(dir.path(), None);
    assert_eq!(s.errors.len(), 1);
    assert!(
        s.errors[0].starts_with(&format!("{}: invalid JSON: ", path.display())),
        "{:?}",
        s.errors
    );
    s.set("theme", json!("x"));
    let err = s.save().unwrap_err();
    assert!(
        matches!(err, CoreError::UnreadableNotWritten { .. }),
        "{err}"
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), "{broken");
}

#[test]
fn a_failed_write_is_returned_and_the_change_kept_for_a_retry() {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join("agent");
    fs::create_dir_all(&agent).unwrap();
    let mut s = Settings::load(&agent, None);
    // The agent directory is replaced by a file: no write can succeed (even as root).
    fs::remove_dir(&agent).unwrap();
    fs::write(&agent, "not a directory").unwrap();
    s.set("theme", json!("light"));
    let err = s.save().unwrap_err();
    assert!(matches!(err, CoreError::Io { .. }), "{err}");
    assert_eq!(fs::read_to_string(&agent).unwrap(), "not a directory");
    fs::remove_file(&agent).unwrap();
    s.save().unwrap();
    let v: Value =
        serde_json::from_str(&fs::read_to_string(agent.join("settings.json")).unwrap()).unwrap();
    assert_eq!(v, json!({"theme": "light"}));
}

#[test]
fn in_memory_settings_change_without_writing() {
    let mut s = Settings::in_memory(json!({"theme": "light"}));
    s.set_steering_mode(QueueMode::All);
    s.save().unwrap();
    assert_eq!(s.values().steering_mode(), QueueMode::All);
    assert_eq!(s.values().theme(), "light");
}

#[test]
fn settings_read_from_pi_are_saved_into_filo_and_pi_stays_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let own = dir.path().join("filo");
    let pi = dir.path().join("pi");
    fs::create_dir_all(&pi).unwrap();
    let pi_text =
        "{\n  \"theme\": \"light\",\n  \"queueMode\": \"all\",\n  \"someFutureKey\": [1]\n}\n";
    fs::write(pi.join("settings.json"), pi_text).unwrap();
    let dirs = AgentDirs::new(own.clone(), Some(pi.clone()));
    let mut s = Settings::load_in(&dirs, None);
    assert_eq!(s.values().theme(), "light");
    assert_eq!(s.values().steering_mode(), QueueMode::All);
    assert_eq!(s.global_source(), pi.join("settings.json"));
    assert_eq!(s.global_path(), own.join("settings.json"));
    s.set_default_model("anthropic", "claude-sonnet-4-5");
    s.save().unwrap();
    assert_eq!(
        fs::read_to_string(pi.join("settings.json")).unwrap(),
        pi_text
    );
    let written: Value =
        serde_json::from_str(&fs::read_to_string(own.join("settings.json")).unwrap()).unwrap();
    assert_eq!(
        written,
        json!({"theme": "light", "queueMode": "all", "someFutureKey": [1],
               "defaultProvider": "anthropic", "defaultModel": "claude-sonnet-4-5"}),
        "pi's settings as they were, plus the change"
    );
    // From now on filo's own file is the one read; pi's is ignored.
    let again = Settings::load_in(&AgentDirs::new(own.clone(), Some(pi.clone())), None);
    assert_eq!(again.global_source(), own.join("settings.json"));
    fs::write(pi.join("settings.json"), r#"{"theme":"dark"}"#).unwrap();
    let third = Settings::load_in(&AgentDirs::new(own, Some(pi)), None);
    assert_eq!(third.values().theme(), "light");
}

#[test]
fn an_unreadable_pi_settings_file_is_named_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let own = dir.path().join("filo");
    let pi = dir.path().join("pi");
    fs::create_dir_all(&pi).unwrap();
    fs::write(pi.join("settings.json"), "{oops").unwrap();
    let mut s = Settings::load_in(&AgentDirs::new(own.clone(), Some(pi.clone())), None);
    assert_eq!(s.errors.len(), 1, "{:?}", s.errors);
    s.set("theme", "dark".into());
    let err = s.save().unwrap_err();
    assert!(
        matches!(&err, CoreError::UnreadableNotWritten { path, .. } if *path == pi.join("settings.json")),
        "{err}"
    );
    assert!(!own.join("settings.json").exists());
    assert_eq!(
        fs::read_to_string(pi.join("settings.json")).unwrap(),
        "{oops"
    );
}

/// Every key of pi 0.73.1's `Settings` type (core/settings-manager.d.ts), each with a value pi
/// accepts: all are read into typed fields (nothing is left in `extra`), without errors.
#[test]
fn every_key_of_pi_073_is_typed() {
    let all = json!({
        "lastChangelogVersion": "0.73.1",
        "defaultProvider": "anthropic",
        "defaultModel": "claude-sonnet-4-5",
        "defaultThinkingLevel": "xhigh",
        "transport": "websocket-cached",
        "steeringMode": "all",
        "followUpMode": "one-at-a-time",
        "theme": "light",
        "compaction": {"enabled": true, "reserveTokens": 1, "keepRecentTokens": 2},
        "branchSummary": {"reserveTokens": 3, "skipPrompt": true},
        "retry": {"enabled": false, "maxRetries": 4, "baseDelayMs": 5,
                  "provider": {"timeoutMs": 6, "maxRetries": 7, "maxRetryDelayMs": 8}},
        "hideThinkingBlock": true,
        "shellPath": "/bin/zsh",
        "quietStartup": true,
        "shellCommandPrefix": "shopt -s expand_aliases",
        "npmCommand": ["pnpm"],
        "collapseChangelog": true,
        "enableInstallTelemetry": false,
        "packages": ["npm:pkg", {"source": "git:x", "skills": ["a"], "themes": []}],
        "extensions": ["./ext.ts"],
        "skills": ["~/skills"],
        "prompts": ["~/prompts"],
        "themes": ["~/themes"],
        "enableSkillCommands": false,
        "terminal": {"showImages": false, "imageWidthCells": 40.7, "clearOnShrink": true,
                     "showTerminalProgress": true},
        "images": {"autoResize": false, "blockImages": true},
        "enabledModels": ["claude-*", "gpt-5"],
        "doubleEscapeAction": "fork",
        "treeFilterMode": "labeled-only",
        "thinkingBudgets": {"minimal": 100, "low": 200, "medium": 300, "high": 400},
        "editorPaddingX": 9,
        "autocompleteMaxVisible": 1,
        "showHardwareCursor": true,
        "markdown": {"codeBlockIndent": "    "},
        "warnings": {"anthropicExtraUsage": false},
        "sessionDir": "~/pi-sessions"
    });
    let s = Settings::in_memory(all);
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    let v = s.values();
    assert!(
        v.extra.is_empty(),
        "untyped keys: {:?}",
        v.extra.keys().collect::<Vec<_>>()
    );
    for nested in [
        &v.compaction.extra,
        &v.branch_summary.extra,
        &v.retry.extra,
        &v.retry.provider.extra,
        &v.images.extra,
        &v.terminal.extra,
        &v.thinking_budgets.extra,
        &v.markdown.extra,
        &v.warnings.extra,
    ] {
        assert!(nested.is_empty(), "{nested:?}");
    }
    assert_eq!(v.transport, Some(TransportSetting::WebsocketCached));
    assert_eq!(v.double_escape_action(), DoubleEscapeAction::Fork);
    assert_eq!(v.tree_filter_mode(), TreeFilterMode::LabeledOnly);
    assert_eq!(v.image_width_cells(), 40);
    assert_eq!((v.editor_padding_x(), v.autocomplete_max_visible()), (3, 3));
    assert_eq!(v.code_block_indent(), "    ");
    assert!(!v.auto_resize_images() && v.block_images() && !v.enable_skill_commands());
    assert_eq!(v.packages.as_deref().map(<[PackageSource]>::len), Some(2));
    let budgets = v.thinking_budgets().unwrap();
    assert_eq!(budgets[&ThinkingLevel::Low], 200);
    assert_eq!(budgets.len(), 4);
    let home = Path::new("/home/u");
    assert_eq!(v.session_dir(home), Some(home.join("pi-sessions")));
    // What filo does not act on is named, each once (`skills`/`prompts`/`themes` are applied).
    let unapplied = v.unapplied();
    assert_eq!(unapplied.len(), 2, "{unapplied:?}");
    for key in ["packages", "extensions"] {
        assert!(
            unapplied.iter().any(|w| w.contains(&format!("`{key}`"))),
            "{key}: {unapplied:?}"
        );
    }
    assert!(
        Settings::in_memory(
            json!({"extensions": [], "skills": ["x"], "prompts": ["!y"], "themes": ["z"]})
        )
        .values()
        .unapplied()
        .is_empty()
    );
}

#[test]
fn new_keys_have_pi_defaults_and_wrong_types_are_named() {
    let s = Settings::in_memory(json!({}));
    let v = s.values();
    assert_eq!(v.double_escape_action(), DoubleEscapeAction::Tree);
    assert_eq!(v.tree_filter_mode(), TreeFilterMode::Default);
    assert_eq!(v.image_width_cells(), 60);
    assert_eq!((v.editor_padding_x(), v.autocomplete_max_visible()), (0, 5));
    assert_eq!(v.code_block_indent(), "  ");
    assert!(v.auto_resize_images() && v.enable_skill_commands());
    assert_eq!(v.thinking_budgets(), None);
    assert_eq!(v.session_dir(Path::new("/h")), None);
    let s = Settings::in_memory(json!({
        "sessionDir": 5, "treeFilterMode": "sideways", "thinkingBudgets": {"low": "many", "high": 9},
        "enabledModels": ["a"]
    }));
    assert_eq!(s.errors.len(), 3, "{:?}", s.errors);
    assert!(
        s.errors
            .iter()
            .any(|e| e.contains("\"thinkingBudgets.low\"")),
        "{:?}",
        s.errors
    );
    let v = s.values();
    assert_eq!(v.session_dir, None);
    assert_eq!(v.tree_filter_mode(), TreeFilterMode::Default);
    assert_eq!(v.thinking_budgets.high, Some(9));
    assert_eq!(v.enabled_models.as_deref(), Some(&["a".to_string()][..]));
}

#[test]
fn tilde_paths_expand_like_pi() {
    let home = Path::new("/home/u");
    assert_eq!(expand_tilde("~", home), Some(home.to_path_buf()));
    assert_eq!(expand_tilde("~/s", home), Some(home.join("s")));
    assert_eq!(
        expand_tilde("~other/s", home),
        Some(PathBuf::from("~other/s"))
    );
    assert_eq!(expand_tilde("/abs", home), Some(PathBuf::from("/abs")));
    assert_eq!(expand_tilde("", home), None);
}

#[test]
fn default_thinking_level_max_is_read() {
    let s = Settings::in_memory(json!({"defaultThinkingLevel": "max"}));
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    assert_eq!(s.values().default_thinking_level(), ThinkingLevel::Max);
}
