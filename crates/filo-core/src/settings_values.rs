//! The typed settings ([`SettingsValues`]): every key of pi 0.73.1's `Settings` type
//! (`core/settings-manager`), with the defaults in one place. Keys filo does not know are kept
//! in `extra` maps and never dropped from the files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use filo_agent::QueueMode;
use filo_ai::ThinkingLevel;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::compaction::CompactionSettings;

/// pi's defaults for the settings filo reads (the only place they are written down).
pub mod defaults {
    pub const THINKING_LEVEL: filo_ai::ThinkingLevel = filo_ai::ThinkingLevel::Medium;
    pub const THEME: &str = "dark";
    pub const BRANCH_SUMMARY_RESERVE_TOKENS: u64 = 16_384;
    pub const RETRY_ENABLED: bool = true;
    pub const RETRY_MAX_RETRIES: u32 = 3;
    pub const RETRY_BASE_DELAY_MS: u64 = 2_000;
    pub const PROVIDER_MAX_RETRY_DELAY_MS: u64 = 60_000;
    pub const BLOCK_IMAGES: bool = false;
    pub const AUTO_RESIZE_IMAGES: bool = true;
    pub const ENABLE_SKILL_COMMANDS: bool = true;
    pub const DOUBLE_ESCAPE_ACTION: super::DoubleEscapeAction = super::DoubleEscapeAction::Tree;
    pub const TREE_FILTER_MODE: super::TreeFilterMode = super::TreeFilterMode::Default;
    pub const IMAGE_WIDTH_CELLS: u32 = 60;
    pub const EDITOR_PADDING_X: u32 = 0;
    pub const AUTOCOMPLETE_MAX_VISIBLE: u32 = 5;
    pub const CODE_BLOCK_INDENT: &str = "  ";
}

/// `steeringMode` / `followUpMode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum QueueModeSetting {
    All,
    OneAtATime,
}

impl From<QueueModeSetting> for QueueMode {
    fn from(m: QueueModeSetting) -> Self {
        match m {
            QueueModeSetting::All => QueueMode::All,
            QueueModeSetting::OneAtATime => QueueMode::OneAtATime,
        }
    }
}

impl From<QueueMode> for QueueModeSetting {
    fn from(m: QueueMode) -> Self {
        match m {
            QueueMode::All => QueueModeSetting::All,
            QueueMode::OneAtATime => QueueModeSetting::OneAtATime,
        }
    }
}

/// `compaction.*`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CompactionValues {
    pub enabled: Option<bool>,
    pub reserve_tokens: Option<u64>,
    pub keep_recent_tokens: Option<u64>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `branchSummary.*`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BranchSummaryValues {
    pub reserve_tokens: Option<u64>,
    pub skip_prompt: Option<bool>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `retry.provider.*`: what the HTTP client does on its own (pi 0.73 `ProviderRetrySettings`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ProviderRetryValues {
    /// pi's request timeout, passed to the provider client.
    pub timeout_ms: Option<u64>,
    /// filo: how long a response may go without a byte before it counts as stalled.
    pub idle_timeout_ms: Option<u64>,
    pub max_retries: Option<u32>,
    /// The longest `retry-after` honoured before failing (pi 0.73; was `retry.maxDelayMs`).
    pub max_retry_delay_ms: Option<u64>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `retry.*`: the session's automatic retry of failed turns.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RetryValues {
    pub enabled: Option<bool>,
    pub max_retries: Option<u32>,
    pub base_delay_ms: Option<u64>,
    pub provider: ProviderRetryValues,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `images.*`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ImageValues {
    pub auto_resize: Option<bool>,
    pub block_images: Option<bool>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `transport`: how streams are carried (filo speaks SSE only; the value is kept).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TransportSetting {
    Sse,
    Websocket,
    WebsocketCached,
    Auto,
}

/// `doubleEscapeAction`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DoubleEscapeAction {
    Fork,
    Tree,
    None,
}

/// `treeFilterMode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TreeFilterMode {
    Default,
    NoTools,
    UserOnly,
    LabeledOnly,
    All,
}

/// One entry of `packages`: a source, or a source with the resources to take from it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PackageSource {
    Source(String),
    Filtered(PackageFilter),
}

/// `packages[]` in object form.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageFilter {
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skills: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub themes: Option<Vec<String>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `terminal.*`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TerminalValues {
    pub show_images: Option<bool>,
    pub image_width_cells: Option<f64>,
    pub clear_on_shrink: Option<bool>,
    pub show_terminal_progress: Option<bool>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `thinkingBudgets.*`: tokens per level for budget-based thinking.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ThinkingBudgetValues {
    pub minimal: Option<u64>,
    pub low: Option<u64>,
    pub medium: Option<u64>,
    pub high: Option<u64>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `markdown.*`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MarkdownValues {
    pub code_block_indent: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `warnings.*`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WarningValues {
    pub anthropic_extra_usage: Option<bool>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The effective settings, typed. `None` means "not set": the accessors give pi's default.
/// Keys filo does not know are kept in `extra` (and are never dropped from the files).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SettingsValues {
    pub default_provider: Option<String>,
    pub default_model: Option<String>,
    pub default_thinking_level: Option<ThinkingLevel>,
    pub steering_mode: Option<QueueModeSetting>,
    pub follow_up_mode: Option<QueueModeSetting>,
    pub theme: Option<String>,
    pub compaction: CompactionValues,
    pub branch_summary: BranchSummaryValues,
    pub retry: RetryValues,
    pub images: ImageValues,
    pub hide_thinking_block: Option<bool>,
    pub shell_path: Option<PathBuf>,
    pub shell_command_prefix: Option<String>,
    pub last_changelog_version: Option<String>,
    pub transport: Option<TransportSetting>,
    pub quiet_startup: Option<bool>,
    pub npm_command: Option<Vec<String>>,
    pub collapse_changelog: Option<bool>,
    pub enable_install_telemetry: Option<bool>,
    pub packages: Option<Vec<PackageSource>>,
    pub extensions: Option<Vec<String>>,
    pub skills: Option<Vec<String>>,
    pub prompts: Option<Vec<String>>,
    pub themes: Option<Vec<String>>,
    pub enable_skill_commands: Option<bool>,
    pub terminal: TerminalValues,
    pub enabled_models: Option<Vec<String>>,
    pub double_escape_action: Option<DoubleEscapeAction>,
    pub tree_filter_mode: Option<TreeFilterMode>,
    pub thinking_budgets: ThinkingBudgetValues,
    pub editor_padding_x: Option<f64>,
    pub autocomplete_max_visible: Option<f64>,
    pub show_hardware_cursor: Option<bool>,
    pub markdown: MarkdownValues,
    pub warnings: WarningValues,
    /// Where sessions are stored (`~` and `~/…` expand to the home directory).
    pub session_dir: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl SettingsValues {
    /// One warning per key of pi's settings that is set (non-empty) but that filo does not act
    /// on, so that a setting shared with pi is never ignored without a word. (`skills`,
    /// `prompts` and `themes` are applied: see [`crate::loader::resource_files`].)
    pub fn unapplied(&self) -> Vec<String> {
        let set = |list: &Option<Vec<String>>| list.as_ref().is_some_and(|l| !l.is_empty());
        let mut out = Vec::new();
        if self.packages.as_ref().is_some_and(|l| !l.is_empty()) {
            out.push(
                "settings: `packages` is pi's package manager, which filo does not have; ignored"
                    .to_owned(),
            );
        }
        if set(&self.extensions) {
            out.push(
                "settings: `extensions` names pi's TypeScript extensions, which filo does not load; ignored"
                    .to_owned(),
            );
        }
        out
    }

    pub fn default_thinking_level(&self) -> ThinkingLevel {
        self.default_thinking_level
            .unwrap_or(defaults::THINKING_LEVEL)
    }

    pub fn steering_mode(&self) -> QueueMode {
        self.steering_mode
            .map_or(QueueMode::OneAtATime, QueueMode::from)
    }

    pub fn follow_up_mode(&self) -> QueueMode {
        self.follow_up_mode
            .map_or(QueueMode::OneAtATime, QueueMode::from)
    }

    pub fn theme(&self) -> &str {
        self.theme.as_deref().unwrap_or(defaults::THEME)
    }

    /// `compaction.*` over [`CompactionSettings::default`].
    pub fn compaction(&self) -> CompactionSettings {
        let d = CompactionSettings::default();
        let c = &self.compaction;
        CompactionSettings {
            enabled: c.enabled.unwrap_or(d.enabled),
            reserve_tokens: c.reserve_tokens.unwrap_or(d.reserve_tokens),
            keep_recent_tokens: c.keep_recent_tokens.unwrap_or(d.keep_recent_tokens),
        }
    }

    pub fn branch_summary_reserve_tokens(&self) -> u64 {
        self.branch_summary
            .reserve_tokens
            .unwrap_or(defaults::BRANCH_SUMMARY_RESERVE_TOKENS)
    }

    pub fn retry_enabled(&self) -> bool {
        self.retry.enabled.unwrap_or(defaults::RETRY_ENABLED)
    }

    pub fn retry_max_retries(&self) -> u32 {
        self.retry
            .max_retries
            .unwrap_or(defaults::RETRY_MAX_RETRIES)
    }

    pub fn retry_base_delay_ms(&self) -> u64 {
        self.retry
            .base_delay_ms
            .unwrap_or(defaults::RETRY_BASE_DELAY_MS)
    }

    /// `retry.provider.maxRetryDelayMs` (60 s).
    pub fn provider_max_retry_delay_ms(&self) -> u64 {
        self.retry
            .provider
            .max_retry_delay_ms
            .unwrap_or(defaults::PROVIDER_MAX_RETRY_DELAY_MS)
    }

    /// `retry.provider.idleTimeoutMs`; `None` leaves the client's own default.
    pub fn provider_idle_timeout_ms(&self) -> Option<u64> {
        self.retry.provider.idle_timeout_ms
    }

    /// `retry.provider.timeoutMs` (pi's request timeout); `None` leaves the client's default.
    pub fn provider_timeout_ms(&self) -> Option<u64> {
        self.retry.provider.timeout_ms
    }

    /// `retry.provider.maxRetries`; `None` leaves the client's default.
    pub fn provider_max_retries(&self) -> Option<u32> {
        self.retry.provider.max_retries
    }

    pub fn block_images(&self) -> bool {
        self.images.block_images.unwrap_or(defaults::BLOCK_IMAGES)
    }

    pub fn auto_resize_images(&self) -> bool {
        self.images
            .auto_resize
            .unwrap_or(defaults::AUTO_RESIZE_IMAGES)
    }

    pub fn enable_skill_commands(&self) -> bool {
        self.enable_skill_commands
            .unwrap_or(defaults::ENABLE_SKILL_COMMANDS)
    }

    pub fn double_escape_action(&self) -> DoubleEscapeAction {
        self.double_escape_action
            .unwrap_or(defaults::DOUBLE_ESCAPE_ACTION)
    }

    pub fn tree_filter_mode(&self) -> TreeFilterMode {
        self.tree_filter_mode.unwrap_or(defaults::TREE_FILTER_MODE)
    }

    /// `terminal.imageWidthCells`: at least 1, whole cells (pi: floor; 60 when unset).
    pub fn image_width_cells(&self) -> u32 {
        match self.terminal.image_width_cells {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            Some(w) if w.is_finite() => w.floor().clamp(1.0, f64::from(u32::MAX)) as u32,
            _ => defaults::IMAGE_WIDTH_CELLS,
        }
    }

    /// `editorPaddingX`, 0 to 3 (pi clamps when it writes the value).
    pub fn editor_padding_x(&self) -> u32 {
        match self.editor_padding_x {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            Some(p) if p.is_finite() => p.floor().clamp(0.0, 3.0) as u32,
            _ => defaults::EDITOR_PADDING_X,
        }
    }

    /// `autocompleteMaxVisible`, 3 to 20.
    pub fn autocomplete_max_visible(&self) -> u32 {
        match self.autocomplete_max_visible {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            Some(n) if n.is_finite() => n.floor().clamp(3.0, 20.0) as u32,
            _ => defaults::AUTOCOMPLETE_MAX_VISIBLE,
        }
    }

    pub fn code_block_indent(&self) -> &str {
        self.markdown
            .code_block_indent
            .as_deref()
            .unwrap_or(defaults::CODE_BLOCK_INDENT)
    }

    /// `thinkingBudgets` as the model client takes them; `None` when none is set.
    pub fn thinking_budgets(&self) -> Option<BTreeMap<ThinkingLevel, u64>> {
        let b = &self.thinking_budgets;
        let levels = [
            (ThinkingLevel::Minimal, b.minimal),
            (ThinkingLevel::Low, b.low),
            (ThinkingLevel::Medium, b.medium),
            (ThinkingLevel::High, b.high),
        ];
        let map: BTreeMap<_, _> = levels
            .into_iter()
            .filter_map(|(l, v)| v.map(|v| (l, v)))
            .collect();
        (!map.is_empty()).then_some(map)
    }

    /// `sessionDir` with `~` expanded against `home` (pi's `getSessionDir`); `None` when unset
    /// or empty.
    pub fn session_dir(&self, home: &Path) -> Option<PathBuf> {
        expand_tilde(self.session_dir.as_deref()?, home)
    }

    /// `shellCommandPrefix` and a newline before `command`, as pi runs it.
    pub fn prefixed_command(&self, command: &str) -> String {
        match &self.shell_command_prefix {
            Some(prefix) => format!("{prefix}\n{command}"),
            None => command.to_string(),
        }
    }
}

/// `~` → `home`, `~/x` → `home/x`, anything else as given; `None` for an empty value.
pub fn expand_tilde(value: &str, home: &Path) -> Option<PathBuf> {
    match value {
        "" => None,
        "~" => Some(home.to_path_buf()),
        v => Some(match v.strip_prefix("~/") {
            Some(rest) => home.join(rest),
            None => PathBuf::from(v),
        }),
    }
}
