//! Directory walking shared by grep and find: ripgrep's `ignore` walker with hidden files
//! included, `.gitignore`/`.ignore` honoured (also outside git repositories), `.git` skipped,
//! entries in a stable sorted order.

use std::path::Path;

use ignore::overrides::OverrideBuilder;
use ignore::{Walk, WalkBuilder};

use crate::error::Error;

/// A sorted walk of `root`, optionally restricted by a ripgrep-style `--glob`.
pub fn walker(root: &Path, glob: Option<&str>) -> Result<Walk, Error> {
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(false)
        .require_git(false)
        .parents(true)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|entry| entry.file_name() != ".git");
    if let Some(glob) = glob {
        let mut overrides = OverrideBuilder::new(root);
        overrides
            .add(glob)
            .map_err(|e| Error::message(format!("error parsing glob '{glob}': {e}")))?;
        let built = overrides
            .build()
            .map_err(|e| Error::message(format!("error parsing glob '{glob}': {e}")))?;
        builder.overrides(built);
    }
    Ok(builder.build())
}

/// `path` relative to `root` with `/` separators (the path itself when it is not under `root`).
pub fn relative_slash(path: &Path, root: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}
