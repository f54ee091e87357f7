mod agent;
mod common;
mod config;
mod dag;
mod local_model;
mod memory;
mod rpc;
mod tui;
