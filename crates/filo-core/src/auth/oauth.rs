//! Refreshing stored OAuth credentials, per provider, the way pi 0.73 (pi-ai
//! `utils/oauth/*`) asks each token service:
//!
//! | provider | request | answer |
//! |---|---|---|
//! | `anthropic` | `POST` JSON `{grant_type: refresh_token, client_id, refresh_token}` | `access_token`, `refresh_token`, `expires_in` |
//! | `openai-codex` | `POST` form, same three fields | the same; the ChatGPT account id is read from the access token (a JWT) |
//! | `github-copilot` | `GET https://api.<domain>/copilot_internal/v2/token`, the GitHub token as `Bearer` | `token`, `expires_at` (seconds) |
//!
//! Anthropic and Copilot expiry times are stored five minutes early, as pi stores them. The
//! token URLs can be pointed elsewhere (tests use a local endpoint) with the environment
//! variables named in [`TokenEndpoints`].

use std::time::Duration;

use base64::Engine;
use filo_ai::Env;
use filo_ai::transport::{PlainRequest, ReqwestTransport};
use serde_json::{Map, Value, json};

/// The OAuth providers pi 0.73 logs in to, and so can refresh.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OAuthProvider {
    Anthropic,
    GithubCopilot,
    OpenAiCodex,
}

impl OAuthProvider {
    pub fn from_id(id: &str) -> Option<OAuthProvider> {
        match id {
            "anthropic" => Some(OAuthProvider::Anthropic),
            "github-copilot" => Some(OAuthProvider::GithubCopilot),
            "openai-codex" => Some(OAuthProvider::OpenAiCodex),
            _ => None,
        }
    }

    pub fn id(self) -> &'static str {
        match self {
            OAuthProvider::Anthropic => "anthropic",
            OAuthProvider::GithubCopilot => "github-copilot",
            OAuthProvider::OpenAiCodex => "openai-codex",
        }
    }
}

const ANTHROPIC_CLIENT_ID: &str = "9d1c250a-e61b-44d9-88ed-5944d1962f5e";
const CODEX_CLIENT_ID: &str = "app_EMoamEEZ73f0CkXaXp7hrann";
const CODEX_ACCOUNT_CLAIM: &str = "https://api.openai.com/auth";
const COPILOT_HEADERS: [(&str, &str); 4] = [
    ("User-Agent", "GitHubCopilotChat/0.35.0"),
    ("Editor-Version", "vscode/1.107.0"),
    ("Editor-Plugin-Version", "copilot-chat/0.35.0"),
    ("Copilot-Integration-Id", "vscode-chat"),
];
/// pi stores Anthropic and Copilot expiry times this much early.
const EARLY_MS: i64 = 5 * 60 * 1000;
/// pi's limit for a token request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Where refresh requests go. Each URL can be replaced through the environment:
/// `FILO_OAUTH_ANTHROPIC_TOKEN_URL`, `FILO_OAUTH_OPENAI_CODEX_TOKEN_URL`,
/// `FILO_OAUTH_GITHUB_COPILOT_TOKEN_URL` (the last replaces the whole Copilot exchange URL,
/// whatever the credential's enterprise domain).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenEndpoints {
    pub anthropic: String,
    pub openai_codex: String,
    pub github_copilot: Option<String>,
}

impl Default for TokenEndpoints {
    fn default() -> Self {
        TokenEndpoints {
            anthropic: "https://platform.claude.com/v1/oauth/token".into(),
            openai_codex: "https://auth.openai.com/oauth/token".into(),
            github_copilot: None,
        }
    }
}

impl TokenEndpoints {
    pub fn from_env(env: &Env) -> TokenEndpoints {
        let d = TokenEndpoints::default();
        TokenEndpoints {
            anthropic: env
                .get("FILO_OAUTH_ANTHROPIC_TOKEN_URL")
                .map_or(d.anthropic, str::to_string),
            openai_codex: env
                .get("FILO_OAUTH_OPENAI_CODEX_TOKEN_URL")
                .map_or(d.openai_codex, str::to_string),
            github_copilot: env
                .get("FILO_OAUTH_GITHUB_COPILOT_TOKEN_URL")
                .map(str::to_string),
        }
    }

    fn copilot(&self, enterprise: Option<&str>) -> String {
        if let Some(url) = &self.github_copilot {
            return url.clone();
        }
        let domain = enterprise
            .and_then(normalize_domain)
            .unwrap_or_else(|| "github.com".into());
        format!("https://api.{domain}/copilot_internal/v2/token")
    }
}

/// The host of a GitHub Enterprise URL or bare domain (`https://ghe.example.com/x` →
/// `ghe.example.com`).
fn normalize_domain(input: &str) -> Option<String> {
    let t = input.trim();
    let rest = t.split_once("://").map_or(t, |(_, r)| r);
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = host.rsplit('@').next().unwrap_or("");
    let host = host.split(':').next().unwrap_or("");
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// Why a refresh gave no new credential.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RefreshError {
    #[error("the stored credential has no refresh token")]
    NoRefreshToken,
    #[error("the token endpoint {url} could not be reached: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("the token endpoint {url} answered {status}: {body}")]
    Refused {
        url: String,
        status: u16,
        body: String,
    },
    #[error("the token endpoint {url} answered without {missing}")]
    BadAnswer { url: String, missing: &'static str },
}

/// A token endpoint's error body, shortened for a message.
fn preview(body: &str) -> String {
    const MAX: usize = 400;
    let body = body.trim();
    match body.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &body[..i]),
        None => body.to_string(),
    }
}

/// The ChatGPT account id in an OpenAI access token (a JWT), if it has one.
fn codex_account_id(access: &str) -> Option<String> {
    let mut parts = access.split('.');
    let (_, payload, _, None) = (parts.next(), parts.next()?, parts.next()?, parts.next()) else {
        return None;
    };
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    let claims: Value = serde_json::from_slice(&bytes).ok()?;
    claims
        .get(CODEX_ACCOUNT_CLAIM)?
        .get("chatgpt_account_id")?
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn form(fields: &[(&str, &str)]) -> String {
    let enc = |s: &str| {
        let mut out = String::with_capacity(s.len());
        for b in s.bytes() {
            match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => {
                    out.push(char::from(b));
                }
                b' ' => out.push('+'),
                _ => out.push_str(&format!("%{b:02X}")),
            }
        }
        out
    };
    fields
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// The updated credential for `provider`: `cred` with `access`, `refresh`, `expires` (and
/// `accountId` for Codex) replaced by the token service's answer; other fields are kept.
pub async fn refresh(
    provider: OAuthProvider,
    cred: &Map<String, Value>,
    endpoints: &TokenEndpoints,
    http: &ReqwestTransport,
) -> Result<Map<String, Value>, RefreshError> {
    let refresh_token = cred
        .get("refresh")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or(RefreshError::NoRefreshToken)?;
    let (url, request) = match provider {
        OAuthProvider::Anthropic => {
            let url = endpoints.anthropic.clone();
            let body = json!({
                "grant_type": "refresh_token",
                "client_id": ANTHROPIC_CLIENT_ID,
                "refresh_token": refresh_token,
            });
            let headers = vec![
                ("Content-Type".into(), "application/json".into()),
                ("Accept".into(), "application/json".into()),
            ];
            (url, (headers, Some(body.to_string())))
        }
        OAuthProvider::OpenAiCodex => {
            let url = endpoints.openai_codex.clone();
            let body = form(&[
                ("grant_type", "refresh_token"),
                ("refresh_token", refresh_token),
                ("client_id", CODEX_CLIENT_ID),
            ]);
            let headers = vec![(
                "Content-Type".into(),
                "application/x-www-form-urlencoded".into(),
            )];
            (url, (headers, Some(body)))
        }
        OAuthProvider::GithubCopilot => {
            let enterprise = cred.get("enterpriseUrl").and_then(Value::as_str);
            let url = endpoints.copilot(enterprise);
            let mut headers: Vec<(String, String)> = vec![
                ("Accept".into(), "application/json".into()),
                ("Authorization".into(), format!("Bearer {refresh_token}")),
            ];
            headers.extend(
                COPILOT_HEADERS
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string())),
            );
            (url, (headers, None))
        }
    };
    let (headers, body) = request;
    let answer = http
        .fetch(PlainRequest {
            url: url.clone(),
            headers,
            body,
            timeout: REQUEST_TIMEOUT,
        })
        .await
        .map_err(|e| RefreshError::Unreachable {
            url: url.clone(),
            reason: e.to_string(),
        })?;
    if !(200..300).contains(&answer.status) {
        return Err(RefreshError::Refused {
            url,
            status: answer.status,
            body: preview(&answer.body),
        });
    }
    let v: Value = serde_json::from_str(&answer.body).unwrap_or(Value::Null);
    let bad = |missing| RefreshError::BadAnswer {
        url: url.clone(),
        missing,
    };
    let now = filo_ai::client::now_ms();
    let str_field = |k: &str| v.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
    let mut next = cred.clone();
    next.insert("type".into(), "oauth".into());
    match provider {
        OAuthProvider::Anthropic | OAuthProvider::OpenAiCodex => {
            let access = str_field("access_token").ok_or_else(|| bad("access_token"))?;
            let expires_in = v
                .get("expires_in")
                .and_then(Value::as_f64)
                .ok_or_else(|| bad("expires_in"))?;
            // Anthropic may keep the refresh token; Codex must send a new one (pi requires it).
            let new_refresh = match (provider, str_field("refresh_token")) {
                (_, Some(r)) => r,
                (OAuthProvider::OpenAiCodex, None) => return Err(bad("refresh_token")),
                (_, None) => refresh_token,
            };
            let early = if provider == OAuthProvider::Anthropic {
                EARLY_MS
            } else {
                0
            };
            #[allow(clippy::cast_possible_truncation)]
            let expires = now + (expires_in * 1000.0) as i64 - early;
            if provider == OAuthProvider::OpenAiCodex {
                let account = codex_account_id(access)
                    .ok_or_else(|| bad("a ChatGPT account id in the access token"))?;
                next.insert("accountId".into(), account.into());
            }
            next.insert("access".into(), access.into());
            next.insert("refresh".into(), new_refresh.into());
            next.insert("expires".into(), expires.into());
        }
        OAuthProvider::GithubCopilot => {
            let token = str_field("token").ok_or_else(|| bad("token"))?;
            let expires_at = v
                .get("expires_at")
                .and_then(Value::as_f64)
                .ok_or_else(|| bad("expires_at"))?;
            #[allow(clippy::cast_possible_truncation)]
            let expires = (expires_at * 1000.0) as i64 - EARLY_MS;
            next.insert("access".into(), token.into());
            next.insert("expires".into(), expires.into());
        }
    }
    Ok(next)
}

/// [`refresh`] from blocking code: the exchange runs on its own thread with its own small
/// runtime, so it works whatever runtime (if any) the caller is on.
pub fn refresh_blocking(
    provider: OAuthProvider,
    cred: &Map<String, Value>,
    endpoints: &TokenEndpoints,
) -> Result<Map<String, Value>, RefreshError> {
    let unreachable = |reason: String| RefreshError::Unreachable {
        url: match provider {
            OAuthProvider::Anthropic => endpoints.anthropic.clone(),
            OAuthProvider::OpenAiCodex => endpoints.openai_codex.clone(),
            OAuthProvider::GithubCopilot => endpoints.copilot(None),
        },
        reason,
    };
    let (cred, endpoints) = (cred.clone(), endpoints.clone());
    let worker = std::thread::Builder::new()
        .name("oauth-refresh".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            let http = ReqwestTransport::new().map_err(|e| e.to_string())?;
            Ok(runtime.block_on(refresh(provider, &cred, &endpoints, &http)))
        })
        .map_err(|e| unreachable(e.to_string()))?;
    match worker.join() {
        Ok(Ok(result)) => result,
        Ok(Err(reason)) => Err(unreachable(reason)),
        Err(_) => Err(unreachable("the refresh thread panicked".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enterprise_domains_normalize() {
        assert_eq!(
            normalize_domain("https://GHE.example.com/login").as_deref(),
            Some("ghe.example.com")
        );
        assert_eq!(
            normalize_domain(" ghe.example.com ").as_deref(),
            Some("ghe.example.com")
        );
        assert_eq!(normalize_domain("  "), None);
        let e = TokenEndpoints::default();
        assert_eq!(
            e.copilot(Some("company.ghe.com")),
            "https://api.company.ghe.com/copilot_internal/v2/token"
        );
        assert_eq!(
            e.copilot(None),
            "https://api.github.com/copilot_internal/v2/token"
        );
    }

    #[test]
    fn form_encoding_and_account_ids() {
        assert_eq!(form(&[("a", "x y/z"), ("b", "1")]), "a=x+y%2Fz&b=1");
        let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(r#"{"https://api.openai.com/auth":{"chatgpt_account_id":"acct-9"}}"#);
        assert_eq!(
            codex_account_id(&format!("h.{payload}.s")).as_deref(),
            Some("acct-9")
        );
        assert_eq!(codex_account_id("not-a-jwt"), None);
    }
}
