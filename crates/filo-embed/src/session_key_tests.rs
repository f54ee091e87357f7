use super::*;

#[test]
fn shape_table() {
    // [OC-test] session-key.test.ts classifySessionKeyShape
    let cases = [
        (None, SessionKeyShape::Missing),
        (Some("   "), SessionKeyShape::Missing),
        (Some("agent:main:main"), SessionKeyShape::Agent),
        (
            Some("agent:research:subagent:worker"),
            SessionKeyShape::Agent,
        ),
        (Some("agent::broken"), SessionKeyShape::MalformedAgent),
        (Some("agent:main"), SessionKeyShape::MalformedAgent),
        (Some("AGENT:main"), SessionKeyShape::MalformedAgent),
        (Some("main"), SessionKeyShape::LegacyOrAlias),
        (Some("custom-main"), SessionKeyShape::LegacyOrAlias),
        (Some("subagent:worker"), SessionKeyShape::LegacyOrAlias),
        (
            Some("agent:main:telegram:dm:123456"),
            SessionKeyShape::Agent,
        ),
        (
            Some("agent:main:whatsapp:dm:+15551234567"),
            SessionKeyShape::Agent,
        ),
        (
            Some("agent:main:discord:direct:user123"),
            SessionKeyShape::Agent,
        ),
    ];
    for (key, want) in cases {
        assert_eq!(classify_session_key_shape(key), want, "{key:?}");
    }
}

#[test]
fn parse_table() {
    let cases = [
        (
            "AGENT:Main:Hook:Webhook:42",
            Some(("main", "hook:webhook:42")),
        ),
        ("agent:main:main", Some(("main", "main"))),
        ("agent::main::x", Some(("main", "x"))),
        ("agent:main", None),
        ("agent::broken", None),
        ("agents:main:main", None),
        ("main", None),
        ("", None),
    ];
    for (key, want) in cases {
        let got = parse_agent_session_key(key);
        let got = got.as_ref().map(|p| (p.agent_id.as_str(), p.rest.as_str()));
        assert_eq!(got, want, "{key}");
    }
}

#[test]
fn agent_id_tables() {
    for (input, valid) in [
        ("main", true),
        ("my-research_agent01", true),
        ("", false),
        ("Agent not found: xyz", false),
        ("../../../etc/passwd", false),
        (&"a".repeat(65), false),
        (&"a".repeat(64), true),
        ("-lead", false),
        ("MAIN", true),
    ] {
        assert_eq!(is_valid_agent_id(input), valid, "{input}");
    }
    for (input, want) in [
        ("", "main"),
        ("  ", "main"),
        ("Main", "main"),
        ("  Research  ", "research"),
        ("Agent not found: xyz", "agent-not-found-xyz"),
        ("../../../etc/passwd", "etc-passwd"),
        ("..", "main"),
        ("--a b--", "a-b"),
        ("é", "main"),
    ] {
        assert_eq!(normalize_agent_id(input), want, "{input}");
    }
    assert_eq!(
        normalize_agent_id(&format!("x y{}", "z".repeat(80))).len(),
        64
    );
    for (input, want) in [
        (None, "default"),
        (Some(" Work "), "work"),
        (Some("a/b"), "a-b"),
    ] {
        assert_eq!(normalize_account_id(input), want);
    }
}

#[test]
fn store_key_table() {
    let cases = [
        ("main", None, None, "agent:main:main"),
        ("main", Some(""), None, "agent:main:main"),
        ("ops", Some("MAIN"), Some("Home"), "agent:ops:home"),
        ("main", Some("agent:main:main"), None, "agent:main:main"),
        (
            "main",
            Some("agent:Other:Telegram:dm:1"),
            None,
            "agent:other:telegram:dm:1",
        ),
        ("main", Some("agent:broken"), None, "agent:broken"),
        (
            "Ops Team",
            Some("Telegram:DM:42"),
            None,
            "agent:ops-team:telegram:dm:42",
        ),
    ];
    for (agent, request, main_key, want) in cases {
        assert_eq!(
            to_store_key(agent, request, main_key),
            want,
            "{agent} {request:?}"
        );
    }
    assert_eq!(
        to_request_key("agent:main:telegram:dm:1").as_deref(),
        Some("telegram:dm:1")
    );
    assert_eq!(to_request_key("legacy").as_deref(), Some("legacy"));
    assert_eq!(to_request_key("  "), None);
    assert_eq!(agent_id_from_session_key("agent:Ops:main"), "ops");
    assert_eq!(agent_id_from_session_key("telegram:dm:1"), "main");
    assert_eq!(main_session_key(" Ops ", Some("  ")), "agent:ops:main");
}

#[test]
fn peer_key_table() {
    let links: BTreeMap<String, Vec<String>> = [(
        "alice".to_owned(),
        vec!["telegram:111".to_owned(), "Discord-Alice".to_owned()],
    )]
    .into();
    let base = PeerRoute {
        agent_id: "main",
        channel: "Telegram",
        peer_id: Some("User42"),
        ..Default::default()
    };
    let cases: Vec<(PeerRoute<'_>, &str)> = vec![
        (base.clone(), "agent:main:main"),
        (
            PeerRoute {
                dm_scope: DmScope::PerPeer,
                ..base.clone()
            },
            "agent:main:direct:user42",
        ),
        (
            PeerRoute {
                dm_scope: DmScope::PerChannelPeer,
                ..base.clone()
            },
            "agent:main:telegram:direct:user42",
        ),
        (
            PeerRoute {
                dm_scope: DmScope::PerAccountChannelPeer,
                account_id: Some("Biz"),
                ..base.clone()
            },
            "agent:main:telegram:biz:direct:user42",
        ),
        (
            PeerRoute {
                dm_scope: DmScope::PerAccountChannelPeer,
                ..base.clone()
            },
            "agent:main:telegram:default:direct:user42",
        ),
        (
            PeerRoute {
                dm_scope: DmScope::PerPeer,
                peer_id: Some("  "),
                ..base.clone()
            },
            "agent:main:main",
        ),
        (
            PeerRoute {
                dm_scope: DmScope::PerPeer,
                peer_id: Some("111"),
                identity_links: Some(&links),
                ..base.clone()
            },
            "agent:main:direct:alice",
        ),
        (
            PeerRoute {
                dm_scope: DmScope::PerPeer,
                peer_id: Some("discord-alice"),
                identity_links: Some(&links),
                ..base.clone()
            },
            "agent:main:direct:alice",
        ),
        (
            PeerRoute {
                peer_id: Some("111"),
                identity_links: Some(&links),
                ..base.clone()
            },
            "agent:main:main",
        ),
        (
            PeerRoute {
                peer_kind: PeerKind::Group,
                peer_id: Some("-100ABC"),
                ..base.clone()
            },
            "agent:main:telegram:group:-100abc",
        ),
        (
            PeerRoute {
                peer_kind: PeerKind::Channel,
                channel: " ",
                peer_id: None,
                ..base.clone()
            },
            "agent:main:unknown:channel:unknown",
        ),
        (
            PeerRoute {
                agent_id: "Sales Bot",
                dm_scope: DmScope::PerPeer,
                ..base.clone()
            },
            "agent:sales-bot:direct:user42",
        ),
    ];
    for (route, want) in cases {
        assert_eq!(peer_session_key(&route), want, "{route:?}");
    }
    for (s, want) in [
        ("main", Some(DmScope::Main)),
        (
            "per-account-channel-peer",
            Some(DmScope::PerAccountChannelPeer),
        ),
        ("x", None),
    ] {
        assert_eq!(DmScope::parse(s), want);
    }
}

#[test]
fn thread_topic_and_depth() {
    assert_eq!(
        thread_session_key("agent:main:slack:channel:c1", Some(" ABC ")),
        "agent:main:slack:channel:c1:thread:abc"
    );
    assert_eq!(thread_session_key("k", Some("")), "k");
    assert_eq!(
        topic_session_key("agent:main:telegram:group:-1001", 42),
        "agent:main:telegram:group:-1001:topic:42"
    );
    let info = session_thread_info("agent:main:slack:channel:c123:thread:1710000000.9999").unwrap();
    assert_eq!(
        (
            info.marker,
            info.parent_session_key.as_str(),
            info.thread_id.as_str()
        ),
        ("thread", "agent:main:slack:channel:c123", "1710000000.9999")
    );
    let info = session_thread_info("agent:main:telegram:group:-1001:topic:42").unwrap();
    assert_eq!(
        (
            info.marker,
            info.parent_session_key.as_str(),
            info.thread_id.as_str()
        ),
        ("topic", "agent:main:telegram:group:-1001", "42")
    );
    assert_eq!(session_thread_info("agent:main:main"), None);
    assert_eq!(
        session_thread_info("agent:main:discord:channel:c1:thread:abc")
            .unwrap()
            .parent_session_key,
        "agent:main:discord:channel:c1"
    );
    for (key, depth) in [
        ("agent:main:main", 0),
        ("main", 0),
        ("", 0),
        ("agent:main:subagent:parent:subagent:child", 2),
    ] {
        assert_eq!(subagent_depth(key), depth, "{key}");
    }
    for (key, cron) in [
        ("agent:main:cron:job-1", true),
        ("agent:main:cron:job-1:run:run-1", true),
        ("agent:main:main", false),
        ("agent:main:subagent:worker", false),
        ("cron:job-1", false),
        ("", false),
    ] {
        assert_eq!(is_cron_session_key(key), cron, "{key}");
    }
    for (key, sub) in [
        ("subagent:w", true),
        ("agent:main:subagent:w", true),
        ("agent:main:main", false),
    ] {
        assert_eq!(is_subagent_key(key), sub, "{key}");
    }
}
