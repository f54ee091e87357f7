//! Path resolution shared by the tools (pi `path-utils.ts`): strip one leading `@`, turn Unicode
//! spaces into plain spaces, expand `~`, resolve against the session cwd, normalise `.` and `..`
//! lexically (like Node's `path.resolve`). `read` additionally tries the macOS file-name variants.

use std::path::{Component, Path, PathBuf};

use unicode_normalization::UnicodeNormalization;

const NARROW_NBSP: char = '\u{202F}';

fn is_unicode_space(c: char) -> bool {
    matches!(
        c,
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}'
    )
}

/// Strip one leading `@`, normalise Unicode spaces, expand `~` and `~/…` (when a home is known).
pub fn expand_path(input: &str, home: Option<&Path>) -> String {
    let stripped = input.strip_prefix('@').unwrap_or(input);
    let normalized: String = stripped
        .chars()
        .map(|c| if is_unicode_space(c) { ' ' } else { c })
        .collect();
    match home {
        Some(home) if normalized == "~" => home.to_string_lossy().into_owned(),
        Some(home) if normalized.starts_with("~/") => {
            format!("{}{}", home.to_string_lossy(), &normalized[1..])
        }
        _ => normalized,
    }
}

/// Lexically normalise an absolute path: drop `.`, apply `..`, remove trailing separators.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Prefix(p) => out.push(p.as_os_str()),
            Component::RootDir => out.push(Component::RootDir.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => out.push(name),
        }
    }
    out
}

/// The absolute path a tool argument names, relative paths resolved against `cwd`.
pub fn resolve_to_cwd(input: &str, cwd: &Path, home: Option<&Path>) -> PathBuf {
    let expanded = expand_path(input, home);
    let path = Path::new(&expanded);
    if path.is_absolute() {
        normalize(path)
    } else {
        normalize(&cwd.join(path))
    }
}

/// `resolve_to_cwd`, then — if nothing exists there — the variants macOS uses in screenshot names:
/// a narrow no-break space before `AM.`/`PM.`, the NFD form, `'` as U+2019, and NFD with U+2019.
pub fn resolve_read_path(input: &str, cwd: &Path, home: Option<&Path>) -> PathBuf {
    let resolved = resolve_to_cwd(input, cwd, home);
    if resolved.exists() {
        return resolved;
    }
    let text = resolved.to_string_lossy().into_owned();
    let am_pm = text
        .replace(" AM.", &format!("{NARROW_NBSP}AM."))
        .replace(" PM.", &format!("{NARROW_NBSP}PM."));
    let nfd: String = text.nfd().collect();
    let curly = text.replace('\'', "\u{2019}");
    let nfd_curly = nfd.replace('\'', "\u{2019}");
    [am_pm, nfd, curly, nfd_curly]
        .into_iter()
        .filter(|variant| *variant != text)
        .map(PathBuf::from)
        .find(|variant| variant.exists())
        .unwrap_or(resolved)
}

/// A path as text for messages.
pub fn display(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_at_spaces_and_tilde() {
        let home = Path::new("/home/u");
        assert_eq!(expand_path("@src/a.rs", Some(home)), "src/a.rs");
        assert_eq!(expand_path("a\u{00A0}b\u{3000}c", Some(home)), "a b c");
        assert_eq!(expand_path("~", Some(home)), "/home/u");
        assert_eq!(expand_path("~/x", Some(home)), "/home/u/x");
        assert_eq!(expand_path("~x", Some(home)), "~x");
        assert_eq!(expand_path("~/x", None), "~/x");
    }

    #[test]
    fn resolves_like_node() {
        let cwd = Path::new("/w/proj");
        assert_eq!(resolve_to_cwd(".", cwd, None), PathBuf::from("/w/proj"));
        assert_eq!(
            resolve_to_cwd("a/../b/./c/", cwd, None),
            PathBuf::from("/w/proj/b/c")
        );
        assert_eq!(
            resolve_to_cwd("/etc/../tmp", cwd, None),
            PathBuf::from("/tmp")
        );
        assert_eq!(resolve_to_cwd("../..", cwd, None), PathBuf::from("/"));
    }

    #[test]
    fn read_path_tries_macos_variants() {
        let dir = tempfile::tempdir().unwrap();
        let nfd_name = "cafe\u{301}.txt";
        std::fs::write(dir.path().join(nfd_name), "x").unwrap();
        std::fs::write(dir.path().join("Shot 1.02.03\u{202F}PM.png"), "x").unwrap();
        std::fs::write(dir.path().join("Bob\u{2019}s cafe\u{301}.txt"), "x").unwrap();
        let found = resolve_read_path("caf\u{e9}.txt", dir.path(), None);
        assert_eq!(found, dir.path().join(nfd_name));
        let found = resolve_read_path("Shot 1.02.03 PM.png", dir.path(), None);
        assert_eq!(found, dir.path().join("Shot 1.02.03\u{202F}PM.png"));
        let found = resolve_read_path("Bob's caf\u{e9}.txt", dir.path(), None);
        assert_eq!(found, dir.path().join("Bob\u{2019}s cafe\u{301}.txt"));
        let missing = resolve_read_path("none.txt", dir.path(), None);
        assert_eq!(missing, dir.path().join("none.txt"));
    }
}
