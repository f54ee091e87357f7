//! Usage and cost accounting (C28, spec §1.2, §8.1; OpenClaw `src/agents/usage.ts`).
//!
//! A [`Usage`] is one model call's token counts; [`RunUsage`] accumulates the calls of a run:
//! input, output, cache and cost are summed (billing), while `total` is the last call's reported
//! total (it drives context-fill displays).

use serde_json::Value;

/// Token counts of one call (or a sum of calls). `None` means "not reported".
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    pub input: Option<u64>,
    pub output: Option<u64>,
    pub cache_read: Option<u64>,
    pub cache_write: Option<u64>,
    pub reasoning: Option<u64>,
    pub total: Option<u64>,
}

fn count(v: Option<&Value>) -> Option<i64> {
    let v = v?;
    v.as_i64().or_else(|| {
        v.as_f64()
            .filter(|f| f.is_finite())
            .map(|f| f.trunc() as i64)
    })
}

fn first(obj: &serde_json::Map<String, Value>, names: &[&str]) -> Option<i64> {
    names.iter().find_map(|n| count(obj.get(*n)))
}

fn nested(obj: &serde_json::Map<String, Value>, outer: &str, inner: &str) -> Option<i64> {
    count(obj.get(outer)?.get(inner))
}

fn clamp(v: Option<i64>) -> Option<u64> {
    v.map(|n| u64::try_from(n).unwrap_or(0))
}

/// Reads a provider's usage object under any of the names providers use (Anthropic, OpenAI Chat
/// and Responses, Moonshot/Kimi, pi's own). OpenAI-style cached counts are part of the prompt
/// count, so they are subtracted from `input`; negative inputs clamp to 0. None when nothing is
/// reported.
pub fn normalize_usage(raw: &Value) -> Option<Usage> {
    let obj = raw.as_object()?;
    let direct_cache = first(obj, &["cacheRead", "cache_read_input_tokens", "cache_read"]);
    let openai_cache = count(obj.get("cached_tokens"))
        .or_else(|| nested(obj, "prompt_tokens_details", "cached_tokens"))
        .or_else(|| nested(obj, "input_tokens_details", "cached_tokens"));
    let mut input = first(obj, &["input", "input_tokens", "prompt_tokens"]);
    if direct_cache.is_none()
        && let (Some(i), Some(c)) = (input, openai_cache)
    {
        input = Some(i - c);
    }
    let usage = Usage {
        input: clamp(input),
        output: clamp(first(
            obj,
            &["output", "output_tokens", "completion_tokens"],
        )),
        cache_read: clamp(direct_cache.or(openai_cache)),
        cache_write: clamp(first(
            obj,
            &["cacheWrite", "cache_creation_input_tokens", "cache_write"],
        )),
        reasoning: clamp(
            nested(obj, "output_tokens_details", "reasoning_tokens")
                .or_else(|| nested(obj, "completion_tokens_details", "reasoning_tokens")),
        ),
        total: clamp(first(obj, &["total", "total_tokens", "totalTokens"])),
    };
    (usage != Usage::default()).then_some(usage)
}

impl Usage {
    /// Whether any count is above zero.
    pub fn has_nonzero(&self) -> bool {
        [
            self.input,
            self.output,
            self.cache_read,
            self.cache_write,
            self.total,
        ]
        .into_iter()
        .any(|v| v.unwrap_or(0) > 0)
    }

    /// `input + cache_read + cache_write`; None when all three are missing or zero.
    pub fn prompt_tokens(&self) -> Option<u64> {
        let sum =
            self.input.unwrap_or(0) + self.cache_read.unwrap_or(0) + self.cache_write.unwrap_or(0);
        (sum > 0).then_some(sum)
    }

    /// The OpenAI Chat Completions `usage` object for this usage.
    pub fn to_openai_chat_usage(usage: Option<&Usage>) -> Value {
        let u = usage.copied().unwrap_or_default();
        let prompt = u.input.unwrap_or(0) + u.cache_read.unwrap_or(0);
        let completion = u.output.unwrap_or(0);
        let total = (prompt + completion).max(u.total.unwrap_or(0));
        let mut out = serde_json::json!({
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": total,
        });
        if let Some(cached) = u.cache_read.filter(|c| *c > 0) {
            out["prompt_tokens_details"] = serde_json::json!({ "cached_tokens": cached });
        }
        if let Some(reasoning) = u.reasoning {
            out["completion_tokens_details"] = serde_json::json!({ "reasoning_tokens": reasoning });
        }
        out
    }
}

/// Tokens that filled the context at the last call: an explicit prompt snapshot, else the last
/// call's prompt tokens, else the accumulated usage's.
pub fn context_prompt_tokens(
    prompt_tokens: Option<u64>,
    last_call: Option<&Usage>,
    accumulated: Option<&Usage>,
) -> Option<u64> {
    prompt_tokens
        .or_else(|| last_call.and_then(Usage::prompt_tokens))
        .or_else(|| accumulated.and_then(Usage::prompt_tokens))
}

/// A session's `total_tokens` for the store: the prompt snapshot when given, else the usage's
/// prompt tokens.
pub fn session_total_tokens(usage: Option<&Usage>, prompt_tokens: Option<u64>) -> Option<u64> {
    prompt_tokens.or_else(|| usage.and_then(Usage::prompt_tokens))
}

/// Tokens per second; None for a missing, zero or non-finite duration or count.
pub fn throughput(tokens: Option<f64>, total_ms: Option<f64>) -> Option<f64> {
    let (t, ms) = (
        tokens.filter(|t| t.is_finite())?,
        total_ms.filter(|m| m.is_finite() && *m > 0.0)?,
    );
    Some(t / (ms / 1000.0))
}

/// Usage of a whole run, accumulated over its model calls (attempts and compactions included).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RunUsage {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    /// The last call's reported total, else the running sum.
    pub total: u64,
    pub cost_usd: f64,
    /// The last model call's usage.
    pub last_call: Option<Usage>,
    calls: u32,
}

impl RunUsage {
    /// Adds one assistant message's usage and cost.
    pub fn add_call(&mut self, usage: &Usage, cost_usd: f64) {
        self.input += usage.input.unwrap_or(0);
        self.output += usage.output.unwrap_or(0);
        self.cache_read += usage.cache_read.unwrap_or(0);
        self.cache_write += usage.cache_write.unwrap_or(0);
        if cost_usd.is_finite() && cost_usd > 0.0 {
            self.cost_usd += cost_usd;
        }
        let sum = self.input + self.output + self.cache_read + self.cache_write;
        self.total = usage.total.filter(|t| *t > 0).unwrap_or(sum);
        self.last_call = Some(*usage);
        self.calls += 1;
    }

    /// Number of calls added.
    pub fn calls(&self) -> u32 {
        self.calls
    }

    /// The run's usage for `agent_meta.usage`; None when every count is zero (error returns carry
    /// usage only when there is data).
    pub fn totals(&self) -> Option<Usage> {
        let u = Usage {
            input: Some(self.input),
            output: Some(self.output),
            cache_read: Some(self.cache_read),
            cache_write: Some(self.cache_write),
            reasoning: None,
            total: Some(self.total),
        };
        u.has_nonzero().then_some(u)
    }

    /// `input + cache_read + cache_write` of the last call.
    pub fn prompt_tokens(&self) -> Option<u64> {
        self.last_call.as_ref().and_then(Usage::prompt_tokens)
    }
}

#[cfg(test)]
#[path = "usage_tests.rs"]
mod tests;
