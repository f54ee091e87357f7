//! Resources the system prompt and the prompt box draw on (pi spec §3.10): context files
//! (AGENTS.md / CLAUDE.md), skills (SKILL.md with frontmatter) and prompt templates.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use yaml_rust2::{Yaml, YamlLoader};

/// A context file and its content.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextFile {
    pub path: PathBuf,
    pub content: String,
}

/// The context file names pi 1.6 looks for in a directory, in order: `AGENTS.override.md`
/// (0.84) replaces the others of its directory.
const CONTEXT_FILE_NAMES: [&str; 5] = [
    "AGENTS.override.md",
    "AGENTS.md",
    "AGENTS.MD",
    "CLAUDE.md",
    "CLAUDE.MD",
];

/// `<agent_dir>` first, then every directory from the filesystem root down to `cwd`; in each the
/// first regular file of [`CONTEXT_FILE_NAMES`] that reads, without a leading BOM.
pub fn load_context_files(agent_dir: &Path, cwd: &Path) -> Vec<ContextFile> {
    let mut dirs = vec![agent_dir.to_path_buf()];
    let mut ancestors: Vec<PathBuf> = cwd.ancestors().map(Path::to_path_buf).collect();
    ancestors.reverse();
    dirs.extend(ancestors);
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for dir in dirs {
        for name in CONTEXT_FILE_NAMES {
            let p = dir.join(name);
            if !p.is_file() {
                continue;
            }
            if let Ok(content) = fs::read_to_string(&p) {
                if seen.insert(p.clone()) {
                    let content = match content.strip_prefix('\u{feff}') {
                        Some(rest) => rest.to_string(),
                        None => content,
                    };
                    out.push(ContextFile { path: p, content });
                }
                break;
            }
        }
    }
    out
}

/// Where a skill or template came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    User,
    Project,
    Path,
}

/// A loaded skill.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    pub file_path: PathBuf,
    pub base_dir: PathBuf,
    pub source: Source,
    pub disable_model_invocation: bool,
}

/// Split `---\nyaml\n---\nbody` as pi 0.73.1 does: line ends normalised to `\n`, the front
/// matter is whatever lies between the opening `---` line and the next line starting `---`, and
/// the body after it is trimmed. Text without both markers is all body, untrimmed.
pub fn split_frontmatter(text: &str) -> (Option<String>, String) {
    let text = if text.contains('\r') {
        text.replace("\r\n", "\n").replace('\r', "\n")
    } else {
        text.to_owned()
    };
    if !text.starts_with("---") {
        return (None, text);
    }
    match text[3..].find("\n---").map(|i| i + 3) {
        Some(end) => (
            Some(text.get(4..end).unwrap_or_default().to_owned()),
            text[end + 4..].trim().to_owned(),
        ),
        None => (None, text),
    }
}

fn parse_yaml(front: &str) -> Result<Option<Yaml>, yaml_rust2::ScanError> {
    let docs = YamlLoader::load_from_str(front)?;
    Ok(docs.into_iter().next())
}

/// Load one SKILL.md (or top-level *.md). Returns the skill (if usable) and warnings.
pub fn load_skill(path: &Path, source: Source) -> (Option<Skill>, Vec<String>) {
    let mut warnings = Vec::new();
    let shown = path.display();
    let text = match fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return (None, vec![format!("{shown}: could not be read: {e}")]),
    };
    let (front, _) = split_frontmatter(&text);
    let yaml = match front.as_deref().map(parse_yaml).transpose() {
        Ok(y) => y.flatten(),
        Err(e) => {
            return (
                None,
                vec![format!("{shown}: invalid frontmatter YAML ({e}); skipped")],
            );
        }
    };
    let get = |k: &str| {
        yaml.as_ref()
            .and_then(|y| y[k].as_str())
            .map(str::to_string)
    };
    let base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let dir_name = base_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = get("name").unwrap_or_else(|| dir_name.clone());
    let Some(description) = get("description").filter(|d| !d.trim().is_empty()) else {
        return (None, vec![format!("{shown}: missing description; skipped")]);
    };
    if name != dir_name {
        warnings.push(format!(
            "{shown}: name \"{name}\" does not match its directory \"{dir_name}\""
        ));
    }
    if name.chars().count() > 64 {
        warnings.push(format!("{shown}: name is longer than 64 characters"));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        warnings.push(format!(
            "{shown}: name \"{name}\" has characters outside [a-z0-9-]"
        ));
    }
    if name.starts_with('-') || name.ends_with('-') {
        warnings.push(format!(
            "{shown}: name \"{name}\" starts or ends with a hyphen"
        ));
    }
    if name.contains("--") {
        warnings.push(format!("{shown}: name \"{name}\" has consecutive hyphens"));
    }
    if description.chars().count() > 1024 {
        warnings.push(format!(
            "{shown}: description is longer than 1024 characters"
        ));
    }
    let disable = yaml
        .as_ref()
        .and_then(|y| y["disable-model-invocation"].as_bool())
        .unwrap_or(false);
    let skill = Skill {
        name,
        description,
        file_path: path.to_path_buf(),
        base_dir,
        source,
        disable_model_invocation: disable,
    };
    (Some(skill), warnings)
}

fn scan_dir(dir: &Path, top: bool, out: &mut Vec<PathBuf>) {
    let skill_md = dir.join("SKILL.md");
    if skill_md.is_file() {
        out.push(skill_md);
        return;
    }
    let Ok(rd) = fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = rd.filter_map(Result::ok).map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.starts_with('.') || name == "node_modules" {
            continue;
        }
        if p.is_dir() {
            scan_dir(&p, false, out);
        } else if top && name.ends_with(".md") {
            out.push(p);
        }
    }
}

/// Skills and the warnings met while loading them.
#[derive(Debug, Clone, Default)]
pub struct Skills {
    pub skills: Vec<Skill>,
    pub warnings: Vec<String>,
}

/// Load skills from `(directory, source)` pairs in precedence order: the first skill of a name
/// wins; a later one with the same name is dropped with a warning.
pub fn load_skills(dirs: &[(PathBuf, Source)]) -> Skills {
    let mut files = Vec::new();
    for (dir, source) in dirs {
        let mut found = Vec::new();
        scan_dir(dir, true, &mut found);
        files.extend(found.into_iter().map(|f| (f, *source)));
    }
    load_skill_files(&files)
}

/// Load skill files in precedence order: a file met again (by its real path) is skipped, and
/// the first skill of a name wins; a later one with the same name is dropped with a warning.
pub fn load_skill_files(files: &[(PathBuf, Source)]) -> Skills {
    let mut out = Skills::default();
    let mut real_paths = HashSet::new();
    for (f, source) in files {
        let real = fs::canonicalize(f).unwrap_or_else(|_| f.clone());
        if real_paths.contains(&real) {
            continue;
        }
        let (skill, warnings) = load_skill(f, *source);
        out.warnings.extend(warnings);
        let Some(skill) = skill else { continue };
        if let Some(first) = out.skills.iter().find(|s| s.name == skill.name) {
            out.warnings.push(format!(
                "{}: skill \"{}\" is already defined by {}; skipped",
                skill.file_path.display(),
                skill.name,
                first.file_path.display()
            ));
            continue;
        }
        real_paths.insert(real);
        out.skills.push(skill);
    }
    out
}

/// Skills from paths given on the command line (`--skill`): a skill file, or a directory
/// scanned as the skill directories are. A missing path is a warning.
pub fn load_skill_paths(paths: &[PathBuf]) -> Skills {
    let mut out = Skills::default();
    for path in paths {
        if path.is_dir() {
            let found = load_skills(&[(path.clone(), Source::Path)]);
            out.skills.extend(found.skills);
            out.warnings.extend(found.warnings);
        } else if path.is_file() {
            let (skill, warnings) = load_skill(path, Source::Path);
            out.warnings.extend(warnings);
            out.skills.extend(skill);
        } else {
            out.warnings
                .push(format!("Skill path does not exist: {}", path.display()));
        }
    }
    out
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

/// The skills block of the system prompt ("" when no skill is visible to the model).
pub fn skills_prompt_block(skills: &[Skill]) -> String {
    let visible: Vec<_> = skills
        .iter()
        .filter(|s| !s.disable_model_invocation)
        .collect();
    if visible.is_empty() {
        return String::new();
    }
    let mut lines = vec![
        "\n\nThe following skills provide specialized instructions for specific tasks.".to_string(),
        "Use the read tool to load a skill's file when the task matches its description.".into(),
        "When a skill file references a relative path, resolve it against the skill directory (parent of SKILL.md / dirname of the path) and use that absolute path in tool commands.".into(),
        String::new(),
        "<available_skills>".into(),
    ];
    for s in visible {
        lines.push("  <skill>".into());
        lines.push(format!("    <name>{}</name>", xml_escape(&s.name)));
        lines.push(format!(
            "    <description>{}</description>",
            xml_escape(&s.description)
        ));
        lines.push(format!(
            "    <location>{}</location>",
            xml_escape(&s.file_path.to_string_lossy())
        ));
        lines.push("  </skill>".into());
    }
    lines.push("</available_skills>".into());
    lines.join("\n")
}

/// Expand `/skill:name args` into the skill's body; other text is returned unchanged.
pub fn expand_skill_command(text: &str, skills: &[Skill]) -> String {
    let Some(rest) = text.strip_prefix("/skill:") else {
        return text.to_string();
    };
    let (name, args) = match rest.split_once(char::is_whitespace) {
        Some((n, a)) => (n, a.trim()),
        None => (rest, ""),
    };
    let Some(skill) = skills.iter().find(|s| s.name == name) else {
        return text.to_string();
    };
    let Ok(content) = fs::read_to_string(&skill.file_path) else {
        return text.to_string();
    };
    let (_, body) = split_frontmatter(&content);
    let mut out = format!(
        "<skill name=\"{}\" location=\"{}\">\nReferences are relative to {}.\n\n{}\n</skill>",
        skill.name,
        skill.file_path.display(),
        skill.base_dir.display(),
        body.trim()
    );
    if !args.is_empty() {
        out.push_str("\n\n");
        out.push_str(args);
    }
    out
}

/// A prompt template (`/name args`).
#[derive(Debug, Clone, PartialEq)]
pub struct PromptTemplate {
    pub name: String,
    /// The frontmatter `description`, else the first non-blank line (60 characters at most).
    pub description: String,
    /// The file it was read from.
    pub path: PathBuf,
    pub content: String,
    pub source: Source,
}

/// Load the `*.md` files of `dir` (not recursive) as templates.
pub fn load_prompt_templates(dir: &Path, source: Source) -> Vec<PromptTemplate> {
    let Ok(rd) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<_> = rd
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "md"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .filter_map(|p| load_prompt_template(&p, source))
        .collect()
}

/// One template file (`None` when it cannot be read).
pub fn load_prompt_template(p: &Path, source: Source) -> Option<PromptTemplate> {
    let text = fs::read_to_string(p).ok()?;
    let (front, body) = split_frontmatter(&text);
    let fm_desc = front
        .and_then(|f| parse_yaml(&f).ok().flatten())
        .and_then(|y| y["description"].as_str().map(str::to_string));
    let desc = fm_desc.unwrap_or_else(|| {
        let first = body
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim();
        if first.chars().count() > 60 {
            format!("{}...", first.chars().take(60).collect::<String>())
        } else {
            first.to_string()
        }
    });
    Some(PromptTemplate {
        name: p.file_stem()?.to_string_lossy().into_owned(),
        description: desc,
        path: p.to_path_buf(),
        content: body.to_string(),
        source,
    })
}

/// Split arguments like a shell: whitespace separated, `'` and `"` quoting.
pub fn parse_args(s: &str) -> Vec<String> {
    let mut args = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut has = false;
    for c in s.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => cur.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                has = true;
            }
            None if c.is_whitespace() => {
                if has || !cur.is_empty() {
                    args.push(std::mem::take(&mut cur));
                    has = false;
                }
            }
            None => cur.push(c),
        }
    }
    if has || !cur.is_empty() {
        args.push(cur);
    }
    args
}

/// Substitute `$1`…, `${1:-default}` (also `${@:-…}`, `${ARGUMENTS:-…}`), `${@:N}`,
/// `${@:N:L}`, `$ARGUMENTS` and `$@` in a template body, in one pass as pi 1.6 does: a value
/// that itself contains `$1` is not substituted again. A default replaces a missing or empty
/// argument.
pub fn substitute_args(content: &str, args: &[String]) -> String {
    static PATTERN: std::sync::OnceLock<Option<regex::Regex>> = std::sync::OnceLock::new();
    let Some(re) = PATTERN
        .get_or_init(|| {
            regex::Regex::new(
                r"\$\{(\d+|ARGUMENTS|@):-([^}]*)\}|\$\{@:(\d+)(?::(\d+))?\}|\$(ARGUMENTS|@|\d+)",
            )
            .ok()
        })
        .as_ref()
    else {
        return content.to_string();
    };
    let all = args.join(" ");
    // pi's `args[n - 1]`: `$0` and numbers past the end are missing.
    let nth = |digits: &str| -> Option<&str> {
        let n: usize = digits.parse().ok()?;
        args.get(n.checked_sub(1)?).map(String::as_str)
    };
    re.replace_all(content, |c: &regex::Captures<'_>| -> String {
        if let Some(target) = c.get(1) {
            let value = match target.as_str() {
                "@" | "ARGUMENTS" => Some(all.as_str()),
                digits => nth(digits),
            };
            let default = c.get(2).map_or("", |m| m.as_str());
            return value
                .filter(|v| !v.is_empty())
                .unwrap_or(default)
                .to_string();
        }
        if let Some(start) = c.get(3) {
            let start = start
                .as_str()
                .parse::<usize>()
                .unwrap_or(usize::MAX)
                .saturating_sub(1);
            let len = c
                .get(4)
                .map_or(usize::MAX, |m| m.as_str().parse().unwrap_or(usize::MAX));
            let slice: Vec<&str> = args
                .iter()
                .skip(start)
                .take(len)
                .map(String::as_str)
                .collect();
            return slice.join(" ");
        }
        match c.get(5).map_or("", |m| m.as_str()) {
            "ARGUMENTS" | "@" => all.clone(),
            digits => nth(digits).unwrap_or("").to_string(),
        }
    })
    .into_owned()
}

/// Expand `/name args` when `name` is a template; other text is returned unchanged.
pub fn expand_prompt_template(text: &str, templates: &[PromptTemplate]) -> String {
    let Some(rest) = text.strip_prefix('/') else {
        return text.to_string();
    };
    let (name, args) = match rest.split_once(char::is_whitespace) {
        Some((n, a)) => (n, a),
        None => (rest, ""),
    };
    match templates.iter().find(|t| t.name == name) {
        Some(t) => substitute_args(&t.content, &parse_args(args)),
        None => text.to_string(),
    }
}

#[cfg(test)]
#[path = "resources_tests.rs"]
mod tests;
