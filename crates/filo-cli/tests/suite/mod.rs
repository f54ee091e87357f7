mod agent;
mod common;
mod crash;
mod dag;
mod local_model;
mod memory;
mod rpc;
mod tui;
