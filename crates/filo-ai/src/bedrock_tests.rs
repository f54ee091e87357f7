use super::*;

fn model(id: &str, base_url: &str) -> Model {
    serde_json::from_value(json!({
        "id": id, "name": id, "api": "bedrock-converse-stream", "provider": "amazon-bedrock",
        "baseUrl": base_url, "reasoning": true, "input": ["text", "image"],
        "contextWindow": 200000, "maxTokens": 64000
    }))
    .unwrap()
}

const STD: &str = "https://bedrock-runtime.us-east-1.amazonaws.com";

#[test]
fn endpoints_and_regions_as_pi_resolves_them() {
    let m = model("anthropic.claude-sonnet-4-20250514-v1:0", STD);
    let t = |vars: &[(&str, &str)]| target(&m, &Env::from_vars(vars.iter().copied())).unwrap();
    // Nothing configured: the catalog's standard URL and its region.
    assert_eq!(
        t(&[]),
        Target {
            endpoint: STD.into(),
            region: "us-east-1".into()
        }
    );
    // A configured region wins over the catalog URL; endpoint overrides apply then.
    assert_eq!(
        t(&[("AWS_REGION", "eu-west-1")]).endpoint,
        "https://bedrock-runtime.eu-west-1.amazonaws.com"
    );
    assert_eq!(
        t(&[("AWS_DEFAULT_REGION", "cn-north-1")]).endpoint,
        "https://bedrock-runtime.cn-north-1.amazonaws.com.cn"
    );
    let over = t(&[
        ("AWS_REGION", "us-west-2"),
        ("AWS_ENDPOINT_URL", "http://generic"),
        ("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "http://127.0.0.1:9"),
    ]);
    assert_eq!(
        over,
        Target {
            endpoint: "http://127.0.0.1:9".into(),
            region: "us-west-2".into()
        }
    );
    // A custom (proxy) base URL is always used; the region defaults to us-east-1.
    let proxy = model("m", "http://127.0.0.1:7/bedrock");
    let t = target(&proxy, &Env::from_vars([("AWS_ENDPOINT_URL", "http://x")])).unwrap();
    assert_eq!(
        t,
        Target {
            endpoint: "http://127.0.0.1:7/bedrock".into(),
            region: "us-east-1".into()
        }
    );
    assert_eq!(
        standard_region("https://bedrock-runtime-fips.us-gov-west-1.amazonaws.com"),
        Some("us-gov-west-1".into())
    );
    assert_eq!(standard_region("https://example.com"), None);
}

#[test]
fn profile_region_needed_when_a_profile_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    std::fs::write(
        &config,
        "[profile work]\nregion = ap-northeast-1\n[profile bare]\n",
    )
    .unwrap();
    let m = model("anthropic.claude-sonnet-4-20250514-v1:0", STD);
    let env = |p: &str| {
        Env::from_vars([
            ("AWS_CONFIG_FILE", config.display().to_string()),
            ("AWS_PROFILE", p.to_string()),
        ])
    };
    let t = target(&m, &env("work")).unwrap();
    assert_eq!(t.region, "ap-northeast-1");
    assert_eq!(
        t.endpoint,
        "https://bedrock-runtime.ap-northeast-1.amazonaws.com"
    );
    let e = target(&m, &env("bare")).unwrap_err();
    assert!(e.to_string().contains("Region is missing"), "{e}");
}

#[test]
fn model_families() {
    assert!(is_claude(&model("us.anthropic.claude-opus-4-6-v1", STD)));
    assert!(!is_claude(&model("amazon.nova-pro-v1:0", STD)));
    assert!(is_adaptive(&model(
        "global.anthropic.claude-sonnet-4-6",
        STD
    )));
    assert!(!is_adaptive(&model(
        "anthropic.claude-sonnet-4-5-20250929-v1:0",
        STD
    )));
    let env = Env::default();
    assert!(caches(
        &model("anthropic.claude-3-7-sonnet-20250219-v1:0", STD),
        &env
    ));
    assert!(!caches(
        &model("anthropic.claude-3-haiku-20240307-v1:0", STD),
        &env
    ));
    let arn = model(
        "arn:aws:bedrock:us-east-1:1:application-inference-profile/x",
        STD,
    );
    assert!(!caches(&arn, &env));
    assert!(caches(
        &arn,
        &Env::from_vars([("AWS_BEDROCK_FORCE_CACHE", "1")])
    ));
}

#[test]
fn error_texts_as_pi_words_them() {
    let body = error_body(
        Some("ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"),
        r#"{"message":"Too many requests, please wait before trying again."}"#.into(),
    );
    assert_eq!(
        error_text(&body),
        "Throttling error: Too many requests, please wait before trying again."
    );
    assert_eq!(
        error_text(r#"{"__type":"com.amazon.coral.service#AccessDeniedException","Message":"no"}"#),
        "AccessDeniedException: no"
    );
    assert_eq!(error_text("not json"), "Unknown: UnknownError");
    assert_eq!(error_body(None, "plain".into()), "plain");
}
