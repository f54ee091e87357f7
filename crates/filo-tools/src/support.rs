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
