//! Bash output accumulation (pi semantics): a rolling tail of at least 100 KiB for display, whole
//! output counters, and — once the output passes 50 KiB — the full output spilled from the start
//! into `<tmpdir>/pi-bash-<16 hex>.log`.

use std::collections::hash_map::RandomState;
use std::fs::File;
use std::hash::{BuildHasher, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::error::Error;
use crate::truncate::{DEFAULT_MAX_BYTES, Limits, Truncation, truncate_tail};

/// Bytes kept for the displayed tail (pi keeps chunks totalling at least twice the byte budget).
const TAIL_BYTES: usize = 2 * DEFAULT_MAX_BYTES;
/// The most output one spill file holds (64 MiB); past it a closing note says how much was lost.
pub const SPILL_FILE_CAP: usize = 64 * 1024 * 1024;

/// Merged stdout+stderr of one command.
#[derive(Debug)]
pub struct OutputAccumulator {
    temp_dir: PathBuf,
    tail: Vec<u8>,
    trimmed: bool,
    total_bytes: usize,
    newlines: usize,
    last_line_bytes: usize,
    spill: Option<(PathBuf, File)>,
    /// Bytes written to the spill file (stops at [`SPILL_FILE_CAP`]).
    spilled: usize,
}

/// A view of the output so far.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub truncation: Truncation,
    pub full_output_path: Option<PathBuf>,
}

impl Snapshot {
    /// `{truncation?, fullOutputPath?}` as pi sends it with updates and results.
    pub fn details(&self) -> Map<String, Value> {
        let mut details = Map::new();
        if self.truncation.truncated {
            details.insert("truncation".into(), self.truncation.to_json());
        }
        if let Some(path) = &self.full_output_path {
            details.insert(
                "fullOutputPath".into(),
                Value::String(path.to_string_lossy().into_owned()),
            );
        }
        details
    }
}

fn random_hex() -> String {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    hasher.write_u32(std::process::id());
    format!("{:016x}", hasher.finish())
}

impl OutputAccumulator {
    /// An empty accumulator that spills into `temp_dir`.
    pub fn new(temp_dir: &Path) -> Self {
        OutputAccumulator {
            temp_dir: temp_dir.to_path_buf(),
            tail: Vec::new(),
            trimmed: false,
            total_bytes: 0,
            newlines: 0,
            last_line_bytes: 0,
            spill: None,
            spilled: 0,
        }
    }

    /// Add a chunk; may create or extend the spill file.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), Error> {
        self.total_bytes += chunk.len();
        match chunk.iter().rposition(|&b| b == b'\n') {
            Some(pos) => {
                self.newlines += chunk.iter().filter(|&&b| b == b'\n').count();
                self.last_line_bytes = chunk.len() - pos - 1;
            }
            None => self.last_line_bytes += chunk.len(),
        }
        self.tail.extend_from_slice(chunk);
        if let Some((path, file)) = &mut self.spill {
            let room = SPILL_FILE_CAP.saturating_sub(self.spilled);
            let part = &chunk[..chunk.len().min(room)];
            file.write_all(part)
                .map_err(|e| Error::io("write", path, e))?;
            self.spilled += part.len();
        } else if self.total_bytes > DEFAULT_MAX_BYTES {
            self.start_spill()?;
        }
        if self.tail.len() > 2 * TAIL_BYTES {
            let mut cut = self.tail.len() - TAIL_BYTES;
            while cut < self.tail.len() && (self.tail[cut] & 0xC0) == 0x80 {
                cut += 1;
            }
            self.tail.drain(..cut);
            self.trimmed = true;
        }
        Ok(())
    }

    /// Create the spill file with everything so far (the tail is still the whole output here:
    /// it is only trimmed long after the 50 KiB spill threshold).
    fn start_spill(&mut self) -> Result<(), Error> {
        let path = self.temp_dir.join(format!("pi-bash-{}.log", random_hex()));
        let mut file = File::create(&path).map_err(|e| Error::io("open", &path, e))?;
        let part = &self.tail[..self.tail.len().min(SPILL_FILE_CAP)];
        file.write_all(part)
            .map_err(|e| Error::io("write", &path, e))?;
        self.spilled = part.len();
        self.spill = Some((path, file));
        Ok(())
    }

    /// Flush the spill file; if the output is truncated (e.g. by lines) but was never spilled,
    /// spill it now so the notice can name a full-output file.
    pub fn finish(&mut self) -> Result<(), Error> {
        if self.spill.is_none() && self.snapshot().truncation.truncated {
            self.start_spill()?;
        }
        if let Some((path, file)) = &mut self.spill {
            if self.total_bytes > self.spilled {
                let note = format!(
                    "\n[filo: output past {} was not saved; {} in total]\n",
                    crate::truncate::format_size(SPILL_FILE_CAP),
                    crate::truncate::format_size(self.total_bytes)
                );
                file.write_all(note.as_bytes())
                    .map_err(|e| Error::io("write", path, e))?;
                // Written once: a second finish must not add it again.
                self.spilled = self.total_bytes;
            }
            file.flush().map_err(|e| Error::io("write", path, e))?;
        }
        Ok(())
    }

    /// The spill file, once the output has one.
    pub fn full_output_path(&self) -> Option<&Path> {
        self.spill.as_ref().map(|(path, _)| path.as_path())
    }

    /// Byte size of the output's last line (for the partial-line notice).
    pub fn last_line_bytes(&self) -> usize {
        self.last_line_bytes
    }

    /// The tail-truncated view; totals describe the whole output, not just the kept tail.
    pub fn snapshot(&self) -> Snapshot {
        let text = String::from_utf8_lossy(&self.tail);
        let mut truncation = truncate_tail(&text, Limits::default());
        if self.trimmed {
            truncation.truncated = true;
            truncation.total_lines = self.newlines + 1;
            truncation.total_bytes = self.total_bytes;
        }
        Snapshot {
            truncation,
            full_output_path: self.spill.as_ref().map(|(path, _)| path.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_stays_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let mut acc = OutputAccumulator::new(dir.path());
        acc.push(b"hello\nwor").unwrap();
        acc.push(b"ld\n").unwrap();
        let snap = acc.snapshot();
        assert_eq!(snap.truncation.content, "hello\nworld\n");
        assert!(!snap.truncation.truncated);
        assert_eq!(snap.full_output_path, None);
        assert!(snap.details().is_empty());
    }

    #[test]
    fn large_output_spills_everything_and_counts_all_lines() {
        let dir = tempfile::tempdir().unwrap();
        let mut acc = OutputAccumulator::new(dir.path());
        let mut all = Vec::new();
        for i in 0..20_000 {
            let line = format!("line {i:05}\n");
            all.extend_from_slice(line.as_bytes());
            acc.push(line.as_bytes()).unwrap();
        }
        acc.finish().unwrap();
        let snap = acc.snapshot();
        let path = snap.full_output_path.clone().unwrap();
        assert!(
            path.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("pi-bash-")
        );
        assert_eq!(std::fs::read(&path).unwrap(), all);
        assert_eq!(snap.truncation.total_lines, 20_001);
        assert_eq!(snap.truncation.total_bytes, all.len());
        assert_eq!(snap.truncation.output_lines, 2000);
        assert!(snap.truncation.content.ends_with("line 19999\n"));
    }

    #[test]
    fn a_spill_file_stops_at_its_cap_with_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let mut acc = OutputAccumulator::new(dir.path());
        let chunk = vec![b'y'; 1024 * 1024];
        for _ in 0..(SPILL_FILE_CAP / chunk.len() + 3) {
            acc.push(&chunk).unwrap();
        }
        acc.finish().unwrap();
        let path = acc.snapshot().full_output_path.unwrap();
        let saved = std::fs::read(&path).unwrap();
        let note = "\n[filo: output past 64.0MB was not saved; 67.0MB in total]\n";
        assert_eq!(saved.len(), SPILL_FILE_CAP + note.len());
        assert!(saved.ends_with(note.as_bytes()));
    }

    #[test]
    fn many_short_lines_are_spilled_at_finish() {
        let dir = tempfile::tempdir().unwrap();
        let mut acc = OutputAccumulator::new(dir.path());
        acc.push("x\n".repeat(3000).as_bytes()).unwrap();
        assert_eq!(acc.snapshot().full_output_path, None);
        acc.finish().unwrap();
        let snap = acc.snapshot();
        assert_eq!(
            snap.truncation.truncated_by,
            Some(crate::truncate::TruncatedBy::Lines)
        );
        let path = snap.full_output_path.unwrap();
        assert_eq!(std::fs::read_to_string(path).unwrap(), "x\n".repeat(3000));
    }
}
