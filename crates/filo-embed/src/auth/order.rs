//! Which auth profile to try first (C9, spec §6.3 `resolveAuthProfileOrder`).

use super::store::{AuthProfiles, Credential, CredentialKind};
use super::usage::{is_in_cooldown, unusable_until};
use super::{AuthConfig, normalize_provider_id};

/// Candidate profile ids for `provider`, best first.
///
/// Explicit order (store `order`, else config `auth.order`) is kept as given with profiles in
/// cooldown moved after the available ones (soonest expiry first). Without one, the base list
/// (config `auth.profiles` of the provider, else every stored profile of the provider) is sorted
/// oauth → token → api_key, then least recently used first, cooling profiles last. `preferred`
/// goes first when it survives the filters.
///
/// OpenClaw also clears expired cooldown fields while ordering; here ordering is pure and the
/// clearing is [`super::usage::clear_expired_cooldowns`]. Expired windows order the same either
/// way because a window is active only while `now < until`.
pub fn resolve_auth_profile_order(
    config: &AuthConfig,
    store: &AuthProfiles,
    provider: &str,
    preferred: Option<&str>,
    now: i64,
) -> Vec<String> {
    let key = normalize_provider_id(provider);
    let stored_order = store
        .order
        .iter()
        .find(|(p, _)| normalize_provider_id(p) == key)
        .map(|(_, ids)| ids);
    let configured_order = config
        .order
        .iter()
        .find(|(p, _)| normalize_provider_id(p) == key)
        .map(|(_, ids)| ids);
    let explicit = stored_order.or(configured_order);
    let base: Vec<String> = match explicit {
        Some(ids) => ids.clone(),
        None => {
            let declared: Vec<String> = config
                .profiles
                .iter()
                .filter(|(_, p)| normalize_provider_id(&p.provider) == key)
                .map(|(id, _)| id.clone())
                .collect();
            if declared.is_empty() {
                store
                    .profiles
                    .iter()
                    .filter(|(_, c)| normalize_provider_id(c.provider()) == key)
                    .map(|(id, _)| id.clone())
                    .collect()
            } else {
                declared
            }
        }
    };
    let mut candidates: Vec<String> = Vec::new();
    for id in base {
        if !candidates.contains(&id) && is_eligible(config, store, &id, &key, now) {
            candidates.push(id);
        }
    }
    let until = |id: &String| {
        store
            .usage_stats
            .get(id)
            .and_then(unusable_until)
            .unwrap_or(now)
    };
    let (mut available, mut cooling): (Vec<String>, Vec<String>) = candidates
        .into_iter()
        .partition(|id| !is_in_cooldown(store, id, None, now));
    if explicit.is_none() {
        available.sort_by_key(|id| {
            let score = store.profile(id).map_or(3, |c| type_score(c.kind()));
            let last_used = store
                .usage_stats
                .get(id)
                .and_then(|s| s.last_used)
                .unwrap_or(0);
            (score, last_used)
        });
    }
    cooling.sort_by_key(until);
    available.append(&mut cooling);
    if let Some(pos) = preferred.and_then(|p| available.iter().position(|id| id == p)) {
        let id = available.remove(pos);
        available.insert(0, id);
    }
    available
}

fn type_score(kind: &CredentialKind) -> u8 {
    match kind {
        CredentialKind::OAuth => 0,
        CredentialKind::Token => 1,
        CredentialKind::ApiKey => 2,
        CredentialKind::Other(_) => 3,
    }
}

fn is_eligible(
    config: &AuthConfig,
    store: &AuthProfiles,
    id: &str,
    provider_key: &str,
    now: i64,
) -> bool {
    let Some(cred) = store.profile(id) else {
        return false;
    };
    if normalize_provider_id(cred.provider()) != provider_key {
        return false;
    }
    if let Some((_, declared)) = config.profiles.iter().find(|(k, _)| k == id) {
        if normalize_provider_id(&declared.provider) != provider_key {
            return false;
        }
        let compatible = declared.mode == cred.kind().as_str()
            || (declared.mode == "oauth" && *cred.kind() == CredentialKind::Token);
        if !compatible {
            return false;
        }
    }
    is_valid(cred, now)
}

fn non_blank(cred: &Credential, field: &str) -> bool {
    cred.str_field(field).is_some_and(|s| !s.trim().is_empty())
}

/// Whether a credential can be used at `now`.
pub fn is_valid(cred: &Credential, now: i64) -> bool {
    match cred.kind() {
        CredentialKind::ApiKey => non_blank(cred, "key"),
        CredentialKind::Token => {
            // OpenClaw's order.ts @012af446 treats `expires: 0` as "no expiry"; later trees (and
            // the order test the spec quotes) treat it as invalid. The later source wins here:
            // a non-positive `expires` is invalid, a positive one must lie in the future.
            let expired = cred.expires().is_some_and(|e| e <= 0.0 || now as f64 >= e);
            non_blank(cred, "token") && !expired
        }
        CredentialKind::OAuth => non_blank(cred, "access") || non_blank(cred, "refresh"),
        CredentialKind::Other(_) => false,
    }
}
