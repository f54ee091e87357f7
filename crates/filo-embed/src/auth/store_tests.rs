use super::*;

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

const SAMPLE: &str = r#"{
  "version": 1,
  "profiles": {
    "anthropic:work": {"type": "api_key", "provider": "anthropic", "key": "sk-w", "note": "kept"},
    "anthropic:default": {"type": "oauth", "provider": "anthropic", "access": "a", "refresh": "r", "expires": 5},
    "x:future": {"type": "keychain", "provider": "x", "ref": "k"}
  },
  "order": {"anthropic": ["anthropic:default", "anthropic:work"]},
  "lastGood": {"anthropic": "anthropic:work"},
  "usageStats": {"anthropic:work": {"lastUsed": 7, "errorCount": 2, "failureCounts": {"rate_limit": 2}, "futureField": true}},
  "futureTopLevel": {"a": 1}
}"#;

#[test]
fn parse_keeps_order_and_unknown_fields_and_round_trips() {
    let file = Path::new("auth-profiles.json");
    let store = AuthProfiles::parse(SAMPLE, file).unwrap();
    let ids: Vec<&str> = store.profiles.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(ids, ["anthropic:work", "anthropic:default", "x:future"]);
    assert_eq!(
        store.profile("x:future").unwrap().kind(),
        &CredentialKind::Other("keychain".into())
    );
    assert_eq!(
        store.profile("anthropic:work").unwrap().str_field("key"),
        Some("sk-w")
    );
    assert_eq!(store.usage_stats["anthropic:work"].error_count, Some(2));
    let text = store.to_json_string().unwrap();
    let again = AuthProfiles::parse(&text, file).unwrap();
    assert_eq!(again, store);
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["profiles"]["anthropic:work"]["note"], "kept");
    assert_eq!(json["usageStats"]["anthropic:work"]["futureField"], true);
    assert_eq!(json["futureTopLevel"]["a"], 1);
}

#[test]
fn malformed_inputs_name_file_and_key() {
    let cases = [
        ("{not json", "(document)"),
        ("[]", "(document)"),
        (r#"{"version": "one"}"#, "version"),
        (r#"{"profiles": []}"#, "profiles"),
        (r#"{"profiles": {"a:b": 3}}"#, "profiles.a:b"),
        (
            r#"{"profiles": {"a:b": {"provider": "a"}}}"#,
            "profiles.a:b",
        ),
        (
            r#"{"profiles": {"a:b": {"type": "api_key"}}}"#,
            "profiles.a:b",
        ),
        (
            r#"{"profiles": {"a:b": {"type": "api_key", "provider": "a", "key": 5}}}"#,
            "profiles.a:b",
        ),
        (
            r#"{"profiles": {"a:b": {"type": "token", "provider": "a", "token": "t", "expires": "soon"}}}"#,
            "profiles.a:b",
        ),
        (r#"{"order": {"a": "a:b"}}"#, "order.a"),
        (r#"{"lastGood": {"a": 1}}"#, "lastGood.a"),
        (
            r#"{"usageStats": {"a:b": {"errorCount": "x"}}}"#,
            "usageStats.a:b",
        ),
    ];
    for (text, key) in cases {
        let err = AuthProfiles::parse(text, Path::new("/s/auth-profiles.json")).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("/s/auth-profiles.json") && msg.contains(&format!("`{key}`")),
            "{text}: {msg}"
        );
    }
}

#[test]
fn malformed_file_is_never_rewritten() {
    let dir = tmp();
    let file = AuthProfileFile::in_agent_dir(dir.path());
    let bad = r#"{"profiles": {"a:b": {"type": "api_key", "provider": "a", "key": 5}}}"#;
    fs::write(file.path(), bad).unwrap();
    let err = file
        .update(|s| s.upsert_profile("c:d", Credential::api_key("c", "k")))
        .unwrap_err();
    assert!(
        matches!(err, AuthStoreError::Malformed { ref key, .. } if key == "profiles.a:b"),
        "{err}"
    );
    assert_eq!(fs::read_to_string(file.path()).unwrap(), bad);
    assert!(file.load().is_err());
}

#[test]
fn missing_file_loads_empty_and_update_creates_it_private() {
    let dir = tmp();
    let file = AuthProfileFile::in_agent_dir(&dir.path().join("agents/main"));
    assert_eq!(file.load().unwrap(), AuthProfiles::default());
    let ((), written) = file
        .update(|s| s.upsert_profile("a:1", Credential::api_key("a", "k")))
        .unwrap();
    assert_eq!(file.load().unwrap(), written);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(file.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    let leftovers: Vec<_> = fs::read_dir(file.path().parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn unchanged_update_does_not_rewrite() {
    let dir = tmp();
    let file = AuthProfileFile::in_agent_dir(dir.path());
    // Hand-written formatting that a rewrite would change.
    let text = r#"{"version":1,"profiles":{"a:1":{"type":"api_key","provider":"a","key":"k"}}}"#;
    fs::write(file.path(), text).unwrap();
    file.update(|s| s.profiles.len()).unwrap();
    assert_eq!(fs::read_to_string(file.path()).unwrap(), text);
}

const CHILD_ENV: &str = "FILO_EMBED_AUTH_STORE_CHILD";
const UPDATES_PER_WRITER: u32 = 40;

fn bump(file: &AuthProfileFile, writer: &str) {
    for _ in 0..UPDATES_PER_WRITER {
        file.update(|s| {
            let st = s
                .usage_stats
                .entry(format!("counter:{writer}"))
                .or_default();
            st.error_count = Some(st.error_count.unwrap_or(0) + 1);
            let total = s.usage_stats.entry("counter:total".into()).or_default();
            total.error_count = Some(total.error_count.unwrap_or(0) + 1);
        })
        .unwrap();
    }
}

/// Two processes (this test binary re-run as a child) and a thread with its own handle update the
/// same file at once; every increment must survive.
#[test]
fn concurrent_processes_lose_no_update() {
    if let Ok(spec) = std::env::var(CHILD_ENV) {
        let (path, writer) = spec.split_once('|').unwrap();
        bump(&AuthProfileFile::at(path), writer);
        return;
    }
    let dir = tmp();
    let file = AuthProfileFile::in_agent_dir(dir.path());
    let exe = std::env::current_exe().unwrap();
    let test_name = "auth::store::tests::concurrent_processes_lose_no_update";
    let children: Vec<_> = ["p1", "p2"]
        .iter()
        .map(|w| {
            std::process::Command::new(&exe)
                .args(["--exact", test_name, "--nocapture", "--test-threads=1"])
                .env(CHILD_ENV, format!("{}|{w}", file.path().display()))
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let thread_file = file.clone();
    let thread = std::thread::spawn(move || bump(&thread_file, "t1"));
    bump(&file, "main");
    thread.join().unwrap();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let store = file.load().unwrap();
    for w in ["p1", "p2", "t1", "main"] {
        assert_eq!(
            store.usage_stats[&format!("counter:{w}")].error_count,
            Some(UPDATES_PER_WRITER),
            "{w}"
        );
    }
    assert_eq!(
        store.usage_stats["counter:total"].error_count,
        Some(4 * UPDATES_PER_WRITER)
    );
}
