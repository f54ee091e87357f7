mod abort;
mod agent_api;
mod events;
mod hooks;
mod steering;
mod support;
mod tools;
