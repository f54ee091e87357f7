mod anthropic_fields;
mod common;
mod conformance;
mod faults;
mod handoff;
mod providers;
mod requests;
mod retry;
