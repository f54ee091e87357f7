//! AWS credentials and region the way the AWS SDK for JavaScript finds them for pi's Bedrock
//! provider, without the network:
//!
//! 1. `AWS_ACCESS_KEY_ID` + `AWS_SECRET_ACCESS_KEY` (+ `AWS_SESSION_TOKEN`), unless
//!    `AWS_PROFILE` is set (the SDK then skips the environment and uses the profile);
//! 2. the profile `AWS_PROFILE` (default `default`) in the shared credentials file
//!    (`AWS_SHARED_CREDENTIALS_FILE`, else `~/.aws/credentials`, section `[name]`) and the
//!    config file (`AWS_CONFIG_FILE`, else `~/.aws/config`, section `[profile name]` or
//!    `[default]`); the credentials file wins for a key both set.
//!
//! Sources that need a network call or a program (IAM Identity Center/SSO, assumed roles,
//! `credential_process`, web identity, container and instance metadata) are refused with an
//! error that names them. The region is `AWS_REGION`, else `AWS_DEFAULT_REGION` (pi reads both),
//! else the profile's `region`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::aws_sigv4::Credentials;
use crate::env::Env;
use crate::error::AiError;

/// One profile's keys, config file first, then the credentials file over it.
pub type Profile = BTreeMap<String, String>;

/// The sections of an INI file: `name → key → value`. Comments (`#`, `;`) and indented
/// continuation lines (nested settings such as `s3 =` blocks) are skipped.
pub fn parse_ini(text: &str) -> BTreeMap<String, Profile> {
    let mut out: BTreeMap<String, Profile> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if line.starts_with([' ', '\t']) {
            continue;
        }
        let line = line.trim();
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let name = name.trim().to_string();
            out.entry(name.clone()).or_default();
            current = Some(name);
            continue;
        }
        if let (Some(section), Some((key, value))) = (&current, line.split_once('=')) {
            let value = value.trim();
            if value.is_empty() {
                continue;
            }
            out.entry(section.clone())
                .or_default()
                .insert(key.trim().to_ascii_lowercase(), value.to_string());
        }
    }
    out
}

fn home_file(env: &Env, var: &str, rel: &str) -> Option<PathBuf> {
    if let Some(path) = env.get(var) {
        return Some(PathBuf::from(path));
    }
    env.get("HOME")
        .or_else(|| env.get("USERPROFILE"))
        .map(|home| PathBuf::from(home).join(rel))
}

fn read_ini(path: Option<PathBuf>) -> Result<BTreeMap<String, Profile>, AiError> {
    let Some(path) = path else {
        return Ok(BTreeMap::new());
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(parse_ini(&text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
        Err(e) => Err(AiError::Request(format!(
            "cannot read AWS file {}: {e}",
            path.display()
        ))),
    }
}

/// The profile name in use: `AWS_PROFILE`, else `default`.
pub fn profile_name(env: &Env) -> &str {
    env.get("AWS_PROFILE").unwrap_or("default")
}

/// The named profile from the config and credentials files (empty when neither has it).
pub fn load_profile(env: &Env) -> Result<Profile, AiError> {
    let name = profile_name(env);
    let config = read_ini(home_file(env, "AWS_CONFIG_FILE", ".aws/config"))?;
    let credentials = read_ini(home_file(
        env,
        "AWS_SHARED_CREDENTIALS_FILE",
        ".aws/credentials",
    ))?;
    let mut profile = Profile::new();
    let config_section = if name == "default" {
        config
            .get("default")
            .or_else(|| config.get("profile default"))
    } else {
        config.get(&format!("profile {name}"))
    };
    profile.extend(config_section.cloned().unwrap_or_default());
    profile.extend(credentials.get(name).cloned().unwrap_or_default());
    Ok(profile)
}

/// The region pi's Bedrock provider was configured with (`AWS_REGION`, `AWS_DEFAULT_REGION`).
pub fn configured_region(env: &Env) -> Option<&str> {
    env.first(&["AWS_REGION", "AWS_DEFAULT_REGION"])
}

/// The `region` of the profile in use.
pub fn profile_region(env: &Env) -> Result<Option<String>, AiError> {
    Ok(load_profile(env)?.get("region").cloned())
}

fn unsupported(what: &str) -> AiError {
    AiError::Request(format!(
        "AWS credentials from {what} are not supported by filo (it never calls AWS for \
         credentials); set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), \
         static keys in a profile of ~/.aws/credentials, or AWS_BEARER_TOKEN_BEDROCK"
    ))
}

/// Credentials as the SDK's default chain finds them (see the module docs).
pub fn resolve(env: &Env) -> Result<Credentials, AiError> {
    if env.get("AWS_PROFILE").is_none()
        && let (Some(id), Some(secret)) = (
            env.get("AWS_ACCESS_KEY_ID"),
            env.get("AWS_SECRET_ACCESS_KEY"),
        )
    {
        return Ok(Credentials {
            access_key_id: id.to_string(),
            secret_access_key: secret.to_string(),
            session_token: env.get("AWS_SESSION_TOKEN").map(str::to_string),
        });
    }
    let name = profile_name(env);
    let profile = load_profile(env)?;
    if let (Some(id), Some(secret)) = (
        profile.get("aws_access_key_id"),
        profile.get("aws_secret_access_key"),
    ) {
        return Ok(Credentials {
            access_key_id: id.clone(),
            secret_access_key: secret.clone(),
            session_token: profile.get("aws_session_token").cloned(),
        });
    }
    let kinds = [
        ("sso_session", "IAM Identity Center (SSO)"),
        ("sso_start_url", "IAM Identity Center (SSO)"),
        ("role_arn", "an assumed role (role_arn)"),
        ("credential_process", "a credential_process program"),
        (
            "web_identity_token_file",
            "web identity (web_identity_token_file)",
        ),
    ];
    if let Some((_, what)) = kinds.iter().find(|(key, _)| profile.contains_key(*key)) {
        return Err(unsupported(&format!("{what} in AWS profile `{name}`")));
    }
    if env.get("AWS_WEB_IDENTITY_TOKEN_FILE").is_some() {
        return Err(unsupported("web identity (AWS_WEB_IDENTITY_TOKEN_FILE)"));
    }
    if env
        .first(&[
            "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
            "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        ])
        .is_some()
    {
        return Err(unsupported("the container credentials endpoint (ECS)"));
    }
    Err(AiError::Request(format!(
        "no AWS credentials for Bedrock: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY are not set and \
         AWS profile `{name}` has no aws_access_key_id/aws_secret_access_key \
         (instance metadata (IMDS) credentials are not supported)"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn home(files: &[(&str, &str)]) -> (tempfile::TempDir, Vec<(String, String)>) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".aws")).unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join(".aws").join(name), text).unwrap();
        }
        let vars = vec![("HOME".to_string(), dir.path().display().to_string())];
        (dir, vars)
    }

    fn env(base: &[(String, String)], more: &[(&str, &str)]) -> Env {
        Env::from_vars(
            base.iter().cloned().chain(
                more.iter()
                    .map(|(k, v)| ((*k).to_string(), (*v).to_string())),
            ),
        )
    }

    const CREDENTIALS: &str = "# keys\n[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = secret-default\n\n[work]\naws_access_key_id=AKIDWORK\naws_secret_access_key=secret-work\naws_session_token = tok-work\n";
    const CONFIG: &str = "[default]\nregion = us-west-2\n[profile work]\nregion = eu-central-1\ns3 =\n  max_concurrent_requests = 10\n[profile sso]\nsso_session = corp\nregion = us-east-2\n[profile inline]\naws_access_key_id = AKIDCONFIG\naws_secret_access_key = secret-config\n";

    #[test]
    fn environment_keys_come_first_unless_a_profile_is_named() {
        let (_dir, base) = home(&[("credentials", CREDENTIALS), ("config", CONFIG)]);
        let e = env(
            &base,
            &[
                ("AWS_ACCESS_KEY_ID", "AKIDENV"),
                ("AWS_SECRET_ACCESS_KEY", "secret-env"),
                ("AWS_SESSION_TOKEN", "tok-env"),
            ],
        );
        let c = resolve(&e).unwrap();
        assert_eq!(
            (c.access_key_id.as_str(), c.session_token.as_deref()),
            ("AKIDENV", Some("tok-env"))
        );
        // AWS_PROFILE wins over the environment's keys, as in the SDK.
        let e = env(
            &base,
            &[
                ("AWS_ACCESS_KEY_ID", "AKIDENV"),
                ("AWS_SECRET_ACCESS_KEY", "secret-env"),
                ("AWS_PROFILE", "work"),
            ],
        );
        let c = resolve(&e).unwrap();
        assert_eq!(c.access_key_id, "AKIDWORK");
        assert_eq!(c.session_token.as_deref(), Some("tok-work"));
        assert_eq!(profile_region(&e).unwrap().as_deref(), Some("eu-central-1"));
    }

    #[test]
    fn default_profile_and_config_file_keys() {
        let (_dir, base) = home(&[("credentials", CREDENTIALS), ("config", CONFIG)]);
        let c = resolve(&env(&base, &[])).unwrap();
        assert_eq!(c.access_key_id, "AKIDDEFAULT");
        assert_eq!(c.session_token, None);
        assert_eq!(
            profile_region(&env(&base, &[])).unwrap().as_deref(),
            Some("us-west-2")
        );
        let c = resolve(&env(&base, &[("AWS_PROFILE", "inline")])).unwrap();
        assert_eq!(c.access_key_id, "AKIDCONFIG");
    }

    #[test]
    fn explicit_file_paths() {
        let dir = tempfile::tempdir().unwrap();
        let creds = dir.path().join("creds.ini");
        std::fs::write(
            &creds,
            "[p]\naws_access_key_id = A\naws_secret_access_key = B\n",
        )
        .unwrap();
        let config = dir.path().join("conf.ini");
        std::fs::write(&config, "[profile p]\nregion = ap-south-1\n").unwrap();
        let e = Env::from_vars([
            ("AWS_SHARED_CREDENTIALS_FILE", creds.display().to_string()),
            ("AWS_CONFIG_FILE", config.display().to_string()),
            ("AWS_PROFILE", "p".to_string()),
        ]);
        assert_eq!(resolve(&e).unwrap().access_key_id, "A");
        assert_eq!(profile_region(&e).unwrap().as_deref(), Some("ap-south-1"));
    }

    #[test]
    fn unsupported_sources_are_named() {
        let (_dir, base) = home(&[("config", CONFIG)]);
        let e = resolve(&env(&base, &[("AWS_PROFILE", "sso")])).unwrap_err();
        assert!(
            e.to_string()
                .contains("IAM Identity Center (SSO) in AWS profile `sso` are not supported"),
            "{e}"
        );
        let e = resolve(&env(
            &base,
            &[("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/v2/creds")],
        ))
        .unwrap_err();
        assert!(
            e.to_string().contains("container credentials endpoint"),
            "{e}"
        );
        let e = resolve(&env(&base, &[("AWS_PROFILE", "missing")])).unwrap_err();
        assert!(
            e.to_string()
                .contains("profile `missing` has no aws_access_key_id")
                && e.to_string().contains("IMDS"),
            "{e}"
        );
    }
}
