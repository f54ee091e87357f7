mod common;
mod config;
mod servers;
mod search;
