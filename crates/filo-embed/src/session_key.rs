//! Session keys (C4): how a routing key (who is talking, where) is written, parsed and
//! normalised. A key is routing, never authentication. Rules from OpenClaw's
//! `src/routing/session-key.ts` and `src/sessions/session-key-utils.ts`.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;

/// Agent id used when none is given.
pub const DEFAULT_AGENT_ID: &str = "main";
/// Main session key (the `<rest>` of the agent's main session).
pub const DEFAULT_MAIN_KEY: &str = "main";
/// Account id used when none is given.
pub const DEFAULT_ACCOUNT_ID: &str = "default";

static VALID_ID: LazyLock<Regex> = LazyLock::new(|| compile(r"(?i)^[a-z0-9][a-z0-9_-]{0,63}$"));
static INVALID_RUN: LazyLock<Regex> = LazyLock::new(|| compile(r"[^a-z0-9_-]+"));

fn compile(pattern: &str) -> Regex {
    // The patterns are literals checked by the tests; a failure here is a programming error.
    Regex::new(pattern).unwrap_or_else(|e| unreachable!("invalid built-in pattern {pattern}: {e}"))
}

/// A parsed `agent:<agentId>:<rest>` key (lower-cased).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSessionKey {
    pub agent_id: String,
    pub rest: String,
}

/// What a session key looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionKeyShape {
    Missing,
    Agent,
    MalformedAgent,
    LegacyOrAlias,
}

/// Whether a DM shares the main session or gets its own (config `session.dmScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DmScope {
    #[default]
    Main,
    PerPeer,
    PerChannelPeer,
    PerAccountChannelPeer,
}

impl DmScope {
    /// Parses the config spelling (`main`, `per-peer`, `per-channel-peer`,
    /// `per-account-channel-peer`).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "main" => Some(Self::Main),
            "per-peer" => Some(Self::PerPeer),
            "per-channel-peer" => Some(Self::PerChannelPeer),
            "per-account-channel-peer" => Some(Self::PerAccountChannelPeer),
            _ => None,
        }
    }
}

/// Kind of conversation a message came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PeerKind {
    #[default]
    Direct,
    Group,
    Channel,
}

impl PeerKind {
    fn as_str(self) -> &'static str {
        match self {
            Self::Direct => "direct",
            Self::Group => "group",
            Self::Channel => "channel",
        }
    }
}

fn sanitize_id(value: &str, fallback: &str) -> String {
    let trimmed = value.trim();
    if trimmed.is_empty() {
        return fallback.to_owned();
    }
    if VALID_ID.is_match(trimmed) {
        return trimmed.to_lowercase();
    }
    let lower = trimmed.to_lowercase();
    let collapsed = INVALID_RUN.replace_all(&lower, "-");
    let cut: String = collapsed.trim_matches('-').chars().take(64).collect();
    if cut.is_empty() {
        fallback.to_owned()
    } else {
        cut
    }
}

/// A path-safe agent id: lower-case `[a-z0-9_-]`, at most 64 chars, `main` when empty.
pub fn normalize_agent_id(value: &str) -> String {
    sanitize_id(value, DEFAULT_AGENT_ID)
}

/// Whether `value` (trimmed) is already a valid agent id.
pub fn is_valid_agent_id(value: &str) -> bool {
    let trimmed = value.trim();
    !trimmed.is_empty() && VALID_ID.is_match(trimmed)
}

/// An account id normalised like an agent id, `default` when empty.
pub fn normalize_account_id(value: Option<&str>) -> String {
    sanitize_id(value.unwrap_or(""), DEFAULT_ACCOUNT_ID)
}

/// `value` trimmed and lower-cased, `main` when empty.
pub fn normalize_main_key(value: Option<&str>) -> String {
    let trimmed = value.unwrap_or("").trim();
    if trimmed.is_empty() {
        DEFAULT_MAIN_KEY.to_owned()
    } else {
        trimmed.to_lowercase()
    }
}

/// Parses `agent:<agentId>:<rest>` (case-insensitive; empty segments dropped).
pub fn parse_agent_session_key(key: &str) -> Option<AgentSessionKey> {
    let lower = key.trim().to_lowercase();
    let parts: Vec<&str> = lower.split(':').filter(|p| !p.is_empty()).collect();
    if parts.len() < 3 || parts[0] != "agent" {
        return None;
    }
    let agent_id = parts[1].trim();
    let rest = parts[2..].join(":");
    if agent_id.is_empty() || rest.trim().is_empty() {
        return None;
    }
    Some(AgentSessionKey {
        agent_id: agent_id.to_owned(),
        rest,
    })
}

/// `agent:<agent>:<main key>`.
pub fn main_session_key(agent_id: &str, main_key: Option<&str>) -> String {
    format!(
        "agent:{}:{}",
        normalize_agent_id(agent_id),
        normalize_main_key(main_key)
    )
}

/// Where a message from a peer is routed.
#[derive(Debug, Clone, Default)]
pub struct PeerRoute<'a> {
    pub agent_id: &'a str,
    pub main_key: Option<&'a str>,
    pub channel: &'a str,
    pub account_id: Option<&'a str>,
    pub peer_kind: PeerKind,
    pub peer_id: Option<&'a str>,
    pub dm_scope: DmScope,
    /// Canonical name → ids (`<peer>` or `<channel>:<peer>`) that are the same person.
    pub identity_links: Option<&'a BTreeMap<String, Vec<String>>>,
}

/// The session key for a message from a peer (`buildAgentPeerSessionKey`).
pub fn peer_session_key(route: &PeerRoute<'_>) -> String {
    let agent = normalize_agent_id(route.agent_id);
    let channel = match route.channel.trim().to_lowercase() {
        c if c.is_empty() => "unknown".to_owned(),
        c => c,
    };
    if route.peer_kind != PeerKind::Direct {
        let peer = route
            .peer_id
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .unwrap_or("unknown");
        return format!(
            "agent:{agent}:{channel}:{}:{}",
            route.peer_kind.as_str(),
            peer.to_lowercase()
        );
    }
    let raw_peer = route.peer_id.unwrap_or("").trim();
    let linked = match route.dm_scope {
        DmScope::Main => None,
        _ => linked_peer_id(route.identity_links, route.channel, raw_peer),
    };
    let peer = linked.unwrap_or_else(|| raw_peer.to_owned()).to_lowercase();
    if peer.is_empty() {
        return main_session_key(route.agent_id, route.main_key);
    }
    match route.dm_scope {
        DmScope::Main => main_session_key(route.agent_id, route.main_key),
        DmScope::PerPeer => format!("agent:{agent}:direct:{peer}"),
        DmScope::PerChannelPeer => format!("agent:{agent}:{channel}:direct:{peer}"),
        DmScope::PerAccountChannelPeer => {
            let account = normalize_account_id(route.account_id);
            format!("agent:{agent}:{channel}:{account}:direct:{peer}")
        }
    }
}

fn linked_peer_id(
    links: Option<&BTreeMap<String, Vec<String>>>,
    channel: &str,
    peer: &str,
) -> Option<String> {
    let links = links?;
    if peer.is_empty() {
        return None;
    }
    let mut candidates = vec![peer.to_lowercase()];
    let channel = channel.trim().to_lowercase();
    if !channel.is_empty() {
        candidates.push(format!("{channel}:{peer}").to_lowercase());
    }
    links.iter().find_map(|(canonical, ids)| {
        let name = canonical.trim();
        let hit = ids.iter().any(|id| {
            let id = id.trim().to_lowercase();
            !id.is_empty() && candidates.contains(&id)
        });
        (!name.is_empty() && hit).then(|| name.to_owned())
    })
}

/// `<base>:thread:<thread id lower-cased>`, or `base` when the thread id is blank.
pub fn thread_session_key(base: &str, thread_id: Option<&str>) -> String {
    match thread_id.map(str::trim).filter(|t| !t.is_empty()) {
        Some(t) => format!("{base}:thread:{}", t.to_lowercase()),
        None => base.to_owned(),
    }
}

/// Telegram forum topics: `<base>:topic:<topic id>`.
pub fn topic_session_key(base: &str, topic_id: i64) -> String {
    format!("{base}:topic:{topic_id}")
}

/// A `:thread:`/`:topic:` suffix split off a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadInfo {
    /// `thread` or `topic`.
    pub marker: &'static str,
    pub parent_session_key: String,
    pub thread_id: String,
}

/// Splits the last `:thread:<id>` or `:topic:<id>` suffix off `key`.
pub fn session_thread_info(key: &str) -> Option<ThreadInfo> {
    let key = key.trim();
    let lower = key.to_lowercase();
    let found = ["thread", "topic"]
        .into_iter()
        .filter_map(|m| lower.rfind(&format!(":{m}:")).map(|at| (at, m)))
        .max_by_key(|(at, _)| *at)?;
    let (at, marker) = found;
    let id_start = at + marker.len() + 2;
    let thread_id = key.get(id_start..)?.to_owned();
    let parent = key.get(..at)?.to_owned();
    (!thread_id.is_empty() && !parent.is_empty()).then_some(ThreadInfo {
        marker,
        parent_session_key: parent,
        thread_id,
    })
}

/// The store key for a request key (`toAgentStoreSessionKey`).
pub fn to_store_key(agent_id: &str, request_key: Option<&str>, main_key: Option<&str>) -> String {
    let raw = request_key.unwrap_or("").trim();
    if raw.is_empty() || raw.eq_ignore_ascii_case(DEFAULT_MAIN_KEY) {
        return main_session_key(agent_id, main_key);
    }
    if let Some(parsed) = parse_agent_session_key(raw) {
        return format!("agent:{}:{}", parsed.agent_id, parsed.rest);
    }
    let lowered = raw.to_lowercase();
    if lowered.starts_with("agent:") {
        return lowered;
    }
    format!("agent:{}:{lowered}", normalize_agent_id(agent_id))
}

/// The request key inside a store key (`toAgentRequestSessionKey`).
pub fn to_request_key(store_key: &str) -> Option<String> {
    let raw = store_key.trim();
    if raw.is_empty() {
        return None;
    }
    Some(parse_agent_session_key(raw).map_or_else(|| raw.to_owned(), |p| p.rest))
}

/// The agent a key belongs to, normalised; `main` for keys without an agent.
pub fn agent_id_from_session_key(key: &str) -> String {
    parse_agent_session_key(key).map_or_else(
        || DEFAULT_AGENT_ID.to_owned(),
        |p| normalize_agent_id(&p.agent_id),
    )
}

/// What kind of key `key` is.
pub fn classify_session_key_shape(key: Option<&str>) -> SessionKeyShape {
    let raw = key.unwrap_or("").trim();
    if raw.is_empty() {
        SessionKeyShape::Missing
    } else if parse_agent_session_key(raw).is_some() {
        SessionKeyShape::Agent
    } else if raw.to_lowercase().starts_with("agent:") {
        SessionKeyShape::MalformedAgent
    } else {
        SessionKeyShape::LegacyOrAlias
    }
}

/// Number of `:subagent:` segments (nesting depth of a spawned sub-agent session).
pub fn subagent_depth(key: &str) -> usize {
    key.trim().to_lowercase().matches(":subagent:").count()
}

/// Whether the key (or its rest) starts with `subagent:`.
pub fn is_subagent_key(key: &str) -> bool {
    let lower = key.trim().to_lowercase();
    lower.starts_with("subagent:")
        || parse_agent_session_key(&lower).is_some_and(|p| p.rest.starts_with("subagent:"))
}

/// Whether the key is a cron job's session.
pub fn is_cron_session_key(key: &str) -> bool {
    parse_agent_session_key(key).is_some_and(|p| p.rest.starts_with("cron:"))
}

#[cfg(test)]
#[path = "session_key_tests.rs"]
mod tests;
