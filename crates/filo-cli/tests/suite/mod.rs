mod agent;
mod common;
mod dag;
mod memory;
mod rpc;
