//! Google Vertex AI (`google-vertex`, as pi 0.73.1 sends it through `@google/genai` with
//! `vertexai: true`): Gemini's body (`google.rs`) posted to Vertex's
//! `…/publishers/google/models/{model}:streamGenerateContent?alt=sse`; the stream is Gemini's
//! (`google_decode.rs`).
//!
//! Where the request goes, as the SDK decides it:
//! - a model base URL without `{location}` is used as is (plus `/v1` unless it names a version),
//!   with no project path;
//! - else with an API key (`GOOGLE_CLOUD_API_KEY`, Vertex express mode):
//!   `https://aiplatform.googleapis.com/v1/publishers/google/models/…`;
//! - else `…/v1/projects/{GOOGLE_CLOUD_PROJECT}/locations/{GOOGLE_CLOUD_LOCATION}/publishers/…`
//!   on `{location}-aiplatform.googleapis.com` (`aiplatform.googleapis.com` for `global`,
//!   `aiplatform.{us,eu}.rep.googleapis.com` for the multi-regions).
//!
//! Without an API key the call is authorised by Application Default Credentials: the JSON file
//! named by `GOOGLE_APPLICATION_CREDENTIALS`, else `~/.config/gcloud/application_default_credentials.json`
//! (what `gcloud auth application-default login` writes). An `authorized_user` file's refresh
//! token is exchanged at its `token_uri` (default Google's) for an access token, cached until a
//! minute before it expires. Other credential types (service accounts, workload identity) are
//! refused with a clear error.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::codec::RequestInput;
use crate::driver::Prepare;
use crate::env::Env;
use crate::error::AiError;
use crate::model::{Model, ThinkingLevel};
use crate::transport::{HttpRequest, Transport};

/// Google's OAuth token endpoint, used when a credentials file names none.
pub const GOOGLE_TOKEN_URL: &str = "https://oauth2.googleapis.com/token";

/// A key that stands for "use Application Default Credentials" rather than a real key: pi's
/// `<authenticated>` marker, `gcp-vertex-credentials`, any `<…>` placeholder.
pub fn usable_key(key: Option<&str>) -> Option<&str> {
    key.map(str::trim).filter(|k| {
        !k.is_empty() && *k != "gcp-vertex-credentials" && !(k.starts_with('<') && k.ends_with('>'))
    })
}

/// Whether a base URL path names an API version (`v1`, `v1beta`, `v1beta1`, …).
fn names_version(base: &str) -> bool {
    let path = reqwest::Url::parse(base).map_or_else(|_| base.to_string(), |u| u.path().into());
    path.split('/').any(|part| {
        let Some(rest) = part.strip_prefix('v') else {
            return false;
        };
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let tail = &rest[digits..];
        digits > 0
            && (tail.is_empty()
                || tail
                    .strip_prefix("beta")
                    .is_some_and(|t| t.bytes().all(|b| b.is_ascii_digit())))
    })
}

/// The project and location for credential-based calls (pi's texts when one is missing).
fn project_and_location(env: &Env) -> Result<(&str, &str), AiError> {
    let project = env
        .first(&["GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT"])
        .ok_or_else(|| {
            AiError::Request(
                "Vertex AI requires a project ID. Set GOOGLE_CLOUD_PROJECT/GCLOUD_PROJECT or pass project in options."
                    .into(),
            )
        })?;
    let location = env.get("GOOGLE_CLOUD_LOCATION").ok_or_else(|| {
        AiError::Request(
            "Vertex AI requires a location. Set GOOGLE_CLOUD_LOCATION or pass location in options."
                .into(),
        )
    })?;
    Ok((project, location))
}

/// The streaming URL for `model`.
pub fn request_url(model: &Model, env: &Env, has_key: bool) -> Result<String, AiError> {
    let action = format!(
        "publishers/google/models/{}:streamGenerateContent?alt=sse",
        model.id
    );
    let base = model.base_url.trim();
    if !has_key {
        // pi resolves both before it builds a client, whatever the base URL.
        project_and_location(env)?;
    }
    if !base.is_empty() && !base.contains("{location}") {
        let base = base.trim_end_matches('/');
        let version = if names_version(base) { "" } else { "/v1" };
        return Ok(format!("{base}{version}/{action}"));
    }
    if has_key {
        return Ok(format!("https://aiplatform.googleapis.com/v1/{action}"));
    }
    let (project, location) = project_and_location(env)?;
    let host = match location {
        "global" => "aiplatform.googleapis.com".to_string(),
        "us" | "eu" => format!("aiplatform.{location}.rep.googleapis.com"),
        other => format!("{other}-aiplatform.googleapis.com"),
    };
    Ok(format!(
        "https://{host}/v1/projects/{project}/locations/{location}/{action}"
    ))
}

/// pi's `getDisabledThinkingConfig`: what "thinking off" means for a reasoning model.
fn disabled_thinking(model: &Model) -> Value {
    let id = model.id.to_ascii_lowercase();
    let gemini3 = |kind: &str| {
        id.match_indices("gemini-3").any(|(i, _)| {
            let rest = &id[i + "gemini-3".len()..];
            let rest = rest
                .strip_prefix('.')
                .map_or(rest, |r| r.trim_start_matches(|c: char| c.is_ascii_digit()));
            rest.starts_with(&format!("-{kind}"))
        })
    };
    if gemini3("pro") {
        json!({"thinkingLevel": "LOW"})
    } else if gemini3("flash") {
        json!({"thinkingLevel": "MINIMAL"})
    } else {
        json!({"thinkingBudget": 0})
    }
}

/// Build the request. Without a usable key the `authorization` header is added by the ADC step
/// ([`adc_prepare`]) before each attempt.
pub(crate) fn build_request(input: &RequestInput<'_>) -> Result<HttpRequest, AiError> {
    let model = input.model;
    let key = usable_key(input.api_key);
    let url = request_url(model, input.env, key.is_some())?;
    let mut body = Map::new();
    body.insert(
        "contents".into(),
        Value::Array(crate::google::convert_contents(input)),
    );
    if let Some(prompt) = &input.context.system_prompt {
        body.insert(
            "systemInstruction".into(),
            json!({"parts": [{"text": prompt}], "role": "user"}),
        );
    }
    if let Some(tools) = input.context.tools.as_ref().filter(|t| !t.is_empty()) {
        let decls: Vec<Value> = tools
            .iter()
            .map(|t| json!({"description": t.description, "name": t.name, "parametersJsonSchema": t.parameters}))
            .collect();
        body.insert("tools".into(), json!([{"functionDeclarations": decls}]));
    }
    let mut config = Map::new();
    if let Some(t) = input.options.temperature {
        config.insert("temperature".into(), json!(t));
    }
    config.insert("maxOutputTokens".into(), json!(input.base_max_tokens()));
    if model.reasoning {
        let thinking = if input.options.reasoning == ThinkingLevel::Off {
            Some(disabled_thinking(model))
        } else {
            crate::google::thinking_config(input)
        };
        if let Some(thinking) = thinking {
            config.insert("thinkingConfig".into(), thinking);
        }
    }
    body.insert("generationConfig".into(), Value::Object(config));
    let mut headers = vec![("content-type".into(), "application/json".into())];
    if let Some(key) = key {
        headers.push(("x-goog-api-key".into(), key.into()));
    }
    Ok(input.request(url, headers, Value::Object(body)))
}

/// The Application Default Credentials file the environment names.
pub fn adc_path(env: &Env) -> Option<PathBuf> {
    if let Some(path) = env.get("GOOGLE_APPLICATION_CREDENTIALS") {
        return Some(PathBuf::from(path));
    }
    env.get("HOME")
        .map(|home| PathBuf::from(home).join(".config/gcloud/application_default_credentials.json"))
}

#[derive(Deserialize)]
struct CredentialsFile {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    client_id: String,
    #[serde(default)]
    client_secret: String,
    #[serde(default)]
    refresh_token: String,
    #[serde(default)]
    token_uri: Option<String>,
}

/// An `authorized_user` credential: what a refresh-token exchange needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizedUser {
    pub client_id: String,
    pub client_secret: String,
    pub refresh_token: String,
    pub token_uri: String,
}

/// Read the ADC file; anything but a complete `authorized_user` credential is a clear error.
pub fn load_adc(env: &Env) -> Result<AuthorizedUser, AiError> {
    let Some(path) = adc_path(env) else {
        return Err(AiError::Request(
            "Vertex AI needs GOOGLE_CLOUD_API_KEY or Application Default Credentials \
             (GOOGLE_APPLICATION_CREDENTIALS or `gcloud auth application-default login`); \
             neither is set and HOME is unknown"
                .into(),
        ));
    };
    let shown = path.display();
    let text = std::fs::read_to_string(&path).map_err(|e| {
        AiError::Request(format!(
            "cannot read Google Application Default Credentials {shown}: {e}"
        ))
    })?;
    let file: CredentialsFile = serde_json::from_str(&text).map_err(|e| {
        AiError::Request(format!(
            "Google Application Default Credentials {shown} is not valid JSON: {e}"
        ))
    })?;
    if file.kind != "authorized_user" {
        return Err(AiError::Request(format!(
            "Google credentials of type `{}` in {shown} are not supported; use \
             `gcloud auth application-default login` (type `authorized_user`) or set GOOGLE_CLOUD_API_KEY",
            file.kind
        )));
    }
    if file.client_id.is_empty() || file.client_secret.is_empty() || file.refresh_token.is_empty() {
        return Err(AiError::Request(format!(
            "Google Application Default Credentials {shown} lack client_id, client_secret or refresh_token"
        )));
    }
    Ok(AuthorizedUser {
        client_id: file.client_id,
        client_secret: file.client_secret,
        refresh_token: file.refresh_token,
        token_uri: file.token_uri.unwrap_or_else(|| GOOGLE_TOKEN_URL.into()),
    })
}

/// Access tokens by refresh token, each with the instant it stops being used.
#[derive(Debug, Default)]
pub struct AccessTokens {
    tokens: Mutex<HashMap<String, (String, Instant)>>,
}

impl AccessTokens {
    fn get(&self, refresh_token: &str) -> Option<String> {
        let tokens = self.tokens.lock().unwrap_or_else(PoisonError::into_inner);
        tokens
            .get(refresh_token)
            .filter(|(_, until)| Instant::now() < *until)
            .map(|(token, _)| token.clone())
    }

    fn put(&self, refresh_token: &str, token: &str, expires_in: Duration) {
        // A minute of margin, as Google's client libraries keep.
        let until = Instant::now() + expires_in.saturating_sub(Duration::from_secs(60));
        self.tokens
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(refresh_token.into(), (token.into(), until));
    }
}

#[derive(Deserialize)]
struct TokenAnswer {
    #[serde(default)]
    access_token: String,
    #[serde(default)]
    expires_in: Option<u64>,
}

/// Exchange the refresh token for an access token (POST, form-encoded, as Google's libraries do).
async fn exchange(
    user: &AuthorizedUser,
    transport: Arc<dyn Transport>,
) -> Result<(String, Duration), AiError> {
    let request = HttpRequest {
        url: user.token_uri.clone(),
        headers: vec![(
            "content-type".into(),
            "application/x-www-form-urlencoded".into(),
        )],
        body: json!({
            "client_id": user.client_id,
            "client_secret": user.client_secret,
            "refresh_token": user.refresh_token,
            "grant_type": "refresh_token",
        }),
    };
    let mut response = transport.send(&request).await?;
    let mut body = Vec::new();
    while let Some(chunk) = response.body.next().await {
        body.extend_from_slice(&chunk?);
        if body.len() > 64 * 1024 {
            break;
        }
    }
    let text = String::from_utf8_lossy(&body).trim().to_string();
    if !(200..300).contains(&response.status) {
        return Err(AiError::Http {
            status: response.status,
            body: format!("(Google token endpoint {}) {text}", user.token_uri),
            retry_after: None,
        });
    }
    let answer: TokenAnswer = serde_json::from_str(&text).map_err(|e| {
        AiError::Request(format!(
            "Google token endpoint {} answered something other than a token: {e}",
            user.token_uri
        ))
    })?;
    if answer.access_token.is_empty() {
        return Err(AiError::Request(format!(
            "Google token endpoint {} answered without an access_token",
            user.token_uri
        )));
    }
    let ttl = Duration::from_secs(answer.expires_in.unwrap_or(3600));
    Ok((answer.access_token, ttl))
}

/// The step that adds `authorization: Bearer <access token>` from Application Default
/// Credentials before each attempt. The file is read now, so a missing or unsupported one fails
/// the call before anything is sent.
pub(crate) fn adc_prepare(env: &Env, tokens: Arc<AccessTokens>) -> Result<Prepare, AiError> {
    let user = Arc::new(load_adc(env)?);
    Ok(Arc::new(move |mut request: HttpRequest, transport| {
        let user = user.clone();
        let tokens = tokens.clone();
        Box::pin(async move {
            let token = match tokens.get(&user.refresh_token) {
                Some(token) => token,
                None => {
                    let (token, ttl) = exchange(&user, transport).await?;
                    tokens.put(&user.refresh_token, &token, ttl);
                    token
                }
            };
            request
                .headers
                .retain(|(k, _)| !k.eq_ignore_ascii_case("authorization"));
            request
                .headers
                .push(("authorization".into(), format!("Bearer {token}")));
            Ok(request)
        })
    }))
}

#[cfg(test)]
#[path = "google_vertex_tests.rs"]
mod tests;
