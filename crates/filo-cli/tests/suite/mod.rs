mod agent;
mod common;
mod dag;
mod rpc;
