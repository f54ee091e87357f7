//! The system prompt, built as pi builds it (pi spec §3.10), naming filo as the harness.

use crate::resources::{ContextFile, Skill, skills_prompt_block};

/// A tool as the prompt lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptTool {
    pub name: String,
    /// One-line snippet; `None` uses the built-in snippet or the name.
    pub snippet: Option<String>,
    /// Extra guideline bullets this tool contributes.
    pub guidelines: Vec<String>,
}

/// Everything the prompt is made of.
#[derive(Debug, Clone, Default)]
pub struct SystemPromptInput<'a> {
    /// Replaces the default prompt (`--system-prompt` or SYSTEM.md).
    pub custom: Option<&'a str>,
    /// `--append-system-prompt` or APPEND_SYSTEM.md.
    pub append: Option<&'a str>,
    /// Active tools; `None` = the tool list was not specified.
    pub tools: Option<&'a [PromptTool]>,
    pub context_files: &'a [ContextFile],
    pub skills: &'a [Skill],
    /// `YYYY-MM-DD` (UTC).
    pub date: &'a str,
    pub cwd: &'a str,
}

fn builtin_snippet(name: &str) -> Option<&'static str> {
    Some(match name {
        "read" => "Read file contents",
        "bash" => "Execute bash commands (ls, grep, find, etc.)",
        "edit" => {
            "Make precise file edits with exact text replacement, including multiple disjoint edits in one call"
        }
        "write" => "Create or overwrite files",
        "grep" => "Search file contents for patterns (respects .gitignore)",
        "find" => "Find files by glob pattern (respects .gitignore)",
        "ls" => "List directory contents",
        // filo's memory tools (Playfilo): listed like built-ins, so the model knows it has them.
        "life" => "See the memory graph around your current node",
        "recall" => "Read a memory node with its context",
        "trace" => "See the log of past jumps through the memory",
        "tobe" => "Jump back to an earlier node, carrying a note to your past self",
        _ => return None,
    })
}

/// The guideline bullets pi 0.73's built-in tools contribute (their `promptGuidelines`).
fn builtin_guidelines(name: &str) -> &'static [&'static str] {
    match name {
        "read" => &["Use read to examine files instead of cat or sed."],
        "edit" => &[
            "Use edit for precise changes (edits[].oldText must match exactly)",
            "When changing multiple separate locations in one file, use one edit call with multiple entries in edits[] instead of multiple edit calls",
            "Each edits[].oldText is matched against the original file, not after earlier edits are applied. Do not emit overlapping or nested edits. Merge nearby changes into one edit.",
            "Keep edits[].oldText as small as possible while still being unique in the file. Do not pad with large unchanged regions.",
        ],
        "write" => &["Use write only for new files or complete rewrites."],
        _ => &[],
    }
}

/// pi 0.73's guideline list: the exploration bullet, then each tool's guidelines in tool order,
/// then the two that are always there; trimmed, blank ones dropped, duplicates kept once.
fn guidelines(tools: &[PromptTool]) -> Vec<String> {
    let has = |n: &str| tools.iter().any(|t| t.name == n);
    let mut g: Vec<String> = Vec::new();
    let explore = has("grep") || has("find") || has("ls");
    if has("bash") && !explore {
        g.push("Use bash for file operations like ls, rg, find".into());
    } else if has("bash") && explore {
        g.push("Prefer grep/find/ls tools over bash for file exploration (faster, respects .gitignore)".into());
    }
    for t in tools {
        g.extend(builtin_guidelines(&t.name).iter().map(|x| x.to_string()));
        g.extend(t.guidelines.iter().map(|x| x.trim().to_string()));
    }
    g.push("Be concise in your responses".into());
    g.push("Show file paths clearly when working with files".into());
    let mut seen = std::collections::HashSet::new();
    g.retain(|x| !x.is_empty() && seen.insert(x.clone()));
    g
}

fn context_section(files: &[ContextFile]) -> String {
    if files.is_empty() {
        return String::new();
    }
    let mut s =
        String::from("\n\n# Project Context\n\nProject-specific instructions and guidelines:\n\n");
    for f in files {
        s.push_str(&format!("## {}\n\n{}\n\n", f.path.display(), f.content));
    }
    s
}

/// Build the system prompt.
pub fn build_system_prompt(input: &SystemPromptInput<'_>) -> String {
    let read_active = input
        .tools
        .is_none_or(|t| t.iter().any(|x| x.name == "read"));
    let mut s = match input.custom {
        Some(custom) => custom.to_string(),
        None => {
            let tools = input.tools.unwrap_or(&[]);
            // As in pi 0.73, a tool is listed only when it has a one-line snippet.
            let lines: Vec<String> = tools
                .iter()
                .filter_map(|t| {
                    let snippet = t
                        .snippet
                        .as_deref()
                        .or_else(|| builtin_snippet(&t.name))?
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" ");
                    (!snippet.is_empty()).then(|| format!("- {}: {snippet}", t.name))
                })
                .collect();
            let list = if lines.is_empty() {
                "(none)".to_string()
            } else {
                lines.join("\n")
            };
            let bullets: Vec<String> = guidelines(tools).iter().map(|g| format!("- {g}")).collect();
            format!(
                "You are an expert coding assistant operating inside filo, a coding agent harness. You help users by reading files, executing commands, editing code, and writing new files.\n\nAvailable tools:\n{list}\n\nIn addition to the tools above, you may have access to other custom tools depending on the project.\n\nGuidelines:\n{}",
                bullets.join("\n")
            )
        }
    };
    if let Some(a) = input.append.filter(|a| !a.is_empty()) {
        s.push_str("\n\n");
        s.push_str(a);
    }
    s.push_str(&context_section(input.context_files));
    if read_active {
        s.push_str(&skills_prompt_block(input.skills));
    }
    s.push_str(&format!("\nCurrent date: {}", input.date));
    s.push_str(&format!(
        "\nCurrent working directory: {}",
        input.cwd.replace('\\', "/")
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(n: &str) -> PromptTool {
        PromptTool {
            name: n.into(),
            snippet: None,
            guidelines: vec![],
        }
    }

    #[test]
    fn default_prompt_lists_tools_and_guidelines() {
        let tools = [tool("read"), tool("bash"), tool("edit"), tool("write")];
        let p = build_system_prompt(&SystemPromptInput {
            tools: Some(&tools),
            date: "2026-11-30",
            cwd: "/w",
            ..Default::default()
        });
        assert!(p.starts_with("You are an expert coding assistant operating inside filo"));
        assert!(p.contains(
            "\n- read: Read file contents\n- bash: Execute bash commands (ls, grep, find, etc.)\n"
        ));
        assert!(p.contains("- Use bash for file operations like ls, rg, find\n- Use read to examine files instead of cat or sed.\n- Use edit for precise changes (edits[].oldText must match exactly)\n"));
        assert!(p.ends_with("- Show file paths clearly when working with files\nCurrent date: 2026-11-30\nCurrent working directory: /w"));
    }

    #[test]
    fn custom_prompt_with_append_and_context() {
        let files = [ContextFile {
            path: "/w/AGENTS.md".into(),
            content: "Be nice.".into(),
        }];
        let p = build_system_prompt(&SystemPromptInput {
            custom: Some("You are Filo."),
            append: Some("Extra."),
            context_files: &files,
            date: "2026-01-01",
            cwd: "C:\\w",
            ..Default::default()
        });
        assert_eq!(
            p,
            "You are Filo.\n\nExtra.\n\n# Project Context\n\nProject-specific instructions and guidelines:\n\n## /w/AGENTS.md\n\nBe nice.\n\n\nCurrent date: 2026-01-01\nCurrent working directory: C:/w"
        );
    }

    #[test]
    fn memory_tools_are_listed_with_their_snippets() {
        let tools = [
            tool("read"),
            tool("life"),
            tool("tobe"),
            tool("unknown_ext"),
        ];
        let p = build_system_prompt(&SystemPromptInput {
            tools: Some(&tools),
            date: "d",
            cwd: "/",
            ..Default::default()
        });
        assert!(p.contains("- life: See the memory graph around your current node\n"));
        assert!(
            p.contains("- tobe: Jump back to an earlier node, carrying a note to your past self\n")
        );
        // As in pi 0.73, a tool without a snippet is not listed.
        assert!(!p.contains("unknown_ext"));
    }

    #[test]
    fn no_tools_lists_none() {
        let p = build_system_prompt(&SystemPromptInput {
            tools: Some(&[]),
            date: "d",
            cwd: "/",
            ..Default::default()
        });
        assert!(p.contains("Available tools:\n(none)\n"));
    }
}
