use serde_json::json;

use super::*;

#[test]
fn gemini_literal_union_vectors() {
    // [OC-test] clean-for-gemini.test.ts
    let cases = [
        (
            json!({"anyOf": [{"type": "string", "const": "foo"}, {"type": "string", "const": "bar"}]}),
            json!({"type": "string", "enum": ["foo", "bar"]}),
        ),
        (
            json!({"anyOf": [{"type": ["string"], "const": "foo"}, {"type": ["string"], "const": "bar"}]}),
            json!({"type": "string", "enum": ["foo", "bar"]}),
        ),
        (
            json!({"anyOf": [{"type": "string", "const": "foo"}, {"type": ["string"], "const": "bar"}, {"type": "string", "const": "baz"}]}),
            json!({"type": "string", "enum": ["foo", "bar", "baz"]}),
        ),
        (
            json!({"anyOf": [{"type": ["string", "null"], "const": "foo"}, {"type": ["string", "null"], "const": "bar"}]}),
            json!({"type": "string", "enum": ["foo", "bar"]}),
        ),
    ];
    for (input, want) in cases {
        assert_eq!(clean_schema_for_gemini(&input), want, "{input}");
    }
    let mixed = clean_schema_for_gemini(
        &json!({"anyOf": [{"type": ["string"], "const": "foo"}, {"type": ["number"], "const": 42}]}),
    );
    assert!(
        mixed.get("anyOf").is_some() && mixed.get("enum").is_none(),
        "{mixed}"
    );
}

#[test]
fn gemini_cleaning_rules() {
    let cases = [
        // unsupported keywords removed at every level, meta kept
        (
            json!({"type": "object", "$schema": "x", "additionalProperties": false, "title": "T",
                   "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 5, "description": "d"},
                                  "s": {"type": "string", "pattern": "^a", "format": "uri", "minLength": 1, "examples": ["a"]},
                                  "minLength": {"type": "array", "items": {"type": "string", "maxLength": 3}, "minItems": 1, "uniqueItems": true}}}),
            json!({"type": "object", "title": "T",
                   "properties": {"n": {"type": "integer", "description": "d"}, "s": {"type": "string"},
                                  "minLength": {"type": "array", "items": {"type": "string"}}}}),
        ),
        // const → enum; nullable type arrays
        (json!({"const": 3}), json!({"enum": [3]})),
        (
            json!({"type": ["string", "null"]}),
            json!({"type": "string"}),
        ),
        (
            json!({"type": ["string", "number", "null"]}),
            json!({"type": ["string", "number"]}),
        ),
        // type dropped next to a union that stays
        (
            json!({"type": "object", "anyOf": [{"type": "string"}, {"type": "number"}]}),
            json!({"anyOf": [{"type": "string"}, {"type": "number"}]}),
        ),
        // a union with a null variant and one other: the other replaces it, with the meta
        (
            json!({"description": "maybe", "anyOf": [{"type": "string", "minLength": 2}, {"type": "null"}]}),
            json!({"type": "string", "description": "maybe"}),
        ),
        // a single non-null variant without a null to strip stays a union
        (
            json!({"anyOf": [{"type": "string"}]}),
            json!({"anyOf": [{"type": "string"}]}),
        ),
        // null variants are dropped from a union that stays
        (
            json!({"oneOf": [{"type": "string"}, {"const": null}, {"type": "number"}]}),
            json!({"oneOf": [{"type": "string"}, {"type": "number"}]}),
        ),
        // local refs inlined ($defs and definitions, JSON-pointer escapes), meta of the ref kept
        (
            json!({"type": "object", "$defs": {"a/b": {"type": "string", "format": "email"}},
                   "properties": {"x": {"$ref": "#/$defs/a~1b", "description": "mail"}}}),
            json!({"type": "object", "properties": {"x": {"type": "string", "description": "mail"}}}),
        ),
        (
            json!({"definitions": {"n": {"type": "number"}}, "properties": {"y": {"$ref": "#/definitions/n"}}}),
            json!({"properties": {"y": {"type": "number"}}}),
        ),
        // unresolved refs become {} with meta; cycles become {}
        (
            json!({"properties": {"z": {"$ref": "#/$defs/missing", "title": "Z"}}}),
            json!({"properties": {"z": {"title": "Z"}}}),
        ),
        (
            json!({"$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}}, "$ref": "#/$defs/node"}),
            json!({"type": "object", "properties": {"next": {}}}),
        ),
        // allOf and array items are cleaned
        (
            json!({"allOf": [{"minimum": 1, "type": "number"}]}),
            json!({"allOf": [{"type": "number"}]}),
        ),
        (
            json!({"items": [{"const": "a"}, {"format": "x"}]}),
            json!({"items": [{"enum": ["a"]}, {}]}),
        ),
    ];
    for (input, want) in cases {
        assert_eq!(clean_schema_for_gemini(&input), want, "{input}");
    }
    assert_eq!(clean_schema_for_gemini(&json!("str")), json!("str"));
}

#[test]
fn dialect_table() {
    for (provider, model, want) in [
        (Some("google"), None, SchemaDialect::Gemini),
        (Some("google-gemini-cli"), None, SchemaDialect::Gemini),
        (Some("Gemini"), None, SchemaDialect::Gemini),
        (
            Some("google-vertex-anthropic"),
            Some("claude"),
            SchemaDialect::Standard,
        ),
        (Some("xai"), Some("grok-4"), SchemaDialect::Xai),
        (Some("x-ai"), None, SchemaDialect::Xai),
        (Some("openrouter"), Some("x-ai/grok-4"), SchemaDialect::Xai),
        (
            Some("openrouter"),
            Some("openai/gpt-5"),
            SchemaDialect::Standard,
        ),
        (Some("venice"), Some("grok-41-fast"), SchemaDialect::Xai),
        (Some("anthropic"), None, SchemaDialect::Standard),
        (None, None, SchemaDialect::Standard),
    ] {
        assert_eq!(
            SchemaDialect::for_model(provider, model),
            want,
            "{provider:?} {model:?}"
        );
    }
}

#[test]
fn normalize_shapes() {
    let plain = json!({"type": "object", "properties": {"q": {"type": "string", "minLength": 1}}, "required": ["q"]});
    // standard providers: unchanged; xAI strips length constraints; Gemini cleans
    assert_eq!(
        normalize_tool_parameters(&plain, Some("anthropic"), Some("claude")),
        plain
    );
    assert_eq!(
        normalize_tool_parameters(&plain, Some("xai"), Some("grok-4")),
        json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]})
    );
    assert_eq!(
        normalize_tool_parameters(&plain, Some("google"), Some("gemini-2.5-pro")),
        json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]})
    );
    // missing type with properties or required gets type object
    assert_eq!(
        normalize_tool_parameters(
            &json!({"properties": {"a": {"type": "string"}}}),
            Some("openai"),
            None
        ),
        json!({"properties": {"a": {"type": "string"}}, "type": "object"})
    );
    assert_eq!(
        normalize_tool_parameters(&json!({"required": []}), None, None),
        json!({"required": [], "type": "object"})
    );
    // not an object schema / no recognisable shape: unchanged
    for odd in [
        json!(null),
        json!("x"),
        json!({"type": "string"}),
        json!({"description": "free"}),
    ] {
        assert_eq!(normalize_tool_parameters(&odd, Some("openai"), None), odd);
    }
}

#[test]
fn top_level_unions_are_flattened() {
    let union = json!({
        "title": "Act",
        "description": "an action",
        "anyOf": [
            {"type": "object", "properties": {"action": {"type": "string", "const": "send", "description": "what"}, "to": {"type": "string"}}, "required": ["action", "to"]},
            {"type": "object", "properties": {"action": {"type": "string", "const": "read"}, "id": {"type": "number"}}, "required": ["action", "id"]},
            {"type": "object", "properties": {"action": {"type": "string", "enum": ["send", "list"]}}, "required": ["action"]},
            "junk"
        ]
    });
    let want = json!({
        "type": "object",
        "title": "Act",
        "description": "an action",
        "properties": {
            "action": {"description": "what", "type": "string", "enum": ["send", "read", "list"]},
            "to": {"type": "string"},
            "id": {"type": "number"}
        },
        "required": ["action"],
        "additionalProperties": true
    });
    let got = normalize_tool_parameters(&union, Some("openai"), Some("gpt-5"));
    assert_eq!(got, want);
    assert!(got.get("anyOf").is_none(), "the original union is not kept");
    // Gemini then drops additionalProperties; own required wins; oneOf works the same
    let one_of = json!({"required": ["k"], "additionalProperties": false, "oneOf": [
        {"properties": {"k": {"type": "string"}, "n": {"const": 1}}},
        {"properties": {"k": {"type": "string", "description": "second"}, "n": {"const": "one"}}}
    ]});
    assert_eq!(
        normalize_tool_parameters(&one_of, Some("google"), None),
        json!({"type": "object", "properties": {"k": {"type": "string"}, "n": {"enum": [1, "one"]}}, "required": ["k"]})
    );
    // a property defined with an enum only on one side still merges (source behaviour)
    let one_sided = json!({"anyOf": [
        {"properties": {"m": {"type": "string", "title": "M"}}},
        {"properties": {"m": {"enum": ["a", "b"]}}}
    ]});
    assert_eq!(
        normalize_tool_parameters(&one_sided, None, None)["properties"]["m"],
        json!({"title": "M", "type": "string", "enum": ["a", "b"]})
    );
    // no object variants: keeps the schema's own properties (or {}) and no required
    assert_eq!(
        normalize_tool_parameters(&json!({"anyOf": [{"type": "string"}]}), None, None),
        json!({"type": "object", "properties": {}, "additionalProperties": true})
    );
}

#[test]
fn xai_stripping_is_schema_aware() {
    let input = json!({"type": "object", "properties": {
        "maxItems": {"type": "array", "maxItems": 3, "items": {"type": "string", "minLength": 1}},
        "u": {"anyOf": [{"type": "string", "maxLength": 2}, {"type": "array", "minContains": 1, "contains": {"type": "string", "maxLength": 1}}]}
    }, "$defs": {"d": {"type": "string", "minLength": 4}}});
    let want = json!({"type": "object", "properties": {
        "maxItems": {"type": "array", "items": {"type": "string"}},
        "u": {"anyOf": [{"type": "string"}, {"type": "array", "contains": {"type": "string"}}]}
    }, "$defs": {"d": {"type": "string"}}});
    assert_eq!(strip_keywords(input, XAI_UNSUPPORTED_KEYWORDS), want);
}
