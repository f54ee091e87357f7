//! Assembling an [`AgentSession`] (embed design G13), for the `filo` binary and for programs that
//! embed filo alike: tools chosen by name, the session file, the settings, the credential, the
//! extensions (the Playfilo memory among them) — every value passed in, nothing read from the
//! process. The CLI's flag parsing and the embedder's run parameters both end here.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use filo_agent::AgentTool;
use filo_ai::{Env, Model, ModelClient, ThinkingLevel};
use filo_session::SessionManager;
use filo_tools::ToolSettings;
use filo_tools::spill::SpillFiles;

use crate::agent_session::{AgentSession, AgentSessionOptions, ApiKeyResolver};
use crate::model_list::ModelList;
use crate::playfilo::PlayfiloConfig;
use crate::{CoreError, Extension, Resources, Settings};

/// pi's default tools when no `--tools` list is given.
pub const DEFAULT_TOOL_NAMES: [&str; 4] = ["read", "bash", "edit", "write"];

/// The built-in tools named in `names`, in that order, sharing `settings`; bash writes its
/// full-output files into `spills`. Returns the tools and the names no built-in tool has (an
/// extension may still provide them).
pub fn tools_by_name(
    names: &[String],
    settings: &Arc<ToolSettings>,
    spills: &Arc<SpillFiles>,
) -> (Vec<Arc<dyn AgentTool>>, Vec<String>) {
    let mut tools: Vec<Arc<dyn AgentTool>> = Vec::new();
    let mut missing = Vec::new();
    for name in names {
        let tool: Option<Arc<dyn AgentTool>> = if name == "bash" {
            Some(Arc::new(filo_tools::BashTool::with_spill_files(
                settings.clone(),
                spills.clone(),
            )))
        } else {
            filo_tools::tool_by_name_with(name, settings)
        };
        match tool {
            Some(t) => tools.push(t),
            None => missing.push(name.clone()),
        }
    }
    (tools, missing)
}

/// The memory's configuration under `home` with the database moved to `db` (relative to `cwd`)
/// and `head` as this session's head ref; `PLAYFILO_BUSY_TIMEOUT_MS` and
/// `PLAYFILO_LOCK_PATIENCE_MS` from `env`. A value that is not a number of milliseconds is named
/// in the warnings and the default kept.
pub fn memory_config(
    home: &Path,
    cwd: &Path,
    db: Option<&Path>,
    head: Option<String>,
    env: &Env,
) -> (PlayfiloConfig, Vec<String>) {
    let mut warnings = Vec::new();
    let mut config = PlayfiloConfig::under_home(home);
    let mut ms = |name: &str| {
        let v = env.get(name)?;
        match v.trim().parse::<u64>() {
            Ok(n) => Some(Duration::from_millis(n)),
            Err(_) => {
                warnings.push(format!(
                    "{name}=\"{v}\" is not a number of milliseconds; using the default"
                ));
                None
            }
        }
    };
    if let Some(d) = ms("PLAYFILO_BUSY_TIMEOUT_MS") {
        config.busy_timeout = d;
    }
    if let Some(d) = ms("PLAYFILO_LOCK_PATIENCE_MS") {
        config.lock_patience = d;
    }
    if let Some(p) = db {
        // A PostgreSQL connection string is a location, not a path below the working directory.
        config.db_path = if p.to_str().is_some_and(filo_dag::is_postgres_url) {
            p.to_path_buf()
        } else {
            cwd.join(p)
        };
    }
    config.head = head;
    (config, warnings)
}

/// Builds one [`AgentSession`] from explicit values.
pub struct SessionBuilder {
    cwd: PathBuf,
    client: Arc<dyn ModelClient>,
    models: ModelList,
    model: Option<Model>,
    thinking: Option<ThinkingLevel>,
    tools: Vec<Arc<dyn AgentTool>>,
    session: SessionManager,
    settings: Settings,
    api_key: ApiKeyResolver,
    resources: Resources,
    extensions: Vec<Arc<dyn Extension>>,
    date: String,
}

impl SessionBuilder {
    /// A session in `cwd` talking through `client`, with an in-memory session file, default
    /// in-memory settings, no credential, no tools and no extensions until told otherwise.
    pub fn new(
        cwd: impl Into<PathBuf>,
        client: Arc<dyn ModelClient>,
        date: impl Into<String>,
    ) -> Self {
        let cwd = cwd.into();
        let session = SessionManager::in_memory(&cwd.to_string_lossy());
        Self {
            cwd,
            client,
            models: ModelList::default(),
            model: None,
            thinking: None,
            tools: Vec::new(),
            session,
            settings: Settings::in_memory(serde_json::json!({})),
            api_key: Arc::new(|_| None),
            resources: Resources::default(),
            extensions: Vec::new(),
            date: date.into(),
        }
    }

    /// The models the session may switch to, and the one it starts with (added to the list when
    /// missing).
    pub fn models(self, models: Vec<Model>, model: Option<Model>) -> Self {
        self.model_list(ModelList::from(models), model)
    }

    /// [`SessionBuilder::models`] from a list that may be made on first use
    /// ([`ModelList::from_registry`]).
    pub fn model_list(mut self, models: ModelList, model: Option<Model>) -> Self {
        self.models = models.with(model.clone());
        self.model = model;
        self
    }

    pub fn thinking(mut self, level: Option<ThinkingLevel>) -> Self {
        self.thinking = level;
        self
    }

    pub fn tools(mut self, tools: Vec<Arc<dyn AgentTool>>) -> Self {
        self.tools = tools;
        self
    }

    pub fn session(mut self, session: SessionManager) -> Self {
        self.session = session;
        self
    }

    pub fn settings(mut self, settings: Settings) -> Self {
        self.settings = settings;
        self
    }

    pub fn api_key(mut self, resolver: ApiKeyResolver) -> Self {
        self.api_key = resolver;
        self
    }

    pub fn resources(mut self, resources: Resources) -> Self {
        self.resources = resources;
        self
    }

    pub fn extension(mut self, extension: Arc<dyn Extension>) -> Self {
        self.extensions.push(extension);
        self
    }

    pub fn build(self) -> Result<AgentSession, CoreError> {
        AgentSession::create(AgentSessionOptions {
            cwd: self.cwd,
            client: self.client,
            models: self.models,
            model: self.model,
            thinking_level: self.thinking,
            tools: self.tools,
            session: self.session,
            settings: self.settings,
            api_key: self.api_key,
            resources: self.resources,
            extensions: self.extensions,
            date: self.date,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_are_chosen_by_name_and_unknown_names_returned() {
        let dir = tempfile::tempdir().unwrap();
        let settings = Arc::new(ToolSettings::from_env(
            dir.path(),
            None,
            dir.path().to_path_buf(),
        ));
        let spills = Arc::new(SpillFiles::default());
        let names: Vec<String> = ["grep", "bash", "recall", "read"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let (tools, missing) = tools_by_name(&names, &settings, &spills);
        let got: Vec<&str> = tools.iter().map(|t| t.name()).collect();
        assert_eq!(got, ["grep", "bash", "read"]);
        assert_eq!(missing, ["recall"]);
    }

    #[test]
    fn the_memory_config_takes_explicit_values_and_names_bad_ones() {
        let env = Env::from_vars([
            ("PLAYFILO_BUSY_TIMEOUT_MS", "250"),
            ("PLAYFILO_LOCK_PATIENCE_MS", "soon"),
        ]);
        let (c, warnings) = memory_config(
            Path::new("/h"),
            Path::new("/w"),
            Some(Path::new("m.db")),
            Some("H".into()),
            &env,
        );
        assert_eq!(c.db_path, Path::new("/w/m.db"));
        assert_eq!(c.head.as_deref(), Some("H"));
        assert_eq!(c.busy_timeout, Duration::from_millis(250));
        assert_eq!(c.lock_patience, Duration::from_secs(300));
        assert_eq!(
            warnings,
            [
                "PLAYFILO_LOCK_PATIENCE_MS=\"soon\" is not a number of milliseconds; using the default"
            ]
        );
        let (c, warnings) = memory_config(
            Path::new("/h"),
            Path::new("/w"),
            None,
            None,
            &Env::default(),
        );
        assert_eq!(c.db_path, Path::new("/h/.playfilo/playfilo.db"));
        assert!(warnings.is_empty());
    }
}
