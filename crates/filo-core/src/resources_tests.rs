use super::*;

fn write(p: &Path, text: &str) {
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

#[test]
fn context_files_root_first_one_per_dir() {
    let t = tempfile::tempdir().unwrap();
    let agent = t.path().join("agent");
    let proj = t.path().join("a").join("b");
    write(&agent.join("AGENTS.md"), "global");
    write(&t.path().join("a").join("CLAUDE.md"), "a-claude");
    write(&proj.join("AGENTS.md"), "b-agents");
    write(&proj.join("CLAUDE.md"), "b-claude (shadowed)");
    let files = load_context_files(&agent, &proj);
    let contents: Vec<_> = files.iter().map(|f| f.content.as_str()).collect();
    assert_eq!(contents, ["global", "a-claude", "b-agents"]);
}

#[test]
fn skills_fixtures_like_pi() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("skills");
    write(
        &d.join("valid-skill/SKILL.md"),
        "---\nname: valid-skill\ndescription: Does things\n---\nBody here\n",
    );
    write(
        &d.join("name-mismatch/SKILL.md"),
        "---\nname: other-name\ndescription: x\n---\n",
    );
    write(
        &d.join("Invalid_Name/SKILL.md"),
        "---\nname: Invalid_Name\ndescription: x\n---\n",
    );
    write(&d.join("bad--name/SKILL.md"), "---\ndescription: x\n---\n");
    write(
        &d.join("missing-description/SKILL.md"),
        "---\nname: missing-description\n---\n",
    );
    write(
        &d.join("invalid-yaml/SKILL.md"),
        "---\nname: [unclosed\ndescription: x\n---\n",
    );
    write(
        &d.join("multiline-description/SKILL.md"),
        "---\nname: multiline-description\ndescription: |\n  line one\n  line two\n---\n",
    );
    write(
        &d.join("hidden-skill/SKILL.md"),
        "---\nname: hidden-skill\ndescription: x\ndisable-model-invocation: true\n---\n",
    );
    write(
        &d.join("nested/child-skill/SKILL.md"),
        "---\nname: child-skill\ndescription: nested\n---\n",
    );
    write(
        &d.join("root-skill-preferred/SKILL.md"),
        "---\ndescription: root\n---\n",
    );
    write(
        &d.join("root-skill-preferred/deeper/SKILL.md"),
        "---\nname: deeper\ndescription: never seen\n---\n",
    );
    write(
        &d.join("top-level.md"),
        "---\nname: top-level\ndescription: a loose md\n---\n",
    );
    let other = t.path().join("second");
    write(
        &other.join("valid-skill/SKILL.md"),
        "---\nname: valid-skill\ndescription: loser\n---\n",
    );

    let s = load_skills(&[(d.clone(), Source::Project), (other, Source::User)]);
    let mut names: Vec<_> = s.skills.iter().map(|k| k.name.as_str()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "Invalid_Name",
            "bad--name",
            "child-skill",
            "hidden-skill",
            "multiline-description",
            "other-name",
            "root-skill-preferred",
            "top-level",
            "valid-skill"
        ]
    );
    let w = s.warnings.join("\n");
    assert!(w.contains("does not match its directory"), "{w}");
    assert!(w.contains("outside [a-z0-9-]"));
    assert!(w.contains("consecutive hyphens"));
    assert!(w.contains("missing description; skipped"));
    assert!(w.contains("invalid frontmatter YAML"));
    assert!(w.contains("already defined by"));
    let ml = s
        .skills
        .iter()
        .find(|k| k.name == "multiline-description")
        .unwrap();
    assert_eq!(ml.description, "line one\nline two\n");
    let block = skills_prompt_block(&s.skills);
    assert!(block.starts_with("\n\nThe following skills provide specialized instructions"));
    assert!(block.contains("<name>valid-skill</name>"));
    assert!(!block.contains("hidden-skill"));
    assert!(block.ends_with("</available_skills>"));
    let expanded = expand_skill_command("/skill:valid-skill do it", &s.skills);
    assert!(expanded.starts_with("<skill name=\"valid-skill\" location=\""));
    assert!(expanded.contains("\n\nBody here\n</skill>\n\ndo it"));
    assert_eq!(
        expand_skill_command("/skill:nope x", &s.skills),
        "/skill:nope x"
    );
}

#[test]
fn templates_and_argument_substitution() {
    let t = tempfile::tempdir().unwrap();
    write(
        &t.path().join("review.md"),
        "---\ndescription: Review code\n---\nReview $1 then ${@:2} / $ARGUMENTS / $@ / [$3]",
    );
    write(
        &t.path().join("plain.md"),
        "\n\nThis first line is deliberately longer than sixty characters, to be cut.\nrest",
    );
    let ts = load_prompt_templates(t.path(), Source::User);
    assert_eq!(ts.len(), 2);
    let plain = ts.iter().find(|x| x.name == "plain").unwrap();
    assert_eq!(
        plain.description,
        "This first line is deliberately longer than sixty characters..."
    );
    let review = ts.iter().find(|x| x.name == "review").unwrap();
    assert_eq!(review.description, "Review code");
    assert_eq!(review.path, t.path().join("review.md"));
    assert_eq!(
        expand_prompt_template("/review 'a b' c", &ts),
        "Review a b then c / a b c / a b c / []"
    );
    assert_eq!(expand_prompt_template("/unknown x", &ts), "/unknown x");
    assert_eq!(
        parse_args(r#"one "two three" 'four'"#),
        ["one", "two three", "four"]
    );
    assert_eq!(
        substitute_args("${@:1:1}|${@:0}", &["x".into(), "y".into()]),
        "x|x y"
    );
}

#[test]
fn front_matter_splits_as_pi_073_does() {
    // The body after front matter is trimmed; without it the text is kept whole.
    assert_eq!(
        split_frontmatter("---\ndescription: d\n---\n\nBody $1.\n\n"),
        (Some("description: d".to_owned()), "Body $1.".to_owned())
    );
    assert_eq!(
        split_frontmatter("Body $1.\n"),
        (None, "Body $1.\n".to_owned())
    );
    // Windows line ends are read as `\n`; an unclosed block is body.
    assert_eq!(
        split_frontmatter("---\r\nname: x\r\n---\r\nBody\r\n"),
        (Some("name: x".to_owned()), "Body".to_owned())
    );
    assert_eq!(
        split_frontmatter("---\nname: x\nBody\n"),
        (None, "---\nname: x\nBody\n".to_owned())
    );
    // The closing marker is any line that starts with `---`, and the opening one needs no newline.
    assert_eq!(
        split_frontmatter("---\na: 1\n----\nrest"),
        (Some("a: 1".to_owned()), "-\nrest".to_owned())
    );
}

/// pi 1.6 (0.84): `AGENTS.override.md` replaces `AGENTS.md`/`CLAUDE.md` of its own directory
/// only; a directory named like a context file is skipped; a BOM is dropped.
#[test]
fn agents_override_replaces_its_own_directory_only() {
    let t = tempfile::tempdir().unwrap();
    let agent = t.path().join("agent");
    let proj = t.path().join("repo").join("pkg");
    write(&t.path().join("repo/AGENTS.md"), "repo rules");
    write(
        &t.path().join("repo/AGENTS.override.md"),
        "\u{feff}override rules",
    );
    write(&proj.join("CLAUDE.md"), "pkg rules");
    fs::create_dir_all(proj.join("AGENTS.md")).unwrap();
    let files = load_context_files(&agent, &proj);
    let found: Vec<(&str, &str)> = files
        .iter()
        .map(|f| {
            (
                f.path.file_name().unwrap().to_str().unwrap(),
                f.content.as_str(),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            ("AGENTS.override.md", "override rules"),
            ("CLAUDE.md", "pkg rules")
        ]
    );
}

/// pi 1.6 (0.79.1): `${1:-default}` (and `${@:-…}`) take the default when the argument is
/// missing or empty; substitution is one pass.
#[test]
fn template_defaults_and_one_pass_substitution() {
    let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        substitute_args("last ${1:-7} days", &args(&[])),
        "last 7 days"
    );
    assert_eq!(
        substitute_args("last ${1:-7} days", &args(&["3"])),
        "last 3 days"
    );
    assert_eq!(substitute_args("${2:-none}", &args(&["a", ""])), "none");
    assert_eq!(substitute_args("[${@:-all}]", &args(&[])), "[all]");
    assert_eq!(
        substitute_args("[${ARGUMENTS:-x}]", &args(&["a", "b"])),
        "[a b]"
    );
    assert_eq!(substitute_args("$1 $@", &args(&["$2", "z"])), "$2 $2 z");
    assert_eq!(substitute_args("$0|$3|", &args(&["a"])), "||");
}
