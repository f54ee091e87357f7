//! The interactive terminal UI.
//!
//! Owns: the ratatui app loop, conversation view, editor, slash commands, the /life view, themes.
//!
//! Does not own: agent logic: it drives filo-core's AgentSession.
