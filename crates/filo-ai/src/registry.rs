//! Providers as data: the bundled catalog (`data/catalog.json`), custom providers from a pi-format
//! `models.json`, and API-key resolution through an explicit [`Env`]. No vendor has code here;
//! a provider is a record naming its wire protocol, base URL, key variables and headers.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use thiserror::Error;

use crate::env::{Env, resolve_config_value};
use crate::model::Model;

/// The bundled catalog.
const CATALOG: &str = include_str!("../data/catalog.json");

/// Defaults for models of providers that accept any id (Ollama, llama.cpp, custom servers).
const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;
const DEFAULT_MAX_TOKENS: u64 = 16_384;

/// One provider record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderConfig {
    pub id: String,
    #[serde(default)]
    pub name: String,
    /// Wire protocol of the provider's models unless a model says otherwise.
    pub api: String,
    pub base_url: String,
    /// Environment variables holding the key, first non-empty wins (pi spec §1.11).
    #[serde(default)]
    pub env_keys: Vec<String>,
    /// Extra headers; values resolve like models.json values (env var name or literal).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Default `compat` for the provider's models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compat: Option<Value>,
    /// Local servers that need no key.
    #[serde(default)]
    pub keyless: bool,
    /// Accepts any model id (models are made up on request with default limits).
    #[serde(default)]
    pub any_model: bool,
    /// models.json `apiKey`: an env var name or a literal; a `!command` is left to the caller
    /// ([`ProviderRegistry::api_key`] skips it), which runs it off the async workers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// models.json `authHeader`: also send `Authorization: Bearer <key>`.
    #[serde(default)]
    pub auth_header: bool,
}

#[derive(Deserialize)]
struct Catalog {
    providers: Vec<ProviderConfig>,
    models: Vec<Model>,
}

/// The catalog's head: everything before its models.
#[derive(Deserialize)]
struct CatalogHead {
    providers: Vec<ProviderConfig>,
}

/// Errors of the registry and of models.json (pi's texts).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RegistryError {
    #[error("Failed to parse models.json: {0}")]
    Parse(String),
    #[error("Invalid models.json schema: {0}")]
    Schema(String),
    #[error("Invalid bundled catalog: {0}")]
    Catalog(String),
    #[error("Unknown provider: {0}")]
    UnknownProvider(String),
}

/// The providers and models a client can reach.
///
/// The bundled catalog's models are kept as their JSON lines, one group per provider, and a
/// group is parsed the first time one of its models is asked for: a start that looks up one
/// model does not parse the other 968. Every method answers as if all models were one list in
/// catalog order followed by the models added since (`catalog::tests` pins it against the
/// parsed catalog).
#[derive(Debug, Clone, Default)]
pub struct ProviderRegistry {
    providers: Vec<ProviderConfig>,
    /// The catalog's models, one group per provider, in catalog order.
    groups: Vec<Group>,
    /// Models that are in no group (added by models.json or code), in the order they came.
    added: Vec<Model>,
    /// [`ProviderRegistry::models`]: the groups then `added`, made on first call, dropped on
    /// every change.
    all: OnceLock<Vec<Model>>,
}

/// A provider's models in the bundled catalog, parsed on first use.
#[derive(Debug, Clone)]
struct Group {
    provider: &'static str,
    /// The models' lines (one JSON object each, a `,` after all but the catalog's last).
    lines: &'static str,
    models: OnceLock<Vec<Model>>,
}

impl Group {
    fn models(&self) -> &[Model] {
        self.models.get_or_init(|| parse_group(self.lines))
    }

    fn models_mut(&mut self) -> &mut [Model] {
        if self.models.get().is_none() {
            // `OnceLock::get_mut_or_init` is not stable yet.
            self.models = OnceLock::from(parse_group(self.lines));
        }
        self.models.get_mut().map_or(&mut [], Vec::as_mut_slice)
    }
}

/// A group's models. Every line of the bundled catalog parses (`tests::lazy_catalog_*` parse
/// them all), so nothing is dropped here.
fn parse_group(lines: &str) -> Vec<Model> {
    lines
        .lines()
        .filter_map(|line| serde_json::from_str(model_line(line)).ok())
        .collect()
}

/// A model line without its indentation and trailing comma.
fn model_line(line: &str) -> &str {
    let line = line.trim();
    line.strip_suffix(',').unwrap_or(line)
}

/// The catalog as `generate.mjs` writes it (the providers, then ` "models": [` and one model a
/// line, grouped by provider) cut into its providers and the groups' lines, the models left
/// unparsed; `None` for any other layout (the caller then parses the whole catalog).
fn split_catalog(text: &'static str) -> Option<(Vec<ProviderConfig>, Vec<Group>)> {
    const MODELS: &str = "\n \"models\": [\n";
    const END: &str = "\n ]\n}";
    let at = text.find(MODELS)?;
    let head = format!("{}\n}}", text[..at].trim_end().strip_suffix(',')?);
    let head: CatalogHead = serde_json::from_str(&head).ok()?;
    let body = text[at + MODELS.len()..].trim_end().strip_suffix(END)?;
    let mut groups: Vec<Group> = Vec::new();
    let (mut start, mut group_start) = (0, 0);
    for line in body.split_inclusive('\n') {
        let provider = line_provider(line)?;
        let end = start + line.len();
        if let Some(g) = groups.last_mut().filter(|g| g.provider == provider) {
            g.lines = &body[group_start..end];
        } else if groups.iter().any(|g| g.provider == provider) {
            return None;
        } else {
            group_start = start;
            groups.push(Group {
                provider,
                lines: &body[start..end],
                models: OnceLock::new(),
            });
        }
        start = end;
    }
    Some((head.providers, groups))
}

/// The `provider` of a model line: the first `"provider":"…"` in it, when that is a plain string.
fn line_provider(line: &str) -> Option<&str> {
    const KEY: &str = "\"provider\":\"";
    let rest = &line[line.find(KEY)? + KEY.len()..];
    let id = &rest[..rest.find('"')?];
    (!id.contains('\\')).then_some(id)
}

impl PartialEq for ProviderRegistry {
    fn eq(&self, other: &Self) -> bool {
        self.providers == other.providers && self.models() == other.models()
    }
}

impl ProviderRegistry {
    /// An empty registry.
    pub fn empty() -> Self {
        ProviderRegistry::default()
    }

    /// The bundled catalog: pi 0.73.1's providers and models (generated by
    /// `scripts/catalog/generate.mjs`), then filo's own Ollama and llama.cpp. Models whose wire
    /// API this build does not speak are listed too; a request to one ends in
    /// [`crate::AiError::UnknownApi`].
    pub fn builtin() -> Result<Self, RegistryError> {
        match split_catalog(CATALOG) {
            Some((providers, groups)) => Ok(ProviderRegistry {
                providers,
                groups,
                ..ProviderRegistry::default()
            }),
            None => Self::parse_catalog(CATALOG),
        }
    }

    /// A catalog parsed whole, every model at once (what [`ProviderRegistry::builtin`] does for
    /// a catalog not laid out as `generate.mjs` writes it).
    fn parse_catalog(text: &str) -> Result<Self, RegistryError> {
        let catalog: Catalog =
            serde_json::from_str(text).map_err(|e| RegistryError::Catalog(e.to_string()))?;
        Ok(ProviderRegistry {
            providers: catalog.providers,
            added: catalog.models,
            ..ProviderRegistry::default()
        })
    }

    pub fn providers(&self) -> &[ProviderConfig] {
        &self.providers
    }

    pub fn provider(&self, id: &str) -> Option<&ProviderConfig> {
        self.providers.iter().find(|p| p.id == id)
    }

    /// All listed models (the first call parses the whole catalog).
    pub fn models(&self) -> &[Model] {
        self.all.get_or_init(|| {
            self.groups
                .iter()
                .flat_map(Group::models)
                .chain(&self.added)
                .cloned()
                .collect()
        })
    }

    fn group(&self, provider: &str) -> Option<&Group> {
        self.groups.iter().find(|g| g.provider == provider)
    }

    /// Listed models of one provider, in the order of [`ProviderRegistry::models`].
    pub fn models_of<'a, 'p>(
        &'a self,
        provider: &'p str,
    ) -> impl Iterator<Item = &'a Model> + use<'a, 'p> {
        self.group(provider)
            .map(Group::models)
            .unwrap_or_default()
            .iter()
            .chain(self.added.iter().filter(move |m| m.provider == provider))
    }

    /// A model by provider and id. Providers that accept any id make one up with default limits.
    pub fn model(&self, provider: &str, id: &str) -> Option<Model> {
        if let Some(m) = self.models_of(provider).find(|m| m.id == id) {
            return Some(m.clone());
        }
        let p = self.provider(provider).filter(|p| p.any_model)?;
        Some(Model {
            id: id.into(),
            name: id.into(),
            api: p.api.clone(),
            provider: p.id.clone(),
            base_url: p.base_url.clone(),
            reasoning: false,
            input: vec!["text".into()],
            cost: Default::default(),
            context_window: DEFAULT_CONTEXT_WINDOW,
            max_tokens: DEFAULT_MAX_TOKENS,
            headers: None,
            compat: p.compat.clone(),
            thinking_level_map: None,
            input_limits: None,
            prompt_cache: None,
            lab: None,
            enabled: None,
            providers: None,
            free: None,
        })
    }

    /// Add or replace a provider record.
    pub fn upsert_provider(&mut self, provider: ProviderConfig) {
        match self.providers.iter_mut().find(|p| p.id == provider.id) {
            Some(slot) => *slot = provider,
            None => self.providers.push(provider),
        }
    }

    /// Add or replace a model (by provider and id).
    pub fn upsert_model(&mut self, model: Model) {
        let provider = model.provider.clone();
        let slot = self.models_of_mut(&provider).find(|m| m.id == model.id);
        match slot {
            Some(slot) => *slot = model,
            None => self.added.push(model),
        }
    }

    /// The models of one provider, to change in place.
    pub(crate) fn models_of_mut<'a>(
        &'a mut self,
        provider: &'a str,
    ) -> impl Iterator<Item = &'a mut Model> + 'a {
        self.all = OnceLock::new();
        let group = self
            .groups
            .iter_mut()
            .find(|g| g.provider == provider)
            .map(Group::models_mut)
            .unwrap_or_default();
        group.iter_mut().chain(
            self.added
                .iter_mut()
                .filter(move |m| m.provider == provider),
        )
    }

    /// Register any OpenAI-compatible server (vLLM, LM Studio, a gateway …) as a provider that
    /// accepts any model id. `env_key` names the variable holding its key, if it needs one.
    pub fn add_openai_compatible(&mut self, id: &str, base_url: &str, env_key: Option<&str>) {
        self.upsert_provider(ProviderConfig {
            id: id.into(),
            name: id.into(),
            api: "openai-completions".into(),
            base_url: base_url.into(),
            env_keys: env_key.map(str::to_string).into_iter().collect(),
            headers: BTreeMap::new(),
            compat: None,
            keyless: env_key.is_none(),
            any_model: true,
            api_key: None,
            auth_header: false,
        });
    }

    /// The key for a provider: models.json `apiKey`, then the provider's env variables, then
    /// pi's variables for well-known providers.
    pub fn api_key(&self, provider: &str, env: &Env) -> Option<String> {
        let config = self.provider(provider);
        if let Some(raw) = config.and_then(|p| p.api_key.as_deref())
            && let Some(key) = resolve_config_value(raw, env).filter(|k| !k.is_empty())
        {
            return Some(key);
        }
        if let Some(key) = config.and_then(|p| {
            p.env_keys
                .iter()
                .find_map(|k| env.get(k).map(str::to_string))
        }) {
            return Some(key);
        }
        crate::env::env_api_key(provider, env)
    }

    /// Whether calls to this provider may go without a key.
    pub fn is_keyless(&self, provider: &str) -> bool {
        self.provider(provider).is_some_and(|p| p.keyless)
    }

    /// The provider's headers with values resolved, plus `Authorization` when `authHeader` is set.
    pub fn provider_headers(
        &self,
        provider: &str,
        key: Option<&str>,
        env: &Env,
    ) -> BTreeMap<String, String> {
        let Some(p) = self.provider(provider) else {
            return BTreeMap::new();
        };
        let mut headers: BTreeMap<String, String> = p
            .headers
            .iter()
            .filter_map(|(k, v)| resolve_config_value(v, env).map(|v| (k.clone(), v)))
            .collect();
        if let (true, Some(key)) = (p.auth_header, key) {
            headers.insert("Authorization".into(), format!("Bearer {key}"));
        }
        headers
    }

    /// Merge a pi-format `models.json` (pi spec §1.14). On error (not JSON, no `providers`
    /// object) nothing changes; otherwise every valid provider is merged and the invalid ones are
    /// returned, each with its problem.
    pub fn apply_models_json(
        &mut self,
        text: &str,
    ) -> Result<Vec<crate::models_json::SkippedProvider>, RegistryError> {
        crate::models_json::apply(self, text)
    }

    pub(crate) fn provider_mut(&mut self, id: &str) -> Option<&mut ProviderConfig> {
        self.providers.iter_mut().find(|p| p.id == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_catalog_covers_pi_16() {
        let r = ProviderRegistry::builtin().unwrap();
        // pi 1.6.0's 43 providers but `typesafe` (it has only a classifier model, no chat
        // model), without the models pi dropped, then filo's own two.
        assert_eq!(r.providers().len(), 44);
        for p in [
            "anthropic",
            "openai",
            "azure",
            "google",
            "amazon-bedrock",
            "ant-ling",
            "baseten",
            "meta",
            "nvidia",
            "qwen-token-plan",
            "qwen-token-plan-cn",
            "qwen-token-plan-individual",
            "qwen-token-plan-individual-cn",
            "radius",
            "together",
            "zai-coding-cn",
            "ollama",
            "llamacpp",
        ] {
            assert!(r.provider(p).is_some(), "{p}");
        }
        // pi 1.6 renamed the Azure provider; the old id is no provider of the catalog.
        assert!(r.provider("azure-openai-responses").is_none());
        assert_eq!(r.models().len(), 1698);
        assert!(r.model("deepseek", "deepseek-chat").is_none());
        assert!(r.model("xai", "grok-3").is_none(), "retired in pi 0.80.9");
        for p in r.providers() {
            if !p.keyless {
                assert!(r.models_of(&p.id).count() >= 1, "{}", p.id);
                let pi_vars: Vec<&str> = crate::env::api_key_env_vars(&p.id).to_vec();
                assert_eq!(p.env_keys, pi_vars, "{}", p.id);
            }
        }
        for m in r.models() {
            assert!(r.provider(&m.provider).is_some(), "{}", m.id);
            assert!(m.context_window > 0 && m.max_tokens > 0, "{}", m.id);
        }
        // A provider's first model is pi's default for it (what `--provider x` alone selects).
        assert_eq!(
            r.models_of("anthropic").next().unwrap().id,
            "claude-opus-5-5"
        );
        assert_eq!(r.models_of("openai").next().unwrap().id, "gpt-6.2-sol");
        // H8's wire moves.
        let api = |p: &str, id: &str| r.model(p, id).map(|m| m.api);
        assert_eq!(
            r.provider("xai").map(|p| p.api.as_str()),
            Some("openai-responses")
        );
        let kimi = r.models_of("kimi-coding").next().unwrap();
        assert_eq!(kimi.api, "openai-completions");
        assert_eq!(kimi.base_url, "https://api.kimi.com/coding/v1");
        assert_eq!(
            api("openrouter", "anthropic/claude-opus-5.5").as_deref(),
            Some("anthropic-messages")
        );
        assert_eq!(
            api("mistral", "mistral-large-latest").as_deref(),
            Some("mistral-conversations")
        );
        let m = r.model("anthropic", "claude-sonnet-4-5").unwrap();
        assert_eq!(m.base_url, "https://api.anthropic.com");
        assert!(m.reasoning && m.supports_images());
    }

    /// The catalog parsed whole, as `builtin` did before its models were parsed lazily.
    fn eager() -> ProviderRegistry {
        ProviderRegistry::parse_catalog(CATALOG).unwrap()
    }

    #[test]
    fn lazy_catalog_is_the_parsed_catalog() {
        let lazy = ProviderRegistry::builtin().unwrap();
        let eager = eager();
        assert!(eager.groups.is_empty());
        // The bundled catalog takes the lazy path: one group per provider with models, and
        // every line of every group parses.
        assert_eq!(lazy.groups.len(), 42);
        let lines: usize = lazy.groups.iter().map(|g| g.lines.lines().count()).sum();
        assert_eq!(lines, eager.added.len());
        assert!(lazy.groups.iter().all(|g| g.models.get().is_none()));
        assert_eq!(lazy.providers(), eager.providers());
        // Asked one provider at a time, before anything else is parsed.
        for p in eager.providers() {
            let fresh = ProviderRegistry::builtin().unwrap();
            let want: Vec<&Model> = eager.models_of(&p.id).collect();
            assert_eq!(fresh.models_of(&p.id).collect::<Vec<_>>(), want, "{}", p.id);
            assert!(
                fresh
                    .groups
                    .iter()
                    .filter(|g| g.models.get().is_some())
                    .count()
                    <= 1
            );
            for m in &want {
                assert_eq!(fresh.model(&m.provider, &m.id).as_ref(), Some(*m));
            }
            assert_eq!(
                fresh.model(&p.id, "no-such-model"),
                eager.model(&p.id, "no-such-model")
            );
        }
        assert_eq!(lazy.models(), eager.models());
        for m in eager.models() {
            assert_eq!(lazy.model(&m.provider, &m.id).as_ref(), Some(m));
            assert!(lazy.groups.iter().any(|g| g.provider == m.provider));
        }
        assert_eq!(lazy, eager);
    }

    #[test]
    fn lazy_catalog_changes_like_the_parsed_catalog() {
        let models_json = r#"{"providers":{
            "anthropic":{"baseUrl":"https://proxy.example/a","modelOverrides":{"claude-sonnet-4-5":{"name":"Renamed"}},
                "models":[{"id":"claude-sonnet-4-5","name":"Replaced","contextWindow":7,"maxTokens":3},
                          {"id":"new-anthropic-model"}]},
            "openai":{"compat":{"supportsStore":false}},
            "mine":{"baseUrl":"http://127.0.0.1:1/v1","api":"openai-completions","apiKey":"K","models":[{"id":"m1"},{"id":"m2"}]}
        }}"#;
        let mut lazy = ProviderRegistry::builtin().unwrap();
        let mut eager = eager();
        // A list made before a change is not kept after it.
        assert_eq!(lazy.models(), eager.models());
        let (a, b) = (
            lazy.apply_models_json(models_json),
            eager.apply_models_json(models_json),
        );
        assert_eq!(a, b);
        assert!(a.unwrap().is_empty());
        let mut fresh = ProviderRegistry::builtin().unwrap();
        fresh.apply_models_json(models_json).unwrap();
        for r in [&lazy, &fresh] {
            for p in eager.providers() {
                let want: Vec<&Model> = eager.models_of(&p.id).collect();
                assert_eq!(r.models_of(&p.id).collect::<Vec<_>>(), want, "{}", p.id);
            }
            assert_eq!(r.models(), eager.models());
        }
        let m = fresh.model("anthropic", "claude-sonnet-4-5").unwrap();
        assert_eq!((m.name.as_str(), m.context_window), ("Replaced", 7));
        assert_eq!(fresh.models().last().unwrap().id, "m2");
        let custom = Model {
            id: "claude-opus-5-5".into(),
            name: "mine".into(),
            ..m.clone()
        };
        for r in [&mut lazy, &mut eager] {
            r.upsert_model(custom.clone());
            r.upsert_model(Model {
                id: "m3".into(),
                ..custom.clone()
            });
            r.add_openai_compatible("vllm", "http://127.0.0.1:8000/v1", None);
        }
        assert_eq!(lazy.models(), eager.models());
        assert_eq!(lazy.models_of("anthropic").next().unwrap().name, "mine");
        assert_eq!(lazy, eager);
    }

    #[test]
    fn models_of_an_api_this_build_does_not_speak_are_listed() {
        let r = ProviderRegistry::builtin().unwrap();
        let unknown: Vec<&Model> = r
            .models()
            .iter()
            .filter(|m| crate::codec::WireApi::parse(&m.api).is_err())
            .collect();
        assert!(
            unknown.iter().any(|m| m.api == "openai-codex-responses"),
            "the catalog keeps pi's providers whatever their wire API"
        );
        for m in unknown {
            assert_eq!(r.model(&m.provider, &m.id).as_ref(), Some(m));
        }
    }

    #[test]
    fn local_providers_take_any_model() {
        let mut r = ProviderRegistry::builtin().unwrap();
        let m = r.model("ollama", "qwen3:8b").unwrap();
        assert_eq!(m.base_url, "http://127.0.0.1:11434/v1");
        assert_eq!(m.api, "openai-completions");
        assert_eq!(m.context_window, 128_000);
        assert!(r.model("llamacpp", "anything").is_some());
        assert!(r.model("openai", "no-such-model").is_none());
        assert!(r.is_keyless("ollama"));
        r.add_openai_compatible("vllm", "http://127.0.0.1:8000/v1", Some("VLLM_KEY"));
        let env = Env::from_vars([("VLLM_KEY", "k")]);
        assert_eq!(r.api_key("vllm", &env).as_deref(), Some("k"));
        assert_eq!(
            r.model("vllm", "m").unwrap().base_url,
            "http://127.0.0.1:8000/v1"
        );
    }

    #[test]
    fn keys_from_env() {
        let r = ProviderRegistry::builtin().unwrap();
        let env = Env::from_vars([("GEMINI_API_KEY", "g"), ("ANTHROPIC_API_KEY", "a")]);
        assert_eq!(r.api_key("google", &env).as_deref(), Some("g"));
        assert_eq!(r.api_key("anthropic", &env).as_deref(), Some("a"));
        assert_eq!(r.api_key("openai", &env), None);
        assert!(r.provider_headers("openai", None, &env).is_empty());
    }
}
