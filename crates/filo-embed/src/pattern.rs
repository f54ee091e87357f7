//! A regex compiled once, on first use, and immutable afterwards.

use std::sync::OnceLock;

use regex::Regex;

/// One compiled-on-first-use regex.
pub(crate) struct Pattern {
    source: &'static str,
    cell: OnceLock<Option<Regex>>,
}

impl Pattern {
    pub(crate) const fn new(source: &'static str) -> Self {
        Self {
            source,
            cell: OnceLock::new(),
        }
    }

    /// The compiled regex; `None` only if the source does not compile (a test proves every
    /// pattern of this crate compiles).
    pub(crate) fn get(&self) -> Option<&Regex> {
        self.cell
            .get_or_init(|| Regex::new(self.source).ok())
            .as_ref()
    }

    pub(crate) fn is_match(&self, text: &str) -> bool {
        self.get().is_some_and(|re| re.is_match(text))
    }

    #[cfg(test)]
    pub(crate) fn compiles(&self) -> bool {
        Regex::new(self.source).is_ok()
    }
}
