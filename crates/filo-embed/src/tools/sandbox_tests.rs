use std::fs;

use super::*;

fn p(s: &str) -> PathBuf {
    PathBuf::from(s)
}

#[test]
fn resolve_table() {
    let home = p("/Users/chris");
    let root = p("/Users/chris/.openclaw/workspace");
    let ok: &[(&str, &str, &str)] = &[
        // (input, cwd, relative)
        (
            "mail/trigger.txt",
            "/Users/chris/.openclaw/workspace",
            "mail/trigger.txt",
        ),
        ("@notes.md", "/Users/chris/.openclaw/workspace", "notes.md"),
        ("/Users/chris/.openclaw/workspace/a/../b.txt", "/", "b.txt"),
        ("", "/Users/chris/.openclaw/workspace", ""),
        (".", "/Users/chris/.openclaw/workspace", ""),
        ("~/.openclaw/workspace/x", "/tmp", "x"),
        (
            "my\u{00A0}file\u{3000}.txt",
            "/Users/chris/.openclaw/workspace",
            "my file .txt",
        ),
        (
            "sub/../../workspace/y",
            "/Users/chris/.openclaw/workspace/sub",
            "workspace/y",
        ),
        ("../y", "/Users/chris/.openclaw/workspace/sub", "y"),
    ];
    for (input, cwd, relative) in ok {
        let got = resolve_sandbox_path(input, Path::new(cwd), &root, &home).unwrap();
        assert_eq!(got.relative, p(relative), "{input}");
        assert_eq!(
            got.resolved,
            root.join(relative).components().collect::<PathBuf>(),
            "{input}"
        );
    }
    // [OC-test] sandbox-paths.test.ts: an outside path escapes; the legacy /home/node/.openclaw
    // alias is a later OpenClaw feature and is not applied here.
    let errors: &[(&str, &str)] = &[
        ("/home/node/secrets.txt", "/Users/chris/.openclaw/workspace"),
        (
            "/home/node/.openclaw/workspace/mail/trigger.txt",
            "/Users/chris/.openclaw/workspace",
        ),
        ("../x", "/Users/chris/.openclaw/workspace"),
        ("~", "/Users/chris/.openclaw/workspace"),
        ("/Users/chris/.openclaw/workspace-evil/x", "/"),
        ("/../../etc", "/"),
    ];
    for (input, cwd) in errors {
        let err = resolve_sandbox_path(input, Path::new(cwd), &root, &home).unwrap_err();
        assert!(
            err.to_string()
                .to_lowercase()
                .contains("escapes sandbox root"),
            "{input}: {err}"
        );
    }
    let err = resolve_sandbox_path("/home/node/secrets.txt", &root, &root, &home).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Path escapes sandbox root (~/.openclaw/workspace): /home/node/secrets.txt. Use a path under /workspace/ instead."
    );
    let other_home = resolve_sandbox_path("/etc", &root, &root, Path::new("/nope")).unwrap_err();
    assert!(
        other_home
            .to_string()
            .contains("(/Users/chris/.openclaw/workspace)")
    );
}

#[cfg(unix)]
#[test]
fn links_that_leave_the_root_are_refused() {
    use std::os::unix::fs::symlink;
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("ws");
    let outside = tmp.path().join("outside");
    fs::create_dir_all(root.join("inner")).unwrap();
    fs::create_dir_all(&outside).unwrap();
    fs::write(outside.join("secret"), "s").unwrap();
    fs::write(root.join("inner/ok.txt"), "ok").unwrap();
    symlink(&outside, root.join("out-dir")).unwrap();
    symlink(outside.join("secret"), root.join("out-file")).unwrap();
    symlink(root.join("inner"), root.join("in-dir")).unwrap();
    symlink(tmp.path().join("missing"), root.join("dangling")).unwrap();
    fs::hard_link(outside.join("secret"), root.join("hard")).unwrap();
    let home = Path::new("/nonexistent-home");
    let check = |input: &str, unlink: bool| assert_sandbox_path(input, &root, &root, home, unlink);
    for ok in [
        "inner/ok.txt",
        "in-dir/ok.txt",
        "new/file.txt",
        "in-dir/new.txt",
        "",
    ] {
        assert!(check(ok, false).is_ok(), "{ok}: {:?}", check(ok, false));
    }
    for bad in [
        "out-dir/secret",
        "out-dir/new.txt",
        "out-file",
        "dangling",
        "dangling/x",
    ] {
        assert!(
            matches!(check(bad, false), Err(SandboxPathError::LinkEscapes { .. })),
            "{bad}"
        );
    }
    assert!(matches!(
        check("hard", false),
        Err(SandboxPathError::HardLink { .. })
    ));
    // Removing the link itself is allowed; going through it is not.
    assert!(check("out-file", true).is_ok());
    assert!(check("hard", true).is_ok());
    assert!(matches!(
        check("out-dir/secret", true),
        Err(SandboxPathError::LinkEscapes { .. })
    ));
    // A root that does not exist yet has nothing to alias.
    assert!(assert_sandbox_path("a", &root.join("nope"), &root.join("nope"), home, false).is_ok());
}

#[test]
fn container_paths_and_media() {
    let root = p("/srv/sbx/s1");
    let cases: &[(&str, Option<&str>)] = &[
        ("/workspace", Some("/srv/sbx/s1")),
        ("/workspace/", Some("/srv/sbx/s1")),
        ("/workspace/out/img.png", Some("/srv/sbx/s1/out/img.png")),
        ("file:///workspace/a//b.png", Some("/srv/sbx/s1/a/b.png")),
        ("FILE://localhost/workspace/c", Some("/srv/sbx/s1/c")),
        ("/workspace/../etc/passwd", None),
        ("/workspaces/x", None),
        ("/tmp/x", None),
        ("workspace/x", None),
    ];
    for (input, want) in cases {
        assert_eq!(
            map_container_workspace_path(input, &root),
            want.map(p),
            "{input}"
        );
    }
    assert!(assert_media_not_data_url(" DATA:image/png;base64,xx").is_err());
    assert!(assert_media_not_data_url("https://x/y.png").is_ok());
}

#[test]
fn sandbox_decision_and_dirs() {
    for (mode, key, sandboxed) in [
        (SandboxMode::Off, "agent:main:telegram:dm:1", false),
        (SandboxMode::All, "agent:main:main", true),
        (SandboxMode::NonMain, "agent:main:main", false),
        (SandboxMode::NonMain, "AGENT:main:MAIN", false),
        (SandboxMode::NonMain, "agent:main:telegram:dm:1", true),
    ] {
        assert_eq!(
            mode.applies_to(key, "agent:main:main"),
            sandboxed,
            "{mode:?} {key}"
        );
    }
    assert_eq!(SandboxMode::parse("non-main"), Some(SandboxMode::NonMain));
    assert_eq!(SandboxMode::parse("sometimes"), None);
    let state = p("/s");
    let a = sandbox_workspace_dir(&state, "agent:main:a:b");
    let b = sandbox_workspace_dir(&state, "agent:main:a-b");
    assert_ne!(a, b, "keys that slug alike stay apart");
    assert!(a.starts_with("/s/sandboxes"));
    assert!(
        a.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("agent-main-a-b-")
    );
    assert_eq!(a, sandbox_workspace_dir(&state, " agent:main:a:b "));
    let weird = sandbox_workspace_dir(&state, "../../..");
    assert_eq!(weird.parent().unwrap(), Path::new("/s/sandboxes"));
}

#[test]
fn blocked_tool_explanation() {
    let policy = super::super::policy::sandbox_default_policy(&["telegram"]);
    let ctx = SandboxContext {
        mode: SandboxMode::NonMain,
        session_key: "agent:main:telegram:dm:42",
        main_session_key: "agent:main:main",
        policy: &policy,
        deny_key: "tools.sandbox.tools.deny",
        allow_key: "tools.sandbox.tools.allow",
    };
    let msg = sandbox_blocked_message(" Browser ", &ctx).unwrap();
    assert_eq!(
        msg,
        [
            "Tool \"browser\" blocked by sandbox tool policy (mode=non-main).",
            "Session: agent:main:telegram:dm:42",
            "Reason: deny list + allow list",
            "Fix:",
            "- agents.defaults.sandbox.mode=off (disable sandbox)",
            "- Remove \"browser\" from tools.sandbox.tools.deny.",
            "- Add \"browser\" to tools.sandbox.tools.allow (or set it to [] to allow all).",
            "- Use main session key (direct): agent:main:main",
            "- See: filo sandbox explain --session agent:main:telegram:dm:42",
        ]
        .join("\n")
    );
    let web = sandbox_blocked_message("web_fetch", &ctx).unwrap();
    assert!(
        web.contains("Reason: allow list\n") && !web.contains("Remove"),
        "{web}"
    );
    assert_eq!(sandbox_blocked_message("exec", &ctx), None);
    assert_eq!(sandbox_blocked_message("", &ctx), None);
    let main = SandboxContext {
        session_key: "agent:main:main",
        ..ctx.clone()
    };
    assert_eq!(
        sandbox_blocked_message("browser", &main),
        None,
        "main session is not sandboxed"
    );
    let all = SandboxContext {
        mode: SandboxMode::All,
        ..main
    };
    let msg = sandbox_blocked_message("browser", &all).unwrap();
    assert!(
        msg.starts_with("Tool \"browser\" blocked by sandbox tool policy (mode=all).")
            && !msg.contains("Use main session key")
    );
}
