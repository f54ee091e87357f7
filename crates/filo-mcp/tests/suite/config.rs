//! `mcp.json`: shape checks that name the file and the key, precedence, pi's file as the
//! read-only fallback, project files only where trusted, `${VAR}` and `!command` values.

use std::time::Duration;

use filo_mcp::config::{self, ConfigPaths, Exposure, Transport, resolve_value};

#[test]
fn a_malformed_entry_names_the_file_and_key_and_the_others_load() {
    let dir = tempfile::tempdir().unwrap();
    let c = super::common::config_from(
        dir.path(),
        r#"{"mcpServers": {
            "good": {"command": "srv", "args": ["-x"], "env": {"A": "${HOME}"}, "timeout": 5},
            "badenv": {"command": "srv", "env": {"A": 1}},
            "badexp": {"url": "https://x/mcp", "exposure": "sometimes"},
            "old": {"url": "https://x/sse", "type": "sse"},
            "no way": {"command": "x"},
            "empty": {},
            "web": {"url": "https://x/mcp", "headers": {"Authorization": "Bearer ${T}"}, "description": "Docs",
                    "exposure": "deferred", "toolExposure": {"search_code": "direct", "get_*": "codemode", "delete_*": "hidden"}}
        }}"#,
    );
    let file = dir.path().join("agent/mcp.json").display().to_string();
    let expected = [
        format!("{file}: server \"badenv\": env \"A\" must be a string"),
        format!(
            "{file}: server \"badexp\": exposure must be one of \"codemode\", \"deferred\", \"direct\", \"hidden\""
        ),
        format!(
            "{file}: server \"old\": legacy SSE transport is not supported; use the streamable HTTP URL"
        ),
        format!("{file}: invalid server name \"no way\" (use letters, digits, \"_\" and \"-\")"),
        format!(
            "{file}: server \"empty\" needs either \"command\" (stdio) or \"url\" (streamable HTTP)"
        ),
    ];
    assert_eq!(c.errors, expected);
    let names: Vec<&str> = c.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["good", "web"]);
    let good = c.get("good").unwrap();
    assert_eq!(good.timeout, Duration::from_secs(5));
    assert_eq!(good.exposure, Exposure::Codemode);
    assert!(matches!(&good.transport, Transport::Stdio { args, .. } if args == &["-x"]));
    let web = c.get("web").unwrap();
    assert_eq!(web.tool_exposure("search_code"), Exposure::Direct);
    assert_eq!(web.tool_exposure("get_issue"), Exposure::Codemode);
    assert_eq!(web.tool_exposure("delete_repo"), Exposure::Hidden);
    assert_eq!(web.tool_exposure("list"), Exposure::Deferred);
    assert_eq!(web.description.as_deref(), Some("Docs"));
}

#[test]
fn a_file_that_is_not_json_is_one_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let c = super::common::config_from(dir.path(), "{\"mcpServers\": {");
    assert_eq!(c.servers.len(), 0);
    assert_eq!(c.errors.len(), 1);
    let file = dir.path().join("agent/mcp.json").display().to_string();
    assert!(
        c.errors[0].starts_with(&format!("{file}: invalid JSON: ")),
        "{:?}",
        c.errors
    );
    let c = super::common::config_from(dir.path(), r#"{"mcpServers": []}"#);
    assert_eq!(
        c.errors,
        [format!("{file}: \"mcpServers\" must be an object")]
    );
}

#[test]
fn pis_file_is_read_when_filo_has_none_and_projects_wait_for_trust() {
    let dir = tempfile::tempdir().unwrap();
    let (own, pi, cwd) = (
        dir.path().join("filo"),
        dir.path().join("pi"),
        dir.path().join("proj"),
    );
    for d in [&own, &pi, &cwd.join(".pi")] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(
        pi.join("mcp.json"),
        r#"{"mcpServers": {"a": {"command": "pi-a"}, "b": {"command": "b"}}}"#,
    )
    .unwrap();
    std::fs::write(
        cwd.join(".pi/mcp.json"),
        r#"{"mcpServers": {"a": {"command": "proj-a"}, "b": {"enabled": false}, "c": {"url": "http://127.0.0.1:1/mcp"}}}"#,
    )
    .unwrap();
    let paths = ConfigPaths::new(&own, Some(&pi), &cwd);
    assert_eq!(paths.user, pi.join("mcp.json"));
    assert_eq!(paths.user_write, own.join("mcp.json"));
    // Not trusted: the project's servers are listed as not loaded.
    let c = config::load(&paths, false);
    assert_eq!(
        c.servers
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>(),
        ["a", "b"]
    );
    assert_eq!(c.skipped.len(), 1);
    assert_eq!(c.skipped[0].reason, "not loaded: project not trusted");
    assert_eq!(c.skipped[0].servers, ["a", "b", "c"]);
    // Trusted: a full entry replaces, an override keeps the rest.
    let c = config::load(&paths, true);
    assert!(
        matches!(&c.get("a").unwrap().transport, Transport::Stdio { command, .. } if command == "proj-a")
    );
    let b = c.get("b").unwrap();
    assert!(!b.enabled);
    assert!(matches!(&b.transport, Transport::Stdio { command, .. } if command == "b"));
    assert_eq!(
        b.override_source.as_deref(),
        Some(cwd.join(".pi/mcp.json").as_path())
    );
    assert!(c.get("c").is_some());
    // filo's own file, once it exists, wins over pi's.
    std::fs::write(own.join("mcp.json"), r#"{"mcpServers": {}}"#).unwrap();
    assert_eq!(
        ConfigPaths::new(&own, Some(&pi), &cwd).user,
        own.join("mcp.json")
    );
}

#[test]
fn names_that_differ_only_in_dash_and_underscore_clash() {
    let dir = tempfile::tempdir().unwrap();
    let c = super::common::config_from(
        dir.path(),
        r#"{"mcpServers": {"dev-radius": {"command": "a"}, "dev_radius": {"command": "b"}}}"#,
    );
    assert_eq!(c.servers.len(), 1);
    assert!(
        c.errors[0].ends_with("server \"dev_radius\" conflicts with \"dev-radius\""),
        "{:?}",
        c.errors
    );
}

#[test]
fn values_expand_variables_and_commands_like_pi() {
    let env = |k: &str| match k {
        "TOKEN" => Some("t0k".to_string()),
        "EMPTY" => Some(String::new()),
        _ => None,
    };
    assert_eq!(
        resolve_value("Bearer ${TOKEN}", "h", &env).unwrap(),
        "Bearer t0k"
    );
    assert_eq!(resolve_value("$TOKEN-$$-$!", "h", &env).unwrap(), "t0k-$-!");
    assert_eq!(resolve_value("!printf ' x '", "h", &env).unwrap(), "x");
    let e = resolve_value("${MISSING} ${EMPTY}", "header \"A\"", &env).unwrap_err();
    assert_eq!(
        e.to_string(),
        "header \"A\": environment variables MISSING, EMPTY are not set"
    );
    assert!(
        resolve_value("!exit 3", "env \"K\"", &env)
            .unwrap_err()
            .to_string()
            .starts_with("env \"K\": `exit 3` failed")
    );
}

#[test]
fn tool_names_are_sanitised_and_hashed_when_long_or_taken() {
    use filo_mcp::result::tool_name;
    assert_eq!(
        tool_name("dev-radius", "get.item", &|_| false),
        "mcp__dev_radius__get_item"
    );
    let long = tool_name("s", &"x".repeat(80), &|_| false);
    assert_eq!(long.len(), 64);
    let taken = tool_name("s", "a-b", &|n| n == "mcp__s__a_b");
    assert!(
        taken.starts_with("mcp__s__a_b_") && taken.len() == "mcp__s__a_b_".len() + 8,
        "{taken}"
    );
}

#[test]
fn text_is_cut_in_the_middle_at_char_boundaries() {
    use filo_mcp::result::truncate_middle;
    assert!(truncate_middle("short", 10).is_none());
    let text = "é".repeat(20); // 40 bytes
    let cut = truncate_middle(&text, 11).unwrap();
    assert_eq!(
        cut.content,
        format!("{}…15 chars truncated…{}", "é".repeat(2), "é".repeat(3))
    );
    assert_eq!(cut.lines, 1);
}
