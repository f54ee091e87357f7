//! Expected outcomes are what pi 0.73.1's own resolver gives for the same trees and lists
//! (`scripts/record-pi/resource-paths.mjs` prints them, case by case).

use std::path::{Path, PathBuf};

use super::*;

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

struct Tree {
    _t: tempfile::TempDir,
    root: PathBuf,
}

impl Tree {
    fn new(files: &[&str]) -> Tree {
        let t = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(t.path()).unwrap();
        for f in files {
            write(&root.join(f), "x");
        }
        Tree { _t: t, root }
    }

    fn scopes(
        &self,
        project: &[&str],
        user: &[&str],
        kind: ResourceKind,
    ) -> (ScopeInput, ScopeInput) {
        let own = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect();
        let pbase = self.root.join("proj/.pi");
        let ubase = self.root.join("agent");
        (
            ScopeInput {
                entries: own(project),
                auto_dir: pbase.join(kind.key()),
                base: pbase,
            },
            ScopeInput {
                entries: own(user),
                auto_dir: ubase.join(kind.key()),
                base: ubase,
            },
        )
    }

    /// Enabled paths relative to the root.
    fn enabled(&self, kind: ResourceKind, project: &[&str], user: &[&str]) -> Vec<String> {
        let (p, u) = self.scopes(project, user, kind);
        enabled(
            kind,
            &p,
            &u,
            &self.root.join("proj"),
            &self.root.join("home"),
        )
        .into_iter()
        .map(|r| {
            r.path
                .strip_prefix(&self.root)
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect()
    }
}

#[test]
fn lists_globs_excludes_and_forced_paths() {
    let t = Tree::new(&[
        "agent/prompts/a.md",
        "agent/prompts/b.md",
        "agent/extra/c.md",
        "agent/extra/sub/d.md",
        "agent/extra/sub/e.txt",
        "proj/.pi/prompts/p.md",
    ]);
    let k = ResourceKind::Prompts;
    // Nothing set: the discovered ones, project first.
    assert_eq!(
        t.enabled(k, &[], &[]),
        [
            "proj/.pi/prompts/p.md",
            "agent/prompts/a.md",
            "agent/prompts/b.md"
        ]
    );
    // A directory is scanned recursively; listed files come before the discovered ones.
    assert_eq!(
        t.enabled(k, &[], &["extra"]),
        [
            "proj/.pi/prompts/p.md",
            "agent/extra/c.md",
            "agent/extra/sub/d.md",
            "agent/prompts/a.md",
            "agent/prompts/b.md"
        ]
    );
    // A glob keeps the listed files it matches; `!` drops discovered ones too.
    assert_eq!(
        t.enabled(k, &[], &["extra", "extra/sub/*", "!a.md"]),
        [
            "proj/.pi/prompts/p.md",
            "agent/extra/sub/d.md",
            "agent/prompts/b.md"
        ]
    );
    // `+` brings back an exact path, `-` removes one over everything.
    assert_eq!(
        t.enabled(
            k,
            &[],
            &["extra", "!**/*.md", "+extra/c.md", "-prompts/b.md"]
        ),
        ["proj/.pi/prompts/p.md", "agent/extra/c.md"]
    );
    // Project lists are relative to `.pi` and filter the project's discovered files only.
    assert_eq!(
        t.enabled(k, &["!p.md", "../../agent/extra/c.md"], &["!nothing"]),
        [
            "agent/extra/c.md",
            "agent/prompts/a.md",
            "agent/prompts/b.md"
        ]
    );
}

#[test]
fn skills_by_directory_name_hidden_and_ignored_entries() {
    let t = Tree::new(&[
        "agent/skills/one/SKILL.md",
        "agent/skills/two/SKILL.md",
        "agent/skills/two/nested/SKILL.md",
        "agent/skills/top.md",
        "agent/skills/.hidden/SKILL.md",
        "agent/skills/node_modules/x/SKILL.md",
        "agent/skills/gone/SKILL.md",
        "proj/.agents/skills/ag/SKILL.md",
        "proj/.agents/skills/root.md",
    ]);
    write(&t.root.join("agent/skills/.gitignore"), "gone/\n");
    let k = ResourceKind::Skills;
    assert_eq!(
        t.enabled(k, &[], &[]),
        [
            "proj/.agents/skills/ag/SKILL.md",
            "agent/skills/one/SKILL.md",
            "agent/skills/top.md",
            "agent/skills/two/SKILL.md"
        ]
    );
    // A skill is also matched by its directory: name, relative path, absolute path.
    assert_eq!(
        t.enabled(k, &[], &["!one", "-skills/two"]),
        ["proj/.agents/skills/ag/SKILL.md", "agent/skills/top.md"]
    );
    let abs = format!("-{}", t.root.join("agent/skills/one").display());
    assert_eq!(
        t.enabled(k, &["!ag"], &[abs.as_str(), "!top.md"]),
        ["agent/skills/two/SKILL.md"]
    );
}

#[test]
fn home_paths_and_missing_entries() {
    let t = Tree::new(&["home/mine/x.json", "agent/themes/t.json"]);
    let k = ResourceKind::Themes;
    assert_eq!(
        t.enabled(k, &[], &["~/mine", "missing", "~/mine/x.json"]),
        ["home/mine/x.json", "agent/themes/t.json"]
    );
    assert_eq!(
        path_from_base("~", Path::new("/b"), Path::new("/h")),
        PathBuf::from("/h")
    );
    assert_eq!(
        path_from_base(" ../x ", Path::new("/b/c"), Path::new("/h")),
        PathBuf::from("/b/x")
    );
}

/// pi discovers `.pi/skills` in the cwd only, `.agents/skills` in the cwd and each parent up to
/// the git root (without their top-level `*.md` files).
#[test]
fn discovered_skill_directories_as_pi() {
    let t = Tree::new(&[
        "repo/.git/HEAD",
        "repo/.pi/skills/parent-pi/SKILL.md",
        "repo/.agents/skills/repo-agents/SKILL.md",
        "repo/.agents/skills/loose.md",
        "repo/proj/.pi/skills/here/SKILL.md",
        "repo/proj/.agents/skills/here-agents/SKILL.md",
        ".agents/skills/above-git/SKILL.md",
        "home/.agents/skills/user-agents/SKILL.md",
        "home/.agents/skills/user-loose.md",
    ]);
    let cwd = t.root.join("repo/proj");
    let scope = |base: PathBuf, dir: &str| ScopeInput {
        entries: Vec::new(),
        auto_dir: base.join(dir),
        base,
    };
    let found: Vec<String> = enabled(
        ResourceKind::Skills,
        &scope(cwd.join(".pi"), "skills"),
        &scope(t.root.join("agent"), "skills"),
        &cwd,
        &t.root.join("home"),
    )
    .into_iter()
    .map(|r| {
        r.path
            .strip_prefix(&t.root)
            .unwrap()
            .to_string_lossy()
            .into_owned()
    })
    .collect();
    assert_eq!(
        found,
        [
            "repo/proj/.pi/skills/here/SKILL.md",
            "repo/proj/.agents/skills/here-agents/SKILL.md",
            "repo/.agents/skills/repo-agents/SKILL.md",
            "home/.agents/skills/user-agents/SKILL.md",
        ]
    );
}
