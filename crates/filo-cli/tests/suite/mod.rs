mod agent;
mod common;
mod dag;
mod local_model;
mod memory;
mod rpc;
mod sessions_faults;
mod tui;
