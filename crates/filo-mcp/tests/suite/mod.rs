mod common;
mod config;
mod search;
mod servers;
