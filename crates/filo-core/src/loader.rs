//! Loading what a session needs from disk: resources (AGENTS.md, skills, prompt templates,
//! SYSTEM.md), the model registry with `models.json`, and the API-key resolver.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use filo_ai::{Env, ProviderRegistry};

use crate::agent_dirs::{AgentDirs, AgentItem};
use crate::agent_session::{ApiKeyResolver, Resources};
use crate::auth::oauth::TokenEndpoints;
use crate::auth::{AuthStorage, KeyCommands};
use crate::resource_paths::{self, Resolved, ResourceKind, Scope, ScopeInput};
use crate::resources::{
    PromptTemplate, Skill, Source, load_context_files, load_prompt_template, load_prompt_templates,
    load_skill_files, load_skill_paths,
};
use crate::settings::Settings;

/// What the command line asks of resource loading (pi's `--skill`, `-ns`, `--prompt-template`,
/// `-np`, `-nc`, `--system-prompt`, `--append-system-prompt`).
#[derive(Debug, Clone, Default)]
pub struct ResourceOptions {
    /// Replaces the system prompt (text or a file).
    pub system_prompt: Option<String>,
    /// Appended to the system prompt, in order, joined by blank lines (texts or files).
    pub append_system_prompt: Vec<String>,
    /// Skill files or directories loaded besides the discovered ones.
    pub skill_paths: Vec<PathBuf>,
    /// Discover no skills (the `skill_paths` ones still load).
    pub no_skills: bool,
    /// Template files or directories loaded besides the discovered ones.
    pub prompt_template_paths: Vec<PathBuf>,
    /// Discover no templates (the `prompt_template_paths` ones still load).
    pub no_prompt_templates: bool,
    /// Read no AGENTS.md / CLAUDE.md.
    pub no_context_files: bool,
}

/// A flag value that names an existing file is read as that file; otherwise it is the text.
pub fn text_or_file(value: &str, cwd: &Path) -> String {
    let p = cwd.join(value);
    if p.is_file() {
        std::fs::read_to_string(&p).unwrap_or_else(|_| value.to_string())
    } else {
        value.to_string()
    }
}

fn first_file(paths: &[std::path::PathBuf]) -> Option<String> {
    paths.iter().find_map(|p| std::fs::read_to_string(p).ok())
}

/// The enabled files of `kind` for `cwd` in pi 0.73.1's precedence order: the project's and the
/// user's `skills` / `prompts` / `themes` settings lists (relative to `<cwd>/.pi` and to the
/// directory of the global settings file), then the discovered directories, which the lists'
/// `!` / `+` / `-` entries filter too (see [`resource_paths`]).
pub fn resource_files(
    dirs: &AgentDirs,
    settings: &Settings,
    home: &Path,
    cwd: &Path,
    kind: ResourceKind,
) -> Vec<Resolved> {
    let (global, project) = settings.scoped_strings(kind.key());
    let project_base = cwd.join(".pi");
    let global_base = settings
        .global_source()
        .parent()
        .map_or_else(|| dirs.own().to_path_buf(), Path::to_path_buf);
    let item = match kind {
        ResourceKind::Skills => AgentItem::Skills,
        ResourceKind::Prompts => AgentItem::Prompts,
        ResourceKind::Themes => AgentItem::Themes,
    };
    let project = ScopeInput {
        entries: project,
        auto_dir: project_base.join(kind.key()),
        base: project_base,
    };
    let user = ScopeInput {
        entries: global,
        base: global_base,
        auto_dir: dirs.read_path(item),
    };
    let mut found = resource_paths::enabled(kind, &project, &user, cwd, home);
    // An untrusted project's skills, templates and themes (`.pi/…`, `.agents/skills`) are
    // skipped (project trust, `crate::trust`).
    if !dirs.project_trusted() {
        found.retain(|r| r.scope == Scope::User);
    }
    found
}

/// Load resources for `cwd`. `system_prompt` / `append` are the flag values, if given.
pub fn load_resources(
    agent_dir: &Path,
    home: &Path,
    cwd: &Path,
    system_prompt: Option<&str>,
    append: Option<&str>,
) -> (Resources, Vec<String>) {
    let dirs = AgentDirs::own_only(agent_dir.to_path_buf());
    let options = ResourceOptions {
        system_prompt: system_prompt.map(str::to_owned),
        append_system_prompt: append.map(str::to_owned).into_iter().collect(),
        ..ResourceOptions::default()
    };
    load_resources_in(&dirs, home, cwd, &options)
}

/// [`load_resources`] with `skills/` and `prompts/` read where `dirs` says (pi's when filo has
/// none) and the command line's `options`; AGENTS.md, SYSTEM.md and APPEND_SYSTEM.md come from
/// filo's own directory.
pub fn load_resources_in(
    dirs: &AgentDirs,
    home: &Path,
    cwd: &Path,
    options: &ResourceOptions,
) -> (Resources, Vec<String>) {
    let agent_dir = dirs.own();
    let mut warnings = Vec::new();
    let settings = Settings::load_in(dirs, Some(cwd));
    let source = |r: &Resolved| match r.scope {
        Scope::Project => Source::Project,
        Scope::User => Source::User,
    };
    let mut skills: Vec<Skill> = Vec::new();
    if !options.no_skills {
        let files: Vec<(PathBuf, Source)> =
            resource_files(dirs, &settings, home, cwd, ResourceKind::Skills)
                .iter()
                .filter(|r| r.path.extension().is_some_and(|e| e == "md"))
                .map(|r| (r.path.clone(), source(r)))
                .collect();
        let found = load_skill_files(&files);
        skills = found.skills;
        warnings.extend(found.warnings);
    }
    let extra = load_skill_paths(
        &options
            .skill_paths
            .iter()
            .map(|p| cwd.join(p))
            .collect::<Vec<_>>(),
    );
    warnings.extend(extra.warnings);
    for skill in extra.skills {
        if !skills.iter().any(|s| s.name == skill.name) {
            skills.push(skill);
        }
    }
    let mut templates: Vec<PromptTemplate> = Vec::new();
    if !options.no_prompt_templates {
        for r in resource_files(dirs, &settings, home, cwd, ResourceKind::Prompts) {
            if r.path.extension().is_none_or(|e| e != "md") {
                continue;
            }
            if let Some(t) = load_prompt_template(&r.path, source(&r))
                && !templates.iter().any(|x| x.name == t.name)
            {
                templates.push(t);
            }
        }
    }
    for path in &options.prompt_template_paths {
        let path = cwd.join(path);
        let found = if path.is_dir() {
            load_prompt_templates(&path, Source::Path)
        } else if path.is_file() {
            load_prompt_template(&path, Source::Path)
                .into_iter()
                .collect()
        } else {
            warnings.push(format!(
                "Prompt template path does not exist: {}",
                path.display()
            ));
            Vec::new()
        };
        for t in found {
            if !templates.iter().any(|x| x.name == t.name) {
                templates.push(t);
            }
        }
    }
    // An untrusted project's SYSTEM.md / APPEND_SYSTEM.md are skipped (project trust).
    let project_file = |name: &str| dirs.project_trusted().then(|| cwd.join(".pi").join(name));
    let custom = match &options.system_prompt {
        Some(v) => Some(text_or_file(v, cwd)),
        None => first_file(
            &project_file("SYSTEM.md")
                .into_iter()
                .chain([agent_dir.join("SYSTEM.md")])
                .collect::<Vec<_>>(),
        ),
    };
    let append = if options.append_system_prompt.is_empty() {
        first_file(
            &project_file("APPEND_SYSTEM.md")
                .into_iter()
                .chain([agent_dir.join("APPEND_SYSTEM.md")])
                .collect::<Vec<_>>(),
        )
    } else {
        let parts: Vec<String> = options
            .append_system_prompt
            .iter()
            .map(|v| text_or_file(v, cwd))
            .collect();
        Some(parts.join("\n\n"))
    };
    let context_files = if options.no_context_files {
        Vec::new()
    } else {
        load_context_files(agent_dir, cwd)
    };
    let resources = Resources {
        context_files,
        skills,
        templates,
        custom_system_prompt: custom,
        append_system_prompt: append,
        agent_dir: Some(agent_dir.to_path_buf()),
        pi_agent_dir: dirs.pi().map(Path::to_path_buf),
    };
    (resources, warnings)
}

/// The built-in catalog plus `<agent_dir>/models.json`. A broken file or provider is reported
/// (naming the file, the provider and the problem), never fatal: every valid provider is loaded.
pub fn load_registry(agent_dir: &Path) -> (ProviderRegistry, Vec<String>) {
    let mut warnings = Vec::new();
    let mut registry = match ProviderRegistry::builtin() {
        Ok(r) => r,
        Err(e) => {
            warnings.push(format!("built-in model catalog: {e}"));
            ProviderRegistry::empty()
        }
    };
    let path = agent_dir.join("models.json");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (registry, warnings),
        Err(e) => {
            warnings.push(format!("{}: cannot be read: {e}", path.display()));
            return (registry, warnings);
        }
    };
    match registry.apply_models_json(&text) {
        Ok(skipped) => warnings.extend(
            skipped
                .into_iter()
                .map(|s| format!("{}: {s}", path.display())),
        ),
        Err(e) => warnings.push(format!(
            "{}: {e} (no custom provider from this file is loaded)",
            path.display()
        )),
    }
    (registry, warnings)
}

/// Why the models.json `!command` key of `provider` gave no key, if it has one and it failed
/// (the result is cached, so asking after a resolver ran it runs nothing again).
pub fn key_command_problem(
    registry: &ProviderRegistry,
    commands: &KeyCommands,
    provider: &str,
) -> Option<String> {
    let command = registry
        .provider(provider)
        .and_then(|p| p.api_key.as_deref())
        .and_then(|k| k.strip_prefix('!'))?;
    let error = commands.run(command).err()?;
    Some(format!(
        "models.json provider \"{provider}\": apiKey: {error}"
    ))
}

/// Keys in pi's order: runtime `--api-key`, auth.json (an expired OAuth credential refreshed
/// first, its token service taken from `env`, see [`TokenEndpoints`]), environment, models.json
/// (including a `!command`, run once per process with a time limit); keyless local providers
/// answer `Some("")`. Clones of `auth` kept by the caller see refreshed credentials and
/// [`AuthStorage::problem`].
pub fn api_key_resolver(
    mut auth: AuthStorage,
    registry: Arc<ProviderRegistry>,
    env: Arc<Env>,
) -> ApiKeyResolver {
    auth.set_token_endpoints(TokenEndpoints::from_env(&env));
    Arc::new(move |provider: &str| {
        let lookup = |name: &str| env.get(name).map(str::to_string);
        let from_env = |p: &str| registry.api_key(p, &env);
        let now = filo_ai::client::now_ms();
        let command = registry
            .provider(provider)
            .and_then(|p| p.api_key.as_deref())
            .filter(|k| k.starts_with('!'));
        auth.api_key(provider, now, &lookup, &from_env, command)
            .or_else(|| registry.is_keyless(provider).then(String::new))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_prompt_files_and_flags() {
        let t = tempfile::tempdir().unwrap();
        let agent = t.path().join("agent");
        let cwd = t.path().join("proj");
        std::fs::create_dir_all(cwd.join(".pi")).unwrap();
        std::fs::create_dir_all(&agent).unwrap();
        std::fs::write(agent.join("SYSTEM.md"), "global system").unwrap();
        std::fs::write(cwd.join(".pi/APPEND_SYSTEM.md"), "project append").unwrap();
        std::fs::write(cwd.join("sp.txt"), "from file").unwrap();
        let (r, _) = load_resources(&agent, t.path(), &cwd, None, None);
        assert_eq!(r.custom_system_prompt.as_deref(), Some("global system"));
        assert_eq!(r.append_system_prompt.as_deref(), Some("project append"));
        let (r, _) = load_resources(&agent, t.path(), &cwd, Some("sp.txt"), Some("inline"));
        assert_eq!(r.custom_system_prompt.as_deref(), Some("from file"));
        assert_eq!(r.append_system_prompt.as_deref(), Some("inline"));
    }

    #[test]
    fn keys_resolve_and_local_providers_need_none() {
        let t = tempfile::tempdir().unwrap();
        let (registry, warnings) = load_registry(t.path());
        assert!(warnings.is_empty());
        let env = Env::from_vars([("OPENAI_API_KEY", "sk-env")]);
        let resolve = api_key_resolver(
            AuthStorage::in_memory(serde_json::json!({})),
            Arc::new(registry),
            Arc::new(env),
        );
        assert_eq!(resolve("openai").as_deref(), Some("sk-env"));
        assert_eq!(resolve("llamacpp").as_deref(), Some(""));
        assert_eq!(resolve("anthropic"), None);
    }

    #[test]
    fn broken_models_json_is_a_warning() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("models.json"), "{not json").unwrap();
        let (_, warnings) = load_registry(t.path());
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].contains("models.json: Failed to parse models.json"),
            "{warnings:?}"
        );
    }

    #[test]
    fn models_json_command_key_and_skipped_provider() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(
            t.path().join("models.json"),
            r#"{"providers":{
                "cmd":{"baseUrl":"http://127.0.0.1:1/v1","apiKey":"!printf sk-cmd","api":"openai-completions","models":[{"id":"c"}]},
                "nokey":{"baseUrl":"http://127.0.0.1:2/v1","api":"openai-completions","models":[{"id":"n"}]}}}"#,
        )
        .unwrap();
        let (registry, warnings) = load_registry(t.path());
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        let path = t.path().join("models.json");
        assert!(warnings[0].starts_with(&format!("{}: ", path.display())));
        assert!(warnings[0].contains("Provider nokey: \"apiKey\" is required"));
        let resolve = api_key_resolver(
            AuthStorage::in_memory(serde_json::json!({})),
            Arc::new(registry),
            Arc::new(Env::from_vars::<[(&str, &str); 0], &str, &str>([])),
        );
        assert_eq!(resolve("cmd").as_deref(), Some("sk-cmd"));
    }
}
