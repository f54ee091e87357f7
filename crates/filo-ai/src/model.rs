//! Models and thinking levels (pi spec §1.4, §1.8). Providers are data: a model names its wire
//! protocol (`api`), its provider and base URL; no code is specific to a vendor.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::{Cost, Usage};

/// Model prices in USD per million tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCost {
    #[serde(default)]
    pub input: f64,
    #[serde(default)]
    pub output: f64,
    #[serde(default)]
    pub cache_read: f64,
    #[serde(default)]
    pub cache_write: f64,
}

/// One model as pi describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Model {
    pub id: String,
    pub name: String,
    /// Wire protocol: `anthropic-messages`, `openai-completions`, `openai-responses`,
    /// `google-generative-ai`, …
    pub api: String,
    pub provider: String,
    pub base_url: String,
    #[serde(default)]
    pub reasoning: bool,
    /// `"text"` and/or `"image"`.
    #[serde(default)]
    pub input: Vec<String>,
    #[serde(default)]
    pub cost: ModelCost,
    #[serde(default)]
    pub context_window: u64,
    #[serde(default)]
    pub max_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<BTreeMap<String, String>>,
    /// Compatibility switches: `openai-completions` ones, and for `anthropic-messages`
    /// `supportsEagerToolInputStreaming` and `supportsLongCacheRetention` (both default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compat: Option<Value>,
    /// pi's `thinkingLevelMap`: the provider's own value per thinking level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level_map: Option<ThinkingLevelMap>,
    /// pi 1.6's `inputLimits` (image count/size limits, request bytes): kept, not applied yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_limits: Option<Value>,
    /// pi 1.6's `promptCache` lifetimes (`short`/`long` seconds): kept, not applied yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_cache: Option<Value>,
    /// The Radius gateway's model data (`lab`, `enabled`, `providers`, `free`): kept as pi
    /// writes it; filo does not speak Radius's `pi-messages` API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lab: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub providers: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free: Option<Value>,
}

/// pi's `thinkingLevelMap`: for a level, the string the provider expects instead of pi's
/// default, or `null` when the model does not support the level. A level that is absent takes
/// the provider's default. Keys that are not thinking levels are ignored, as pi ignores them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "BTreeMap<String, Option<String>>")]
pub struct ThinkingLevelMap(BTreeMap<ThinkingLevel, Option<String>>);

impl ThinkingLevelMap {
    /// `None` when the level is absent, `Some(None)` when it is marked unsupported (`null`).
    pub fn get(&self, level: ThinkingLevel) -> Option<Option<&str>> {
        self.0.get(&level).map(Option::as_deref)
    }

    /// The mapped string for a level, if it maps to one.
    pub fn value(&self, level: ThinkingLevel) -> Option<&str> {
        self.get(level).flatten()
    }

    /// pi's `{ ...base, ...overlay }`: the overlay's levels win.
    pub fn merge(&mut self, overlay: &ThinkingLevelMap) {
        self.0
            .extend(overlay.0.iter().map(|(k, v)| (*k, v.clone())));
    }
}

impl From<BTreeMap<String, Option<String>>> for ThinkingLevelMap {
    fn from(raw: BTreeMap<String, Option<String>>) -> Self {
        ThinkingLevelMap(
            raw.into_iter()
                .filter_map(|(k, v)| ThinkingLevel::parse(&k).map(|level| (level, v)))
                .collect(),
        )
    }
}

impl FromIterator<(ThinkingLevel, Option<String>)> for ThinkingLevelMap {
    fn from_iter<I: IntoIterator<Item = (ThinkingLevel, Option<String>)>>(iter: I) -> Self {
        ThinkingLevelMap(iter.into_iter().collect())
    }
}

impl Model {
    /// pi's `modelsAreEqual`: same id and provider.
    pub fn same_as(&self, other: &Model) -> bool {
        self.id == other.id && self.provider == other.provider
    }

    /// Whether the model accepts image input.
    pub fn supports_images(&self) -> bool {
        self.input.iter().any(|i| i == "image")
    }

    /// pi's `supportsXhigh` (before 0.73): models that accept the `xhigh` effort. The
    /// OpenAI codecs still use it when the model's `thinkingLevelMap` says nothing;
    /// Anthropic's adaptive effort comes from `thinkingLevelMap`.
    pub fn supports_xhigh(&self) -> bool {
        ["gpt-5.2", "gpt-5.3", "gpt-5.4", "opus-4-6", "opus-4.6"]
            .iter()
            .any(|needle| self.id.contains(needle))
    }

    /// The level the model is asked for: pi's `clampThinkingLevel`, except that `xhigh` also
    /// stays for the models of pi's old `supportsXhigh` list unless the map marks it `null`.
    pub fn effort_level(&self, level: ThinkingLevel) -> ThinkingLevel {
        let marked_off = self
            .thinking_level_map
            .as_ref()
            .is_some_and(|m| m.get(level) == Some(None));
        if self.reasoning && level == ThinkingLevel::Xhigh && self.supports_xhigh() && !marked_off {
            return level;
        }
        self.clamp_thinking_level(level)
    }

    /// The effort string for a level: the model's `thinkingLevelMap` value, else pi's name.
    pub fn effort_name(&self, level: ThinkingLevel) -> &str {
        self.thinking_level_map
            .as_ref()
            .and_then(|m| m.value(level))
            .unwrap_or(level.as_str())
    }

    /// pi's `getSupportedThinkingLevels`: `off` only for a model without reasoning; else
    /// every level its `thinkingLevelMap` does not mark `null`, `xhigh` and `max` only when
    /// mapped.
    pub fn supported_thinking_levels(&self) -> Vec<ThinkingLevel> {
        if !self.reasoning {
            return vec![ThinkingLevel::Off];
        }
        ThinkingLevel::ALL
            .into_iter()
            .filter(|&level| {
                let mapped = self.thinking_level_map.as_ref().and_then(|m| m.get(level));
                match (level, mapped) {
                    (_, Some(None)) => false,
                    (ThinkingLevel::Xhigh | ThinkingLevel::Max, mapped) => mapped.is_some(),
                    _ => true,
                }
            })
            .collect()
    }

    /// pi's `clampThinkingLevel`: the level itself when supported, else the nearest
    /// supported level above it, else the nearest below, else `off`.
    pub fn clamp_thinking_level(&self, level: ThinkingLevel) -> ThinkingLevel {
        let supported = self.supported_thinking_levels();
        if supported.contains(&level) {
            return level;
        }
        let above = ThinkingLevel::ALL.into_iter().filter(|l| *l > level);
        let below = ThinkingLevel::ALL.into_iter().rev().filter(|l| *l < level);
        above
            .chain(below)
            .find(|l| supported.contains(l))
            .unwrap_or(ThinkingLevel::Off)
    }

    /// pi's `calculateCost`: fill `usage.cost` from this model's $/M prices and return it.
    pub fn calculate_cost(&self, usage: &mut Usage) -> Cost {
        usage.cost = calculate_cost(&self.cost, usage);
        usage.cost
    }
}

/// Cost of `usage` at `prices` ($ per million tokens); `total` is the sum of the four parts.
pub fn calculate_cost(prices: &ModelCost, usage: &Usage) -> Cost {
    #[allow(clippy::cast_precision_loss)]
    let part = |price: f64, tokens: u64| price / 1_000_000.0 * tokens as f64;
    let input = part(prices.input, usage.input);
    let output = part(prices.output, usage.output);
    let cache_read = part(prices.cache_read, usage.cache_read);
    let cache_write = part(prices.cache_write, usage.cache_write);
    Cost {
        input,
        output,
        cache_read,
        cache_write,
        total: input + output + cache_read + cache_write,
    }
}

/// The agent's thinking level. `Off` sends no reasoning option.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingLevel {
    #[default]
    Off,
    Minimal,
    Low,
    Medium,
    High,
    Xhigh,
    /// pi 1.6's `max` (0.80.6): above `xhigh`; a model offers it only when its
    /// `thinkingLevelMap` maps it, and budget-based APIs treat it as `high`.
    Max,
}

impl ThinkingLevel {
    /// Every level, lowest first.
    pub const ALL: [ThinkingLevel; 7] = [
        ThinkingLevel::Off,
        ThinkingLevel::Minimal,
        ThinkingLevel::Low,
        ThinkingLevel::Medium,
        ThinkingLevel::High,
        ThinkingLevel::Xhigh,
        ThinkingLevel::Max,
    ];

    /// pi's string for the level.
    pub fn as_str(self) -> &'static str {
        match self {
            ThinkingLevel::Off => "off",
            ThinkingLevel::Minimal => "minimal",
            ThinkingLevel::Low => "low",
            ThinkingLevel::Medium => "medium",
            ThinkingLevel::High => "high",
            ThinkingLevel::Xhigh => "xhigh",
            ThinkingLevel::Max => "max",
        }
    }

    /// Parse pi's string for a level.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "off" => ThinkingLevel::Off,
            "minimal" => ThinkingLevel::Minimal,
            "low" => ThinkingLevel::Low,
            "medium" => ThinkingLevel::Medium,
            "high" => ThinkingLevel::High,
            "xhigh" => ThinkingLevel::Xhigh,
            "max" => ThinkingLevel::Max,
            _ => return None,
        })
    }

    /// pi's `clampReasoning`: `xhigh` and `max` become `high`, other levels stay.
    pub fn clamped(self) -> Self {
        match self {
            ThinkingLevel::Xhigh | ThinkingLevel::Max => ThinkingLevel::High,
            ThinkingLevel::Off
            | ThinkingLevel::Minimal
            | ThinkingLevel::Low
            | ThinkingLevel::Medium
            | ThinkingLevel::High => self,
        }
    }

    /// pi's default token budget for a level (`Off` has none).
    pub fn default_budget(self) -> u64 {
        match self {
            ThinkingLevel::Off => 0,
            ThinkingLevel::Minimal => 1024,
            ThinkingLevel::Low => 2048,
            ThinkingLevel::Medium => 8192,
            ThinkingLevel::High | ThinkingLevel::Xhigh | ThinkingLevel::Max => 16384,
        }
    }
}

/// pi's `adjustMaxTokensForThinking`: returns `(max_tokens, thinking_budget)` for a base
/// `max_tokens`, the model's ceiling and a level, with optional budget overrides.
pub fn adjust_max_tokens_for_thinking(
    base_max_tokens: u64,
    model_max_tokens: u64,
    level: ThinkingLevel,
    budgets: Option<&BTreeMap<ThinkingLevel, u64>>,
) -> (u64, u64) {
    let level = level.clamped();
    let budget = budgets
        .and_then(|b| b.get(&level).copied())
        .unwrap_or_else(|| level.default_budget());
    let max_tokens = base_max_tokens.saturating_add(budget).min(model_max_tokens);
    let budget = if max_tokens <= budget {
        max_tokens.saturating_sub(1024)
    } else {
        budget
    };
    (max_tokens, budget)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_is_price_per_million() {
        let prices = ModelCost {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write: 3.75,
        };
        let usage = Usage {
            input: 1_000_000,
            output: 2000,
            cache_read: 10_000,
            cache_write: 0,
            ..Usage::default()
        };
        let c = calculate_cost(&prices, &usage);
        assert!((c.input - 3.0).abs() < 1e-12);
        assert!((c.output - 0.03).abs() < 1e-12);
        assert!((c.cache_read - 0.003).abs() < 1e-12);
        assert!((c.total - 3.033).abs() < 1e-9);
    }

    #[test]
    fn thinking_budget_adjustment() {
        assert_eq!(
            adjust_max_tokens_for_thinking(32000, 64000, ThinkingLevel::Medium, None),
            (40192, 8192)
        );
        // Ceiling below the budget: budget shrinks to leave 1024 for the answer.
        assert_eq!(
            adjust_max_tokens_for_thinking(8000, 16000, ThinkingLevel::High, None),
            (16000, 14976)
        );
        assert_eq!(
            adjust_max_tokens_for_thinking(100, 1000, ThinkingLevel::Xhigh, None),
            (1000, 0)
        );
        let mut custom = BTreeMap::new();
        custom.insert(ThinkingLevel::Low, 500);
        assert_eq!(
            adjust_max_tokens_for_thinking(1000, 64000, ThinkingLevel::Low, Some(&custom)),
            (1500, 500)
        );
    }

    #[test]
    fn xhigh_support() {
        let mut m: Model = serde_json::from_value(serde_json::json!({
            "id": "gpt-5.2", "name": "x", "api": "openai-responses", "provider": "openai",
            "baseUrl": "https://api.openai.com/v1"
        }))
        .unwrap();
        assert!(m.supports_xhigh());
        m.id = "claude-opus-4-6".into();
        assert!(m.supports_xhigh());
        m.id = "gpt-4o".into();
        assert!(!m.supports_xhigh());
        assert_eq!(ThinkingLevel::Xhigh.clamped(), ThinkingLevel::High);
    }

    #[test]
    fn clamping_follows_the_thinking_level_map() {
        let mut m: Model = serde_json::from_value(serde_json::json!({
            "id": "m", "name": "m", "api": "azure-openai-responses", "provider": "p",
            "baseUrl": "", "reasoning": true
        }))
        .unwrap();
        assert_eq!(
            m.clamp_thinking_level(ThinkingLevel::Xhigh),
            ThinkingLevel::High
        );
        assert_eq!(
            m.clamp_thinking_level(ThinkingLevel::Low),
            ThinkingLevel::Low
        );
        m.thinking_level_map = Some(
            [
                (ThinkingLevel::Minimal, None),
                (ThinkingLevel::Xhigh, Some("max".to_string())),
            ]
            .into_iter()
            .collect(),
        );
        assert_eq!(
            m.clamp_thinking_level(ThinkingLevel::Xhigh),
            ThinkingLevel::Xhigh
        );
        assert_eq!(
            m.clamp_thinking_level(ThinkingLevel::Minimal),
            ThinkingLevel::Low
        );
        m.reasoning = false;
        assert_eq!(
            m.clamp_thinking_level(ThinkingLevel::High),
            ThinkingLevel::Off
        );
    }

    #[test]
    fn thinking_level_map_keeps_strings_and_nulls_and_skips_unknown_keys() {
        let mut m: ThinkingLevelMap = serde_json::from_value(serde_json::json!({
            "off": null, "xhigh": "max", "turbo": "fast"
        }))
        .unwrap();
        assert_eq!(m.get(ThinkingLevel::Off), Some(None));
        assert_eq!(m.value(ThinkingLevel::Xhigh), Some("max"));
        assert_eq!(m.get(ThinkingLevel::High), None);
        m.merge(
            &[(ThinkingLevel::Off, Some("none".to_string()))]
                .into_iter()
                .collect(),
        );
        assert_eq!(m.value(ThinkingLevel::Off), Some("none"));
        assert_eq!(
            serde_json::to_value(&m).unwrap(),
            serde_json::json!({"off": "none", "xhigh": "max"})
        );
    }

    #[test]
    fn max_is_offered_only_where_the_map_names_it() {
        assert_eq!(ThinkingLevel::parse("max"), Some(ThinkingLevel::Max));
        assert_eq!(ThinkingLevel::Max.as_str(), "max");
        assert_eq!(
            serde_json::from_value::<ThinkingLevel>(serde_json::json!("max")).unwrap(),
            ThinkingLevel::Max
        );
        assert_eq!(ThinkingLevel::Max.clamped(), ThinkingLevel::High);
        let mut m: Model = serde_json::from_value(serde_json::json!({
            "id": "claude-opus-5-5", "name": "m", "api": "anthropic-messages",
            "provider": "anthropic", "baseUrl": "", "reasoning": true,
            "thinkingLevelMap": {"xhigh": "xhigh", "max": "max"}
        }))
        .unwrap();
        assert_eq!(
            m.supported_thinking_levels().last(),
            Some(&ThinkingLevel::Max)
        );
        assert_eq!(m.effort_level(ThinkingLevel::Max), ThinkingLevel::Max);
        assert_eq!(m.effort_name(ThinkingLevel::Max), "max");
        // Without `max` in the map the nearest level below that the model offers is used.
        m.thinking_level_map = Some(
            [(ThinkingLevel::Xhigh, Some("xhigh".to_string()))]
                .into_iter()
                .collect(),
        );
        assert_eq!(m.effort_level(ThinkingLevel::Max), ThinkingLevel::Xhigh);
        m.thinking_level_map = None;
        assert_eq!(m.effort_level(ThinkingLevel::Max), ThinkingLevel::High);
        // pi clamps upwards first: `xhigh` on a model offering only `max` is `max`.
        m.thinking_level_map = Some(
            [(ThinkingLevel::Max, Some("max".to_string()))]
                .into_iter()
                .collect(),
        );
        assert_eq!(m.effort_level(ThinkingLevel::Xhigh), ThinkingLevel::Max);
        m.reasoning = false;
        assert_eq!(m.effort_level(ThinkingLevel::Max), ThinkingLevel::Off);
    }
}
