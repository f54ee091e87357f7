//! The `stream` modules behind the subscriber's two seams: [`TagShaper`] strips think/final
//! tags (C21) from partial and block text, and [`BlockChunker`] (C20) splits streamed text into
//! blocks.

use super::machine::{Chunker, TextShaper};
use crate::stream::chunker::BlockChunker;
use crate::stream::tags::{TagStripper, strip_block_tags};

/// Think/final tag stripping for the reply path; with `enforce_final_tag`, only what stands
/// inside `<final>…</final>` is shown.
#[derive(Debug, Clone)]
pub struct TagShaper {
    enforce_final_tag: bool,
    blocks: TagStripper,
}

impl TagShaper {
    pub fn new(enforce_final_tag: bool) -> Self {
        TagShaper {
            enforce_final_tag,
            blocks: TagStripper::new(enforce_final_tag),
        }
    }
}

impl TextShaper for TagShaper {
    fn reset(&mut self) {
        self.blocks.reset();
    }

    fn visible(&mut self, cumulative: &str) -> String {
        strip_block_tags(cumulative, self.enforce_final_tag)
            .visible
            .trim()
            .to_owned()
    }

    fn block(&mut self, text: &str) -> String {
        // A block is complete text: decide what the stripper held back, keeping its state
        // (inside thinking, inside final) for the message's next block.
        let mut out = self.blocks.push(text).visible;
        out.push_str(&self.blocks.finish().visible);
        if out.len() == text.len() {
            return out;
        }
        // Tags were taken out: the blank lines that separated them from the answer go too (not
        // spaces, which may indent code).
        out.trim_start_matches(['\n', '\r']).to_owned()
    }
}

impl Chunker for BlockChunker {
    fn append(&mut self, text: &str) {
        BlockChunker::append(self, text);
    }

    fn drain(&mut self, force: bool) -> Vec<String> {
        self.drain_to_vec(force)
    }

    fn has_buffered(&self) -> bool {
        BlockChunker::has_buffered(self)
    }

    fn reset(&mut self) {
        BlockChunker::reset(self);
    }
}

#[cfg(test)]
#[path = "shaping_tests.rs"]
mod tests;
