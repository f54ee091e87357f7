//! The follow-up queue across hosts (`filo_gateway.queue`).
//!
//! A message for a key whose lane another host holds is written here (state `queued`) by the
//! host that received it, which then waits for its row. The host holding the lane claims the
//! key's rows after its own run (state `running`), runs them — collect-mode messages merged into
//! one run, as on one host — and marks them `done` with the outcome in the same transaction as
//! the transcript lines of that run. The receiving host reads the outcome, answers its caller and
//! deletes the row.
//!
//! A row stays correct when a host dies: a claimer's commit never happened, so its rows are not
//! `done`, and its lane is free; the receiving host then takes the lane and runs its own message.
//! A receiving host that dies leaves a `queued` row that the next holder of the lane still runs
//! (as a message queued on one host runs even when its caller went away); `done` rows nobody
//! collected are removed a day later, when a host starts.

use std::sync::Arc;
use std::time::Duration;

use filo_embed::queue::QueueMode;
use serde_json::{Value, json};

use super::{SharedStore, pg};
use crate::core::Submit;
use crate::outcome::{RunOutcome, RunStatus};
use filo_embed::run::payloads::ReplyPayload;

/// `done` rows whose waiter never came back are removed after this long.
const DONE_KEPT_MS: i64 = 24 * 60 * 60 * 1000;

/// A message another host queued, claimed by the lane's holder.
pub struct Claimed {
    pub id: i64,
    pub mode: QueueMode,
    pub submit: Submit,
}

/// Where a queued row is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowState {
    /// Waiting for the lane's holder, or being run by it.
    Waiting,
    /// Answered: the outcome as [`encode_outcome`] wrote it.
    Done(String),
    /// Not there (withdrawn).
    Gone,
}

fn mode_name(mode: QueueMode) -> &'static str {
    match mode {
        QueueMode::Interrupt => "interrupt",
        QueueMode::Steer => "steer",
        QueueMode::Followup => "followup",
        QueueMode::Collect => "collect",
    }
}

/// Removes the `done` rows nobody collected for a day (their waiting host died); run when a
/// host connects.
pub(super) fn sweep(client: &mut filo_dag::postgres::Client) -> Result<(), String> {
    let before = crate::run::now_ms() - DONE_KEPT_MS;
    client
        .execute(
            "DELETE FROM filo_gateway.queue WHERE state = 'done' AND done_ms < $1",
            &[&before],
        )
        .map_err(pg)?;
    Ok(())
}

impl SharedStore {
    /// Queues `submit` for the host holding its key's lane; the row's id.
    pub async fn enqueue(
        self: &Arc<Self>,
        submit: &Submit,
        mode: QueueMode,
    ) -> Result<i64, String> {
        let request = encode_request(submit);
        let (agent, key, run_id) = (
            submit.agent_id.clone(),
            submit.key.clone(),
            submit.run_id.clone(),
        );
        let host = self.host.clone();
        let now = crate::run::now_ms();
        self.with(move |c| {
            let row = c
                .query_one(
                    "INSERT INTO filo_gateway.queue \
                     (agent, key, run_id, mode, request, host, state, enqueued_ms) \
                     VALUES ($1, $2, $3, $4, $5, $6, 'queued', $7) RETURNING id",
                    &[
                        &agent,
                        &key,
                        &run_id,
                        &mode_name(mode),
                        &request,
                        &host,
                        &now,
                    ],
                )
                .map_err(pg)?;
            Ok(row.get(0))
        })
        .await
    }

    /// Where row `id` is.
    pub async fn row_state(self: &Arc<Self>, id: i64) -> Result<RowState, String> {
        self.with(move |c| {
            let row = c
                .query_opt(
                    "SELECT state, outcome FROM filo_gateway.queue WHERE id = $1",
                    &[&id],
                )
                .map_err(pg)?;
            Ok(match row {
                None => RowState::Gone,
                Some(r) => match (
                    r.get::<_, String>(0).as_str(),
                    r.get::<_, Option<String>>(1),
                ) {
                    ("done", Some(outcome)) => RowState::Done(outcome),
                    _ => RowState::Waiting,
                },
            })
        })
        .await
    }

    /// Removes row `id` unless it is answered (`running_too`: also when a host claimed it);
    /// whether it was removed.
    pub async fn withdraw(self: &Arc<Self>, id: i64, running_too: bool) -> Result<bool, String> {
        self.with(move |c| {
            let n = c
                .execute(
                    "DELETE FROM filo_gateway.queue WHERE id = $1 \
                     AND (state = 'queued' OR ($2 AND state = 'running'))",
                    &[&id, &running_too],
                )
                .map_err(pg)?;
            Ok(n == 1)
        })
        .await
    }

    /// Deletes an answered row once its outcome has been read.
    pub async fn forget(self: &Arc<Self>, id: i64) -> Result<(), String> {
        self.with(move |c| {
            c.execute(
                "DELETE FROM filo_gateway.queue WHERE id = $1 AND state = 'done'",
                &[&id],
            )
            .map_err(pg)?;
            Ok(())
        })
        .await
    }

    /// Claims every message queued for `key` (the caller holds its lane), oldest first.
    pub async fn claim(self: &Arc<Self>, agent: &str, key: &str) -> Result<Vec<Claimed>, String> {
        let (agent, key) = (agent.to_owned(), key.to_owned());
        let host = self.host.clone();
        let rows: Vec<(i64, String, String)> = self
            .with(move |c| {
                let rows = c
                    .query(
                        "UPDATE filo_gateway.queue SET state = 'running', host = $3 \
                         WHERE agent = $1 AND key = $2 AND state = 'queued' \
                         RETURNING id, mode, request",
                        &[&agent, &key, &host],
                    )
                    .map_err(pg)?;
                Ok(rows
                    .into_iter()
                    .map(|r| (r.get(0), r.get(1), r.get(2)))
                    .collect())
            })
            .await?;
        let mut claimed: Vec<Claimed> = rows
            .into_iter()
            .map(|(id, mode, request)| {
                Ok(Claimed {
                    id,
                    mode: QueueMode::parse(&mode).unwrap_or_default(),
                    submit: decode_request(&request)?,
                })
            })
            .collect::<Result<_, String>>()?;
        claimed.sort_by_key(|c| c.id);
        Ok(claimed)
    }
}

/// A queued request as a row holds it.
pub fn encode_request(s: &Submit) -> String {
    json!({
        "key": s.key,
        "agentId": s.agent_id,
        "message": s.message,
        "runId": s.run_id,
        "idempotencyKey": s.idempotency_key,
        "model": s.model,
        "thinking": s.thinking,
        "timeoutMs": s.timeout.map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
        "extraSystemPrompt": s.extra_system_prompt,
        "sessionId": s.session_id,
        "history": s.history,
    })
    .to_string()
}

fn decode_request(text: &str) -> Result<Submit, String> {
    let v: Value =
        serde_json::from_str(text).map_err(|e| format!("a queued request is not JSON: {e}"))?;
    let s = |k: &str| v[k].as_str().map(str::to_owned);
    let (Some(key), Some(agent), Some(message), Some(run_id)) =
        (s("key"), s("agentId"), s("message"), s("runId"))
    else {
        return Err(format!(
            "a queued request lacks key, agentId, message or runId: {text}"
        ));
    };
    let history = serde_json::from_value(v["history"].clone())
        .map_err(|e| format!("a queued request's history: {e}"))?;
    Ok(Submit {
        run_id,
        idempotency_key: s("idempotencyKey"),
        model: s("model"),
        thinking: s("thinking"),
        timeout: v["timeoutMs"].as_u64().map(Duration::from_millis),
        extra_system_prompt: s("extraSystemPrompt"),
        session_id: s("sessionId"),
        history,
        ..Submit::new(key, agent, message)
    })
}

/// What the waiting host needs of a run's outcome.
pub fn encode_outcome(o: &RunOutcome) -> String {
    let payloads: Vec<Value> = o
        .payloads
        .iter()
        .map(|p| {
            json!({
                "text": p.text,
                "mediaUrls": p.media_urls,
                "replyToId": p.reply_to_id,
                "audioAsVoice": p.audio_as_voice,
                "isError": p.is_error,
            })
        })
        .collect();
    json!({
        "status": o.status.as_str(),
        "text": o.text,
        "payloads": payloads,
        "error": o.error,
        "stopReason": o.stop_reason,
        "provider": o.provider,
        "model": o.model,
        "sessionId": o.session_id,
        "warnings": o.warnings,
        "usage": {
            "input": o.usage.input,
            "output": o.usage.output,
            "cacheRead": o.usage.cache_read,
            "cacheWrite": o.usage.cache_write,
            "reasoning": o.usage.reasoning,
            "total": o.usage.total,
        },
    })
    .to_string()
}

/// Fills `o` (the waiting run's own ids and key) from an outcome [`encode_outcome`] wrote.
pub fn decode_outcome(text: &str, mut o: RunOutcome) -> RunOutcome {
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        o.status = RunStatus::Error;
        o.error = Some(format!(
            "the outcome another host recorded is not JSON: {text}"
        ));
        return o;
    };
    let s = |k: &str| v[k].as_str().map(str::to_owned);
    o.status = match v["status"].as_str() {
        Some("ok") => RunStatus::Ok,
        Some("aborted") => RunStatus::Aborted,
        Some("timeout") => RunStatus::Timeout,
        _ => RunStatus::Error,
    };
    o.text = s("text").unwrap_or_default();
    o.error = s("error");
    o.stop_reason = s("stopReason");
    o.provider = s("provider");
    o.model = s("model");
    o.session_id = s("sessionId").or(o.session_id);
    o.warnings = v["warnings"]
        .as_array()
        .map(|w| {
            w.iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let n = |k: &str| v["usage"][k].as_u64();
    o.usage = filo_embed::usage::Usage {
        input: n("input"),
        output: n("output"),
        cache_read: n("cacheRead"),
        cache_write: n("cacheWrite"),
        reasoning: n("reasoning"),
        total: n("total"),
    };
    o.payloads = v["payloads"]
        .as_array()
        .map(|ps| {
            ps.iter()
                .map(|p| ReplyPayload {
                    text: p["text"].as_str().map(str::to_owned),
                    media_urls: p["mediaUrls"]
                        .as_array()
                        .map(|m| {
                            m.iter()
                                .filter_map(|x| x.as_str().map(str::to_owned))
                                .collect()
                        })
                        .unwrap_or_default(),
                    reply_to_id: p["replyToId"].as_str().map(str::to_owned),
                    audio_as_voice: p["audioAsVoice"].as_bool().unwrap_or(false),
                    is_error: p["isError"].as_bool().unwrap_or(false),
                })
                .collect()
        })
        .unwrap_or_default();
    o.ended_at_ms = crate::run::now_ms();
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_survives_the_row() {
        let mut s = Submit::new("agent:main:k", "main", "hello \u{1F600} \"quoted\"");
        s.idempotency_key = Some("idem-1".into());
        s.model = Some("mock/mock-model".into());
        s.timeout = Some(Duration::from_millis(1500));
        let back = decode_request(&encode_request(&s)).unwrap();
        assert_eq!(
            (back.key, back.agent_id, back.message, back.run_id),
            (s.key, s.agent_id, s.message, s.run_id)
        );
        assert_eq!(back.idempotency_key.as_deref(), Some("idem-1"));
        assert_eq!(back.model.as_deref(), Some("mock/mock-model"));
        assert_eq!(back.timeout, Some(Duration::from_millis(1500)));
        assert!(decode_request("{\"key\":\"k\"}").is_err());
    }
}
