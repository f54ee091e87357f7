//! The pure text tools of the reply path (design §3 C20–C23): what the streaming subscriber
//! does to assistant text before a chat channel sees it.

pub mod chunker;
pub mod dedupe;
pub mod directives;
pub mod fences;
pub mod media;
pub mod reasoning;
pub mod silent;
pub mod tags;
pub mod url_guard;

#[cfg(test)]
mod directives_tests;
#[cfg(test)]
mod robustness_tests;
