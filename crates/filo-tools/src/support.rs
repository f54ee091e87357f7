//! Small pieces every tool uses: cancellation around a future or a blocking job, and result
//! building.

use std::future::Future;

use filo_agent::ToolOutput;
use filo_ai::ContentBlock;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::error::Error;

/// Run `work`, failing with `Operation aborted` if `cancel` fires first (or already has).
pub async fn cancellable<T>(
    cancel: &CancellationToken,
    work: impl Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    if cancel.is_cancelled() {
        return Err(Error::Aborted);
    }
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(Error::Aborted),
        result = work => result,
    }
}

/// Run a blocking job on tokio's blocking pool, cancellable like [`cancellable`]. The job gets
/// the token too so long jobs (search) can stop early.
pub async fn blocking<T: Send + 'static>(
    cancel: &CancellationToken,
    job: impl FnOnce(CancellationToken) -> Result<T, Error> + Send + 'static,
) -> Result<T, Error> {
    let token = cancel.clone();
    cancellable(cancel, async move {
        tokio::task::spawn_blocking(move || job(token))
            .await
            .map_err(|err| Error::Internal(format!("tool worker failed: {err}")))?
    })
    .await
}

/// A text result with optional details; an empty details object is written as absent.
pub fn text_output(text: String, details: Map<String, Value>) -> ToolOutput {
    ToolOutput {
        content: vec![ContentBlock::text(text)],
        details: if details.is_empty() {
            None
        } else {
            Some(Value::Object(details))
        },
    }
}

/// Declares a tool that holds its [`ToolSettings`](crate::ToolSettings), with `new(cwd)` (default
/// settings) and `with_settings(settings)`.
macro_rules! settings_tool {
    ($(#[$meta:meta])* $name:ident, $what:literal) => {
        $(#[$meta])*
        #[derive(Debug, Clone)]
        pub struct $name {
            settings: std::sync::Arc<crate::settings::ToolSettings>,
        }

        impl $name {
            #[doc = concat!("A ", $what, " tool for `cwd` with default settings.")]
            pub fn new(cwd: impl Into<std::path::PathBuf>) -> Self {
                Self::with_settings(std::sync::Arc::new(crate::settings::ToolSettings::new(cwd)))
            }

            #[doc = concat!("A ", $what, " tool with explicit settings.")]
            pub fn with_settings(settings: std::sync::Arc<crate::settings::ToolSettings>) -> Self {
                $name { settings }
            }
        }
    };
}
pub(crate) use settings_tool;

/// The `[a. b]` line pi appends to a listing (grep, find, ls), and the details each notice
/// records.
#[derive(Debug, Default)]
pub(crate) struct Notices {
    texts: Vec<String>,
    details: Map<String, Value>,
}

impl Notices {
    /// A notice with its details entry.
    pub(crate) fn add(&mut self, text: String, key: &str, value: Value) {
        self.texts.push(text);
        self.details.insert(key.into(), value);
    }

    /// The byte-limit notice, when the output was truncated.
    pub(crate) fn truncation(&mut self, t: &crate::truncate::Truncation) {
        if t.truncated {
            let text = format!(
                "{} limit reached",
                crate::truncate::format_size(crate::truncate::DEFAULT_MAX_BYTES)
            );
            self.add(text, "truncation", t.to_json());
        }
    }

    /// The content with the notices line, and the details.
    pub(crate) fn finish(self, mut content: String) -> (String, Map<String, Value>) {
        if !self.texts.is_empty() {
            content.push_str(&format!("\n\n[{}]", self.texts.join(". ")));
        }
        (content, self.details)
    }
}
