//! Print (text) and JSON modes (pi spec §6.2, §6.3): send the prompts one after another, then
//! print the last answer, or stream every event as a JSON line.

use std::io::Write;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use filo_ai::{ContentBlock, StopReason};
use filo_core::{AgentSession, PromptOptions, SessionEvent};

use super::setup::Initial;
use super::signals::Stop;

/// Send every prompt; returns one line per prompt whose answer ended in an error or an abort
/// (`prompt <n> of <total> failed: <error>`), so a failure before the last prompt is not lost.
async fn send_all(
    session: &AgentSession,
    initial: Initial,
    stop: &Stop,
) -> anyhow::Result<Vec<String>> {
    let mut images = Some(initial.images);
    let total = initial.messages.len();
    let mut failed = Vec::new();
    for (n, m) in initial.messages.into_iter().enumerate() {
        if stop.is_set() {
            break;
        }
        let opts = PromptOptions {
            images: images.take().unwrap_or_default(),
            ..PromptOptions::default()
        };
        session.prompt(&m, opts).await?;
        let last = session.last_message();
        if let Some(a) = last
            .as_ref()
            .and_then(filo_agent::AgentMessage::as_assistant)
            && matches!(a.stop_reason, StopReason::Error | StopReason::Aborted)
        {
            let text = a.error_message.as_deref().unwrap_or("Request failed");
            failed.push(format!("prompt {} of {total} failed: {text}", n + 1));
        }
    }
    Ok(failed)
}

/// Text mode: prints each text block of the final assistant message on its own line; an error or
/// abort goes to stderr with exit code 1, and so does an earlier prompt's failure or a turn the
/// session file could not keep.
pub async fn run_text(
    session: &AgentSession,
    initial: Initial,
    out: &mut dyn Write,
    err: &mut dyn Write,
    stop: &Stop,
) -> anyhow::Result<ExitCode> {
    let mut failed = send_all(session, initial, stop).await?;
    // The last prompt's failure is reported below as before; earlier ones are listed here.
    let last_failed = session
        .last_message()
        .as_ref()
        .and_then(filo_agent::AgentMessage::as_assistant)
        .is_some_and(|a| matches!(a.stop_reason, StopReason::Error | StopReason::Aborted));
    if last_failed {
        failed.pop();
    }
    for line in &failed {
        writeln!(err, "filo: {line}")?;
    }
    let saved = check_saved(session, err)?;
    let code = if failed.is_empty() {
        saved
    } else {
        ExitCode::FAILURE
    };
    let last = session.last_message();
    let Some(assistant) = last
        .as_ref()
        .and_then(filo_agent::AgentMessage::as_assistant)
    else {
        return Ok(code);
    };
    if matches!(
        assistant.stop_reason,
        StopReason::Error | StopReason::Aborted
    ) {
        let reason = match assistant.stop_reason {
            StopReason::Aborted => "aborted",
            _ => "error",
        };
        let text = assistant
            .error_message
            .clone()
            .unwrap_or_else(|| format!("Request {reason}"));
        writeln!(err, "{text}")?;
        return Ok(ExitCode::FAILURE);
    }
    for block in &assistant.content {
        if let ContentBlock::Text(t) = block {
            writeln!(out, "{}", t.text)?;
        }
    }
    out.flush()?;
    Ok(code)
}

/// JSON mode: the session header, then every session event as one line; exit code 1 when any
/// prompt's answer ended in an error or an abort.
pub async fn run_json(
    session: &AgentSession,
    initial: Initial,
    out: Arc<Mutex<Box<dyn Write + Send>>>,
    stop: &Stop,
) -> anyhow::Result<ExitCode> {
    {
        let header = session.session_manager().header().to_value();
        let mut o = out
            .lock()
            .map_err(|_| anyhow::anyhow!("stdout lock poisoned"))?;
        writeln!(o, "{header}")?;
    }
    let sink = out.clone();
    let id = session.subscribe(Arc::new(move |ev: &SessionEvent| {
        if let (Ok(line), Ok(mut o)) = (serde_json::to_string(ev), sink.lock()) {
            let _ = writeln!(o, "{line}");
        }
    }));
    let result = send_all(session, initial, stop).await;
    let saved = check_saved(session, &mut std::io::stderr())?;
    session.unsubscribe(id);
    if let Ok(mut o) = out.lock() {
        o.flush()?;
    }
    // The failures are in the events already (`message_end` with `stopReason: error`).
    let failed = result?;
    Ok(if failed.is_empty() {
        saved
    } else {
        ExitCode::FAILURE
    })
}

/// An answer whose turn is not in the session file fails the run: the message names the file
/// and the cause on stderr.
fn check_saved(session: &AgentSession, err: &mut dyn Write) -> anyhow::Result<ExitCode> {
    match session.ensure_saved() {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(unsaved) => {
            writeln!(err, "Error: {unsaved}")?;
            Ok(ExitCode::FAILURE)
        }
    }
}
