//! pi's `models.json` (pi spec §1.14): custom providers, custom models and overrides of built-in
//! models, validated with pi's messages and merged into a [`ProviderRegistry`].
//!
//! A file that is not JSON (or whose `providers` is not an object) is rejected as a whole. Past
//! that, each provider stands alone: one that fails validation is skipped and reported with its
//! name and the problem, and every valid provider is still loaded (pi drops the whole file).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::model::{Model, ModelCost, ThinkingLevelMap};
use crate::registry::{ProviderConfig, ProviderRegistry, RegistryError};

#[derive(Deserialize)]
struct File {
    #[serde(default)]
    providers: BTreeMap<String, Value>,
}

/// A provider of models.json that was not loaded, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{error} (provider \"{provider}\" skipped)")]
pub struct SkippedProvider {
    pub provider: String,
    pub error: RegistryError,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ProviderDef {
    base_url: Option<String>,
    api_key: Option<String>,
    api: Option<String>,
    headers: Option<BTreeMap<String, String>>,
    compat: Option<Map<String, Value>>,
    auth_header: Option<bool>,
    models: Option<Vec<ModelDef>>,
    model_overrides: Option<BTreeMap<String, ModelOverride>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ModelDef {
    id: String,
    name: Option<String>,
    api: Option<String>,
    base_url: Option<String>,
    reasoning: Option<bool>,
    thinking_level_map: Option<ThinkingLevelMap>,
    input: Option<Vec<String>>,
    cost: Option<FullCost>,
    context_window: Option<i64>,
    max_tokens: Option<i64>,
    headers: Option<BTreeMap<String, String>>,
    compat: Option<Map<String, Value>>,
}

/// A custom model's cost: all four prices required.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FullCost {
    input: f64,
    output: f64,
    cache_read: f64,
    cache_write: f64,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct PartialCost {
    input: Option<f64>,
    output: Option<f64>,
    cache_read: Option<f64>,
    cache_write: Option<f64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ModelOverride {
    name: Option<String>,
    reasoning: Option<bool>,
    thinking_level_map: Option<ThinkingLevelMap>,
    input: Option<Vec<String>>,
    cost: Option<PartialCost>,
    context_window: Option<i64>,
    max_tokens: Option<i64>,
    headers: Option<BTreeMap<String, String>>,
    compat: Option<Map<String, Value>>,
}

fn schema(text: String) -> RegistryError {
    RegistryError::Schema(text)
}

/// Merge `overlay` over `base`; the routing objects merge key by key.
fn merge_compat(base: Option<&Value>, overlay: &Map<String, Value>) -> Value {
    let mut merged = match base {
        Some(Value::Object(o)) => o.clone(),
        _ => Map::new(),
    };
    for (k, v) in overlay {
        let nested = matches!(k.as_str(), "openRouterRouting" | "vercelGatewayRouting");
        match (nested, merged.get_mut(k), v) {
            (true, Some(Value::Object(existing)), Value::Object(add)) => {
                for (nk, nv) in add {
                    existing.insert(nk.clone(), nv.clone());
                }
            }
            _ => {
                merged.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(merged)
}

fn positive(
    value: Option<i64>,
    what: &str,
    p: &str,
    id: &str,
) -> Result<Option<u64>, RegistryError> {
    match value {
        None => Ok(None),
        Some(v) if v > 0 => Ok(u64::try_from(v).ok()),
        Some(_) => Err(schema(format!(
            "Provider {p}, model {id}: \"{what}\" must be greater than 0."
        ))),
    }
}

/// pi 0.73's rules: a provider the registry does not know yet needs `baseUrl`, `apiKey` and an
/// `api` for its custom models; a built-in provider inherits them.
fn validate(name: &str, def: &ProviderDef, builtin: bool) -> Result<(), RegistryError> {
    let models = def.models.as_deref().unwrap_or_default();
    if models.is_empty() {
        if def.base_url.is_none()
            && def.headers.is_none()
            && def.compat.is_none()
            && def.model_overrides.is_none()
        {
            return Err(schema(format!(
                "Provider {name}: must specify \"baseUrl\", \"headers\", \"compat\", \"modelOverrides\", or \"models\"."
            )));
        }
        return Ok(());
    }
    if builtin {
        for m in models {
            if m.id.trim().is_empty() {
                return Err(schema(format!(
                    "Provider {name}: model \"id\" must not be empty."
                )));
            }
            positive(m.context_window, "contextWindow", name, &m.id)?;
            positive(m.max_tokens, "maxTokens", name, &m.id)?;
        }
        return Ok(());
    }
    if def.base_url.is_none() {
        return Err(schema(format!(
            "Provider {name}: \"baseUrl\" is required when defining custom models."
        )));
    }
    if def.api_key.is_none() {
        return Err(schema(format!(
            "Provider {name}: \"apiKey\" is required when defining custom models."
        )));
    }
    for m in models {
        if m.id.trim().is_empty() {
            return Err(schema(format!(
                "Provider {name}: model \"id\" must not be empty."
            )));
        }
        if m.api.is_none() && def.api.is_none() {
            return Err(schema(format!(
                "Provider {name}, model {}: no \"api\" specified.",
                m.id
            )));
        }
        positive(m.context_window, "contextWindow", name, &m.id)?;
        positive(m.max_tokens, "maxTokens", name, &m.id)?;
    }
    Ok(())
}

/// pi 0.73 reads models.json as JSON with `//` line comments and trailing commas: both are
/// removed outside strings (a comment's newline stays, so error positions keep their line).
fn strip_jsonc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    // Whitespace seen after a comma, held back until we know whether a `}` or `]` follows.
    let mut pending_comma: Option<String> = None;
    let flush = |out: &mut String, pending: &mut Option<String>| {
        if let Some(p) = pending.take() {
            out.push(',');
            out.push_str(&p);
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                flush(&mut out, &mut pending_comma);
                out.push(c);
                while let Some(s) = chars.next() {
                    out.push(s);
                    match s {
                        '\\' => out.extend(chars.next()),
                        '"' => break,
                        _ => {}
                    }
                }
            }
            '/' if chars.peek() == Some(&'/') => while chars.next_if(|&n| n != '\n').is_some() {},
            ',' => {
                flush(&mut out, &mut pending_comma);
                pending_comma = Some(String::new());
            }
            c if c.is_whitespace() => match &mut pending_comma {
                Some(p) => p.push(c),
                None => out.push(c),
            },
            '}' | ']' => {
                if let Some(p) = pending_comma.take() {
                    out.push_str(&p);
                }
                out.push(c);
            }
            _ => {
                flush(&mut out, &mut pending_comma);
                out.push(c);
            }
        }
    }
    flush(&mut out, &mut pending_comma);
    out
}

/// Parse the file and merge each valid provider into `registry`. An error means nothing was
/// applied; otherwise the providers that were skipped come back with their problem.
pub(crate) fn apply(
    registry: &mut ProviderRegistry,
    text: &str,
) -> Result<Vec<SkippedProvider>, RegistryError> {
    let file: File = serde_json::from_str(&strip_jsonc(text)).map_err(|e| {
        if e.is_syntax() || e.is_eof() {
            RegistryError::Parse(e.to_string())
        } else {
            RegistryError::Schema(e.to_string())
        }
    })?;
    let mut skipped = Vec::new();
    for (name, value) in file.providers {
        if let Err(error) = apply_one(registry, &name, value) {
            skipped.push(SkippedProvider {
                provider: name,
                error,
            });
        }
    }
    Ok(skipped)
}

/// Validate and merge one provider; on error `registry` is unchanged.
fn apply_one(
    registry: &mut ProviderRegistry,
    name: &str,
    value: Value,
) -> Result<(), RegistryError> {
    let def: ProviderDef =
        serde_json::from_value(value).map_err(|e| schema(format!("Provider {name}: {e}")))?;
    validate(name, &def, registry.provider(name).is_some())?;
    let mut next = registry.clone();
    apply_provider(&mut next, name, def)?;
    *registry = next;
    Ok(())
}

fn apply_provider(
    registry: &mut ProviderRegistry,
    name: &str,
    def: ProviderDef,
) -> Result<(), RegistryError> {
    if registry.provider(name).is_none() {
        let api = def
            .api
            .clone()
            .or_else(|| def.models.iter().flatten().find_map(|m| m.api.clone()))
            .unwrap_or_else(|| "openai-completions".into());
        registry.upsert_provider(ProviderConfig {
            id: name.into(),
            name: name.into(),
            api,
            base_url: def.base_url.clone().unwrap_or_default(),
            env_keys: Vec::new(),
            headers: BTreeMap::new(),
            compat: None,
            keyless: false,
            any_model: false,
            api_key: None,
            auth_header: false,
        });
    }
    if let Some(p) = registry.provider_mut(name) {
        if let Some(url) = &def.base_url {
            p.base_url.clone_from(url);
        }
        if let Some(key) = &def.api_key {
            p.api_key = Some(key.clone());
        }
        if let Some(api) = &def.api {
            p.api.clone_from(api);
        }
        if let Some(h) = &def.headers {
            p.headers.extend(h.clone());
        }
        if let Some(c) = &def.compat {
            p.compat = Some(merge_compat(p.compat.as_ref(), c));
        }
        if let Some(a) = def.auth_header {
            p.auth_header = a;
        }
    }
    // Provider-level settings and per-model overrides for the provider's built-in models.
    for m in registry.models_of_mut(name) {
        if let Some(url) = &def.base_url {
            m.base_url.clone_from(url);
        }
        if let Some(c) = &def.compat {
            m.compat = Some(merge_compat(m.compat.as_ref(), c));
        }
        if let Some(o) = def.model_overrides.as_ref().and_then(|o| o.get(&m.id)) {
            apply_override(m, o, name)?;
        }
    }
    // Custom models inherit the provider's protocol and endpoint (a built-in provider's own).
    let provider = registry.provider(name);
    let provider_compat = provider.and_then(|p| p.compat.clone());
    let provider_api = provider.map(|p| p.api.clone()).or(def.api);
    let provider_url = provider.map(|p| p.base_url.clone()).or(def.base_url);
    for d in def.models.unwrap_or_default() {
        let model = custom_model(
            name,
            &provider_api,
            &provider_url,
            provider_compat.as_ref(),
            d,
        )?;
        registry.upsert_model(model);
    }
    Ok(())
}

fn apply_override(m: &mut Model, o: &ModelOverride, provider: &str) -> Result<(), RegistryError> {
    if let Some(n) = &o.name {
        m.name.clone_from(n);
    }
    if let Some(r) = o.reasoning {
        m.reasoning = r;
    }
    if let Some(map) = &o.thinking_level_map {
        m.thinking_level_map
            .get_or_insert_with(ThinkingLevelMap::default)
            .merge(map);
    }
    if let Some(i) = &o.input {
        m.input.clone_from(i);
    }
    if let Some(c) = &o.cost {
        m.cost = ModelCost {
            input: c.input.unwrap_or(m.cost.input),
            output: c.output.unwrap_or(m.cost.output),
            cache_read: c.cache_read.unwrap_or(m.cost.cache_read),
            cache_write: c.cache_write.unwrap_or(m.cost.cache_write),
        };
    }
    if let Some(v) = positive(o.context_window, "contextWindow", provider, &m.id)? {
        m.context_window = v;
    }
    if let Some(v) = positive(o.max_tokens, "maxTokens", provider, &m.id)? {
        m.max_tokens = v;
    }
    if let Some(h) = &o.headers {
        m.headers
            .get_or_insert_with(BTreeMap::new)
            .extend(h.clone());
    }
    if let Some(c) = &o.compat {
        m.compat = Some(merge_compat(m.compat.as_ref(), c));
    }
    Ok(())
}

fn custom_model(
    provider: &str,
    provider_api: &Option<String>,
    provider_url: &Option<String>,
    provider_compat: Option<&Value>,
    d: ModelDef,
) -> Result<Model, RegistryError> {
    let context_window = positive(d.context_window, "contextWindow", provider, &d.id)?;
    let max_tokens = positive(d.max_tokens, "maxTokens", provider, &d.id)?;
    let headers = d.headers.unwrap_or_default();
    let compat = match (&d.compat, provider_compat) {
        (Some(c), base) => Some(merge_compat(base, c)),
        (None, base) => base.cloned(),
    };
    Ok(Model {
        name: d.name.unwrap_or_else(|| d.id.clone()),
        api: d.api.or_else(|| provider_api.clone()).unwrap_or_default(),
        provider: provider.into(),
        base_url: d
            .base_url
            .or_else(|| provider_url.clone())
            .unwrap_or_default(),
        reasoning: d.reasoning.unwrap_or(false),
        input: d.input.unwrap_or_else(|| vec!["text".into()]),
        cost: d.cost.map_or_else(ModelCost::default, |c| ModelCost {
            input: c.input,
            output: c.output,
            cache_read: c.cache_read,
            cache_write: c.cache_write,
        }),
        context_window: context_window.unwrap_or(128_000),
        max_tokens: max_tokens.unwrap_or(16_384),
        headers: (!headers.is_empty()).then_some(headers),
        compat,
        thinking_level_map: d.thinking_level_map,
        input_limits: None,
        prompt_cache: None,
        lab: None,
        enabled: None,
        providers: None,
        free: None,
        id: d.id,
    })
}

#[cfg(test)]
#[path = "models_json_tests.rs"]
mod tests;
