//! Tools for embedded runs: the pure parts of the tool pipeline.
//!
//! - [`policy`]: allow/deny lists, groups, profiles, per-provider and pipeline order (C24).
//! - [`policy_steps`]: the ordered policy steps of an attempt and the plugin-only allowlist rule.
//! - [`schema`]: parameter schema normalisation per provider (C25).
//! - [`sandbox`]: workspace path guard and exec policy (C26).

pub mod policy;
pub mod policy_steps;
pub mod sandbox;
pub mod schema;
