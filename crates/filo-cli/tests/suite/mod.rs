mod agent;
mod common;
mod dag;
mod faults;
mod local_model;
mod memory;
mod rpc;
mod tui;
