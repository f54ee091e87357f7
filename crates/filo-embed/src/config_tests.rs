use serde_json::json;

use super::*;

#[test]
fn openclaw_keys_are_read_and_unknown_keys_kept() {
    let c = EmbedConfig::from_value(json!({
        "agents": {"defaults": {
            "model": {"primary": "anthropic/claude", "fallbacks": ["openai/gpt"]},
            "contextTokens": 100000, "timeoutSeconds": 30, "maxConcurrent": 8,
            "compaction": {"mode": "safeguard"}, "llm": {"idleTimeoutSeconds": 0}
        }, "list": [{"id": "ops", "workspace": "/w", "systemPrompt": "be brief"}]},
        "gateway": {"port": 18789},
        "somethingNew": true
    }));
    assert_eq!(
        c.defaults.model.primary.as_deref(),
        Some("anthropic/claude")
    );
    assert_eq!(c.defaults.model.fallbacks, vec!["openai/gpt"]);
    assert_eq!(c.defaults.context_tokens, Some(100_000));
    assert_eq!(c.timeout(), std::time::Duration::from_secs(30));
    assert_eq!(c.defaults.max_concurrent, Some(8));
    assert_eq!(c.defaults.compaction.mode, "safeguard");
    assert_eq!(c.defaults.compaction.reserve_tokens_floor, 20_000);
    assert_eq!(c.defaults.llm.idle_timeout_seconds, 0);
    assert_eq!(
        c.agent("ops").and_then(|a| a.system_prompt.as_deref()),
        Some("be brief")
    );
    assert_eq!(c.pointer("/gateway/port"), Some(&json!(18789)));
    assert!(c.memory.enabled);
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
}

#[test]
fn a_plain_model_string_is_the_primary() {
    let c = EmbedConfig::from_value(json!({"agents": {"defaults": {"model": "mock/m"}}}));
    assert_eq!(c.defaults.model.primary.as_deref(), Some("mock/m"));
    assert!(c.defaults.model.fallbacks.is_empty());
}

#[test]
fn a_section_of_the_wrong_shape_falls_back_with_a_warning() {
    let c = EmbedConfig::from_value(json!({
        "agents": {"defaults": {"timeoutSeconds": "soon", "llm": {"idleTimeoutSeconds": 5}}},
        "memory": "off"
    }));
    assert_eq!(
        c.timeout(),
        std::time::Duration::from_secs(DEFAULT_TIMEOUT_SECONDS)
    );
    assert_eq!(c.defaults.llm.idle_timeout_seconds, 5);
    assert!(c.memory.enabled);
    assert_eq!(c.warnings.len(), 2, "{:?}", c.warnings);
    assert!(c.warnings[0].starts_with("memory:") || c.warnings[1].starts_with("memory:"));
    assert!(
        c.warnings
            .iter()
            .any(|w| w.starts_with("agents.defaults.timeoutSeconds:"))
    );
}

#[test]
fn a_missing_file_is_the_default_and_a_broken_one_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = EmbedConfig::load(&dir.path().join(CONFIG_FILE)).unwrap();
    assert!(missing.agents.is_empty());
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "{ not json").unwrap();
    let err = EmbedConfig::load(&broken).unwrap_err().to_string();
    assert!(err.contains("is not valid JSON"), "{err}");
    std::fs::write(
        &broken,
        r#"{"agents": {"defaults": {"timeoutSeconds": "soon"}}}"#,
    )
    .unwrap();
    let before = std::fs::read(&broken).unwrap();
    let typed = EmbedConfig::load(&broken).unwrap();
    let shown = broken.display().to_string();
    assert_eq!(typed.warnings.len(), 1, "{:?}", typed.warnings);
    assert!(
        typed.warnings[0].starts_with(&format!("{shown}: agents.defaults.timeoutSeconds:")),
        "{:?}",
        typed.warnings
    );
    assert_eq!(std::fs::read(&broken).unwrap(), before, "never rewritten");
    std::fs::write(&broken, "[1]").unwrap();
    assert!(matches!(
        EmbedConfig::load(&broken),
        Err(ConfigError::NotObject { .. })
    ));
}
