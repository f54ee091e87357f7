mod common;
mod config;
mod search;
mod serve;
mod servers;
