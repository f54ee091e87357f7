use super::*;
use oauth::TokenEndpoints;
use serde_json::json;

fn no_env(_: &str) -> Option<String> {
    None
}

#[test]
fn priority_runtime_stored_oauth_env_fallback() {
    let env = |k: &str| (k == "MY_KEY").then(|| "from-env-var".to_string());
    let env_for = |p: &str| (p == "openai").then(|| "sk-env".to_string());
    let mut a = AuthStorage::in_memory(json!({
        "anthropic": {"type": "api_key", "key": "MY_KEY"},
        "google": {"type": "oauth", "access": "tok", "refresh": "r", "expires": 1000},
        "xai": {"type": "api_key", "key": "literal"},
        "groq": {"type": "api_key", "key": "!printf stored-cmd"}
    }));
    assert_eq!(
        a.api_key("groq", 0, &env, &env_for, None).as_deref(),
        Some("stored-cmd")
    );
    assert_eq!(
        a.api_key("anthropic", 0, &env, &env_for, None).as_deref(),
        Some("from-env-var")
    );
    assert_eq!(
        a.api_key("xai", 0, &env, &env_for, None).as_deref(),
        Some("literal")
    );
    assert_eq!(
        a.api_key("google", 999, &env, &env_for, None).as_deref(),
        Some("tok")
    );
    assert_eq!(a.api_key("google", 1000, &env, &env_for, None), None);
    assert_eq!(
        a.api_key("openai", 0, &env, &env_for, None).as_deref(),
        Some("sk-env")
    );
    assert_eq!(
        a.api_key("custom", 0, &env, &env_for, Some("!echo cmd-key"))
            .as_deref(),
        Some("cmd-key")
    );
    a.set_runtime_api_key("xai", "override");
    assert_eq!(
        a.api_key("xai", 0, &no_env, &no_env, None).as_deref(),
        Some("override")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_commands_run_once_with_a_time_limit() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("runs");
    let cmd = format!("echo run >> {}; echo sk-from-cmd", log.display());
    let commands = KeyCommands::with_timeout(Duration::from_millis(300));
    assert_eq!(commands.run(&cmd).as_deref(), Ok("sk-from-cmd"));
    assert_eq!(commands.run(&cmd).as_deref(), Ok("sk-from-cmd"));
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "run\n", "cached");
    // A command that never finishes is killed (with what it started) at the limit.
    let pid_file = dir.path().join("pid");
    let hang = format!("sleep 30 & echo $! > {}; wait", pid_file.display());
    assert_eq!(
        commands.run(&hang),
        Err(KeyCommandError::TimedOut(Duration::from_millis(300)))
    );
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let stat = format!("/proc/{}/stat", pid.trim());
    // Dead = gone or a zombie waiting for its new parent to reap it; SIGKILL lands at once,
    // the poll only covers the scheduler.
    let dead = || {
        std::fs::read_to_string(&stat).map_or(true, |s| {
            s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
    };
    for _ in 0..200 {
        if dead() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(dead(), "the command's child was left running");
    assert_eq!(
        commands.run("exit 3"),
        Err(KeyCommandError::Failed("exit status: 3".into()))
    );
    assert_eq!(commands.run("true"), Err(KeyCommandError::Empty));
}

#[test]
fn writes_are_0600_and_merge_with_disk() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent").join("auth.json");
    let mut a = AuthStorage::load(&path);
    a.set_api_key("openai", "sk-1").unwrap();
    std::fs::write(
        &path,
        r#"{"openai":{"type":"api_key","key":"sk-1"},"groq":{"type":"api_key","key":"g"}}"#,
    )
    .unwrap();
    a.set_api_key("anthropic", "sk-a").unwrap();
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(v.as_object().unwrap().len(), 3, "external edit kept");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}

#[test]
fn credentials_read_from_pi_are_written_to_filo_and_pi_stays_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let pi = dir.path().join("pi").join("auth.json");
    let own = dir.path().join("filo").join("agent").join("auth.json");
    std::fs::create_dir_all(pi.parent().unwrap()).unwrap();
    let pi_text = r#"{"groq":{"type":"api_key","key":"g-from-pi"}}"#;
    std::fs::write(&pi, pi_text).unwrap();
    let mut a = AuthStorage::load_from(&own, &pi);
    let key = |a: &AuthStorage, p: &str| a.api_key(p, 0, &no_env, &no_env, None);
    assert_eq!(key(&a, "groq").as_deref(), Some("g-from-pi"));
    a.set_api_key("openai", "sk-1").unwrap();
    a.remove("groq").unwrap();
    assert_eq!(std::fs::read_to_string(&pi).unwrap(), pi_text);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&own).unwrap()).unwrap();
    assert_eq!(v, json!({"openai": {"type": "api_key", "key": "sk-1"}}));
    // A second storage seeded from pi after filo has its own file merges into filo's.
    let mut b = AuthStorage::load_from(&own, &pi);
    b.set_api_key("mistral", "m").unwrap();
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&own).unwrap()).unwrap();
    assert_eq!(v.as_object().unwrap().len(), 2, "{v}");
    assert_eq!(std::fs::read_to_string(&pi).unwrap(), pi_text);
}

#[test]
fn an_unreadable_pi_file_is_named_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let pi = dir.path().join("pi-auth.json");
    let own = dir.path().join("own").join("auth.json");
    std::fs::write(&pi, "{broken").unwrap();
    let mut a = AuthStorage::load_from(&own, &pi);
    assert_eq!(a.errors.len(), 1);
    let err = a.set_api_key("openai", "sk").unwrap_err();
    assert!(
        matches!(&err, CoreError::UnreadableNotWritten { path, .. } if *path == pi),
        "{err}"
    );
    assert!(!own.exists());
    assert_eq!(std::fs::read_to_string(&pi).unwrap(), "{broken");
}

mod refresh {
    use super::*;
    use filo_testkit::{TokenConfig, TokenEndpoint};

    fn endpoints(t: &TokenEndpoint) -> TokenEndpoints {
        TokenEndpoints {
            anthropic: t.token_url(),
            openai_codex: t.token_url(),
            github_copilot: Some(t.copilot_url()),
        }
    }

    fn storage(path: &Path, t: &TokenEndpoint) -> AuthStorage {
        let mut a = AuthStorage::load(path);
        a.set_token_endpoints(endpoints(t));
        a
    }

    fn key(a: &AuthStorage, provider: &str) -> Option<String> {
        a.api_key(provider, filo_ai::client::now_ms(), &no_env, &no_env, None)
    }

    fn read(path: &Path) -> Value {
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_expired_credential_is_refreshed_and_merged_into_the_file() {
        let t = TokenEndpoint::start(TokenConfig::new("r-0", "sk-ant-oat01-new-")).await;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("auth.json");
        let before = json!({
            "openai": {"type": "api_key", "key": "sk-o"},
            "anthropic": {"type": "oauth", "access": "sk-ant-oat01-old", "refresh": "r-0",
                          "expires": 1000, "scopes": ["user:inference"]},
            "x-unknown": {"type": "something-else", "note": 1}
        });
        std::fs::write(&path, before.to_string()).unwrap();
        let a = storage(&path, &t);
        let started = filo_ai::client::now_ms();
        assert_eq!(key(&a, "anthropic").as_deref(), Some("sk-ant-oat01-new-1"));
        let calls = t.calls();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].content_type.as_deref(), Some("application/json"));
        assert_eq!(calls[0].fields["grant_type"], "refresh_token");
        assert_eq!(
            calls[0].fields["client_id"],
            "9d1c250a-e61b-44d9-88ed-5944d1962f5e"
        );
        let after = read(&path);
        let cred = &after["anthropic"];
        assert_eq!(cred["access"], "sk-ant-oat01-new-1");
        assert_eq!(cred["refresh"], "refresh-1");
        assert_eq!(
            cred["scopes"],
            json!(["user:inference"]),
            "unknown fields kept"
        );
        let expires = cred["expires"].as_i64().unwrap();
        // expires_in 3600 s, stored five minutes early.
        let want = started + 3_600_000 - 300_000;
        assert!(
            (want..want + 60_000).contains(&expires),
            "{expires} vs {want}"
        );
        assert_eq!(after["openai"], before["openai"]);
        assert_eq!(after["x-unknown"], before["x-unknown"]);
        assert!(!dir.path().join("auth.json.lock").exists(), "lock released");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        // Now fresh: used as is, by this storage and its clones.
        assert_eq!(
            key(&a.clone(), "anthropic").as_deref(),
            Some("sk-ant-oat01-new-1")
        );
        assert_eq!(t.calls().len(), 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_refresh_made_by_another_process_meanwhile_is_used() {
        let t = TokenEndpoint::start(TokenConfig::new("r-0", "new-")).await;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("auth.json");
        let expired = json!({"anthropic": {"type": "oauth", "access": "old", "refresh": "r-0", "expires": 1}});
        std::fs::write(&path, expired.to_string()).unwrap();
        let a = storage(&path, &t);
        // Another process refreshed after this one loaded the file.
        let far = filo_ai::client::now_ms() + 3_600_000;
        let theirs = json!({"anthropic": {"type": "oauth", "access": "theirs", "refresh": "r-9", "expires": far}});
        std::fs::write(&path, theirs.to_string()).unwrap();
        assert_eq!(key(&a, "anthropic").as_deref(), Some("theirs"));
        assert!(t.calls().is_empty(), "no second refresh");
        assert_eq!(read(&path), theirs);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_refresh_names_the_provider_and_leaves_the_file_untouched() {
        let body = r#"{"error":"invalid_grant","error_description":"Refresh token revoked"}"#;
        let t = TokenEndpoint::start(TokenConfig::new("r-0", "new-").failing(400, body)).await;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("auth.json");
        let text = "{\n  \"anthropic\": {\"type\": \"oauth\", \"access\": \"old\", \"refresh\": \"r-0\", \"expires\": 5}\n}\n";
        std::fs::write(&path, text).unwrap();
        let env_key = |p: &str| (p == "anthropic").then(|| "sk-env".to_string());
        let a = storage(&path, &t);
        let now = filo_ai::client::now_ms();
        assert_eq!(
            a.api_key("anthropic", now, &no_env, &env_key, None),
            None,
            "as pi: no env fallback"
        );
        let problem = a.problem("anthropic").unwrap();
        assert!(
            problem.starts_with(
                "Failed to refresh OAuth token for anthropic: the token endpoint http://127.0.0.1:"
            ) && problem.ends_with(&format!("answered 400: {body}")),
            "{problem}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        assert!(!dir.path().join("auth.json.lock").exists());
        // Asked again at once: the failure is remembered for a while, the endpoint not called.
        assert_eq!(key(&a, "anthropic"), None);
        assert_eq!(t.calls().len(), 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn codex_and_copilot_are_asked_their_own_way() {
        let t =
            TokenEndpoint::start(TokenConfig::new("r-0", "codex-").with_account_id("acct-7")).await;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("auth.json");
        let creds = json!({
            "openai-codex": {"type": "oauth", "access": "old", "refresh": "r-0", "expires": 1, "accountId": "acct-old"},
        });
        std::fs::write(&path, creds.to_string()).unwrap();
        let a = storage(&path, &t);
        let access = key(&a, "openai-codex").unwrap();
        assert_eq!(t.issued(), vec![access.clone()]);
        let call = &t.calls()[0];
        assert_eq!(
            call.content_type.as_deref(),
            Some("application/x-www-form-urlencoded")
        );
        assert_eq!(call.fields["client_id"], "app_EMoamEEZ73f0CkXaXp7hrann");
        let cred = &read(&path)["openai-codex"];
        assert_eq!(cred["accountId"], "acct-7");
        assert_eq!(cred["refresh"], "refresh-1");

        let gh =
            TokenEndpoint::start(TokenConfig::new("ghu_token", "tid=1;proxy-ep=proxy.x;")).await;
        let path = dir.path().join("auth2.json");
        let creds = json!({"github-copilot": {"type": "oauth", "access": "old", "refresh": "ghu_token", "expires": 1}});
        std::fs::write(&path, creds.to_string()).unwrap();
        let a = storage(&path, &gh);
        assert_eq!(
            key(&a, "github-copilot").as_deref(),
            Some("tid=1;proxy-ep=proxy.x;1")
        );
        let call = &gh.calls()[0];
        assert_eq!(
            (call.method.as_str(), call.authorization.as_deref()),
            ("GET", Some("Bearer ghu_token"))
        );
        let cred = &read(&path)["github-copilot"];
        assert_eq!(cred["refresh"], "ghu_token", "the GitHub token is kept");
        assert!(cred["expires"].as_i64().unwrap() > filo_ai::client::now_ms());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_credential_from_pi_is_not_refreshed() {
        let t = TokenEndpoint::start(TokenConfig::new("r-0", "new-")).await;
        let dir = tempfile::tempdir().unwrap();
        let pi = dir.path().join("pi").join("auth.json");
        let own = dir.path().join("own").join("auth.json");
        std::fs::create_dir_all(pi.parent().unwrap()).unwrap();
        let text = r#"{"anthropic":{"type":"oauth","access":"old","refresh":"r-0","expires":1}}"#;
        std::fs::write(&pi, text).unwrap();
        let mut a = AuthStorage::load_from(&own, &pi);
        a.set_token_endpoints(endpoints(&t));
        assert_eq!(key(&a, "anthropic"), None);
        let problem = a.problem("anthropic").unwrap();
        assert!(
            problem.contains("read from pi's") && problem.contains("run pi once"),
            "{problem}"
        );
        assert!(t.calls().is_empty());
        assert_eq!(std::fs::read_to_string(&pi).unwrap(), text);
        assert!(!own.exists() && !dir.path().join("pi").join("auth.json.lock").exists());
    }
}
