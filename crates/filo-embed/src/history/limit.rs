//! History limits (C17, spec §4.5): keep only the last N user turns of a transcript, with N
//! taken from the channel config for the session key.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;
use serde::Deserialize;

/// `channels.<provider>` history settings (OpenClaw key names).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ChannelHistoryConfig {
    pub dm_history_limit: Option<i64>,
    pub history_limit: Option<i64>,
    #[serde(default)]
    pub dms: BTreeMap<String, DmHistoryConfig>,
}

/// `channels.<provider>.dms.<user>`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DmHistoryConfig {
    pub history_limit: Option<i64>,
}

/// `channels`: provider id → settings.
pub type ChannelsConfig = BTreeMap<String, ChannelHistoryConfig>;

/// The messages from the `limit`-th most recent user message on (the last `limit` user turns
/// and everything after the first of them). A limit that is None or ≤ 0, or a history with at
/// most `limit` user messages, returns `messages` unchanged.
pub fn limit_history_turns<T>(
    messages: &[T],
    limit: Option<i64>,
    is_user: impl Fn(&T) -> bool,
) -> &[T] {
    let Some(limit) = limit.filter(|l| *l > 0) else {
        return messages;
    };
    let mut seen = 0i64;
    let mut start = 0;
    for (i, m) in messages.iter().enumerate().rev() {
        if is_user(m) {
            seen += 1;
            if seen > limit {
                return &messages[start..];
            }
            start = i;
        }
    }
    messages
}

static THREAD_SUFFIX: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(.*)(?::(?:thread|topic):\d+)$")
        .unwrap_or_else(|e| unreachable!("invalid built-in thread suffix pattern: {e}"))
});

/// The history limit for a session key (`getHistoryLimitFromSessionKey`): strip a leading
/// `agent:<id>`, then `<provider>:<kind>:<user id>`; kind `dm`/`direct` → the user's own
/// `historyLimit` (0 included) else `dmHistoryLimit`; kind `channel`/`group` → `historyLimit`.
pub fn history_limit_from_session_key(key: Option<&str>, channels: &ChannelsConfig) -> Option<i64> {
    let parts: Vec<&str> = key?.split(':').filter(|p| !p.is_empty()).collect();
    let parts = match parts.as_slice() {
        ["agent", _, rest @ ..] if !rest.is_empty() => rest,
        all => all,
    };
    let (provider, kind) = (parts.first()?.to_lowercase(), parts.get(1)?.to_lowercase());
    let config = channels.get(&provider)?;
    match kind.as_str() {
        "dm" | "direct" => {
            let joined = parts[2..].join(":");
            let user = THREAD_SUFFIX
                .captures(&joined)
                .and_then(|c| c.get(1))
                .map_or(joined.as_str(), |m| m.as_str());
            let own = if user.is_empty() {
                None
            } else {
                config.dms.get(user)
            };
            own.and_then(|d| d.history_limit)
                .or(config.dm_history_limit)
        }
        "channel" | "group" => config.history_limit,
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    enum M {
        U(&'static str),
        A(&'static str),
    }
    use M::{A, U};

    fn is_user(m: &M) -> bool {
        matches!(m, U(_))
    }

    #[test]
    fn limit_turns_table() {
        let six = [U("1"), A("a"), U("2"), A("b"), U("3"), A("c")];
        let cases: Vec<(&[M], Option<i64>, &[M])> = vec![
            // [OC-test] history.test.ts
            (&six, Some(2), &six[2..]),
            (&six, Some(0), &six),
            (&six, None, &six),
            (&[U("1"), A("a")], Some(5), &[U("1"), A("a")]),
            // further cases from the rule
            (&six, Some(-1), &six),
            (&six, Some(3), &six),
            (&six, Some(1), &six[4..]),
            (&[], Some(2), &[]),
            (&[A("x"), A("y")], Some(1), &[A("x"), A("y")]),
            (
                &[A("x"), U("1"), U("2"), A("y")],
                Some(1),
                &[U("2"), A("y")],
            ),
        ];
        for (msgs, limit, want) in cases {
            let got = limit_history_turns(msgs, limit, is_user);
            assert_eq!(got, want, "{msgs:?} limit {limit:?}");
        }
        // unchanged means the same slice, not a copy
        let same = limit_history_turns(&six, None, is_user);
        assert!(std::ptr::eq(same, &six[..]));
    }

    fn channels(v: serde_json::Value) -> ChannelsConfig {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn limit_from_key_table() {
        // [OC-test] getdmhistorylimitfromsessionkey tests
        let main = channels(json!({
            "telegram": {"dmHistoryLimit": 10, "historyLimit": 50, "dms": {"user123": {"historyLimit": 5}}},
            "slack": {"dmHistoryLimit": 20}
        }));
        let cases: Vec<(Option<&str>, &ChannelsConfig, Option<i64>)> = vec![
            (Some("agent:main:telegram:dm:user456"), &main, Some(10)),
            (Some("agent:main:telegram:direct:user123"), &main, Some(5)),
            (Some("agent:main:telegram:group:-100123"), &main, Some(50)),
            (
                Some("agent:main:telegram:direct:user123:thread:999"),
                &main,
                Some(5),
            ),
            (None, &main, None),
            (Some("agent:main:slack:dm:u1"), &main, Some(20)),
            (Some("agent:main:slack:channel:c1"), &main, None),
            (Some("agent:main:discord:dm:u1"), &main, None),
            (Some("agent:main:main"), &main, None),
            (Some(""), &main, None),
            (Some("AGENT:main:Telegram:DM:user456"), &main, None),
        ];
        for (key, cfg, want) in cases {
            assert_eq!(history_limit_from_session_key(key, cfg), want, "{key:?}");
        }
        let c = |v| channels(v);
        let more: Vec<(&str, ChannelsConfig, Option<i64>)> = vec![
            (
                "telegram:dm:123",
                c(json!({"telegram": {"dmHistoryLimit": 15}})),
                Some(15),
            ),
            (
                "telegram:dm:123:topic:555",
                c(json!({"telegram": {"dmHistoryLimit": 15, "dms": {"123": {"historyLimit": 7}}}})),
                Some(7),
            ),
            (
                "agent:main:telegram:dm:user:thread:abc",
                c(
                    json!({"telegram": {"dmHistoryLimit": 15, "dms": {"user:thread:abc": {"historyLimit": 9}}}}),
                ),
                Some(9),
            ),
            (
                "agent:beta:slack:channel:c1",
                c(json!({"slack": {"historyLimit": 10, "dmHistoryLimit": 15}})),
                Some(10),
            ),
            (
                "telegram:slash:123",
                c(json!({"telegram": {"dmHistoryLimit": 15}})),
                None,
            ),
            (
                "unknown:dm:123",
                c(json!({"telegram": {"dmHistoryLimit": 15}})),
                None,
            ),
            (
                "agent:main:telegram:channel:c",
                c(json!({"telegram": {"dmHistoryLimit": 15}})),
                None,
            ),
            // a per-user 0 is defined and wins
            (
                "telegram:dm:u",
                c(json!({"telegram": {"dmHistoryLimit": 15, "dms": {"u": {"historyLimit": 0}}}})),
                Some(0),
            ),
            // a per-user entry without a limit falls back
            (
                "telegram:dm:u",
                c(json!({"telegram": {"dmHistoryLimit": 15, "dms": {"u": {}}}})),
                Some(15),
            ),
            (
                "telegram:group:g:topic:1",
                c(json!({"telegram": {"historyLimit": 3}})),
                Some(3),
            ),
        ];
        for (key, cfg, want) in more {
            assert_eq!(
                history_limit_from_session_key(Some(key), &cfg),
                want,
                "{key}"
            );
        }
    }
}
