//! Built-in coding tools: read, write, edit, bash, grep, find, ls, plus output truncation.
//!
//! Owns: the seven tools with pi's parameters, descriptions, limits and texts; truncation helpers.
//!
//! Does not own: the agent loop, sessions, models.
