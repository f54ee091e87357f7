mod abort;
mod agent_api;
mod e2e;
mod events;
mod hooks;
mod steering;
mod support;
mod tools;
