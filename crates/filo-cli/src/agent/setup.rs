//! Building an [`AgentSession`] from the command line and the environment.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};
use filo_ai::{ContentBlock, Env};
use filo_core::auth::KeyCommands;
use filo_core::builder::{DEFAULT_TOOL_NAMES, SessionBuilder, memory_config, tools_by_name};
use filo_core::loader::{
    ResourceOptions, api_key_resolver, key_command_problem, load_registry, load_resources_in,
};
use filo_core::model_resolve::{resolve_cli_model, resolve_model_scope};
use filo_core::trust::{Resolution, TrustQuery, TrustStore};
use filo_core::{AgentDirs, AgentItem, AgentSession, AuthStorage, Settings};
use filo_session::SessionManager;

use super::PiWords;
use super::args::AgentArgs;

/// Where filo keeps its files, resolved once from the environment and the working directory
/// (both read by `main`).
#[derive(Debug, Clone)]
pub struct Paths {
    pub home: PathBuf,
    /// filo's own agent directory (`FILO_AGENT_DIR` or `~/.filo/agent`): sessions and every write.
    pub agent_dir: PathBuf,
    /// Which configuration is read from pi's agent directory (`PI_CODING_AGENT_DIR` or
    /// `~/.pi/agent`) because filo's has none of its own.
    pub dirs: AgentDirs,
    /// pi's agent directory (`PI_CODING_AGENT_DIR` or `~/.pi/agent`), for its `trust.json`.
    pub pi_dir: PathBuf,
    pub cwd: PathBuf,
}

impl Paths {
    pub fn resolve(env: &Env, cwd: PathBuf) -> anyhow::Result<Paths> {
        let home = env
            .get("HOME")
            .map(PathBuf::from)
            .context("HOME is not set")?;
        let agent_dir = filo_session::paths::agent_dir(env.get("FILO_AGENT_DIR"), &home);
        let pi_dir = filo_session::paths::pi_agent_dir(env.get("PI_CODING_AGENT_DIR"), &home);
        // The project's protected resources stay unread until trust is decided
        // ([`decide_trust`]).
        Ok(Paths {
            home,
            dirs: AgentDirs::new(agent_dir.clone(), Some(pi_dir.clone())).with_project_trust(false),
            pi_dir,
            agent_dir,
            cwd,
        })
    }

    /// The saved project-trust decisions: filo's `trust.json`, pi's read as the fallback.
    pub fn trust_store(&self) -> TrustStore {
        TrustStore::new(&self.agent_dir, Some(&self.pi_dir))
    }
}

/// pi's project-trust order for this run: `--approve` / `--no-approve`, the saved decision for
/// the folder or its closest parent, then `defaultProjectTrust` (read from the agent directory
/// only). `Ask` only when `can_prompt` (the terminal UI). Problems (an unreadable `trust.json`,
/// a bad setting) come back as warnings.
pub fn decide_trust(
    args: &AgentArgs,
    paths: &Paths,
    can_prompt: bool,
) -> (Resolution, Vec<String>) {
    let mut warnings = Vec::new();
    let global = Settings::load_in(&paths.dirs.clone().with_project_trust(false), None);
    let (default, w) = global.default_project_trust();
    warnings.extend(w);
    let query = TrustQuery {
        cwd: &paths.cwd,
        home: &paths.home,
        command_line: args.trust_override(),
        default,
        can_prompt,
    };
    let (resolution, error) = filo_core::trust::resolve(&paths.trust_store(), &query);
    warnings.extend(error.map(|e| filo_core::error_chain(&e)));
    (resolution, warnings)
}

/// A built session plus what to tell the user.
pub struct Built {
    pub session: AgentSession,
    pub warnings: Vec<String>,
    /// The Playfilo memory and its database path (`None` with `--no-dag`), for the UI's `/life`.
    pub memory: Option<(Arc<filo_core::playfilo::Playfilo>, PathBuf)>,
    /// The bash tool's full-output files, removed when the run ends.
    pub spills: Arc<filo_tools::spill::SpillFiles>,
}

/// Where sessions are stored and looked up, in pi's order: `--session-dir`, then
/// `FILO_SESSION_DIR` (pi: `PI_CODING_AGENT_SESSION_DIR`), then the `sessionDir` setting (both
/// with `~` expanded), then the per-directory default under the agent directory. The project's
/// `sessionDir` is read whatever the trust decision (pi's documented exception: it is looked up
/// before trust is resolved).
pub fn session_dir(args: &AgentArgs, env: &Env, paths: &Paths) -> PathBuf {
    let home = &paths.home;
    let settings = Settings::load_in(
        &paths.dirs.clone().with_project_trust(true),
        Some(&paths.cwd),
    );
    args.session_dir
        .clone()
        .or_else(|| {
            env.get("FILO_SESSION_DIR")
                .and_then(|v| filo_core::settings::expand_tilde(v, home))
        })
        .or_else(|| settings.values().session_dir(home))
        .unwrap_or_else(|| {
            filo_session::paths::session_dir_for(&paths.agent_dir, &paths.cwd.to_string_lossy())
        })
}

/// Where `--session`/`--fork` found a session.
enum Found {
    /// A path, or an id of this directory's sessions.
    Here(PathBuf),
    /// An id of a session another project wrote (pi's "global" match), with its directory.
    Elsewhere(PathBuf, String),
}

/// A session named by path or id prefix (this directory's sessions first, then all).
fn find_session(arg: &str, dir: &Path, paths: &Paths) -> anyhow::Result<Found> {
    let looks_like_path = arg.contains('/') || arg.contains('\\') || arg.ends_with(".jsonl");
    if looks_like_path {
        return Ok(Found::Here(paths.cwd.join(arg)));
    }
    if let Some(s) = filo_session::list_sessions(dir)
        .into_iter()
        .find(|s| s.id.starts_with(arg))
    {
        return Ok(Found::Here(s.path));
    }
    let cwd = paths.cwd.to_string_lossy();
    filo_session::list_all_sessions(&paths.agent_dir.join("sessions"))
        .into_iter()
        .find(|s| s.id.starts_with(arg))
        .map(|s| {
            if s.cwd.is_empty() || s.cwd == cwd {
                Found::Here(s.path)
            } else {
                Found::Elsewhere(s.path, s.cwd)
            }
        })
        .ok_or_else(|| PiWords(format!("No session found matching '{arg}'")).into())
}

/// Asks on the terminal whether to fork a session found in another project (pi's prompt);
/// `false` when stdin is not a terminal to ask on.
fn confirm_fork(other_cwd: &str) -> bool {
    use std::io::{BufRead, IsTerminal, Write};
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "Session found in different project: {other_cwd}");
    if !std::io::stdin().is_terminal() {
        let _ = writeln!(err, "Use --fork to fork it into this directory.");
        return false;
    }
    let _ = write!(err, "Fork this session into current directory? [y/N] ");
    let _ = err.flush();
    let mut answer = String::new();
    if std::io::stdin().lock().read_line(&mut answer).is_err() {
        return false;
    }
    matches!(answer.trim().to_lowercase().as_str(), "y" | "yes")
}

fn open_session(args: &AgentArgs, paths: &Paths, dir: &Path) -> anyhow::Result<SessionManager> {
    let cwd = paths.cwd.to_string_lossy().into_owned();
    if let Some(source) = &args.fork {
        let conflicting: Vec<&str> = [
            (args.session.is_some(), "--session"),
            (args.continue_session, "--continue"),
            (args.resume, "--resume"),
            (args.no_session, "--no-session"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
        if !conflicting.is_empty() {
            return Err(PiWords(format!(
                "Error: --fork cannot be combined with {}",
                conflicting.join(", ")
            ))
            .into());
        }
        let (Found::Here(path) | Found::Elsewhere(path, _)) = find_session(source, dir, paths)?;
        return fork_from(&path, &cwd, dir);
    }
    if args.no_session {
        return Ok(SessionManager::in_memory(&cwd));
    }
    if let Some(s) = &args.session {
        return match find_session(s, dir, paths)? {
            Found::Here(path) => SessionManager::open(&path, &cwd).map_err(anyhow::Error::from),
            // A session of another project is forked into this one, when the user agrees.
            Found::Elsewhere(path, other) => {
                if !confirm_fork(&other) {
                    bail!("Aborted.");
                }
                fork_from(&path, &cwd, dir)
            }
        };
    }
    if args.continue_session {
        return SessionManager::continue_recent(&cwd, dir).map_err(anyhow::Error::from);
    }
    Ok(SessionManager::create(&cwd, dir))
}

/// A fork of `source` into `dir`; a failure is reported as pi reports it (`Error: Cannot fork: …`).
fn fork_from(source: &Path, cwd: &str, dir: &Path) -> anyhow::Result<SessionManager> {
    SessionManager::fork_from(source, cwd, dir).map_err(|e| PiWords(format!("Error: {e}")).into())
}

fn utc_date() -> String {
    filo_session::ids::iso_from_ms(filo_session::ids::now_ms())[..10].to_string()
}

/// Build the session the flags describe.
pub fn build(
    args: &AgentArgs,
    env: &Env,
    paths: &Paths,
    mcp: Option<&Arc<filo_mcp::McpManager>>,
) -> anyhow::Result<Built> {
    let mut warnings = Vec::new();
    let dirs = &paths.dirs;
    let settings = Settings::load_in(dirs, Some(&paths.cwd));
    warnings.extend(settings.errors.iter().cloned());
    warnings.extend(settings.values().unapplied());
    let (registry, w) = load_registry(dirs.source(AgentItem::Models));
    warnings.extend(w);
    let resolved = resolve_cli_model(args.provider.as_deref(), args.model.as_deref(), &registry)?;
    let mut auth = AuthStorage::load_from(
        &dirs.write_path(AgentItem::Auth),
        &dirs.read_path(AgentItem::Auth),
    );
    let key_commands = KeyCommands::default();
    auth.set_key_commands(key_commands.clone());
    warnings.extend(auth.errors.iter().cloned());
    if let Some(key) = &args.api_key {
        let Some(r) = &resolved else {
            bail!(
                "--api-key requires a model to be specified via --model, --provider/--model, or --models"
            );
        };
        auth.set_runtime_api_key(&r.model.provider, key);
    }
    let mut thinking = None;
    let mut model = resolved.map(|r| {
        warnings.extend(r.warning);
        thinking = r.thinking;
        r.model
    });
    let registry = Arc::new(registry);
    let env_arc = Arc::new(env.clone());
    let resolver = api_key_resolver(auth.clone(), registry.clone(), env_arc);
    // pi: `--models`, else the `enabledModels` setting (`/scoped-models` saves it).
    let patterns = args
        .models
        .clone()
        .or_else(|| filo_core::ui_settings::enabled_models(&settings));
    let scope = match &patterns {
        Some(patterns) => {
            let available: Vec<filo_ai::Model> = registry
                .models()
                .iter()
                .filter(|m| resolver(&m.provider).is_some())
                .cloned()
                .collect();
            let (scope, w) = resolve_model_scope(patterns, &available);
            warnings.extend(w);
            scope
        }
        None => Vec::new(),
    };
    let session_dir = session_dir(args, env, paths);
    let session_manager = open_session(args, paths, &session_dir)?;
    // pi: without `--model`, a new session starts on the scope's first model (and its level).
    if model.is_none()
        && let Some(first) = scope.first()
        && session_manager.build_context().messages.is_empty()
    {
        model = Some(first.model.clone());
        thinking = thinking.or(first.thinking);
    }
    if let Some(t) = args.thinking {
        thinking = Some(t.level());
    }
    if let Some(m) = &model {
        // A `!command` key or an OAuth refresh that fails is named here, not left to a bare
        // "no API key".
        if resolver(&m.provider).is_none() {
            warnings.extend(auth.problem(&m.provider));
            warnings.extend(key_command_problem(&registry, &key_commands, &m.provider));
        }
    }
    let client = filo_ai::Client::new((*registry).clone(), env.clone())?;
    let spills = Arc::new(filo_tools::spill::SpillFiles::default());
    let sandbox = sandbox_policy(args, paths, &settings)?;
    let tools = select_tools(args, &paths.cwd, &spills, settings.values(), sandbox);
    let (resources, w) = load_resources_in(dirs, &paths.home, &paths.cwd, &resource_options(args));
    warnings.extend(w);
    let memory = playfilo_extension(args, env, paths, &mut warnings);
    let mut builder = SessionBuilder::new(paths.cwd.clone(), Arc::new(client), utc_date())
        .model_list(
            filo_core::model_list::ModelList::from_registry(registry.clone(), None),
            model,
        )
        .thinking(thinking)
        .tools(tools)
        .session(session_manager)
        .settings(settings)
        .api_key(resolver)
        .resources(resources);
    if let Some((p, _)) = &memory {
        builder = builder.extension(p.clone());
    }
    if let Some(m) = mcp {
        builder = builder.extension(m.clone());
    }
    let session = builder.build()?;
    session.set_scoped_models(scope);
    // pi 0.73 (sdk.js): `--tools` is an allowlist over every tool, extension ones included;
    // `--no-tools` alone allows none.
    let allowed = match (&args.tools, args.no_tools) {
        // MCP entries (names, `mcp__*` patterns) choose among the MCP tools, which are kept.
        (Some(_), _) => Some(match mcp {
            Some(m) => crate::mcp::allowlist_with(requested_tool_names(args), m),
            None => requested_tool_names(args),
        }),
        (None, true) => Some(Vec::new()),
        (None, false) => None,
    };
    if let Some(names) = allowed {
        for n in session.retain_tools(&names) {
            warnings.push(format!("Unknown tool \"{n}\" ignored"));
        }
    }
    Ok(Built {
        session,
        warnings,
        memory,
        spills,
    })
}

/// What the flags ask of resource loading (also used by the UI's `/reload`).
pub fn resource_options(args: &AgentArgs) -> ResourceOptions {
    ResourceOptions {
        system_prompt: args.system_prompt.clone(),
        append_system_prompt: args.append_system_prompt.clone(),
        skill_paths: args.skill.clone(),
        no_skills: args.no_skills,
        prompt_template_paths: args.prompt_template.clone(),
        no_prompt_templates: args.no_prompt_templates,
        no_context_files: args.no_context_files,
    }
}

/// The Playfilo memory, unless `--no-dag`. A database that cannot be opened, is read-only or is
/// damaged is left untouched, and the run goes on without the memory, saying so first.
///
/// `PLAYFILO_BUSY_TIMEOUT_MS` (default 30 000) is how long one write waits for another process's
/// lock; `PLAYFILO_LOCK_PATIENCE_MS` (default 300 000) how long a commit keeps retrying before
/// its entry is reported as not in the memory.
fn playfilo_extension(
    args: &AgentArgs,
    env: &Env,
    paths: &Paths,
    warnings: &mut Vec<String>,
) -> Option<(Arc<filo_core::playfilo::Playfilo>, PathBuf)> {
    if args.no_dag {
        return None;
    }
    let (config, w) = memory_config(
        &paths.home,
        &paths.cwd,
        args.dag.as_deref().map(Path::new),
        args.head.clone(),
        env,
    );
    warnings.extend(w);
    let path = config.db_path.clone();
    match filo_core::playfilo::Playfilo::open(config) {
        Ok(p) => Some((Arc::new(p), path)),
        Err(e) => {
            warnings.push(format!(
                "memory disabled for this run: {e} (nothing is mirrored; `filo dag --db {} fsck` tells more; --no-dag silences this)",
                filo_dag::redact(&path.display().to_string())
            ));
            None
        }
    }
}

/// The names given to `--tools`, trimmed, empty ones dropped.
fn requested_tool_names(args: &AgentArgs) -> Vec<String> {
    args.tools
        .iter()
        .flatten()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The sandbox of the model's commands: `--sandbox MODE`, else the agent directory's
/// `sandbox` setting (`{"mode": …, "network": bool, "writableRoots": [paths]}`; a project cannot
/// loosen it), else none (`danger-full-access`). `None` when unconfined.
pub fn sandbox_policy(
    args: &AgentArgs,
    paths: &Paths,
    settings: &Settings,
) -> anyhow::Result<Option<filo_tools::sandbox::SandboxPolicy>> {
    use filo_tools::sandbox::{SandboxMode, SandboxPolicy};
    let setting = settings.global_value("sandbox");
    let from_setting = setting
        .and_then(|v| v.get("mode"))
        .and_then(serde_json::Value::as_str);
    let Some(name) = args.sandbox.as_deref().or(from_setting) else {
        return Ok(None);
    };
    let mode = SandboxMode::parse(name)?;
    if !mode.is_confined() {
        return Ok(None);
    }
    let helper = std::env::current_exe().context("cannot find the filo binary for the sandbox")?;
    let mut policy = SandboxPolicy::new(mode, helper, Some(&paths.home));
    policy.network = setting
        .and_then(|v| v.get("network"))
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false);
    policy.writable_roots = setting
        .and_then(|v| v.get("writableRoots"))
        .and_then(serde_json::Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(serde_json::Value::as_str)
                .filter_map(|p| filo_core::settings::expand_tilde(p, &paths.home))
                .collect()
        })
        .unwrap_or_default();
    Ok(Some(policy))
}

/// The built-in tools the flags ask for, with the settings that shape them: `shellPath` and
/// `shellCommandPrefix` for bash (as for `!` commands), `images.autoResize` for read.
fn select_tools(
    args: &AgentArgs,
    cwd: &Path,
    spills: &Arc<filo_tools::spill::SpillFiles>,
    values: &filo_core::settings::SettingsValues,
    sandbox: Option<filo_tools::sandbox::SandboxPolicy>,
) -> Vec<Arc<dyn filo_agent::AgentTool>> {
    let mut settings =
        filo_tools::ToolSettings::new(cwd).with_auto_resize_images(values.auto_resize_images());
    if let Some(policy) = sandbox {
        settings = settings.with_sandbox(policy);
    }
    if let Some(shell) = &values.shell_path {
        settings = settings.with_shell_path(shell);
    }
    if let Some(prefix) = &values.shell_command_prefix {
        settings = settings.with_command_prefix(prefix);
    }
    let settings = Arc::new(settings);
    let names: Vec<String> = match (&args.tools, args.no_tools || args.no_builtin_tools) {
        (Some(_), _) => requested_tool_names(args),
        (None, true) => Vec::new(),
        (None, false) => DEFAULT_TOOL_NAMES.iter().map(|s| s.to_string()).collect(),
    };
    // Names no built-in has are left to the allowlist check after the session is built (an
    // extension may provide them).
    tools_by_name(&names, &settings, spills).0
}

/// An `@file` argument's bytes: a regular file of at most 64 MB (a FIFO or a device would block
/// or never end).
fn read_attachment(path: &Path, abs: &Path) -> anyhow::Result<Vec<u8>> {
    use filo_tools::fileread::{MAX_READ_BYTES, read_regular};
    let contents = read_regular(path, MAX_READ_BYTES).map_err(|e| match e {
        filo_tools::Error::Io { .. } => anyhow::anyhow!("File not found: {}", abs.display()),
        other => anyhow::anyhow!("{other}"),
    })?;
    anyhow::ensure!(
        contents.complete,
        "{} is larger than the {} MiB limit for @file arguments",
        abs.display(),
        MAX_READ_BYTES / (1024 * 1024)
    );
    Ok(contents.bytes)
}

/// The first message and attachments from `@file` arguments and piped stdin (pi spec §6.1).
pub struct Initial {
    pub messages: Vec<String>,
    pub images: Vec<ContentBlock>,
}

/// Read `@file` arguments: text files become `<file name="…">` blocks prefixed to the first
/// message, images are attached. A missing file is an error.
pub fn gather_messages(
    args: &AgentArgs,
    cwd: &Path,
    stdin: Option<String>,
) -> anyhow::Result<Initial> {
    let mut file_text = String::new();
    let mut images = Vec::new();
    let mut messages = Vec::new();
    for m in &args.messages {
        let Some(name) = m.strip_prefix('@') else {
            messages.push(m.clone());
            continue;
        };
        let path = cwd.join(name);
        let abs = path.canonicalize().unwrap_or(path.clone());
        let bytes = read_attachment(&path, &abs)?;
        if bytes.is_empty() {
            continue;
        }
        if let Some(mime) = filo_tools::image::sniff_image_mime(&bytes) {
            use base64::Engine;
            let prepared = filo_tools::image::prepare_image(bytes, mime);
            let data = base64::engine::general_purpose::STANDARD.encode(&prepared.bytes);
            let note = prepared.dimension_note().unwrap_or_default();
            images.push(ContentBlock::image(data, prepared.mime_type.clone()));
            file_text.push_str(&format!("<file name=\"{}\">{note}</file>\n", abs.display()));
        } else {
            let text = String::from_utf8_lossy(&bytes);
            file_text.push_str(&format!(
                "<file name=\"{}\">\n{}\n</file>\n",
                abs.display(),
                text
            ));
        }
    }
    if let Some(s) = stdin.filter(|s| !s.trim().is_empty()) {
        messages.insert(0, s);
    }
    if !file_text.is_empty() {
        match messages.first_mut() {
            Some(first) => *first = format!("{file_text}{first}"),
            None => messages.push(file_text),
        }
    }
    Ok(Initial { messages, images })
}
