//! The filo SDK: AgentSession, settings, auth, model registry, resources, system prompt, compaction, DAG mirroring, time-travel tools.
//!
//! Owns: wiring the agent, tools, sessions and the DAG into one AgentSession.
//!
//! Does not own: terminal UI, the CLI's argument parsing, the gateway.
