//! Images in the terminal: image blocks of tool results and user messages shown inline with the
//! kitty graphics protocol or iTerm2's, where the terminal has one (see [`crate::term::TermEnv`])
//! and `terminal.showImages` is on; a `[Image: [image/png] 800x600]` line elsewhere, as pi.
//!
//! A cell reserves the image's rows and marks its first row with an invisible colour code that
//! names the image; after a frame is drawn, [`placements`] finds the marks in the buffer and
//! [`write_images`] draws the images there, only when what is on screen changed.

use std::io::Write;
use std::sync::Arc;

use base64::Engine;
use ratatui::buffer::Buffer;
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};

use crate::term::ImageProtocol;

/// The red channel of a mark's colour (green and blue hold the image's number).
const MARK: u8 = 0xF1;
/// The cell size pi assumes when the terminal does not say (pixels).
const CELL_PX: (u32, u32) = (9, 18);

/// How images are shown (`None` in [`crate::cells::RenderOpts`]: as a text line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageDisplay {
    pub protocol: ImageProtocol,
    /// `terminal.imageWidthCells`.
    pub width_cells: u16,
}

/// An image of a cell: its number in [`ImageStore`], type and size in pixels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRef {
    pub id: usize,
    pub mime: String,
    pub px: Option<(u32, u32)>,
}

/// Width and height in pixels.
pub type Px = (u32, u32);

/// The images' base64 data, numbered in the order they were seen.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageStore {
    data: Vec<(Arc<str>, Option<Px>)>,
}

impl ImageStore {
    /// Keep an image; its reference for a cell.
    pub fn add(&mut self, data: &str, mime: &str) -> ImageRef {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data.as_bytes())
            .unwrap_or_default();
        let px = dimensions(&bytes);
        self.data.push((Arc::from(data), px));
        ImageRef {
            id: self.data.len() - 1,
            mime: mime.to_string(),
            px,
        }
    }

    /// An image's data and size.
    pub fn get(&self, id: usize) -> Option<(&Arc<str>, Option<Px>)> {
        self.data.get(id).map(|(d, px)| (d, *px))
    }
}

/// Width and height in pixels of a PNG, JPEG, GIF or WebP (VP8X) image, read from its header.
pub fn dimensions(b: &[u8]) -> Option<(u32, u32)> {
    let be32 =
        |i: usize| -> Option<u32> { Some(u32::from_be_bytes(b.get(i..i + 4)?.try_into().ok()?)) };
    let be16 = |i: usize| -> Option<u32> {
        Some(u32::from(u16::from_be_bytes(
            b.get(i..i + 2)?.try_into().ok()?,
        )))
    };
    let le16 = |i: usize| -> Option<u32> {
        Some(u32::from(u16::from_le_bytes(
            b.get(i..i + 2)?.try_into().ok()?,
        )))
    };
    if b.starts_with(b"\x89PNG") {
        return Some((be32(16)?, be32(20)?));
    }
    if b.starts_with(b"GIF87a") || b.starts_with(b"GIF89a") {
        return Some((le16(6)?, le16(8)?));
    }
    if b.starts_with(b"RIFF") && b.get(8..12) == Some(b"WEBP") && b.get(12..16) == Some(b"VP8X") {
        let le24 = |i: usize| -> Option<u32> {
            let s = b.get(i..i + 3)?;
            Some(u32::from(s[0]) | u32::from(s[1]) << 8 | u32::from(s[2]) << 16)
        };
        return Some((le24(24)? + 1, le24(27)? + 1));
    }
    if b.starts_with(&[0xff, 0xd8]) {
        let mut i = 2;
        while i + 9 < b.len() {
            if b[i] != 0xff {
                i += 1;
                continue;
            }
            if (0xc0..=0xc2).contains(&b[i + 1]) {
                return Some((be16(i + 7)?, be16(i + 5)?));
            }
            let len = be16(i + 2)? as usize;
            if len < 2 {
                return None;
            }
            i += 2 + len;
        }
    }
    None
}

/// Rows an image takes at `cols` cells wide (pi's arithmetic: 9×18-pixel cells, at least one).
pub fn rows_for(px: Option<(u32, u32)>, cols: u16) -> u16 {
    let (w, h) = px.unwrap_or((800, 600));
    if w == 0 {
        return 1;
    }
    let scaled_h = f64::from(h) * f64::from(cols) * f64::from(CELL_PX.0) / f64::from(w);
    let rows = (scaled_h / f64::from(CELL_PX.1)).ceil();
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let rows = rows.clamp(1.0, 200.0) as u16;
    rows
}

/// pi's text for an image it does not draw.
pub fn fallback(r: &ImageRef) -> String {
    match r.px {
        Some((w, h)) => format!("[Image: [{}] {w}x{h}]", r.mime),
        None => format!("[Image: [{}]]", r.mime),
    }
}

/// The lines of an image in a cell `width` wide: reserved rows, the first marked, or the
/// fallback line.
pub fn lines(
    r: &ImageRef,
    display: Option<ImageDisplay>,
    width: usize,
    muted: Style,
) -> Vec<Line<'static>> {
    let Some(d) = display else {
        return vec![Line::from(Span::styled(fallback(r), muted))];
    };
    let cols = d
        .width_cells
        .min(u16::try_from(width).unwrap_or(u16::MAX))
        .max(1);
    let rows = rows_for(r.px, cols);
    #[allow(clippy::cast_possible_truncation)]
    let mark = Style::default().fg(Color::Rgb(MARK, (r.id >> 8) as u8, r.id as u8));
    let mut out = vec![Line::from(vec![
        Span::styled(" ", mark),
        Span::raw(" ".repeat(usize::from(cols).saturating_sub(1))),
    ])];
    // The rows below hold the image's size: columns in the first row's spaces, rows here.
    out.extend((1..rows).map(|_| Line::from("")));
    out
}

/// An image on screen: where, how large, which.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    pub x: u16,
    pub y: u16,
    pub cols: u16,
    pub rows: u16,
    pub id: usize,
}

/// The marked images of a drawn frame whose rows are all on screen.
pub fn placements(
    buf: &Buffer,
    store: &ImageStore,
    display: Option<ImageDisplay>,
) -> Vec<Placement> {
    let Some(d) = display else {
        return Vec::new();
    };
    let area = buf.area;
    let mut out = Vec::new();
    for y in area.top()..area.bottom() {
        for x in area.left()..area.right() {
            let cell = &buf[(x, y)];
            if let Color::Rgb(MARK, hi, lo) = cell.fg
                && cell.symbol() == " "
            {
                let id = usize::from(hi) << 8 | usize::from(lo);
                let Some((_, px)) = store.get(id) else {
                    continue;
                };
                let cols = d.width_cells.min(area.right() - x).max(1);
                let rows = rows_for(px, cols);
                if y + rows <= area.bottom() {
                    out.push(Placement {
                        x,
                        y,
                        cols,
                        rows,
                        id,
                    });
                }
            }
        }
    }
    out
}

/// The escape sequence that draws `data` (base64) `cols`×`rows` cells at the cursor.
pub fn encode(protocol: ImageProtocol, data: &str, cols: u16, rows: u16) -> String {
    match protocol {
        ImageProtocol::Kitty => {
            const CHUNK: usize = 4096;
            let params = format!("a=T,f=100,q=2,C=1,c={cols},r={rows}");
            if data.len() <= CHUNK {
                return format!("\x1b_G{params};{data}\x1b\\");
            }
            let chunks: Vec<&str> = data
                .as_bytes()
                .chunks(CHUNK)
                .map(|c| std::str::from_utf8(c).unwrap_or(""))
                .collect();
            let last = chunks.len() - 1;
            chunks
                .iter()
                .enumerate()
                .map(|(i, c)| match i {
                    0 => format!("\x1b_G{params},m=1;{c}\x1b\\"),
                    i if i == last => format!("\x1b_Gm=0;{c}\x1b\\"),
                    _ => format!("\x1b_Gm=1;{c}\x1b\\"),
                })
                .collect()
        }
        ImageProtocol::ITerm2 => {
            format!("\x1b]1337;File=inline=1;width={cols};height={rows}:{data}\x07")
        }
    }
}

/// Draw the placements (after clearing kitty's earlier images), keeping the cursor where it was.
pub fn write_images(
    out: &mut impl Write,
    protocol: ImageProtocol,
    placed: &[Placement],
    store: &ImageStore,
) -> std::io::Result<()> {
    let mut s = String::from("\x1b7");
    if protocol == ImageProtocol::Kitty {
        s.push_str("\x1b_Ga=d,d=A,q=2\x1b\\");
    }
    for p in placed {
        if let Some((data, _)) = store.get(p.id) {
            s.push_str(&format!("\x1b[{};{}H", p.y + 1, p.x + 1));
            s.push_str(&encode(protocol, data, p.cols, p.rows));
        }
    }
    s.push_str("\x1b8");
    out.write_all(s.as_bytes())?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG_1X1: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==";

    #[test]
    fn sizes_are_read_from_headers() {
        let mut store = ImageStore::default();
        let r = store.add(PNG_1X1, "image/png");
        assert_eq!(r.px, Some((1, 1)));
        let gif = b"GIF89a\x20\x00\x10\x00rest";
        assert_eq!(dimensions(gif), Some((32, 16)));
        assert_eq!(dimensions(b"nope"), None);
        // 800x600 at 60 cells: 60*9 = 540 px wide, 405 px high, 23 rows of 18 px.
        assert_eq!(rows_for(Some((800, 600)), 60), 23);
        assert_eq!(rows_for(Some((1, 1)), 4), 2);
    }

    #[test]
    fn sequences_for_both_protocols() {
        let k = encode(ImageProtocol::Kitty, "QUJD", 4, 2);
        assert_eq!(k, "\x1b_Ga=T,f=100,q=2,C=1,c=4,r=2;QUJD\x1b\\");
        let long = "A".repeat(5000);
        let k = encode(ImageProtocol::Kitty, &long, 4, 2);
        assert!(k.starts_with("\x1b_Ga=T,f=100,q=2,C=1,c=4,r=2,m=1;"));
        assert!(k.contains("\x1b_Gm=0;"));
        let i = encode(ImageProtocol::ITerm2, "QUJD", 4, 2);
        assert_eq!(i, "\x1b]1337;File=inline=1;width=4;height=2:QUJD\x07");
    }

    #[test]
    fn marks_are_found_in_a_drawn_buffer() {
        let mut store = ImageStore::default();
        store.add("QUJD", "image/png");
        let r = store.add(PNG_1X1, "image/png");
        let display = Some(ImageDisplay {
            protocol: ImageProtocol::Kitty,
            width_cells: 4,
        });
        let lines = lines(&r, display, 20, Style::default());
        assert_eq!(lines.len(), 2);
        let area = ratatui::layout::Rect::new(0, 0, 20, 5);
        let mut buf = Buffer::empty(area);
        buf.set_line(3, 1, &lines[0], 20);
        let p = placements(&buf, &store, display);
        assert_eq!(
            p,
            vec![Placement {
                x: 3,
                y: 1,
                cols: 4,
                rows: 2,
                id: 1
            }]
        );
        assert_eq!(placements(&buf, &store, None), Vec::new());
        assert_eq!(fallback(&r), "[Image: [image/png] 1x1]");
    }
}
