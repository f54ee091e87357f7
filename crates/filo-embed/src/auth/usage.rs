//! Cooldown and billing-backoff arithmetic over an [`AuthProfiles`] value (C9, spec §6.2).
//! Pure: the caller passes `now` (ms), so tests drive time with a manual clock.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::normalize_provider_id;
use super::store::{AuthProfiles, ProfileUsageStats};

const MINUTE_MS: f64 = 60_000.0;
const HOUR_MS: f64 = 3_600_000.0;

/// Why a profile failed (`failureCounts` keys, `disabledReason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FailureReason {
    AuthPermanent,
    Auth,
    Billing,
    Format,
    ModelNotFound,
    Timeout,
    RateLimit,
    Overloaded,
    SessionExpired,
    Unknown,
}

impl FailureReason {
    /// Every reason, in the tie-break priority of [`resolve_profiles_unavailable_reason`].
    pub const ALL: [Self; 10] = [
        Self::AuthPermanent,
        Self::Auth,
        Self::Billing,
        Self::Format,
        Self::ModelNotFound,
        Self::Timeout,
        Self::RateLimit,
        Self::Overloaded,
        Self::SessionExpired,
        Self::Unknown,
    ];

    /// The JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AuthPermanent => "auth_permanent",
            Self::Auth => "auth",
            Self::Billing => "billing",
            Self::Format => "format",
            Self::ModelNotFound => "model_not_found",
            Self::Timeout => "timeout",
            Self::RateLimit => "rate_limit",
            Self::Overloaded => "overloaded",
            Self::SessionExpired => "session_expired",
            Self::Unknown => "unknown",
        }
    }

    /// Parses the JSON spelling.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

/// `auth.cooldowns` config. Non-positive or non-finite values fall back to the defaults.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CooldownConfig {
    pub billing_backoff_hours: Option<f64>,
    #[serde(default)]
    pub billing_backoff_hours_by_provider: BTreeMap<String, f64>,
    pub billing_max_hours: Option<f64>,
    pub failure_window_hours: Option<f64>,
}

/// The cooldown config resolved for one provider, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ResolvedCooldowns {
    pub billing_backoff_ms: f64,
    pub billing_max_ms: f64,
    pub failure_window_ms: f64,
}

fn positive_or(value: Option<f64>, fallback: f64) -> f64 {
    value
        .filter(|v| v.is_finite() && *v > 0.0)
        .unwrap_or(fallback)
}

impl CooldownConfig {
    /// Resolves the config for `provider` (per-provider billing keys compared normalised).
    pub fn resolve(&self, provider: &str) -> ResolvedCooldowns {
        let key = normalize_provider_id(provider);
        let by_provider = self
            .billing_backoff_hours_by_provider
            .iter()
            .find(|(k, _)| normalize_provider_id(k) == key)
            .map(|(_, v)| *v);
        // As in OpenClaw: the provider override replaces the global value before validation,
        // so an invalid override falls back to the default, not to the global value.
        ResolvedCooldowns {
            billing_backoff_ms: positive_or(by_provider.or(self.billing_backoff_hours), 5.0)
                * HOUR_MS,
            billing_max_ms: positive_or(self.billing_max_hours, 24.0) * HOUR_MS,
            failure_window_ms: positive_or(self.failure_window_hours, 24.0) * HOUR_MS,
        }
    }
}

/// The key of per-model stats: `<id>:<model>`, or `id` when the model is blank.
pub fn cooldown_key(profile_id: &str, model: Option<&str>) -> String {
    match model.map(str::trim) {
        Some(m) if !m.is_empty() => format!("{profile_id}:{m}"),
        _ => profile_id.to_owned(),
    }
}

/// `min(1 h, 1 min × 5^min(n−1, 3))` with n = max(1, error_count).
pub fn cooldown_ms(error_count: u32) -> i64 {
    let n = error_count.max(1);
    let factor = 5_i64.pow((n - 1).min(3));
    (60_000 * factor).min(3_600_000)
}

/// The later of a finite positive `cooldown_until` and `disabled_until`.
pub fn unusable_until(stats: &ProfileUsageStats) -> Option<i64> {
    [stats.cooldown_until, stats.disabled_until]
        .into_iter()
        .flatten()
        .filter(|v| *v > 0)
        .max()
}

fn stats_in_cooldown(stats: Option<&ProfileUsageStats>, now: i64) -> bool {
    stats
        .and_then(unusable_until)
        .is_some_and(|until| now < until)
}

/// Whether `id` is cooling down at `now`: its own stats, or (with a model) that model's stats.
pub fn is_in_cooldown(store: &AuthProfiles, id: &str, model: Option<&str>, now: i64) -> bool {
    if stats_in_cooldown(store.usage_stats.get(id), now) {
        return true;
    }
    let key = cooldown_key(id, model);
    key != id && stats_in_cooldown(store.usage_stats.get(&key), now)
}

/// Records a failure of `id` (spec §6.2 `markAuthProfileFailure`); unknown ids are ignored.
pub fn mark_failure(
    store: &mut AuthProfiles,
    id: &str,
    reason: FailureReason,
    config: &CooldownConfig,
    model: Option<&str>,
    now: i64,
) {
    let Some(provider) = store.profile(id).map(|c| c.provider().to_owned()) else {
        return;
    };
    let cfg = config.resolve(&provider);
    let stats = store
        .usage_stats
        .entry(cooldown_key(id, model))
        .or_default();
    let window_expired = stats
        .last_failure_at
        .is_some_and(|at| (now - at) as f64 > cfg.failure_window_ms);
    if window_expired {
        stats.error_count = Some(0);
        stats.failure_counts = None;
    }
    let error_count = stats.error_count.unwrap_or(0).saturating_add(1);
    stats.error_count = Some(error_count);
    let counts = stats.failure_counts.get_or_insert_with(BTreeMap::new);
    let reason_count = counts.entry(reason.as_str().to_owned()).or_insert(0);
    *reason_count = reason_count.saturating_add(1);
    let reason_count = *reason_count;
    stats.last_failure_at = Some(now);
    if reason == FailureReason::Billing {
        let exponent = reason_count.saturating_sub(1).min(10);
        let base = cfg.billing_backoff_ms.max(MINUTE_MS);
        let backoff = (base * f64::from(1_u32 << exponent)).min(cfg.billing_max_ms);
        stats.disabled_until = Some(now + backoff as i64);
        stats.disabled_reason = Some(reason.as_str().to_owned());
    } else {
        stats.cooldown_until = Some(now + cooldown_ms(error_count));
    }
}

/// `markAuthProfileCooldown`: a failure with reason `unknown`.
pub fn mark_cooldown(store: &mut AuthProfiles, id: &str, config: &CooldownConfig, now: i64) {
    mark_failure(store, id, FailureReason::Unknown, config, None, now);
}

fn reset(stats: &mut ProfileUsageStats) {
    stats.error_count = Some(0);
    stats.cooldown_until = None;
    stats.disabled_until = None;
    stats.disabled_reason = None;
    stats.failure_counts = None;
}

/// Records a success: `last_used = now` and the profile's health reset (with a model: the
/// profile-level stats and that model's stats only).
pub fn mark_used(store: &mut AuthProfiles, id: &str, model: Option<&str>, now: i64) {
    if store.profile(id).is_none() {
        return;
    }
    let stats = store.usage_stats.entry(id.to_owned()).or_default();
    stats.last_used = Some(now);
    reset(stats);
    let key = cooldown_key(id, model);
    if key != id
        && let Some(model_stats) = store.usage_stats.get_mut(&key)
    {
        reset(model_stats);
    }
}

/// `lastGood[provider] = id` (not used for ordering).
pub fn mark_good(store: &mut AuthProfiles, id: &str) {
    if let Some(provider) = store
        .profile(id)
        .map(|c| normalize_provider_id(c.provider()))
    {
        store.last_good.insert(provider, id.to_owned());
    }
}

/// Clears the error count and cooldown of `id` (or of its model key).
pub fn clear_cooldown(store: &mut AuthProfiles, id: &str, model: Option<&str>) {
    if let Some(stats) = store.usage_stats.get_mut(&cooldown_key(id, model)) {
        stats.error_count = Some(0);
        stats.cooldown_until = None;
    }
}

/// Clears `cooldown_until`/`disabled_until` of profiles whose window has passed.
pub fn clear_expired_cooldowns(store: &mut AuthProfiles, now: i64) {
    for stats in store.usage_stats.values_mut() {
        if unusable_until(stats).is_some_and(|until| now >= until) {
            stats.cooldown_until = None;
            stats.disabled_until = None;
        }
    }
}

/// Why every candidate is unusable (the FailoverError reason), scored per reason: an active
/// disabled window with a reason weighs 1 000; otherwise an active cooldown adds each failure
/// count (or 1 to `rate_limit` when there are none). None when no candidate scores.
pub fn resolve_profiles_unavailable_reason(
    store: &AuthProfiles,
    ids: &[String],
    now: i64,
) -> Option<FailureReason> {
    let mut scores: BTreeMap<FailureReason, u64> = BTreeMap::new();
    for id in ids {
        let Some(stats) = store.usage_stats.get(id) else {
            continue;
        };
        let disabled_active = stats
            .disabled_until
            .is_some_and(|until| until > 0 && now < until);
        let disabled_reason = stats
            .disabled_reason
            .as_deref()
            .and_then(FailureReason::parse);
        if let Some(reason) = disabled_reason.filter(|_| disabled_active) {
            *scores.entry(reason).or_default() += 1_000;
            continue;
        }
        if !stats
            .cooldown_until
            .is_some_and(|until| until > 0 && now < until)
        {
            continue;
        }
        let counts: Vec<(FailureReason, u32)> = stats
            .failure_counts
            .iter()
            .flatten()
            .filter_map(|(k, n)| FailureReason::parse(k).map(|r| (r, *n)))
            .filter(|(_, n)| *n > 0)
            .collect();
        if counts.is_empty() {
            *scores.entry(FailureReason::RateLimit).or_default() += 1;
        }
        for (reason, n) in counts {
            *scores.entry(reason).or_default() += u64::from(n);
        }
    }
    // Highest score wins; on a tie the reason earlier in `FailureReason::ALL` wins.
    FailureReason::ALL
        .into_iter()
        .filter_map(|r| scores.get(&r).map(|s| (r, *s)))
        .fold(
            None,
            |best: Option<(FailureReason, u64)>, (r, s)| match best {
                Some((_, bs)) if bs >= s => best,
                _ => Some((r, s)),
            },
        )
        .map(|(r, _)| r)
}

#[cfg(test)]
#[path = "usage_tests.rs"]
mod tests;
