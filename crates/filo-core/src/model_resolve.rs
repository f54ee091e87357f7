//! Choosing a model from `--provider` / `--model` (pi spec §3.9, `resolveCliModel`).

use filo_ai::{Model, ThinkingLevel};

/// What the command line asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedModel {
    pub model: Model,
    /// A `:level` suffix on the pattern.
    pub thinking: Option<ThinkingLevel>,
    /// Shown to the user (e.g. a custom model id was used).
    pub warning: Option<String>,
}

/// Why `--provider` / `--model` could not be resolved (pi's messages).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error("Unknown provider \"{0}\". Use --list-models to see available providers/models.")]
    UnknownProvider(String),
    #[error("Model \"{0}\" not found. Use --list-models to see available models.")]
    ModelNotFound(String),
}

/// Something the registry can answer: providers and their models.
pub trait ModelSource {
    fn provider_ids(&self) -> Vec<String>;
    fn models(&self) -> &[Model];
    /// The models of one provider, in the order of [`ModelSource::models`].
    fn models_of(&self, provider: &str) -> Vec<Model> {
        self.models()
            .iter()
            .filter(|m| m.provider == provider)
            .cloned()
            .collect()
    }
    /// A model by provider and id, including made-up ones for providers that accept any id.
    fn model(&self, provider: &str, id: &str) -> Option<Model>;
}

impl ModelSource for filo_ai::ProviderRegistry {
    fn provider_ids(&self) -> Vec<String> {
        self.providers().iter().map(|p| p.id.clone()).collect()
    }
    fn models(&self) -> &[Model] {
        filo_ai::ProviderRegistry::models(self)
    }
    fn models_of(&self, provider: &str) -> Vec<Model> {
        filo_ai::ProviderRegistry::models_of(self, provider)
            .cloned()
            .collect()
    }
    fn model(&self, provider: &str, id: &str) -> Option<Model> {
        filo_ai::ProviderRegistry::model(self, provider, id)
    }
}

fn is_dated(id: &str) -> bool {
    let tail = id.rsplit('-').next().unwrap_or("");
    tail.len() == 8 && tail.chars().all(|c| c.is_ascii_digit())
}

/// pi's `tryMatchModel`: exact (case-insensitive) id or `provider/id`, else a substring of id or
/// name, preferring aliases (not date-suffixed) and then the greatest id.
pub fn match_model<'a>(pattern: &str, models: &'a [Model]) -> Option<&'a Model> {
    let p = pattern.to_lowercase();
    let exact: Vec<&Model> = models
        .iter()
        .filter(|m| {
            m.id.to_lowercase() == p || format!("{}/{}", m.provider, m.id).to_lowercase() == p
        })
        .collect();
    if exact.len() == 1 {
        return exact.first().copied();
    }
    if exact.len() > 1 {
        return None;
    }
    let mut subs: Vec<&Model> = models
        .iter()
        .filter(|m| m.id.to_lowercase().contains(&p) || m.name.to_lowercase().contains(&p))
        .collect();
    subs.sort_by(|a, b| a.id.cmp(&b.id));
    subs.iter()
        .rev()
        .find(|m| !is_dated(&m.id))
        .copied()
        .or_else(|| subs.last().copied())
}

/// Split a `:level` suffix off a pattern (the last `:`; ids may contain colons).
fn split_level(pattern: &str) -> (&str, Option<ThinkingLevel>) {
    match pattern.rsplit_once(':') {
        Some((head, tail)) => match ThinkingLevel::parse(tail) {
            Some(level) => (head, Some(level)),
            None => (pattern, None),
        },
        None => (pattern, None),
    }
}

/// Resolve `--provider` and `--model`. `Ok(None)` when neither was given.
pub fn resolve_cli_model(
    provider: Option<&str>,
    model: Option<&str>,
    source: &dyn ModelSource,
) -> Result<Option<ResolvedModel>, ResolveError> {
    let providers = source.provider_ids();
    if let Some(p) = provider
        && !providers.iter().any(|x| x == p)
    {
        return Err(ResolveError::UnknownProvider(p.to_string()));
    }
    let Some(raw) = model else {
        let Some(p) = provider else { return Ok(None) };
        let m = source
            .models_of(p)
            .into_iter()
            .next()
            .or_else(|| source.model(p, "default"));
        return Ok(m.map(|model| ResolvedModel {
            model,
            thinking: None,
            warning: None,
        }));
    };
    let (pattern, thinking) = split_level(raw);
    let (provider, pattern) = match provider {
        Some(p) => (Some(p.to_string()), pattern.to_string()),
        None => match pattern.split_once('/') {
            Some((head, rest)) if providers.iter().any(|x| x == head) => {
                (Some(head.to_string()), rest.to_string())
            }
            _ => (None, pattern.to_string()),
        },
    };
    let of_provider;
    let candidates: &[Model] = match &provider {
        Some(p) => {
            of_provider = source.models_of(p);
            &of_provider
        }
        None => source.models(),
    };
    if let Some(m) = match_model(&pattern, candidates) {
        return Ok(Some(ResolvedModel {
            model: m.clone(),
            thinking,
            warning: None,
        }));
    }
    if let Some(p) = &provider {
        if let Some(m) = source.model(p, &pattern) {
            return Ok(Some(ResolvedModel {
                model: m,
                thinking,
                warning: None,
            }));
        }
        if let Some(template) = candidates.first() {
            let mut m = template.clone();
            m.id.clone_from(&pattern);
            m.name.clone_from(&pattern);
            let warning = Some(format!(
                "Model \"{pattern}\" not found for provider \"{p}\". Using custom model id."
            ));
            return Ok(Some(ResolvedModel {
                model: m,
                thinking,
                warning,
            }));
        }
    }
    Err(ResolveError::ModelNotFound(raw.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reg() -> filo_ai::ProviderRegistry {
        filo_ai::ProviderRegistry::builtin().unwrap()
    }

    #[test]
    fn resolves_patterns_like_pi() {
        let r = reg();
        let any = r
            .models()
            .iter()
            .find(|m| m.provider == "anthropic")
            .unwrap()
            .clone();
        let got = resolve_cli_model(None, Some(&format!("anthropic/{}:high", any.id)), &r)
            .unwrap()
            .unwrap();
        assert_eq!(got.model.id, any.id);
        assert_eq!(got.thinking, Some(ThinkingLevel::High));
        let err = resolve_cli_model(Some("nope"), None, &r).unwrap_err();
        assert_eq!(err, ResolveError::UnknownProvider("nope".into()));
        assert_eq!(
            err.to_string(),
            "Unknown provider \"nope\". Use --list-models to see available providers/models."
        );
        let local = resolve_cli_model(Some("llamacpp"), None, &r)
            .unwrap()
            .unwrap();
        assert_eq!(local.model.provider, "llamacpp");
        assert_eq!(local.model.base_url, "http://127.0.0.1:8080/v1");
        let custom = resolve_cli_model(Some("anthropic"), Some("claude-future-9"), &r)
            .unwrap()
            .unwrap();
        assert_eq!(custom.model.id, "claude-future-9");
        assert!(custom.warning.unwrap().contains("Using custom model id."));
        assert!(resolve_cli_model(None, Some("zzz-no-such-model"), &r).is_err());
        assert_eq!(resolve_cli_model(None, None, &r).unwrap(), None);
    }

    #[test]
    fn prefers_aliases_over_dated_ids() {
        let mk = |id: &str| Model {
            id: id.into(),
            name: id.into(),
            api: "x".into(),
            provider: "p".into(),
            base_url: String::new(),
            reasoning: false,
            input: vec![],
            cost: Default::default(),
            context_window: 0,
            max_tokens: 0,
            headers: None,
            compat: None,
            thinking_level_map: None,
            input_limits: None,
            prompt_cache: None,
            lab: None,
            enabled: None,
            providers: None,
            free: None,
        };
        let models = vec![
            mk("sonnet-4-20250514"),
            mk("sonnet-4"),
            mk("sonnet-4-20240101"),
        ];
        assert_eq!(match_model("sonnet", &models).unwrap().id, "sonnet-4");
    }
}

/// A model of the cycling scope (`--models`), with the thinking level its pattern named.
#[derive(Debug, Clone, PartialEq)]
pub struct ScopedModel {
    pub model: Model,
    pub thinking: Option<ThinkingLevel>,
}

/// pi's `resolveModelScope`: each pattern, in order, adds the models it names among
/// `available` (those with a key), without duplicates. A pattern with `*`, `?` or `[` is a glob
/// matched case-insensitively against `provider/id` and against `id` (`*` stops at `/`); any
/// other is matched as `--model` is. Returns the scope and a warning per pattern that matched
/// nothing.
pub fn resolve_model_scope(
    patterns: &[String],
    available: &[Model],
) -> (Vec<ScopedModel>, Vec<String>) {
    let mut scope: Vec<ScopedModel> = Vec::new();
    let mut warnings = Vec::new();
    let add = |scope: &mut Vec<ScopedModel>, model: &Model, thinking| {
        if !scope.iter().any(|s| s.model.same_as(model)) {
            scope.push(ScopedModel {
                model: model.clone(),
                thinking,
            });
        }
    };
    for raw in patterns.iter().map(|p| p.trim()).filter(|p| !p.is_empty()) {
        let (pattern, thinking) = split_level(raw);
        if raw.contains(['*', '?', '[']) {
            let glob = globset::GlobBuilder::new(pattern)
                .case_insensitive(true)
                .literal_separator(true)
                .build()
                .map(|g| g.compile_matcher());
            let matched: Vec<&Model> = match &glob {
                Ok(m) => available
                    .iter()
                    .filter(|x| m.is_match(format!("{}/{}", x.provider, x.id)) || m.is_match(&x.id))
                    .collect(),
                Err(_) => Vec::new(),
            };
            if matched.is_empty() {
                warnings.push(format!("No models match pattern \"{raw}\""));
            }
            for m in matched {
                add(&mut scope, m, thinking);
            }
            continue;
        }
        let found = match pattern.split_once('/') {
            Some((provider, id)) if available.iter().any(|m| m.provider == provider) => {
                let of_provider: Vec<Model> = available
                    .iter()
                    .filter(|m| m.provider == provider)
                    .cloned()
                    .collect();
                match_model(id, &of_provider).cloned()
            }
            _ => match_model(pattern, available).cloned(),
        };
        match found {
            Some(m) => add(&mut scope, &m, thinking),
            None => warnings.push(format!("No models match pattern \"{raw}\"")),
        }
    }
    (scope, warnings)
}
