//! The parallel, order-preserving content search behind `grep`.
//!
//! One thread walks the tree (sorted, `.gitignore`-aware) and numbers every file; worker threads
//! search files as they arrive; the caller merges results strictly in walk order and stops the
//! pipeline as soon as the first `limit` matches (in that order) are known. Output is therefore
//! deterministic — the same as a sequential sorted search — while walking and searching overlap.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, mpsc};

use grep_regex::RegexMatcher;
use grep_searcher::sinks::Bytes;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder};
use tokio_util::sync::CancellationToken;

use crate::error::Error;
use crate::walk::walker;

/// Files handed to a worker at a time: fewer lock hand-offs and wake-ups than one per file,
/// small enough to keep the workers balanced.
const JOB_BATCH: usize = 16;

/// One matching line: its 1-based number and its raw bytes (terminator included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub line_number: u64,
    pub bytes: Vec<u8>,
}

/// Matches in walk order: (file, its hits), and whether the limit was reached.
pub type Found = (Vec<(PathBuf, Vec<Hit>)>, bool);

fn new_searcher() -> Searcher {
    SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(b'\x00'))
        // A line longer than this is an error for the searcher (the file is skipped), so one
        // endless line never fills memory.
        .heap_limit(usize::try_from(crate::fileread::MAX_READ_BYTES).ok())
        .build()
}

/// Matching lines of one file, at most `limit`.
fn search_file(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    path: &Path,
    limit: usize,
) -> Vec<Hit> {
    let mut lines = Vec::new();
    let sink = Bytes(|line_number, bytes| {
        lines.push(Hit {
            line_number,
            bytes: bytes.to_vec(),
        });
        Ok(lines.len() < limit)
    });
    // Unreadable files are skipped, as ripgrep does (it only warns).
    let _ = searcher.search_path(matcher, path, sink);
    lines
}

/// Search one file (an explicitly named file is searched regardless of ignore rules).
pub fn search_single(matcher: &RegexMatcher, path: &Path, limit: usize) -> Found {
    let lines = search_file(&mut new_searcher(), matcher, path, limit);
    let reached = lines.len() >= limit;
    let found = if lines.is_empty() {
        Vec::new()
    } else {
        vec![(path.to_path_buf(), lines)]
    };
    (found, reached)
}

/// Merge results arriving out of order into walk order, stopping at `limit` matches.
struct Merger {
    pending: BTreeMap<usize, (PathBuf, Vec<Hit>)>,
    next: usize,
    count: usize,
    limit: usize,
    found: Vec<(PathBuf, Vec<Hit>)>,
}

impl Merger {
    /// Add one file's result; true once the limit is reached.
    fn add(&mut self, seq: usize, path: PathBuf, lines: Vec<Hit>) -> bool {
        self.pending.insert(seq, (path, lines));
        while let Some((path, mut lines)) = self.pending.remove(&self.next) {
            self.next += 1;
            if lines.is_empty() {
                continue;
            }
            lines.truncate(self.limit - self.count);
            self.count += lines.len();
            self.found.push((path, lines));
            if self.count >= self.limit {
                return true;
            }
        }
        false
    }
}

/// Search every file under `root` (sorted walk, ignore rules, optional glob) with `threads`
/// workers; the first `limit` matches in walk order.
pub fn search_tree(
    root: &Path,
    glob: Option<&str>,
    matcher: &RegexMatcher,
    limit: usize,
    threads: usize,
    cancel: &CancellationToken,
) -> Result<Found, Error> {
    let walk = walker(root, glob)?;
    let stop = AtomicBool::new(false);
    let (job_tx, job_rx) = mpsc::sync_channel::<Vec<(usize, PathBuf)>>(64);
    let job_rx = Mutex::new(job_rx);
    let (result_tx, result_rx) = mpsc::channel::<Vec<(usize, PathBuf, Vec<Hit>)>>();
    let mut merger = Merger {
        pending: BTreeMap::new(),
        next: 0,
        count: 0,
        limit,
        found: Vec::new(),
    };
    let mut reached = false;
    std::thread::scope(|scope| {
        let stop = &stop;
        scope.spawn(move || {
            let files = walk
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_some_and(|t| t.is_file()));
            let mut batch = Vec::with_capacity(JOB_BATCH);
            for (seq, entry) in files.enumerate() {
                if stop.load(Ordering::Relaxed) || cancel.is_cancelled() {
                    return;
                }
                batch.push((seq, entry.into_path()));
                if batch.len() == JOB_BATCH && job_tx.send(std::mem::take(&mut batch)).is_err() {
                    return;
                }
            }
            if !batch.is_empty() {
                let _ = job_tx.send(batch);
            }
        });
        for _ in 0..threads.max(1) {
            let (job_rx, result_tx, matcher) = (&job_rx, result_tx.clone(), matcher.clone());
            scope.spawn(move || {
                let mut searcher = new_searcher();
                loop {
                    // The lock is held only while taking one batch of files.
                    let job = job_rx.lock().map(|rx| rx.recv());
                    let Ok(Ok(batch)) = job else { break };
                    let results: Vec<_> = batch
                        .into_iter()
                        .map(|(seq, path)| {
                            let skip = stop.load(Ordering::Relaxed) || cancel.is_cancelled();
                            let hits = if skip {
                                Vec::new()
                            } else {
                                search_file(&mut searcher, &matcher, &path, limit)
                            };
                            (seq, path, hits)
                        })
                        .collect();
                    if result_tx.send(results).is_err() {
                        break;
                    }
                }
            });
        }
        drop(result_tx);
        for results in result_rx.iter() {
            for (seq, path, hits) in results {
                if !reached && merger.add(seq, path, hits) {
                    reached = true;
                    stop.store(true, Ordering::Relaxed);
                }
            }
        }
    });
    if cancel.is_cancelled() {
        return Err(Error::Aborted);
    }
    Ok((merger.found, reached))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(numbers: &[u64]) -> Vec<Hit> {
        numbers
            .iter()
            .map(|&line_number| Hit {
                line_number,
                bytes: Vec::new(),
            })
            .collect()
    }

    #[test]
    fn merger_restores_walk_order_and_stops_at_the_limit() {
        let mut m = Merger {
            pending: BTreeMap::new(),
            next: 0,
            count: 0,
            limit: 3,
            found: Vec::new(),
        };
        assert!(!m.add(2, "c".into(), hits(&[1, 2])));
        assert!(!m.add(1, "b".into(), hits(&[])));
        assert!(m.found.is_empty());
        assert!(m.add(0, "a".into(), hits(&[5])));
        assert_eq!(
            m.found,
            vec![
                (PathBuf::from("a"), hits(&[5])),
                (PathBuf::from("c"), hits(&[1, 2]))
            ]
        );
        let mut m = Merger {
            pending: BTreeMap::new(),
            next: 0,
            count: 0,
            limit: 2,
            found: Vec::new(),
        };
        assert!(m.add(0, "a".into(), hits(&[1, 2, 3])));
        assert_eq!(m.found, vec![(PathBuf::from("a"), hits(&[1, 2]))]);
    }
}
