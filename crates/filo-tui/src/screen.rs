//! What the loop does around each frame for pi's terminal settings: the progress indicator in
//! the terminal's tab (`terminal.showTerminalProgress`, OSC 9;4 while the agent or a compaction
//! works, repeated each second so the terminal does not drop it), a full repaint when the drawn
//! content gets shorter (`terminal.clearOnShrink`), and the hidden terminal cursor kept at the
//! editor's (`showHardwareCursor` off).

use std::io::Write;
use std::time::{Duration, Instant};

use ratatui::buffer::Buffer;

/// OSC 9;4 state 3: working, no known amount.
pub const PROGRESS_ON: &str = "\x1b]9;4;3\x07";
/// OSC 9;4 state 0: no progress.
pub const PROGRESS_OFF: &str = "\x1b]9;4;0;\x07";
/// How often the indicator is sent again while it is on.
const KEEPALIVE: Duration = Duration::from_secs(1);

#[derive(Debug, Default)]
pub(crate) struct Screen {
    /// The most rows with content drawn since the last full repaint.
    max_rows: usize,
    /// When the progress indicator was last sent (`None`: it is off).
    progress_sent: Option<Instant>,
}

/// Rows of `buf` with anything but blanks on them.
pub(crate) fn content_rows(buf: &Buffer) -> usize {
    let area = buf.area;
    (area.top()..area.bottom())
        .filter(|&y| {
            (area.left()..area.right()).any(|x| buf[(x, y)].symbol().chars().any(|c| c != ' '))
        })
        .count()
}

impl Screen {
    /// After a frame with `rows` rows of content: whether to clear and repaint now (pi's
    /// `clearOnShrink`: the content got shorter than before and no overlay is open).
    pub(crate) fn shrunk(&mut self, rows: usize, enabled: bool, overlay: bool) -> bool {
        if enabled && !overlay && rows < self.max_rows {
            self.max_rows = rows;
            return true;
        }
        self.max_rows = self.max_rows.max(rows);
        false
    }

    /// Send the progress indicator's state when it changes (and again each second while on).
    pub(crate) fn progress(&mut self, busy: bool, enabled: bool, out: &mut impl Write) {
        let busy = busy && enabled;
        let seq = match (busy, self.progress_sent) {
            (true, Some(at)) if at.elapsed() < KEEPALIVE => return,
            (true, _) => {
                self.progress_sent = Some(Instant::now());
                PROGRESS_ON
            }
            (false, Some(_)) => {
                self.progress_sent = None;
                PROGRESS_OFF
            }
            (false, None) => return,
        };
        let _ = out.write_all(seq.as_bytes());
        let _ = out.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_goes_on_repeats_and_goes_off() {
        let mut s = Screen::default();
        let mut out = Vec::new();
        s.progress(false, true, &mut out);
        assert!(out.is_empty());
        s.progress(true, true, &mut out);
        s.progress(true, true, &mut out);
        assert_eq!(
            String::from_utf8_lossy(&out),
            PROGRESS_ON,
            "once within a second"
        );
        s.progress_sent = Some(Instant::now() - KEEPALIVE);
        s.progress(true, true, &mut out);
        s.progress(false, true, &mut out);
        s.progress(false, true, &mut out);
        assert_eq!(
            String::from_utf8_lossy(&out),
            format!("{PROGRESS_ON}{PROGRESS_ON}{PROGRESS_OFF}")
        );
        let mut out = Vec::new();
        Screen::default().progress(true, false, &mut out);
        assert!(out.is_empty(), "off unless the setting is on");
    }

    #[test]
    fn a_shorter_frame_repaints_only_when_enabled_and_no_overlay() {
        let mut s = Screen::default();
        assert!(!s.shrunk(10, true, false));
        assert!(!s.shrunk(12, true, false));
        assert!(!s.shrunk(8, true, true), "an overlay is open");
        assert!(s.shrunk(8, true, false));
        assert!(!s.shrunk(8, true, false), "measured from the repaint");
        assert!(!s.shrunk(4, false, false));
    }
}
