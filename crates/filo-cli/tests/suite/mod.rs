mod agent;
mod common;
mod dag;
mod flags;
mod local_model;
mod memory;
mod rpc;
mod tui;
