//! Running the agent from the command line: flags, session setup, and the print, JSON and RPC
//! modes.

pub mod args;
mod list_models;
pub mod print;
pub mod rpc;
pub mod setup;
pub mod signals;

use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use filo_ai::Env;

pub use args::{AgentArgs, OutputMode};

/// A start-up refusal worded as pi 0.73.1 words it, printed as it is — without the `error: `
/// prefix filo puts before its own errors — so that a script reading pi's stderr reads filo's.
#[derive(Debug)]
pub struct PiWords(pub String);

impl std::fmt::Display for PiWords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PiWords {}

/// Run the agent as the flags say, in `cwd`. Returns the process exit code.
pub async fn run(args: AgentArgs, env: &Env, cwd: std::path::PathBuf) -> anyhow::Result<ExitCode> {
    let mut args = args;
    let mut paths = setup::Paths::resolve(env, cwd)?;
    if let Some(export) = &args.export {
        return export_html(&paths, export);
    }
    // What is read from pi's agent directory is said once: on stderr, or among the terminal
    // UI's warnings.
    let borrowed = paths.dirs.notice();
    if let Some(search) = &args.list_models {
        let source = paths.dirs.source(filo_core::AgentItem::Models);
        let (registry, warnings) = filo_core::loader::load_registry(source);
        let mut err = std::io::stderr().lock();
        if let Some(n) = &borrowed {
            writeln!(err, "Note: {n}")?;
        }
        for w in &warnings {
            writeln!(err, "Warning: {w}")?;
        }
        drop(err);
        let registry = Arc::new(registry);
        let auth = filo_core::AuthStorage::load_from(
            &paths.dirs.write_path(filo_core::AgentItem::Auth),
            &paths.dirs.read_path(filo_core::AgentItem::Auth),
        );
        let resolver =
            filo_core::loader::api_key_resolver(auth, registry.clone(), Arc::new(env.clone()));
        let with_key: Vec<filo_ai::Model> = registry
            .models()
            .iter()
            .filter(|m| resolver(&m.provider).is_some())
            .cloned()
            .collect();
        std::io::stdout()
            .lock()
            .write_all(list_models::render(&with_key, search).as_bytes())?;
        return Ok(ExitCode::SUCCESS);
    }
    let mode = args.output_mode();
    let stdin_text = if mode != Some(OutputMode::Rpc) && !std::io::stdin().is_terminal() {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s)?;
        Some(s)
    } else {
        None
    };
    let mode = match (mode, &stdin_text) {
        (None, Some(s)) if !s.trim().is_empty() => Some(OutputMode::Text),
        (m, _) => m,
    };
    let initial = setup::gather_messages(&args, &paths.cwd, stdin_text)?;
    // pi: `-r` shows the session picker before anything is built; `--session` comes first,
    // `--no-session` and `--fork` leave it out.
    if args.resume && args.session.is_none() && !args.no_session && args.fork.is_none() {
        if mode.is_some() {
            anyhow::bail!(
                "--resume picks a session in the terminal; with -p or --mode use --session <path|id> or --continue"
            );
        }
        match pick_session_at_start(&args, env, &paths).await? {
            Some(path) => args.session = Some(path.to_string_lossy().into_owned()),
            None => {
                writeln!(std::io::stdout(), "No session selected")?;
                return Ok(ExitCode::SUCCESS);
            }
        }
    }
    if let (Some(n), Some(_)) = (&borrowed, mode) {
        writeln!(std::io::stderr(), "Note: {n}")?;
    }
    let trust_notes = decide_project_trust(&args, env, &mut paths, mode.is_none()).await?;
    if mode.is_some() {
        let mut err = std::io::stderr().lock();
        for n in &trust_notes {
            writeln!(err, "Note: {n}")?;
        }
    }
    // After the trust decision: a project's own mcp.json is read only where it is trusted.
    let (mcp, mcp_lines) =
        crate::mcp::start_for_agent(&args, env, paths.dirs.project_trusted()).await;
    let mut built = setup::build(&args, env, &paths, mcp.as_ref())?;
    built.warnings.extend(mcp_lines);
    let mut err = std::io::stderr().lock();
    for w in &built.warnings {
        writeln!(err, "Warning: {w}")?;
    }
    let session = built.session;
    // Whatever way this function returns, the bash tool's full-output files go with the run.
    let _spills = RemoveOnExit(built.spills);
    let Some(mode) = mode else {
        drop(err);
        let mut warnings = built.warnings;
        warnings.extend(borrowed);
        warnings.extend(trust_notes);
        return run_interactive(session, warnings, built.memory, initial, &args, env, &paths).await;
    };
    for n in session.notices() {
        writeln!(err, "Note: {n}")?;
    }
    match mode {
        OutputMode::Json => {
            let out: Arc<Mutex<Box<dyn Write + Send>>> =
                Arc::new(Mutex::new(Box::new(std::io::stdout())));
            if session.model().is_none() {
                writeln!(err, "No models available.")?;
                return Ok(ExitCode::FAILURE);
            }
            let mut signals = signals::Signals::install()?;
            let stop = signals::Stop::default();
            let work = print::run_json(&session, initial, out, &stop);
            let code = signals::run_print(&session, &mut signals, &stop, work).await;
            report_unmirrored(built.memory.as_ref(), &mut err, code)
        }
        OutputMode::Text => {
            if session.model().is_none() {
                writeln!(
                    err,
                    "{}",
                    session
                        .model_fallback_message()
                        .unwrap_or("No models available.")
                )?;
                return Ok(ExitCode::FAILURE);
            }
            let mut signals = signals::Signals::install()?;
            let stop = signals::Stop::default();
            let mut out = std::io::stdout().lock();
            let work = print::run_text(&session, initial, &mut out, &mut err, &stop);
            let code = signals::run_print(&session, &mut signals, &stop, work).await;
            report_unmirrored(built.memory.as_ref(), &mut err, code)
        }
        OutputMode::Rpc => {
            if args.messages.iter().any(|m| m.starts_with('@')) {
                writeln!(err, "Error: @file arguments are not supported in RPC mode")?;
                return Ok(ExitCode::FAILURE);
            }
            drop(err);
            let mut signals = signals::Signals::install()?;
            signals::run_rpc(&session, &mut signals, rpc::run(session.clone())).await
        }
    }
}

/// Project trust for this run (pi 1.6, `filo_core::trust`): decided from the command line, the
/// saved decisions and `defaultProjectTrust`, or asked in the terminal. `paths.dirs` then allows
/// the project's protected resources or not. Returns what to tell the user (problems, and the
/// one-line notice of what was skipped).
async fn decide_project_trust(
    args: &AgentArgs,
    env: &Env,
    paths: &mut setup::Paths,
    interactive: bool,
) -> anyhow::Result<Vec<String>> {
    use filo_core::trust::Resolution;
    let (resolution, mut notes) = setup::decide_trust(args, paths, interactive);
    let trusted = match resolution {
        Resolution::Decided { trusted, .. } => trusted,
        Resolution::Ask => {
            let settings = filo_core::Settings::load_in(&paths.dirs, None);
            let (_, theme) = ui_themes(settings.values().theme(), args, env, paths, &mut notes);
            let (keys, _) = load_keybindings(paths);
            match filo_tui::ask_project_trust(&paths.cwd, theme, Arc::new(keys)).await? {
                Some(choice) => {
                    if !choice.updates.is_empty()
                        && let Err(e) = paths.trust_store().set_many(&choice.updates)
                    {
                        notes.push(format!(
                            "the trust decision was not saved: {}",
                            filo_core::error_chain(&e)
                        ));
                    }
                    choice.trusted
                }
                None => false,
            }
        }
    };
    paths.dirs = paths.dirs.clone().with_project_trust(trusted);
    if !trusted {
        notes.extend(filo_core::trust::skipped_notice(&paths.cwd, &paths.home));
    }
    Ok(notes)
}

/// Removes the bash tool's full-output files when the run is over (the session itself may be kept
/// alive by reference cycles, so its drop cannot be relied on).
struct RemoveOnExit(Arc<filo_tools::spill::SpillFiles>);

impl Drop for RemoveOnExit {
    fn drop(&mut self) {
        self.0.remove_all();
    }
}

/// Entries that did not reach the Playfilo memory are named on stderr and make print and JSON
/// mode fail: what was answered is in the session file, but not in the memory (the next resume
/// mirrors it).
fn report_unmirrored(
    memory: Option<&(Arc<filo_core::playfilo::Playfilo>, std::path::PathBuf)>,
    err: &mut dyn Write,
    code: anyhow::Result<ExitCode>,
) -> anyhow::Result<ExitCode> {
    let lost = memory.map(|(m, _)| m.unmirrored()).unwrap_or_default();
    if lost.is_empty() {
        return code;
    }
    writeln!(
        err,
        "Warning: {} entr{} of this session did not reach the Playfilo memory (they are in the session file; resuming the session mirrors them):",
        lost.len(),
        if lost.len() == 1 { "y" } else { "ies" }
    )?;
    for u in &lost {
        writeln!(err, "  {}: {}", u.entry_id, u.cause)?;
    }
    // A signal's own exit code (130, 143, 129) stays; a clean exit becomes a failure.
    code.map(|c| {
        if c == ExitCode::SUCCESS {
            ExitCode::FAILURE
        } else {
            c
        }
    })
}

/// The interactive terminal UI (no `-p`, no `--mode`).
async fn run_interactive(
    session: filo_core::AgentSession,
    warnings: Vec<String>,
    memory: Option<(Arc<filo_core::playfilo::Playfilo>, std::path::PathBuf)>,
    initial: setup::Initial,
    args: &AgentArgs,
    env: &Env,
    paths: &setup::Paths,
) -> anyhow::Result<ExitCode> {
    let mut warnings = warnings;
    let theme_name = session.settings().values().theme().to_string();
    let (themes, theme) = ui_themes(&theme_name, args, env, paths, &mut warnings);
    let life = memory.map(|(playfilo, db_path)| {
        let p1 = playfilo.clone();
        filo_tui::LifeSource {
            db_path,
            head_ref: Arc::new(move || p1.head_ref()),
            flush: Arc::new({
                let p = playfilo.clone();
                move || p.flush()
            }),
            travel: Arc::new(move |target: &str, note: &str| playfilo.travel(target, note)),
        }
    });
    let session_dir = setup::session_dir(args, env, paths);
    let (keybindings, w) = load_keybindings(paths);
    warnings.extend(w);
    let options = filo_tui::TuiOptions {
        theme,
        themes,
        cwd: paths.cwd.clone(),
        session_dir: Some(session_dir),
        sessions_root: Some(paths.agent_dir.join("sessions")),
        home: Some(paths.home.clone()),
        life,
        warnings,
        initial_messages: initial.messages,
        initial_images: initial.images,
        reload: Some(reloader(args, env, paths)),
        keybindings: Arc::new(keybindings),
        term: filo_tui::term::TermEnv::from_lookup(|k| env.get(k).map(str::to_string)),
        verbose: args.verbose,
        project_trust: Some(filo_tui::ProjectTrust {
            store: paths.trust_store(),
            trusted: paths.dirs.project_trusted(),
        }),
        sandbox: setup::sandbox_policy(args, paths, &session.settings())?
            .map(|p| p.mode.as_str().to_string()),
    };
    filo_tui::run(session, options).await?;
    Ok(ExitCode::SUCCESS)
}

/// Where themes come from: the `themes` settings lists and the discovered `.pi/themes/` and
/// `<agent dir>/themes/` (not with `--no-themes`), then the `--theme` paths.
fn theme_sources(args: &AgentArgs, paths: &setup::Paths) -> filo_tui::theme_catalog::ThemeSources {
    use filo_core::resource_paths::ResourceKind;
    let mut files: Vec<std::path::PathBuf> = Vec::new();
    if !args.no_themes {
        // pi 0.73.1: the `themes` settings lists and the discovered `themes/` directories
        // (project first), filtered by the lists' patterns (resource-loader.js `reload`).
        let settings = filo_core::Settings::load_in(&paths.dirs, Some(&paths.cwd));
        files.extend(
            filo_core::loader::resource_files(
                &paths.dirs,
                &settings,
                &paths.home,
                &paths.cwd,
                ResourceKind::Themes,
            )
            .into_iter()
            .map(|r| r.path),
        );
    }
    // `--theme` files come last: a theme of the same name found above wins, as in pi.
    files.extend(args.theme.iter().map(|p| paths.cwd.join(p)));
    filo_tui::theme_catalog::ThemeSources {
        dirs: Vec::new(),
        paths: files,
        no_themes: args.no_themes,
    }
}

/// The themes of this run and the one the `theme` setting names (dark, with a warning, when it
/// names none of them).
fn ui_themes(
    name: &str,
    args: &AgentArgs,
    env: &Env,
    paths: &setup::Paths,
    warnings: &mut Vec<String>,
) -> (filo_tui::theme_catalog::ThemeCatalog, filo_tui::Theme) {
    use filo_tui::{ColorDepth, Theme};
    let depth = ColorDepth::detect(env.get("NO_COLOR"), env.get("COLORTERM"));
    let (themes, w) =
        filo_tui::theme_catalog::ThemeCatalog::discover(&theme_sources(args, paths), depth);
    warnings.extend(w);
    let theme = themes.get(name).unwrap_or_else(|e| {
        warnings.push(e.to_string());
        Theme::dark(depth)
    });
    (themes, theme)
}

/// `keybindings.json` from the agent directory (pi's when filo's has none).
fn load_keybindings(paths: &setup::Paths) -> (filo_tui::keybindings::Keybindings, Vec<String>) {
    filo_tui::keybindings::Keybindings::load(
        &paths.dirs.read_path(filo_core::AgentItem::Keybindings),
    )
}

/// `/reload`: resources as the flags say, settings and themes, read again.
fn reloader(args: &AgentArgs, env: &Env, paths: &setup::Paths) -> filo_tui::Reloader {
    let (args, env, paths) = (args.clone(), env.clone(), paths.clone());
    Arc::new(move || {
        let options = setup::resource_options(&args);
        let (resources, mut warnings) =
            filo_core::loader::load_resources_in(&paths.dirs, &paths.home, &paths.cwd, &options);
        let settings = filo_core::Settings::load_in(&paths.dirs, Some(&paths.cwd));
        warnings.extend(settings.errors.iter().cloned());
        let depth = filo_tui::ColorDepth::detect(env.get("NO_COLOR"), env.get("COLORTERM"));
        let (themes, w) =
            filo_tui::theme_catalog::ThemeCatalog::discover(&theme_sources(&args, &paths), depth);
        warnings.extend(w);
        let (keybindings, w) = load_keybindings(&paths);
        warnings.extend(w);
        filo_tui::Reloaded {
            resources,
            settings,
            themes,
            keybindings,
            warnings,
        }
    })
}

/// `-r`: the session picker over this directory's sessions (tab: all projects). `None` when the
/// user cancels.
async fn pick_session_at_start(
    args: &AgentArgs,
    env: &Env,
    paths: &setup::Paths,
) -> anyhow::Result<Option<std::path::PathBuf>> {
    let settings = filo_core::Settings::load_in(&paths.dirs, Some(&paths.cwd));
    let mut warnings = Vec::new();
    let (_, theme) = ui_themes(settings.values().theme(), args, env, paths, &mut warnings);
    let source = filo_tui::session_picker::PickerSource {
        dir: setup::session_dir(args, env, paths),
        all_root: paths.agent_dir.join("sessions"),
        current_file: None,
        cwd: paths.cwd.to_string_lossy().into_owned(),
        home: Some(paths.home.clone()),
        can_rename: false,
    };
    let (keys, _) = load_keybindings(paths);
    Ok(filo_tui::pick_session(source, theme, Arc::new(keys)).await?)
}

/// `--export <session.jsonl> [out.html]`: the session file is only read, never rewritten.
fn export_html(paths: &setup::Paths, export: &[String]) -> anyhow::Result<ExitCode> {
    let input = paths.cwd.join(&export[0]);
    let manager = filo_session::SessionManager::open_read_only(&input)?;
    let html = filo_core::agent_session::export::render_session_html(&manager)?;
    let stem = input
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let out = match export.get(1) {
        Some(p) => paths.cwd.join(p),
        None => paths.cwd.join(format!("filo-session-{stem}.html")),
    };
    filo_core::agent_session::export::write_html(&out, &html)?;
    writeln!(std::io::stdout(), "Exported to: {}", out.display())?;
    Ok(ExitCode::SUCCESS)
}
