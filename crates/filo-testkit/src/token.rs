//! A local OAuth token endpoint: answers refresh requests the way the providers' token services
//! do, so OAuth credential refresh can be tested without leaving 127.0.0.1.
//!
//! Two shapes are served, chosen by path:
//! - `POST /oauth/token`: an OAuth 2 refresh grant (Anthropic sends it as JSON, OpenAI Codex as
//!   a form). It must carry `grant_type=refresh_token`, a `client_id` and the current refresh
//!   token; the answer is `{access_token, refresh_token, expires_in, token_type}` and the refresh
//!   token rotates, so a second refresh with the old one is refused (`400 invalid_grant`), as
//!   the real services do.
//! - `GET /copilot_internal/v2/token`: GitHub Copilot's exchange. The GitHub token is sent as
//!   `Authorization: Bearer …` and does not rotate; the answer is `{token, expires_at}`.
//!
//! Every request is recorded (accepted or not); a configured failure answers every request with
//! the given status and body; a delay holds each answer back, so tests can make two clients
//! overlap.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::response::Response;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value, json};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::server::{json_response, serve};

/// How a [`TokenEndpoint`] answers.
#[derive(Debug, Clone)]
pub struct TokenConfig {
    /// The refresh token the first request must carry (for Copilot: the GitHub token).
    pub refresh_token: String,
    /// Issued access tokens are this prefix plus a counter (`1`, `2`, …).
    pub access_prefix: String,
    /// Lifetime of issued tokens, in seconds.
    pub expires_in: u64,
    /// How long each answer is held back.
    pub delay: Duration,
    /// When set, every request is answered with this status and body (and nothing is issued).
    pub failure: Option<(u16, String)>,
    /// When set, issued access tokens are unsigned JWTs whose payload carries this ChatGPT
    /// account id (`https://api.openai.com/auth.chatgpt_account_id`), as OpenAI's do.
    pub account_id: Option<String>,
}

impl TokenConfig {
    /// Accept `refresh_token`; issue `<access_prefix>N` tokens valid for an hour, at once.
    pub fn new(refresh_token: &str, access_prefix: &str) -> TokenConfig {
        TokenConfig {
            refresh_token: refresh_token.to_string(),
            access_prefix: access_prefix.to_string(),
            expires_in: 3600,
            delay: Duration::ZERO,
            failure: None,
            account_id: None,
        }
    }

    /// Hold each answer back by `delay`.
    pub fn with_delay(mut self, delay: Duration) -> TokenConfig {
        self.delay = delay;
        self
    }

    /// Answer every request with `status` and `body`.
    pub fn failing(mut self, status: u16, body: &str) -> TokenConfig {
        self.failure = Some((status, body.to_string()));
        self
    }

    /// Issue JWT access tokens carrying `account_id`.
    pub fn with_account_id(mut self, account_id: &str) -> TokenConfig {
        self.account_id = Some(account_id.to_string());
        self
    }
}

/// One request the endpoint received.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenCall {
    pub method: String,
    pub path: String,
    /// The request's `content-type`, if any.
    pub content_type: Option<String>,
    /// The request's `authorization` header, if any.
    pub authorization: Option<String>,
    /// The body's fields (JSON object or form), strings as given; empty for a GET.
    pub fields: Map<String, Value>,
    /// Whether a token was issued for it.
    pub accepted: bool,
}

#[derive(Debug)]
struct Endpoint {
    config: TokenConfig,
    /// The refresh token the next request must carry.
    current_refresh: String,
    issued: Vec<String>,
    calls: Vec<TokenCall>,
}

type Shared = Arc<Mutex<Endpoint>>;

fn lock(s: &Shared) -> MutexGuard<'_, Endpoint> {
    s.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The token endpoint server; dropping it stops the server.
#[derive(Debug)]
pub struct TokenEndpoint {
    addr: SocketAddr,
    state: Shared,
    task: JoinHandle<()>,
}

impl TokenEndpoint {
    /// Start serving on 127.0.0.1 (a random port). Must be called inside a tokio runtime.
    ///
    /// # Panics
    /// When no port can be bound on 127.0.0.1.
    pub async fn start(config: TokenConfig) -> TokenEndpoint {
        let listener = match TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await {
            Ok(l) => l,
            Err(e) => panic!("filo-testkit: cannot listen on 127.0.0.1: {e}"),
        };
        let addr = match listener.local_addr() {
            Ok(a) => a,
            Err(e) => panic!("filo-testkit: no local address: {e}"),
        };
        let state: Shared = Arc::new(Mutex::new(Endpoint {
            current_refresh: config.refresh_token.clone(),
            config,
            issued: Vec::new(),
            calls: Vec::new(),
        }));
        let router = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&state));
        let task = tokio::spawn(serve(listener, router));
        TokenEndpoint { addr, state, task }
    }

    /// The OAuth 2 refresh URL: `http://127.0.0.1:PORT/oauth/token`.
    pub fn token_url(&self) -> String {
        format!("http://{}/oauth/token", self.addr)
    }

    /// The Copilot exchange URL: `http://127.0.0.1:PORT/copilot_internal/v2/token`.
    pub fn copilot_url(&self) -> String {
        format!("http://{}/copilot_internal/v2/token", self.addr)
    }

    /// Every request received, in arrival order.
    pub fn calls(&self) -> Vec<TokenCall> {
        lock(&self.state).calls.clone()
    }

    /// The access tokens issued so far, in order.
    pub fn issued(&self) -> Vec<String> {
        lock(&self.state).issued.clone()
    }

    /// The refresh token the endpoint expects next (rotated by each OAuth 2 refresh).
    pub fn current_refresh_token(&self) -> String {
        lock(&self.state).current_refresh.clone()
    }
}

impl Drop for TokenEndpoint {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `application/x-www-form-urlencoded` fields (`+` is a space, `%XX` a byte).
fn parse_form(body: &str) -> Map<String, Value> {
    crate::google_token::decode_form(body)
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect()
}

fn jwt(account_id: &str, id: &str) -> String {
    let header = URL_SAFE_NO_PAD.encode(json!({"alg": "none", "typ": "JWT"}).to_string());
    let payload = json!({
        "jti": id,
        "https://api.openai.com/auth": {"chatgpt_account_id": account_id},
    });
    let payload = URL_SAFE_NO_PAD.encode(payload.to_string());
    format!("{header}.{payload}.unsigned")
}

fn error(status: StatusCode, error: &str, description: &str) -> Response {
    let body = json!({"error": error, "error_description": description}).to_string();
    json_response(status, body)
}

async fn handle(State(state): State<Shared>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let header_of = |name: header::HeaderName| {
        parts
            .headers
            .get(name)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
    };
    let content_type = header_of(header::CONTENT_TYPE);
    let authorization = header_of(header::AUTHORIZATION);
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let fields = match content_type.as_deref() {
        Some(ct) if ct.starts_with("application/x-www-form-urlencoded") => parse_form(&text),
        _ => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        },
    };
    let path = parts.uri.path().to_string();
    let (delay, response) = {
        let mut s = lock(&state);
        let mut call = TokenCall {
            method: parts.method.to_string(),
            path: path.clone(),
            content_type,
            authorization,
            fields,
            accepted: false,
        };
        let response = answer(&mut s, &parts.method, &mut call);
        s.calls.push(call);
        (s.config.delay, response)
    };
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    response
}

/// The answer to `call`, issuing (and rotating) tokens when it is a valid refresh.
fn answer(s: &mut Endpoint, method: &Method, call: &mut TokenCall) -> Response {
    if let Some((status, body)) = &s.config.failure {
        let code = StatusCode::from_u16(*status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        return json_response(code, body.clone());
    }
    let field = |k: &str| call.fields.get(k).and_then(Value::as_str).unwrap_or("");
    let next = s.issued.len() + 1;
    let access = match &s.config.account_id {
        Some(account) => jwt(account, &format!("{}{next}", s.config.access_prefix)),
        None => format!("{}{next}", s.config.access_prefix),
    };
    match (method, call.path.as_str()) {
        (&Method::POST, "/oauth/token") => {
            if field("grant_type") != "refresh_token" {
                return error(
                    StatusCode::BAD_REQUEST,
                    "unsupported_grant_type",
                    "grant_type must be refresh_token",
                );
            }
            if field("client_id").is_empty() {
                return error(
                    StatusCode::BAD_REQUEST,
                    "invalid_client",
                    "client_id missing",
                );
            }
            if field("refresh_token") != s.current_refresh {
                return error(
                    StatusCode::BAD_REQUEST,
                    "invalid_grant",
                    "refresh token not found or already used",
                );
            }
            let refresh = format!("refresh-{next}");
            s.current_refresh = refresh.clone();
            s.issued.push(access.clone());
            call.accepted = true;
            let body = json!({
                "token_type": "Bearer",
                "access_token": access,
                "refresh_token": refresh,
                "expires_in": s.config.expires_in,
            });
            json_response(StatusCode::OK, body.to_string())
        }
        (&Method::GET, "/copilot_internal/v2/token") => {
            let expected = format!("Bearer {}", s.current_refresh);
            if call.authorization.as_deref() != Some(expected.as_str()) {
                return error(
                    StatusCode::UNAUTHORIZED,
                    "bad_credentials",
                    "Bad credentials",
                );
            }
            s.issued.push(access.clone());
            call.accepted = true;
            let body = json!({
                "token": access,
                "expires_at": now_secs() + s.config.expires_in,
                "refresh_in": s.config.expires_in / 2,
            });
            json_response(StatusCode::OK, body.to_string())
        }
        _ => error(
            StatusCode::NOT_FOUND,
            "not_found",
            &format!("token endpoint: nothing serves {method} {}", call.path),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_decode() {
        let f = parse_form("grant_type=refresh_token&refresh_token=a%2Bb+c&x");
        assert_eq!(f["grant_type"], "refresh_token");
        assert_eq!(f["refresh_token"], "a+b c");
        assert_eq!(f["x"], "");
    }

    #[test]
    fn jwt_payload_carries_the_account() {
        let t = jwt("acct-1", "tok-1");
        let payload = t.split('.').nth(1).unwrap();
        let v: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
        assert_eq!(
            v["https://api.openai.com/auth"]["chatgpt_account_id"],
            "acct-1"
        );
    }
}
