//! Which environment variables the bash tool's shell does not inherit.
//!
//! By default the model's shell runs without the API keys filo itself uses: a model that runs
//! `env` (or a script that logs its environment) would otherwise read them and send them to the
//! provider as tool output. Removed are every variable named in filo's provider catalog (and pi's
//! key variables, AWS credentials), any variable ending in `_API_KEY` (custom providers in
//! `models.json` name theirs that way), and filo's own `FILO_*`/`PI_*`/`PLAYFILO_*` variables
//! ending in `_TOKEN`, `_KEY` or `_SECRET`.
//!
//! The opt-out is the environment variable [`KEEP_ENV_VAR`] (`FILO_BASH_KEEP_ENV`): `*` keeps the
//! whole environment (pi's behaviour), a comma-separated list of names keeps just those.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::sync::LazyLock;

/// The opt-out variable: `*` or a comma-separated list of variable names to pass through.
pub const KEEP_ENV_VAR: &str = "FILO_BASH_KEEP_ENV";

/// The key variables pi reads for providers that are not in filo's catalog file.
const PI_PROVIDERS: [&str; 19] = [
    "github-copilot",
    "anthropic",
    "google-vertex",
    "openai",
    "azure",
    "google",
    "groq",
    "cerebras",
    "xai",
    "openrouter",
    "vercel-ai-gateway",
    "zai",
    "mistral",
    "deepseek",
    "minimax",
    "minimax-cn",
    "huggingface",
    "opencode",
    "kimi-coding",
];

/// Credentials that are not key variables of a provider: Amazon Bedrock's (pi reads these for
/// its `<authenticated>` check), Anthropic's bearer token (pi 1.x) and the GitHub tokens pi
/// 0.73 took for Copilot.
const AWS_SECRETS: [&str; 6] = [
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
    "ANTHROPIC_AUTH_TOKEN",
    "GH_TOKEN",
    "GITHUB_TOKEN",
];

/// Every key variable named by the provider catalog, pi's key table and the AWS credentials.
static CATALOG_KEYS: LazyLock<BTreeSet<String>> = LazyLock::new(|| {
    let mut names: BTreeSet<String> = filo_ai::ProviderRegistry::builtin()
        .map(|registry| {
            registry
                .providers()
                .iter()
                .flat_map(|p| p.env_keys.iter().cloned())
                .collect()
        })
        .unwrap_or_default();
    for provider in PI_PROVIDERS {
        names.extend(
            filo_ai::env::api_key_env_vars(provider)
                .iter()
                .map(|s| s.to_string()),
        );
    }
    names.extend(AWS_SECRETS.iter().map(|s| s.to_string()));
    names
});

/// What the bash tool's shell inherits from filo's environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvPolicy {
    /// Remove secret variables, except the names listed here.
    Scrub { keep: BTreeSet<String> },
    /// Inherit everything (pi's behaviour).
    InheritAll,
}

impl Default for EnvPolicy {
    fn default() -> Self {
        EnvPolicy::Scrub {
            keep: BTreeSet::new(),
        }
    }
}

impl EnvPolicy {
    /// The policy an opt-out value asks for (the value of [`KEEP_ENV_VAR`], if set).
    pub fn from_keep_var(value: Option<&OsStr>) -> Self {
        let Some(value) = value.map(OsStr::to_string_lossy) else {
            return EnvPolicy::default();
        };
        if value.trim() == "*" {
            return EnvPolicy::InheritAll;
        }
        let keep = value
            .split(',')
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .map(str::to_string)
            .collect();
        EnvPolicy::Scrub { keep }
    }

    /// Whether the shell must not see `name`.
    pub fn removes(&self, name: &str) -> bool {
        match self {
            EnvPolicy::InheritAll => false,
            EnvPolicy::Scrub { keep } => !keep.contains(name) && is_secret_name(name),
        }
    }

    /// The names among `vars` that the shell must not see.
    pub fn removed<'a, I>(&self, vars: I) -> Vec<String>
    where
        I: IntoIterator<Item = &'a OsStr>,
    {
        vars.into_iter()
            .filter_map(OsStr::to_str)
            .filter(|name| self.removes(name))
            .map(str::to_string)
            .collect()
    }
}

/// A provider key or one of filo's own tokens, by name.
pub fn is_secret_name(name: &str) -> bool {
    if CATALOG_KEYS.contains(name) || name.ends_with("_API_KEY") {
        return true;
    }
    let ours = ["FILO_", "PI_", "PLAYFILO_"]
        .iter()
        .any(|p| name.starts_with(p));
    ours && ["_TOKEN", "_KEY", "_SECRET"]
        .iter()
        .any(|s| name.ends_with(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_keys_and_our_tokens_are_secret() {
        for name in [
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_OAUTH_TOKEN",
            "ANTHROPIC_AUTH_TOKEN",
            "OPENAI_API_KEY",
            "GEMINI_API_KEY",
            "GH_TOKEN",
            "HF_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "MY_CUSTOM_API_KEY",
            "FILO_GATEWAY_TOKEN",
            "PI_SECRET",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in ["PATH", "HOME", "AWS_REGION", "FILO_BASH_KEEP_ENV", "TOKEN"] {
            assert!(!is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn the_opt_out_keeps_all_or_the_named_variables() {
        let default = EnvPolicy::from_keep_var(None);
        assert!(default.removes("OPENAI_API_KEY"));
        let all = EnvPolicy::from_keep_var(Some(OsStr::new("*")));
        assert_eq!(all, EnvPolicy::InheritAll);
        assert!(!all.removes("OPENAI_API_KEY"));
        let some = EnvPolicy::from_keep_var(Some(OsStr::new("GH_TOKEN, HF_TOKEN")));
        assert!(!some.removes("GH_TOKEN"));
        assert!(!some.removes("HF_TOKEN"));
        assert!(some.removes("OPENAI_API_KEY"));
        let vars = [
            OsStr::new("PATH"),
            OsStr::new("GH_TOKEN"),
            OsStr::new("XAI_API_KEY"),
        ];
        assert_eq!(some.removed(vars), ["XAI_API_KEY"]);
    }
}
