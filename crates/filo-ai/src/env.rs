//! API keys from the environment with pi's variable names (pi spec §1.11). The environment is
//! passed in as a value ([`Env`]), never read from globals here, so tests never call `set_var`.

use std::collections::BTreeMap;

/// A snapshot of environment variables. Build one from the process with
/// `Env::from_vars(std::env::vars())` in a binary, or from a literal map in tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Env {
    vars: BTreeMap<String, String>,
}

impl Env {
    /// An environment holding exactly these variables.
    pub fn from_vars<I, K, V>(vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        Env {
            vars: vars
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// The value of `name`, if set and non-empty.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// Every variable, in name order.
    pub fn vars(&self) -> impl Iterator<Item = (&str, &str)> {
        self.vars.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The first non-empty value among `names`.
    pub fn first(&self, names: &[&str]) -> Option<&str> {
        names.iter().find_map(|n| self.get(n))
    }
}

/// The variables pi 1.6 reads for a provider's key, in priority order (first non-empty wins).
/// `ANTHROPIC_AUTH_TOKEN`, which pi sends as a bearer token rather than a key, is not among them.
pub fn api_key_env_vars(provider: &str) -> &'static [&'static str] {
    match provider {
        "github-copilot" => &["COPILOT_GITHUB_TOKEN"],
        "anthropic" => &["ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"],
        "ant-ling" => &["ANT_LING_API_KEY"],
        "qwen-token-plan" => &["QWEN_TOKEN_PLAN_TEAM_API_KEY", "QWEN_TOKEN_PLAN_API_KEY"],
        "qwen-token-plan-cn" => &[
            "QWEN_TOKEN_PLAN_TEAM_CN_API_KEY",
            "QWEN_TOKEN_PLAN_CN_API_KEY",
        ],
        "qwen-token-plan-individual" => &[
            "QWEN_TOKEN_PLAN_INDIVIDUAL_API_KEY",
            "QWEN_TOKEN_PLAN_API_KEY",
        ],
        "qwen-token-plan-individual-cn" => &[
            "QWEN_TOKEN_PLAN_INDIVIDUAL_CN_API_KEY",
            "QWEN_TOKEN_PLAN_CN_API_KEY",
        ],
        "google-vertex" => &["GOOGLE_CLOUD_API_KEY"],
        "openai" => &["OPENAI_API_KEY"],
        "azure" => &["AZURE_OPENAI_API_KEY"],
        "nvidia" => &["NVIDIA_API_KEY"],
        "google" => &["GEMINI_API_KEY"],
        "groq" => &["GROQ_API_KEY"],
        "cerebras" => &["CEREBRAS_API_KEY"],
        "xai" => &["XAI_API_KEY"],
        "typesafe" => &["TYPESAFE_API_KEY"],
        "radius" => &["RADIUS_API_KEY"],
        "openrouter" => &["OPENROUTER_API_KEY"],
        "vercel-ai-gateway" => &["AI_GATEWAY_API_KEY"],
        "zai" => &["ZAI_API_KEY"],
        "zai-coding-cn" => &["ZAI_CODING_CN_API_KEY"],
        "mistral" => &["MISTRAL_API_KEY"],
        "deepseek" => &["DEEPSEEK_API_KEY"],
        "minimax" => &["MINIMAX_API_KEY"],
        "minimax-cn" => &["MINIMAX_CN_API_KEY"],
        "moonshotai" | "moonshotai-cn" => &["MOONSHOT_API_KEY"],
        "huggingface" => &["HF_TOKEN"],
        "fireworks" => &["FIREWORKS_API_KEY"],
        "together" => &["TOGETHER_API_KEY"],
        "baseten" => &["BASETEN_API_KEY"],
        "opencode" | "opencode-go" => &["OPENCODE_API_KEY"],
        "kimi-coding" => &["KIMI_API_KEY"],
        "meta" => &["META_API_KEY"],
        "cloudflare-workers-ai" | "cloudflare-ai-gateway" => &["CLOUDFLARE_API_KEY"],
        "xiaomi" => &["XIAOMI_API_KEY"],
        "xiaomi-token-plan-cn" => &["XIAOMI_TOKEN_PLAN_CN_API_KEY"],
        "xiaomi-token-plan-ams" => &["XIAOMI_TOKEN_PLAN_AMS_API_KEY"],
        "xiaomi-token-plan-sgp" => &["XIAOMI_TOKEN_PLAN_SGP_API_KEY"],
        _ => &[],
    }
}

/// pi's `getEnvApiKey(provider)`: the key the environment holds for a provider. Amazon Bedrock
/// answers `<authenticated>` when any AWS credential source is configured; Google Vertex when
/// its Application Default Credentials file exists and a project and location are set.
pub fn env_api_key(provider: &str, env: &Env) -> Option<String> {
    if provider == "amazon-bedrock" {
        let has_keys =
            env.get("AWS_ACCESS_KEY_ID").is_some() && env.get("AWS_SECRET_ACCESS_KEY").is_some();
        let other = env
            .first(&[
                "AWS_PROFILE",
                "AWS_BEARER_TOKEN_BEDROCK",
                "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                "AWS_WEB_IDENTITY_TOKEN_FILE",
            ])
            .is_some();
        return (has_keys || other).then(|| "<authenticated>".to_string());
    }
    if let Some(key) = env.first(api_key_env_vars(provider)) {
        return Some(key.to_string());
    }
    // Vertex also runs on Application Default Credentials with a project and a location.
    if provider == "google-vertex" {
        let has_file = crate::google_vertex::adc_path(env).is_some_and(|p| p.exists());
        let has_project = env
            .first(&["GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT"])
            .is_some();
        let has_location = env.get("GOOGLE_CLOUD_LOCATION").is_some();
        if has_file && has_project && has_location {
            return Some("<authenticated>".to_string());
        }
    }
    None
}

/// models.json value resolution (pi spec §1.14) without shell commands: an environment variable of
/// that exact name when set, else the literal. Values starting with `!` name a shell command,
/// which the caller (filo-core) runs; they resolve to `None` here.
pub fn resolve_config_value(value: &str, env: &Env) -> Option<String> {
    if value.starts_with('!') {
        return None;
    }
    Some(env.get(value).unwrap_or(value).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_non_empty_wins() {
        let env = Env::from_vars([
            ("ANTHROPIC_OAUTH_TOKEN", ""),
            ("ANTHROPIC_API_KEY", "sk-ant"),
            ("GH_TOKEN", "gh"),
            ("COPILOT_GITHUB_TOKEN", "copilot"),
        ]);
        assert_eq!(env_api_key("anthropic", &env).as_deref(), Some("sk-ant"));
        // pi 1.6 reads only COPILOT_GITHUB_TOKEN for Copilot (GH_TOKEN is not a Copilot key).
        assert_eq!(
            env_api_key("github-copilot", &env).as_deref(),
            Some("copilot")
        );
        assert_eq!(env_api_key("openai", &env), None);
        assert_eq!(env_api_key("nope", &env), None);
    }

    #[test]
    fn bedrock_and_config_values() {
        let env = Env::from_vars([("AWS_ACCESS_KEY_ID", "a"), ("MY_KEY", "secret")]);
        assert_eq!(env_api_key("amazon-bedrock", &env), None);
        let env2 = Env::from_vars([("AWS_ACCESS_KEY_ID", "a"), ("AWS_SECRET_ACCESS_KEY", "b")]);
        assert_eq!(
            env_api_key("amazon-bedrock", &env2).as_deref(),
            Some("<authenticated>")
        );
        assert_eq!(
            resolve_config_value("MY_KEY", &env).as_deref(),
            Some("secret")
        );
        assert_eq!(
            resolve_config_value("sk-literal", &env).as_deref(),
            Some("sk-literal")
        );
        assert_eq!(resolve_config_value("!pass show key", &env), None);
    }
}
