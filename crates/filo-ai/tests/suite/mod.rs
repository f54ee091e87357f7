mod common;
mod conformance;
mod faults;
mod handoff;
mod requests;
