use super::*;

fn builtin() -> ProviderRegistry {
    ProviderRegistry::builtin().unwrap()
}

#[test]
fn custom_provider_with_models() {
    let mut r = builtin();
    r.apply_models_json(
        r#"{"providers":{"my-vllm":{"baseUrl":"http://127.0.0.1:8000/v1","apiKey":"VLLM_KEY",
            "api":"openai-completions","authHeader":true,"headers":{"X-Team":"TEAM_VAR"},
            "compat":{"supportsDeveloperRole":false},
            "models":[{"id":"qwen","contextWindow":32768,"compat":{"maxTokensField":"max_tokens"}},
                      {"id":"claude-proxy","api":"anthropic-messages","name":"Proxy",
                       "cost":{"input":1,"output":2,"cacheRead":0.1,"cacheWrite":1.5}}]}}}"#,
    )
    .unwrap();
    let m = r.model("my-vllm", "qwen").unwrap();
    assert_eq!(m.name, "qwen");
    assert_eq!(m.api, "openai-completions");
    assert_eq!(m.context_window, 32768);
    assert_eq!(m.max_tokens, 16384);
    assert_eq!(
        m.compat,
        Some(serde_json::json!({"supportsDeveloperRole": false, "maxTokensField": "max_tokens"}))
    );
    let p = r.model("my-vllm", "claude-proxy").unwrap();
    assert_eq!(p.api, "anthropic-messages");
    assert!((p.cost.cache_write - 1.5).abs() < 1e-12);
    let env = crate::env::Env::from_vars([("VLLM_KEY", "secret"), ("TEAM_VAR", "blue")]);
    assert_eq!(r.api_key("my-vllm", &env).as_deref(), Some("secret"));
    let h = r.provider_headers("my-vllm", Some("secret"), &env);
    assert_eq!(h.get("X-Team").map(String::as_str), Some("blue"));
    assert_eq!(
        h.get("Authorization").map(String::as_str),
        Some("Bearer secret")
    );
}

#[test]
fn overrides_and_base_url_for_builtins() {
    let mut r = builtin();
    r.apply_models_json(
        r#"{"providers":{"anthropic":{"baseUrl":"http://127.0.0.1:9/proxy",
            "modelOverrides":{"claude-sonnet-4-5":{"name":"Sonnet (proxy)","cost":{"input":9},"maxTokens":1000},
                              "no-such-model":{"name":"ignored"}}}}}"#,
    )
    .unwrap();
    let m = r.model("anthropic", "claude-sonnet-4-5").unwrap();
    assert_eq!(m.base_url, "http://127.0.0.1:9/proxy");
    assert_eq!(m.name, "Sonnet (proxy)");
    assert!((m.cost.input - 9.0).abs() < 1e-12);
    assert!((m.cost.output - 15.0).abs() < 1e-12);
    assert_eq!(m.max_tokens, 1000);
    let other = r.model("anthropic", "claude-haiku-4-5").unwrap();
    assert_eq!(other.base_url, "http://127.0.0.1:9/proxy");
    assert!(r.model("anthropic", "no-such-model").is_none());
}

#[test]
fn upsert_replaces_same_id() {
    let mut r = builtin();
    let before = r.models().len();
    r.apply_models_json(
        r#"{"providers":{"openai":{"baseUrl":"https://api.openai.com/v1","apiKey":"K","api":"openai-responses",
            "models":[{"id":"gpt-4o","name":"Mine"},{"id":"brand-new"}]}}}"#,
    )
    .unwrap();
    assert_eq!(r.models().len(), before + 1);
    assert_eq!(r.model("openai", "gpt-4o").unwrap().name, "Mine");
}

#[test]
fn invalid_providers_are_skipped_with_pi_messages() {
    let mut r = builtin();
    let before = r.clone();
    let cases = [
        (
            r#"{"providers":{"x":{"models":[{"id":"a"}]}}}"#,
            "Invalid models.json schema: Provider x: \"baseUrl\" is required when defining custom models.",
        ),
        (
            r#"{"providers":{"x":{"baseUrl":"http://h","models":[{"id":"a"}]}}}"#,
            "Invalid models.json schema: Provider x: \"apiKey\" is required when defining custom models.",
        ),
        (
            r#"{"providers":{"x":{"apiKey":"k"}}}"#,
            "Invalid models.json schema: Provider x: must specify \"baseUrl\", \"headers\", \"compat\", \"modelOverrides\", or \"models\".",
        ),
        (
            r#"{"providers":{"x":{"baseUrl":"http://h","apiKey":"k","models":[{"id":"a"}]}}}"#,
            "Invalid models.json schema: Provider x, model a: no \"api\" specified.",
        ),
        (
            r#"{"providers":{"x":{"baseUrl":"http://h","apiKey":"k","api":"openai-completions","models":[{"id":"a","maxTokens":0}]}}}"#,
            "Invalid models.json schema: Provider x, model a: \"maxTokens\" must be greater than 0.",
        ),
        (
            r#"{"providers":{"x":{"baseUrl":"http://h","apiKey":"k","api":"openai-completions","models":[{"id":"a","cost":{"input":1}}]}}}"#,
            "",
        ),
    ];
    for (text, expected) in cases {
        let skipped = r.apply_models_json(text).unwrap();
        assert_eq!(skipped.len(), 1, "{text}");
        assert_eq!(skipped[0].provider, "x");
        if expected.is_empty() {
            assert!(
                matches!(&skipped[0].error, RegistryError::Schema(m) if m.starts_with("Provider x: ")),
                "{}",
                skipped[0].error
            );
        } else {
            assert_eq!(skipped[0].error.to_string(), expected);
        }
        assert_eq!(r, before);
    }
    let err = r.apply_models_json("{not json").unwrap_err();
    assert!(
        err.to_string().starts_with("Failed to parse models.json: "),
        "{err}"
    );
    assert!(matches!(
        r.apply_models_json(r#"{"providers":[1]}"#),
        Err(RegistryError::Schema(_))
    ));
    assert_eq!(r, before);
}

#[test]
fn one_bad_provider_does_not_hide_the_others() {
    let mut r = builtin();
    let skipped = r
        .apply_models_json(
            r#"{"providers":{
                "broken":{"baseUrl":"http://127.0.0.1:1/v1","api":"openai-completions","models":[{"id":"b"}]},
                "good":{"baseUrl":"http://127.0.0.1:2/v1","apiKey":"K","api":"openai-completions","models":[{"id":"g"}]},
                "typo":{"baseUrl":"http://127.0.0.1:3/v1","apiKey":"K","api":"openai-completions","models":[{"id":"t","maxTokens":"many"}]}}}"#,
        )
        .unwrap();
    let names: Vec<&str> = skipped.iter().map(|s| s.provider.as_str()).collect();
    assert_eq!(names, ["broken", "typo"]);
    assert_eq!(
        skipped[0].to_string(),
        "Invalid models.json schema: Provider broken: \"apiKey\" is required when defining custom models. (provider \"broken\" skipped)"
    );
    assert!(r.model("good", "g").is_some());
    assert!(r.provider("broken").is_none());
    assert!(r.provider("typo").is_none());
}

#[test]
fn builtin_providers_take_custom_models_without_key_url_or_api() {
    // pi 0.73: a built-in provider's custom models inherit its endpoint, protocol and auth.
    let mut r = builtin();
    let skipped = r
        .apply_models_json(r#"{"providers":{"anthropic":{"models":[{"id":"claude-next"}]}}}"#)
        .unwrap();
    assert!(skipped.is_empty(), "{skipped:?}");
    assert!(r.model("anthropic", "claude-next").is_some());
}

#[test]
fn comments_and_trailing_commas_are_accepted_as_pi_does() {
    let mut r = builtin();
    let skipped = r
        .apply_models_json(
            r#"{
  // my local server
  "providers": {
    "local": {
      "baseUrl": "http://127.0.0.1:8000/v1", // not a comment: "//" inside a string stays
      "apiKey": "a,}",
      "api": "openai-completions",
      "models": [{"id": "m1",}, {"id": "m2"},],
    },
  },
}"#,
        )
        .unwrap();
    assert!(skipped.is_empty(), "{skipped:?}");
    assert_eq!(
        r.model("local", "m1").unwrap().base_url,
        "http://127.0.0.1:8000/v1"
    );
    assert!(r.model("local", "m2").is_some());
    assert_eq!(r.provider("local").unwrap().api_key.as_deref(), Some("a,}"));
    // A comma that is not trailing is still an error.
    assert!(matches!(
        r.apply_models_json(r#"{"providers": {"x": {"models": [1,,2]}}}"#),
        Err(RegistryError::Parse(_))
    ));
}

#[test]
fn thinking_level_map_from_custom_models_and_merged_by_overrides() {
    use crate::model::ThinkingLevel;
    let mut r = builtin();
    let opus = r.model("anthropic", "claude-opus-4-6").unwrap();
    let catalog_map = opus.thinking_level_map.unwrap();
    assert_eq!(catalog_map.value(ThinkingLevel::Max), Some("max"));
    r.apply_models_json(
        r#"{"providers":{
            "anthropic":{"modelOverrides":{"claude-opus-4-6":{"thinkingLevelMap":{"minimal":null,"low":"medium"}}}},
            "proxy":{"baseUrl":"http://127.0.0.1:9","api":"anthropic-messages","apiKey":"K",
                     "models":[{"id":"claude-opus-4-7","reasoning":true,"thinkingLevelMap":{"xhigh":"xhigh","off":null,"max":"max"}}]}}}"#,
    )
    .unwrap();
    let merged = r
        .model("anthropic", "claude-opus-4-6")
        .unwrap()
        .thinking_level_map
        .unwrap();
    assert_eq!(merged.value(ThinkingLevel::Max), Some("max"), "kept");
    assert_eq!(merged.get(ThinkingLevel::Minimal), Some(None));
    assert_eq!(merged.value(ThinkingLevel::Low), Some("medium"));
    let custom = r.model("proxy", "claude-opus-4-7").unwrap();
    let map = custom.thinking_level_map.unwrap();
    assert_eq!(map.value(ThinkingLevel::Xhigh), Some("xhigh"));
    assert_eq!(map.get(ThinkingLevel::Off), Some(None));
    assert_eq!(
        map.value(ThinkingLevel::Max),
        Some("max"),
        "models.json thinkingLevelMap.max"
    );
    assert!(
        r.model("anthropic", "claude-sonnet-4-5")
            .unwrap()
            .thinking_level_map
            .is_none()
    );
}
