//! Run setup (C2 "setup" rules, spec §1.3): which model, which context window, which auth
//! profiles in which order, and the key of each candidate.

use std::path::PathBuf;

use filo_ai::Model;

use crate::auth::usage::resolve_profiles_unavailable_reason;
use crate::auth::{AuthProfileStore, CredentialKind, FailureReason, normalize_provider_id};
use crate::classify::FailoverReason;
use crate::config::DEFAULT_CONTEXT_TOKENS;
use crate::embedder::Inner;
use crate::error::{FailoverError, RunError};
use crate::run::params::{ProfileSource, RunParams};
use crate::session_key::agent_id_from_session_key;

/// Below this context window a run is refused.
pub const CONTEXT_WINDOW_HARD_MIN: u64 = 16_000;

/// What a run resolved before its first attempt.
pub(crate) struct Resolved {
    pub agent_id: String,
    pub provider: String,
    pub model: Model,
    pub session_file: PathBuf,
    pub store: AuthProfileStore,
    /// `None` is the key from the environment, `auth.json` or `models.json`.
    pub candidates: Vec<Option<String>>,
    pub locked: bool,
}

/// `provider/model` → the two halves (a bare id uses `default_provider`).
pub fn split_model_ref(
    reference: &str,
    default_provider: Option<&str>,
) -> Option<(String, String)> {
    let r = reference.trim();
    match r.split_once('/') {
        Some((p, m)) if !p.trim().is_empty() && !m.trim().is_empty() => {
            Some((p.trim().to_owned(), m.trim().to_owned()))
        }
        _ if !r.is_empty() => default_provider.map(|p| (p.to_owned(), r.to_owned())),
        _ => None,
    }
}

fn requested_model(
    inner: &Inner,
    p: &RunParams,
    agent_id: &str,
) -> Result<(String, String), RunError> {
    let config = inner.config();
    let provider = p
        .provider
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty());
    let model = p.model.as_deref().map(str::trim).filter(|s| !s.is_empty());
    let primary = config
        .agent(agent_id)
        .and_then(|a| a.model.as_ref())
        .and_then(|m| m.primary.clone())
        .or_else(|| config.defaults.model.primary.clone());
    let default = primary.as_deref().and_then(|r| split_model_ref(r, None));
    match (provider, model) {
        (Some(p), Some(m)) => Ok((p.to_owned(), m.to_owned())),
        (None, Some(m)) => {
            split_model_ref(m, default.as_ref().map(|d| d.0.as_str())).ok_or_else(|| {
                RunError::Config(format!(
                    "model \"{m}\" names no provider and no default model is configured"
                ))
            })
        }
        (Some(p), None) => match default {
            Some((dp, dm)) if dp == p => Ok((dp, dm)),
            _ => Err(RunError::Config(format!(
                "no model given for provider \"{p}\" (set the run's model or agents.defaults.model.primary)"
            ))),
        },
        (None, None) => default.ok_or_else(|| {
            RunError::Config(
                "no model: set agents.defaults.model.primary to \"provider/model\"".into(),
            )
        }),
    }
}

fn agent_id_of(p: &RunParams) -> String {
    p.agent_id
        .clone()
        .or_else(|| p.session_key.as_deref().map(agent_id_from_session_key))
        .unwrap_or_else(|| "main".to_owned())
}

/// The `(provider, model)` a run asks for: its own, else its agent's or the default primary.
pub(crate) fn requested_candidate(
    inner: &Inner,
    p: &RunParams,
) -> Result<(String, String), RunError> {
    requested_model(inner, p, &agent_id_of(p))
}

/// Resolves the model, context window, session file and auth candidates of a run.
pub(crate) fn resolve_run(inner: &Inner, p: &RunParams) -> Result<Resolved, RunError> {
    let agent_id = agent_id_of(p);
    let (provider, model_id) = requested_model(inner, p, &agent_id)?;
    let mut model = inner.registry.model(&provider, &model_id).ok_or_else(|| {
        RunError::from(FailoverError::new(
            FailoverReason::ModelNotFound,
            format!("Unknown model: {provider}/{model_id}"),
        ))
    })?;
    let config = inner.config();
    let window = if model.context_window > 0 {
        model.context_window
    } else {
        DEFAULT_CONTEXT_TOKENS
    };
    let window = config
        .defaults
        .context_tokens
        .filter(|c| *c > 0)
        .map_or(window, |cap| window.min(cap));
    if window < CONTEXT_WINDOW_HARD_MIN {
        return Err(RunError::from(FailoverError::new(
            FailoverReason::Unknown,
            format!(
                "Model context window too small ({window} tokens). Minimum is {CONTEXT_WINDOW_HARD_MIN}."
            ),
        )));
    }
    model.context_window = window;
    let session_file = match &p.session_file {
        Some(f) => f.clone(),
        None => inner
            .paths
            .session_file(&agent_id, &p.session_id, None)
            .map_err(|e| RunError::Session(e.to_string()))?,
    };
    let store = inner.auth_store(&agent_id)?;
    // Other processes (and, on a shared store, other hosts) put profiles in cooldown too.
    store
        .reload()
        .map_err(|e| RunError::Config(e.to_string()))?;
    let preferred = p.auth_profile.as_ref().map(|a| a.id.as_str());
    let order = store.order(&provider, preferred);
    let snapshot = store.snapshot();
    let locked_id = p.auth_profile.as_ref().filter(|a| {
        a.source == ProfileSource::User
            && snapshot.profile(&a.id).is_some_and(|c| {
                normalize_provider_id(c.provider()) == normalize_provider_id(&provider)
            })
    });
    let candidates = match locked_id {
        Some(l) if !order.contains(&l.id) => {
            return Err(RunError::Config(format!(
                "Auth profile \"{}\" is not configured for {provider}.",
                l.id
            )));
        }
        Some(l) => vec![Some(l.id.clone())],
        None if order.is_empty() => vec![None],
        None => order.into_iter().map(Some).collect(),
    };
    Ok(Resolved {
        agent_id,
        provider,
        model,
        session_file,
        store,
        candidates,
        locked: locked_id.is_some(),
    })
}

impl Resolved {
    /// Whether candidate `i` is cooling down for this model.
    pub fn in_cooldown(&self, i: usize) -> bool {
        match self.candidates.get(i) {
            Some(Some(id)) => self.store.is_in_cooldown(id, Some(&self.model.id)),
            Some(None) | None => false,
        }
    }

    /// The first usable candidate (a locked profile is used even when cooling down); an error
    /// naming why every profile is unavailable otherwise.
    pub fn initial(&self) -> Result<usize, RunError> {
        if self.locked {
            return Ok(0);
        }
        if let Some(i) = (0..self.candidates.len()).find(|i| !self.in_cooldown(*i)) {
            return Ok(i);
        }
        let ids: Vec<String> = self.candidates.iter().flatten().cloned().collect();
        let now = crate::clock::Clock::now_ms(self.store_clock());
        let reason = resolve_profiles_unavailable_reason(&self.store.snapshot(), &ids, now)
            .map_or(FailoverReason::Unknown, failover_reason_of);
        let mut e = FailoverError::new(
            reason,
            format!(
                "No available auth profile for {} (all in cooldown or unavailable).",
                self.provider
            ),
        );
        e.provider = Some(self.provider.clone());
        e.model = Some(self.model.id.clone());
        Err(RunError::from(e))
    }

    fn store_clock(&self) -> &dyn crate::clock::Clock {
        self.store.clock()
    }

    /// The next candidate after `current` that is not cooling down (never for a locked profile).
    pub fn advance(&self, current: usize) -> Option<usize> {
        if self.locked {
            return None;
        }
        (current + 1..self.candidates.len()).find(|i| !self.in_cooldown(*i))
    }

    /// The key of candidate `i`.
    pub fn key(&self, inner: &Inner, i: usize) -> Result<String, RunError> {
        let missing = |mode: &str| {
            RunError::Config(format!(
                "No API key resolved for provider \"{}\" (auth mode: {mode}).",
                self.provider
            ))
        };
        match self.candidates.get(i).cloned().flatten() {
            Some(id) => {
                let snapshot = self.store.snapshot();
                let cred = snapshot.profile(&id).ok_or_else(|| missing("api-key"))?;
                let field = match cred.kind() {
                    CredentialKind::ApiKey => "key",
                    CredentialKind::Token => "token",
                    CredentialKind::OAuth => "access",
                    CredentialKind::Other(_) => return Err(missing(cred.kind().as_str())),
                };
                cred.str_field(field)
                    .filter(|k| !k.is_empty())
                    .map(str::to_owned)
                    .ok_or_else(|| missing(cred.kind().as_str()))
            }
            None => inner
                .api_key
                .as_ref()
                .and_then(|resolve| resolve(&self.provider))
                .or_else(|| inner.registry.api_key(&self.provider, &inner.env))
                .or_else(|| inner.registry.is_keyless(&self.provider).then(String::new))
                .ok_or_else(|| missing("api-key")),
        }
    }

    /// The profile id of candidate `i`.
    pub fn profile(&self, i: usize) -> Option<&str> {
        self.candidates.get(i).and_then(|c| c.as_deref())
    }
}

/// The failover reason of a stored failure reason.
pub fn failover_reason_of(r: FailureReason) -> FailoverReason {
    match r {
        FailureReason::AuthPermanent => FailoverReason::AuthPermanent,
        FailureReason::Auth => FailoverReason::Auth,
        FailureReason::Billing => FailoverReason::Billing,
        FailureReason::Format => FailoverReason::Format,
        FailureReason::ModelNotFound => FailoverReason::ModelNotFound,
        FailureReason::Timeout => FailoverReason::Timeout,
        FailureReason::RateLimit => FailoverReason::RateLimit,
        FailureReason::Overloaded => FailoverReason::Overloaded,
        FailureReason::SessionExpired => FailoverReason::SessionExpired,
        FailureReason::Unknown => FailoverReason::Unknown,
    }
}

/// The stored failure reason of a failover reason; None for reasons never recorded on a
/// profile (timeouts, unknown and unclassified failures: another key would not help).
pub fn recordable_failure(r: FailoverReason) -> Option<FailureReason> {
    match r {
        FailoverReason::AuthPermanent => Some(FailureReason::AuthPermanent),
        FailoverReason::Auth => Some(FailureReason::Auth),
        FailoverReason::Billing => Some(FailureReason::Billing),
        FailoverReason::Format => Some(FailureReason::Format),
        FailoverReason::ModelNotFound => Some(FailureReason::ModelNotFound),
        FailoverReason::RateLimit => Some(FailureReason::RateLimit),
        FailoverReason::Overloaded => Some(FailureReason::Overloaded),
        FailoverReason::SessionExpired => Some(FailureReason::SessionExpired),
        FailoverReason::Timeout
        | FailoverReason::Unknown
        | FailoverReason::ServerError
        | FailoverReason::NoErrorDetails
        | FailoverReason::EmptyResponse
        | FailoverReason::Unclassified => None,
    }
}
