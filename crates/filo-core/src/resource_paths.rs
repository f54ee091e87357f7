//! Which skill, prompt-template and theme files a session loads, as pi 0.73.1 resolves them
//! (package-manager.js `resolve`): the `skills` / `prompts` / `themes` lists of the project
//! settings (paths relative to `<cwd>/.pi`) and of the global settings (relative to the agent
//! dir), then the auto-discovered directories, which the lists' `!x` / `+x` / `-x` entries also
//! enable or disable.
//!
//! A list entry is a plain path (a file, or a directory scanned for resources) unless it starts
//! with `!` (exclude by glob), `+` (force-include an exact path), `-` (force-exclude an exact
//! path) or contains `*` / `?` (include by glob). Globs are tried against the path relative to
//! the list's base directory, the file name and the absolute path; for a `SKILL.md` also against
//! its directory (relative, name, absolute). See [`crate::glob`] for the glob semantics.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::glob;

/// A kind of resource the settings lists select.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceKind {
    Skills,
    Prompts,
    Themes,
}

impl ResourceKind {
    /// The settings key and the directory name under the agent dir and `.pi`.
    pub fn key(self) -> &'static str {
        match self {
            ResourceKind::Skills => "skills",
            ResourceKind::Prompts => "prompts",
            ResourceKind::Themes => "themes",
        }
    }

    fn extension(self) -> &'static str {
        match self {
            ResourceKind::Themes => ".json",
            _ => ".md",
        }
    }
}

/// The project's or the user's part of the resolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Project,
    User,
}

/// Where one scope's list and discovered files live.
#[derive(Debug, Clone)]
pub struct ScopeInput {
    /// The settings list (`skills`, `prompts` or `themes`), empty when unset.
    pub entries: Vec<String>,
    /// What the list's relative paths and globs are taken against: `<cwd>/.pi` for the project,
    /// the agent dir for the user.
    pub base: PathBuf,
    /// The auto-discovered directory (`<base>/skills` etc.; for the user's, filo may read pi's).
    pub auto_dir: PathBuf,
}

/// A file found, whether the lists leave it enabled, and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    pub path: PathBuf,
    pub enabled: bool,
    pub scope: Scope,
    /// Named by a settings list (rather than auto-discovered).
    pub from_settings: bool,
}

/// Every file of `kind` in pi's precedence order (project list, project discovered, user list,
/// user discovered), each path once. `home` is for `~` and `~/.agents/skills`.
pub fn resolve(
    kind: ResourceKind,
    project: &ScopeInput,
    user: &ScopeInput,
    cwd: &Path,
    home: &Path,
) -> Vec<Resolved> {
    let mut all: Vec<Resolved> = Vec::new();
    let add = |all: &mut Vec<Resolved>, path: PathBuf, enabled, scope, from_settings| {
        if !all.iter().any(|r| r.path == path) {
            all.push(Resolved {
                path,
                enabled,
                scope,
                from_settings,
            });
        }
    };
    for (input, scope) in [(project, Scope::Project), (user, Scope::User)] {
        let (plain, patterns): (Vec<&String>, Vec<&String>) =
            input.entries.iter().partition(|e| !is_pattern(e));
        let roots: Vec<PathBuf> = plain
            .iter()
            .map(|p| path_from_base(p, &input.base, home))
            .collect();
        let files = collect_from_paths(&roots, kind);
        let enabled = apply_patterns(&files, &patterns, &input.base);
        for f in files {
            let on = enabled.contains(&f);
            add(&mut all, f, on, scope, true);
        }
    }
    let user_agents = home.join(".agents").join("skills");
    for (input, scope) in [(project, Scope::Project), (user, Scope::User)] {
        let mut found = match kind {
            ResourceKind::Skills => collect_skill_entries(&input.auto_dir, true),
            _ => collect_flat(&input.auto_dir, kind.extension()),
        };
        if kind == ResourceKind::Skills {
            let agents_dirs = match scope {
                Scope::Project => ancestor_agents_skill_dirs(cwd)
                    .into_iter()
                    .filter(|d| *d != user_agents)
                    .collect(),
                Scope::User => vec![user_agents.clone()],
            };
            for dir in agents_dirs {
                found.extend(collect_skill_entries(&dir, false));
            }
        }
        for f in found {
            let on = enabled_by_overrides(&f, &input.entries, &input.base);
            add(&mut all, f, on, scope, false);
        }
    }
    let rank = |r: &Resolved| (r.scope == Scope::User) as u8 * 2 + u8::from(!r.from_settings);
    all.sort_by_key(rank);
    let mut seen = HashSet::new();
    all.retain(|r| seen.insert(fs::canonicalize(&r.path).unwrap_or_else(|_| r.path.clone())));
    all
}

/// The enabled files of [`resolve`], in its order.
pub fn enabled(
    kind: ResourceKind,
    project: &ScopeInput,
    user: &ScopeInput,
    cwd: &Path,
    home: &Path,
) -> Vec<Resolved> {
    resolve(kind, project, user, cwd, home)
        .into_iter()
        .filter(|r| r.enabled)
        .collect()
}

fn is_pattern(s: &str) -> bool {
    s.starts_with(['!', '+', '-']) || s.contains(['*', '?'])
}

/// `~`, `~/x` and `~x` from `home`; other paths relative to `base`.
pub fn path_from_base(input: &str, base: &Path, home: &Path) -> PathBuf {
    let t = input.trim();
    if t == "~" {
        return home.to_path_buf();
    }
    if let Some(rest) = t.strip_prefix("~/").or_else(|| t.strip_prefix('~')) {
        return normalize(&home.join(rest));
    }
    normalize(&base.join(t))
}

/// `.` and `..` folded away without touching the filesystem (node's `path.resolve`).
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

fn posix(p: &Path) -> String {
    p.to_string_lossy().replace('\\', "/")
}

/// `path` relative to `base` as node's `path.relative` gives it (`..` segments when outside).
fn relative(base: &Path, path: &Path) -> String {
    let b: Vec<_> = base.components().collect();
    let p: Vec<_> = path.components().collect();
    let common = b.iter().zip(&p).take_while(|(x, y)| x == y).count();
    let mut parts: Vec<String> = vec!["..".to_owned(); b.len() - common];
    parts.extend(
        p[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    parts.join("/")
}

/// The forms of `file` a glob is tried on: relative, name, absolute (and for a `SKILL.md` the
/// same three of its directory).
fn glob_forms(file: &Path, base: &Path) -> Vec<String> {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut forms = vec![relative(base, file), name.clone(), posix(file)];
    if name == "SKILL.md"
        && let Some(dir) = file.parent()
    {
        forms.push(relative(base, dir));
        forms.push(
            dir.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        );
        forms.push(posix(dir));
    }
    forms
}

fn matches_any_glob(file: &Path, patterns: &[&str], base: &Path) -> bool {
    let forms = glob_forms(file, base);
    patterns.iter().any(|p| {
        let p = p.replace('\\', "/");
        forms.iter().any(|f| glob::matches(&p, f))
    })
}

/// `+x` / `-x` compare exactly: with the relative or absolute path (a leading `./` dropped), and
/// for a `SKILL.md` its directory's.
fn matches_any_exact(file: &Path, patterns: &[&str], base: &Path) -> bool {
    let mut forms = vec![relative(base, file), posix(file)];
    if file.file_name().is_some_and(|n| n == "SKILL.md")
        && let Some(dir) = file.parent()
    {
        forms.push(relative(base, dir));
        forms.push(posix(dir));
    }
    patterns.iter().any(|p| {
        let p = p
            .strip_prefix("./")
            .or_else(|| p.strip_prefix(".\\"))
            .unwrap_or(p)
            .replace('\\', "/");
        forms.contains(&p)
    })
}

struct Split<'a> {
    includes: Vec<&'a str>,
    excludes: Vec<&'a str>,
    force_in: Vec<&'a str>,
    force_out: Vec<&'a str>,
}

fn split<'a>(patterns: impl IntoIterator<Item = &'a str>) -> Split<'a> {
    let mut s = Split {
        includes: Vec::new(),
        excludes: Vec::new(),
        force_in: Vec::new(),
        force_out: Vec::new(),
    };
    for p in patterns {
        if let Some(r) = p.strip_prefix('+') {
            s.force_in.push(r);
        } else if let Some(r) = p.strip_prefix('-') {
            s.force_out.push(r);
        } else if let Some(r) = p.strip_prefix('!') {
            s.excludes.push(r);
        } else {
            s.includes.push(p);
        }
    }
    s
}

/// The files of a settings list left enabled by its patterns: the globs (all files when there
/// are none), minus `!` globs, plus `+` exact paths, minus `-` exact paths.
fn apply_patterns(files: &[PathBuf], patterns: &[&String], base: &Path) -> HashSet<PathBuf> {
    let s = split(patterns.iter().map(|p| p.as_str()));
    files
        .iter()
        .filter(|f| {
            let included = (s.includes.is_empty() || matches_any_glob(f, &s.includes, base))
                && !matches_any_glob(f, &s.excludes, base);
            let forced = !s.force_in.is_empty() && matches_any_exact(f, &s.force_in, base);
            (included || forced) && !matches_any_exact(f, &s.force_out, base)
        })
        .cloned()
        .collect()
}

/// An auto-discovered file under a list's overrides: `!` globs disable, `+` re-enables, `-`
/// disables (plain entries and include globs do not apply).
fn enabled_by_overrides(file: &Path, entries: &[String], base: &Path) -> bool {
    let s = split(
        entries
            .iter()
            .map(String::as_str)
            .filter(|e| e.starts_with(['!', '+', '-'])),
    );
    let mut on = !matches_any_glob(file, &s.excludes, base);
    if matches_any_exact(file, &s.force_in, base) {
        on = true;
    }
    if matches_any_exact(file, &s.force_out, base) {
        on = false;
    }
    on
}

/// `.gitignore`, `.ignore` and `.fdignore` rules met while walking down from `root`, each
/// directory's lines prefixed with its path from `root` (as pi does).
struct Ignores {
    root: PathBuf,
    lines: Vec<String>,
    matcher: Gitignore,
}

impl Ignores {
    fn new(root: &Path) -> Ignores {
        Ignores {
            root: root.to_path_buf(),
            lines: Vec::new(),
            matcher: Gitignore::empty(),
        }
    }

    fn add_dir(&mut self, dir: &Path) {
        let rel = relative(&self.root, dir);
        let prefix = if rel.is_empty() {
            String::new()
        } else {
            format!("{rel}/")
        };
        let before = self.lines.len();
        for name in [".gitignore", ".ignore", ".fdignore"] {
            let Ok(text) = fs::read_to_string(dir.join(name)) else {
                continue;
            };
            for line in text.lines() {
                let t = line.trim();
                if t.is_empty() || (t.starts_with('#') && !t.starts_with("\\#")) {
                    continue;
                }
                let (neg, rest) = match line.strip_prefix('!') {
                    Some(r) => (true, r),
                    None => (
                        false,
                        line.strip_prefix('\\')
                            .filter(|r| r.starts_with('!'))
                            .unwrap_or(line),
                    ),
                };
                let rest = rest.strip_prefix('/').unwrap_or(rest);
                self.lines
                    .push(format!("{}{prefix}{rest}", if neg { "!" } else { "" }));
            }
        }
        if self.lines.len() != before {
            let mut b = GitignoreBuilder::new(&self.root);
            for l in &self.lines {
                // A line the matcher cannot parse is skipped, as pi's `ignore` does.
                let _ = b.add_line(None, l);
            }
            self.matcher = b.build().unwrap_or_else(|_| Gitignore::empty());
        }
    }

    fn ignores(&self, path: &Path, is_dir: bool) -> bool {
        let rel = relative(&self.root, path);
        self.matcher.matched(&rel, is_dir).is_ignore()
    }
}

/// A directory's entries (symlinks followed), hidden ones and `node_modules` left out, in name
/// order. `(path, name, is_dir, is_file)`.
fn entries(dir: &Path) -> Vec<(PathBuf, String, bool, bool)> {
    let Ok(rd) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<_> = rd
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let path = e.path();
            let meta = fs::metadata(&path).ok()?;
            Some((path, name, meta.is_dir(), meta.is_file()))
        })
        .collect();
    out.sort_by(|a, b| a.1.cmp(&b.1));
    out
}

fn visible(name: &str) -> bool {
    !name.starts_with('.') && name != "node_modules"
}

/// Skill files under `dir`: a directory with `SKILL.md` is that file alone; otherwise its
/// subdirectories are searched, and (`root_md`, at the top only) its `*.md` files count.
pub fn collect_skill_entries(dir: &Path, root_md: bool) -> Vec<PathBuf> {
    let mut ig = Ignores::new(dir);
    let mut out = Vec::new();
    skill_walk(dir, root_md, true, &mut ig, &mut out);
    out
}

fn skill_walk(dir: &Path, root_md: bool, top: bool, ig: &mut Ignores, out: &mut Vec<PathBuf>) {
    if !dir.is_dir() {
        return;
    }
    ig.add_dir(dir);
    let list = entries(dir);
    if let Some((p, ..)) = list
        .iter()
        .find(|(p, name, _, file)| name == "SKILL.md" && *file && !ig.ignores(p, false))
    {
        out.push(p.clone());
        return;
    }
    for (p, name, is_dir, is_file) in list {
        if !visible(&name) {
            continue;
        }
        if root_md && top && is_file && name.ends_with(".md") && !ig.ignores(&p, false) {
            out.push(p);
        } else if is_dir && !ig.ignores(&p, true) {
            skill_walk(&p, root_md, false, ig, out);
        }
    }
}

/// Files ending in `ext` anywhere under `dir` (a settings directory of prompts or themes).
fn collect_files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    fn walk(dir: &Path, ext: &str, ig: &mut Ignores, out: &mut Vec<PathBuf>) {
        ig.add_dir(dir);
        for (p, name, is_dir, is_file) in entries(dir) {
            if !visible(&name) || ig.ignores(&p, is_dir) {
                continue;
            }
            if is_dir {
                walk(&p, ext, ig, out);
            } else if is_file && name.ends_with(ext) {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    if dir.is_dir() {
        walk(dir, ext, &mut Ignores::new(dir), &mut out);
    }
    out
}

/// Files ending in `ext` directly in `dir` (the discovered prompts and themes directories).
fn collect_flat(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut ig = Ignores::new(dir);
    ig.add_dir(dir);
    entries(dir)
        .into_iter()
        .filter(|(p, name, _, is_file)| {
            visible(name) && *is_file && name.ends_with(ext) && !ig.ignores(p, false)
        })
        .map(|(p, ..)| p)
        .collect()
}

/// The settings list's plain paths: a file as it is, a directory scanned for `kind`; missing
/// ones are skipped.
fn collect_from_paths(paths: &[PathBuf], kind: ResourceKind) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_file() {
            out.push(p.clone());
        } else if p.is_dir() {
            out.extend(match kind {
                ResourceKind::Skills => collect_skill_entries(p, true),
                _ => collect_files(p, kind.extension()),
            });
        }
    }
    out
}

/// `<dir>/.agents/skills` for `cwd` and each parent up to the git root (or the filesystem root).
fn ancestor_agents_skill_dirs(cwd: &Path) -> Vec<PathBuf> {
    let git_root = cwd.ancestors().find(|d| d.join(".git").exists());
    let mut out = Vec::new();
    for dir in cwd.ancestors() {
        out.push(dir.join(".agents").join("skills"));
        if Some(dir) == git_root {
            break;
        }
    }
    out
}

#[cfg(test)]
#[path = "resource_paths_tests.rs"]
mod tests;
