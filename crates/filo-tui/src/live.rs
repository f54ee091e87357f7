//! The streaming assistant cell, rendered incrementally. Text grows at the end only, so the part
//! before the last blank line outside a code fence is finished markdown: it is rendered once per
//! paragraph and cached, and each frame re-renders only the open paragraph. A frame copies only
//! the lines it shows. Without this a frame costs O(length of the answer).

use ratatui::text::Line;

use crate::cells::{AssistantBlock, Cell, RenderOpts, render_block};
use crate::markdown;
use crate::text::wrap_lines;
use crate::theme::Theme;

/// Per text block: how far it is finished and the finished part's lines.
#[derive(Debug, Clone, Default)]
struct BlockCache {
    /// Byte offset where the open paragraph starts.
    stable_end: usize,
    /// Bytes scanned for blank lines and fences.
    scanned: usize,
    in_fence: bool,
    lines: Vec<Line<'static>>,
}

/// The cache of the live cell; reset when the width or options change or a new message starts.
#[derive(Debug, Clone, Default)]
pub struct LiveCache {
    key: Option<(usize, RenderOpts)>,
    blocks: Vec<BlockCache>,
}

impl LiveCache {
    pub fn clear(&mut self) {
        self.key = None;
        self.blocks.clear();
    }
}

impl BlockCache {
    /// Move `stable_end` to the last blank line outside a fence; render the newly finished part.
    fn advance(&mut self, text: &str, theme: &Theme, width: usize) {
        let Some(last_nl) = text.rfind('\n') else {
            return;
        };
        let mut new_end = self.stable_end;
        let mut pos = self.scanned;
        while pos <= last_nl {
            let end = text[pos..].find('\n').map_or(text.len(), |i| pos + i);
            let line = &text[pos..end];
            let trimmed = line.trim_start();
            if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
                self.in_fence = !self.in_fence;
            } else if line.trim().is_empty() && !self.in_fence {
                new_end = end + 1;
            }
            pos = end + 1;
        }
        self.scanned = pos;
        if new_end > self.stable_end {
            let chunk = &text[self.stable_end..new_end];
            if !chunk.trim().is_empty() {
                if !self.lines.is_empty() {
                    self.lines.push(Line::default());
                }
                self.lines
                    .extend(wrap_lines(&markdown::render(chunk, theme), width));
            }
            self.stable_end = new_end;
        }
    }
}

/// The last `want` lines of the live cell (plus its blank separator), oldest first.
pub fn render_tail(
    cell: &Cell,
    theme: &Theme,
    width: usize,
    opts: RenderOpts,
    cache: &mut LiveCache,
    want: usize,
) -> Vec<Line<'static>> {
    let Cell::Assistant { blocks, .. } = cell else {
        let all = cell.render(theme, width, opts);
        let skip = all.len().saturating_sub(want);
        return all.into_iter().skip(skip).collect();
    };
    if cache.key != Some((width, opts)) {
        cache.key = Some((width, opts));
        cache.blocks.clear();
    }
    cache.blocks.resize_with(blocks.len(), BlockCache::default);
    // Collected newest first.
    let mut rev: Vec<Line<'static>> = vec![Line::default()];
    for (i, b) in blocks.iter().enumerate().rev() {
        if rev.len() >= want {
            break;
        }
        let mut own = Vec::new();
        let mut cached: &[Line<'static>] = &[];
        match (b, cache.blocks.get_mut(i)) {
            (AssistantBlock::Text(t), Some(bc)) => {
                bc.advance(t, theme, width);
                let tail = &t[bc.stable_end..];
                if !tail.trim().is_empty() {
                    own = wrap_lines(&markdown::render(tail, theme), width);
                }
                cached = &bc.lines;
                if !cached.is_empty() && !own.is_empty() {
                    own.insert(0, Line::default());
                }
            }
            _ => render_block(b, theme, width, opts, &mut own),
        }
        if rev.len() > 1 && (!own.is_empty() || !cached.is_empty()) {
            rev.push(Line::default());
        }
        rev.extend(own.into_iter().rev());
        let need = want.saturating_sub(rev.len());
        rev.extend(cached.iter().rev().take(need).cloned());
    }
    rev.truncate(want);
    rev.reverse();
    rev
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::theme::ColorDepth;

    fn text(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn incremental_matches_a_full_render() {
        let theme = Theme::builtin("dark", ColorDepth::None).unwrap();
        let md = "# Title\n\nFirst paragraph with **bold**.\n\n```rust\nfn a() {}\n\nfn b() {}\n```\n\n- one\n- two\n\nLast line still open";
        let mut cache = LiveCache::default();
        let opts = RenderOpts::default();
        // Stream it in small pieces, rendering after each.
        let mut streamed = String::new();
        let mut last = Vec::new();
        for ch in md.chars() {
            streamed.push(ch);
            let cell = Cell::Assistant {
                blocks: vec![AssistantBlock::Text(streamed.clone())],
                error: None,
                images: 0,
            };
            last = render_tail(&cell, &theme, 40, opts, &mut cache, 1000);
        }
        let full = Cell::Assistant {
            blocks: vec![AssistantBlock::Text(md.into())],
            error: None,
            images: 0,
        }
        .render(&theme, 40, opts);
        assert_eq!(text(&last), text(&full));
        // Only the last lines are produced when fewer are wanted.
        let cell = Cell::Assistant {
            blocks: vec![AssistantBlock::Text(md.into())],
            error: None,
            images: 0,
        };
        let tail = render_tail(&cell, &theme, 40, opts, &mut cache, 3);
        assert_eq!(text(&tail), text(&full[full.len() - 3..]));
    }
}
