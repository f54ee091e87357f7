//! Azure OpenAI Responses (`azure-openai-responses`, as pi 0.73.1 sends it through the
//! `AzureOpenAI` client): the Responses body with the deployment name as `model`, posted to
//! `{base}/responses?api-version={version}` with an `api-key` header. The stream is the
//! Responses stream (`openai_responses_decode.rs`).
//!
//! Settings, as pi reads them: `AZURE_OPENAI_BASE_URL`, else
//! `https://{AZURE_OPENAI_RESOURCE_NAME}.openai.azure.com/openai/v1`, else the model's base URL;
//! an Azure host whose path is empty or `/openai` gets `/openai/v1`. `AZURE_OPENAI_API_VERSION`
//! (default `v1`). `AZURE_OPENAI_DEPLOYMENT_NAME_MAP` (`model=deployment,…`) names the
//! deployment of a model id; unmapped ids are their own deployment.

use serde_json::{Map, Value, json};

use crate::codec::RequestInput;
use crate::env::Env;
use crate::error::AiError;
use crate::model::{Model, ThinkingLevel};
use crate::responses_input::{convert_input, convert_tools};
use crate::transport::HttpRequest;

/// Providers whose `call|item` tool-call ids Azure accepts as they are (pi 1.6 names the Azure
/// provider `azure`).
const OWN_TOOL_CALL_PROVIDERS: [&str; 4] = ["openai", "openai-codex", "opencode", "azure"];

/// The deployment serving `model_id`: its entry in `AZURE_OPENAI_DEPLOYMENT_NAME_MAP`
/// (`id=deployment` pairs separated by commas; malformed pairs are skipped; like pi, text after
/// a second `=` is dropped), else the id.
pub fn deployment_name(model_id: &str, env: &Env) -> String {
    env.get("AZURE_OPENAI_DEPLOYMENT_NAME_MAP")
        .into_iter()
        .flat_map(|map| map.split(','))
        .filter_map(|entry| {
            let mut parts = entry.trim().split('=');
            let id = parts.next()?.trim();
            let deployment = parts.next()?.trim();
            (!id.is_empty() && !deployment.is_empty()).then_some((id, deployment))
        })
        .find(|(id, _)| *id == model_id)
        .map_or_else(|| model_id.to_string(), |(_, d)| d.to_string())
}

/// The normalised base URL and the API version a request goes to.
pub fn resolve_base_url(model: &Model, env: &Env) -> Result<(String, String), AiError> {
    let version = env
        .get("AZURE_OPENAI_API_VERSION")
        .unwrap_or("v1")
        .to_string();
    let configured = env
        .get("AZURE_OPENAI_BASE_URL")
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .map(str::to_string)
        .or_else(|| {
            env.get("AZURE_OPENAI_RESOURCE_NAME")
                .map(|name| format!("https://{name}.openai.azure.com/openai/v1"))
        })
        .or_else(|| Some(model.base_url.clone()).filter(|u| !u.is_empty()));
    let Some(base) = configured else {
        return Err(AiError::Request(
            "Azure OpenAI base URL is required. Set AZURE_OPENAI_BASE_URL or \
             AZURE_OPENAI_RESOURCE_NAME, or set the model's baseUrl."
                .into(),
        ));
    };
    Ok((normalize_base_url(&base)?, version))
}

/// pi's `normalizeAzureBaseUrl`: trailing slashes go; an `*.openai.azure.com` or
/// `*.cognitiveservices.azure.com` host with no path (or just `/openai`) gets `/openai/v1` and
/// loses its query.
pub fn normalize_base_url(base: &str) -> Result<String, AiError> {
    let trimmed = base.trim().trim_end_matches('/');
    let mut url = reqwest::Url::parse(trimmed)
        .map_err(|_| AiError::Request(format!("Invalid Azure OpenAI base URL: {base}")))?;
    let host = url.host_str().unwrap_or_default();
    let azure =
        host.ends_with(".openai.azure.com") || host.ends_with(".cognitiveservices.azure.com");
    let path = url.path().trim_end_matches('/');
    if azure && (path.is_empty() || path == "/openai") {
        url.set_path("/openai/v1");
        url.set_query(None);
    }
    Ok(url.as_str().trim_end_matches('/').to_string())
}

/// The `reasoning` field: the clamped level (through `thinkingLevelMap`) with a summary when
/// thinking is on; `{effort: thinkingLevelMap.off ?? "none"}` when it is off, unless the map
/// marks `off` unsupported.
fn reasoning(input: &RequestInput<'_>) -> Option<(Value, bool)> {
    let model = input.model;
    if !model.reasoning {
        return None;
    }
    let map = model.thinking_level_map.as_ref();
    let level = model.clamp_thinking_level(input.options.reasoning);
    if level != ThinkingLevel::Off {
        let effort = map.and_then(|m| m.value(level)).unwrap_or(level.as_str());
        return Some((json!({"effort": effort, "summary": "auto"}), true));
    }
    match map.and_then(|m| m.get(ThinkingLevel::Off)) {
        Some(None) => None,
        Some(Some(effort)) => Some((json!({"effort": effort}), false)),
        None => Some((json!({"effort": "none"}), false)),
    }
}

/// Build the `POST {base}/responses?api-version=…` request.
pub(crate) fn build_request(input: &RequestInput<'_>) -> Result<HttpRequest, AiError> {
    let model = input.model;
    let opts = input.options;
    let (base, version) = resolve_base_url(model, input.env)?;
    let mut body = Map::new();
    body.insert("model".into(), json!(deployment_name(&model.id, input.env)));
    body.insert(
        "input".into(),
        Value::Array(convert_input(input, &OWN_TOOL_CALL_PROVIDERS)),
    );
    body.insert("stream".into(), json!(true));
    if let Some(session) = &opts.session_id {
        body.insert("prompt_cache_key".into(), json!(session));
    }
    let max_tokens = opts
        .max_tokens
        .or((model.max_tokens > 0).then(|| model.max_tokens.min(32000)));
    if let Some(max) = max_tokens.filter(|m| *m > 0) {
        body.insert("max_output_tokens".into(), json!(max));
    }
    if let Some(t) = opts.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(tools) = convert_tools(input) {
        body.insert("tools".into(), tools);
    }
    if let Some((reasoning, summary)) = reasoning(input) {
        body.insert("reasoning".into(), reasoning);
        if summary {
            body.insert("include".into(), json!(["reasoning.encrypted_content"]));
        }
    }
    let mut headers = vec![("content-type".into(), "application/json".into())];
    if let Some(key) = input.api_key {
        headers.push(("api-key".into(), key.into()));
    }
    let url = format!(
        "{base}/responses?api-version={}",
        crate::form::encode_component(&version)
    );
    Ok(input.request(url, headers, Value::Object(body)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(base: &str) -> Model {
        serde_json::from_value(json!({
            "id": "gpt-5", "name": "GPT-5", "api": "azure-openai-responses",
            "provider": "azure", "baseUrl": base, "reasoning": true
        }))
        .unwrap()
    }

    #[test]
    fn base_urls_as_the_azure_client_needs_them() {
        let cases = [
            (
                "https://res.openai.azure.com",
                "https://res.openai.azure.com/openai/v1",
            ),
            (
                "https://res.openai.azure.com/openai/",
                "https://res.openai.azure.com/openai/v1",
            ),
            (
                "https://res.cognitiveservices.azure.com/?x=1",
                "https://res.cognitiveservices.azure.com/openai/v1",
            ),
            (
                "https://res.openai.azure.com/custom/",
                "https://res.openai.azure.com/custom",
            ),
            (
                "http://127.0.0.1:8080/openai//",
                "http://127.0.0.1:8080/openai",
            ),
        ];
        for (given, want) in cases {
            assert_eq!(normalize_base_url(given).unwrap(), want, "{given}");
        }
        assert_eq!(
            normalize_base_url("not a url").unwrap_err().to_string(),
            "Invalid request: Invalid Azure OpenAI base URL: not a url"
        );
    }

    #[test]
    fn settings_come_from_the_environment_first() {
        let env = Env::from_vars([("AZURE_OPENAI_RESOURCE_NAME", "acme")]);
        assert_eq!(
            resolve_base_url(&model(""), &env).unwrap(),
            (
                "https://acme.openai.azure.com/openai/v1".into(),
                "v1".into()
            )
        );
        let env = Env::from_vars([
            ("AZURE_OPENAI_BASE_URL", " https://x.openai.azure.com "),
            ("AZURE_OPENAI_RESOURCE_NAME", "acme"),
            ("AZURE_OPENAI_API_VERSION", "2025-04-01-preview"),
        ]);
        assert_eq!(
            resolve_base_url(&model("https://m.example"), &env).unwrap(),
            (
                "https://x.openai.azure.com/openai/v1".into(),
                "2025-04-01-preview".into()
            )
        );
        assert_eq!(
            resolve_base_url(&model("https://m.example/v1"), &Env::default())
                .unwrap()
                .0,
            "https://m.example/v1"
        );
        let err = resolve_base_url(&model(""), &Env::default()).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("Invalid request: Azure OpenAI base URL is required."),
            "{err}"
        );
    }

    #[test]
    fn deployment_names_from_the_map() {
        let env = Env::from_vars([(
            "AZURE_OPENAI_DEPLOYMENT_NAME_MAP",
            " gpt-5 = prod-gpt5 ,broken, =x,gpt-4o=four=o",
        )]);
        assert_eq!(deployment_name("gpt-5", &env), "prod-gpt5");
        assert_eq!(deployment_name("gpt-4o", &env), "four");
        assert_eq!(deployment_name("o3", &env), "o3");
        assert_eq!(deployment_name("gpt-5", &Env::default()), "gpt-5");
    }
}
