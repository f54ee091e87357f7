//! The pure text tools of the reply path (design §3 C20–C23): what the streaming subscriber
//! does to assistant text before a chat channel sees it.

pub mod chunker;
pub mod fences;
pub mod reasoning;
pub mod tags;
