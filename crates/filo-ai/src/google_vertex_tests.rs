use super::*;

fn model(id: &str, base: &str) -> Model {
    serde_json::from_value(json!({
        "id": id, "name": id, "api": "google-vertex", "provider": "google-vertex",
        "baseUrl": base, "reasoning": true
    }))
    .unwrap()
}

const TEMPLATE: &str = "https://{location}-aiplatform.googleapis.com";

#[test]
fn urls_as_the_genai_sdk_builds_them() {
    let env = |loc: &str| {
        Env::from_vars([
            ("GOOGLE_CLOUD_PROJECT", "proj"),
            ("GOOGLE_CLOUD_LOCATION", loc),
        ])
    };
    let action = "publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse";
    let m = model("gemini-2.5-flash", TEMPLATE);
    assert_eq!(
        request_url(&m, &env("us-central1"), false).unwrap(),
        format!(
            "https://us-central1-aiplatform.googleapis.com/v1/projects/proj/locations/us-central1/{action}"
        )
    );
    assert_eq!(
        request_url(&m, &env("global"), false).unwrap(),
        format!("https://aiplatform.googleapis.com/v1/projects/proj/locations/global/{action}")
    );
    assert_eq!(
        request_url(&m, &env("eu"), false).unwrap(),
        format!("https://aiplatform.eu.rep.googleapis.com/v1/projects/proj/locations/eu/{action}")
    );
    assert_eq!(
        request_url(&m, &Env::default(), true).unwrap(),
        format!("https://aiplatform.googleapis.com/v1/{action}")
    );
    let custom = model("gemini-2.5-flash", "http://127.0.0.1:9/proxy/");
    assert_eq!(
        request_url(&custom, &Env::default(), true).unwrap(),
        format!("http://127.0.0.1:9/proxy/v1/{action}")
    );
    let versioned = model("gemini-2.5-flash", "http://127.0.0.1:9/v1beta1");
    assert_eq!(
        request_url(&versioned, &env("x"), false).unwrap(),
        format!("http://127.0.0.1:9/v1beta1/{action}")
    );
    let err = request_url(&m, &Env::from_vars([("GOOGLE_CLOUD_PROJECT", "p")]), false);
    assert_eq!(
        err.unwrap_err().to_string(),
        "Invalid request: Vertex AI requires a location. Set GOOGLE_CLOUD_LOCATION or pass location in options."
    );
    let err = request_url(&custom, &Env::default(), false).unwrap_err();
    assert!(err.to_string().contains("requires a project ID"), "{err}");
}

#[test]
fn version_segments() {
    for (base, want) in [
        ("https://h/v1", true),
        ("https://h/api/v1beta/", true),
        ("https://h/v1beta1", true),
        ("https://h/video", false),
        ("https://h/v", false),
        ("https://h/vbeta", false),
    ] {
        assert_eq!(names_version(base), want, "{base}");
    }
}

#[test]
fn thinking_off_as_pi_disables_it() {
    assert_eq!(
        disabled_thinking(&model("gemini-3-pro-preview", "")),
        json!({"thinkingLevel": "LOW"})
    );
    assert_eq!(
        disabled_thinking(&model("gemini-3.1-flash", "")),
        json!({"thinkingLevel": "MINIMAL"})
    );
    assert_eq!(
        disabled_thinking(&model("gemini-2.5-pro", "")),
        json!({"thinkingBudget": 0})
    );
}

#[test]
fn placeholder_keys_mean_credentials() {
    assert_eq!(usable_key(Some(" k ")), Some("k"));
    for k in ["", "<authenticated>", "gcp-vertex-credentials", "<any>"] {
        assert_eq!(usable_key(Some(k)), None, "{k}");
    }
    assert_eq!(usable_key(None), None);
}

#[test]
fn credential_files_are_read_or_refused_clearly() {
    let dir = std::env::temp_dir().join(format!("filo-adc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("adc.json");
    let env = Env::from_vars([("GOOGLE_APPLICATION_CREDENTIALS", file.to_str().unwrap())]);
    let err = load_adc(&env).unwrap_err().to_string();
    assert!(
        err.contains("cannot read Google Application Default Credentials"),
        "{err}"
    );
    std::fs::write(&file, r#"{"type": "service_account", "client_email": "x"}"#).unwrap();
    let err = load_adc(&env).unwrap_err().to_string();
    assert!(err.contains("type `service_account`"), "{err}");
    std::fs::write(&file, "{oops").unwrap();
    assert!(
        load_adc(&env)
            .unwrap_err()
            .to_string()
            .contains("not valid JSON")
    );
    std::fs::write(
        &file,
        r#"{"type": "authorized_user", "client_id": "id", "client_secret": "s", "refresh_token": "r"}"#,
    )
    .unwrap();
    assert_eq!(
        load_adc(&env).unwrap(),
        AuthorizedUser {
            client_id: "id".into(),
            client_secret: "s".into(),
            refresh_token: "r".into(),
            token_uri: GOOGLE_TOKEN_URL.into(),
        }
    );
    let home = Env::from_vars([("HOME", "/home/u")]);
    assert_eq!(
        adc_path(&home).unwrap(),
        PathBuf::from("/home/u/.config/gcloud/application_default_credentials.json")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
