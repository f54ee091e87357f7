//! Tool summary lines (C19a, spec §8.6): `"<emoji> <Label>: <metas>"` as a chat channel shows a
//! tool call, e.g. `📖 Read: ~/src/{a.rs, b.rs}`.

use std::path::Path;

/// Emoji of a tool without an entry in the display table.
pub const FALLBACK_EMOJI: &str = "🧩";

/// (tool name, emoji, label) of the tools with a display entry (OpenClaw's tool display table,
/// for the tools filo has).
const DISPLAY: [(&str, &str, &str); 11] = [
    ("exec", "🛠️", "Exec"),
    ("process", "🧰", "Process"),
    ("read", "📖", "Read"),
    ("write", "✍️", "Write"),
    ("edit", "📝", "Edit"),
    ("apply_patch", "🩹", "Apply Patch"),
    ("attach", "📎", "Attach"),
    ("browser", "🌐", "Browser"),
    ("message", "✉️", "Message"),
    ("web_search", "🔎", "Web Search"),
    ("web_fetch", "📄", "Web Fetch"),
];

/// The emoji and label of `tool_name`: from the table, else `🧩` and the trimmed name with its
/// first letter capitalised.
pub fn tool_display(tool_name: &str) -> (&'static str, String) {
    let trimmed = tool_name.trim();
    let key = trimmed.to_lowercase();
    let key = if key == "bash" {
        "exec".to_owned()
    } else {
        key
    };
    if let Some((_, emoji, label)) = DISPLAY.iter().find(|(name, _, _)| *name == key) {
        return (emoji, (*label).to_owned());
    }
    let mut chars = trimmed.chars();
    let label = match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => "Tool".to_owned(),
    };
    (FALLBACK_EMOJI, label)
}

/// Replaces the home directory at the start of `meta` (and after a space) with `~`.
pub fn shorten_home(meta: &str, home: Option<&Path>) -> String {
    let Some(home) = home.and_then(Path::to_str).filter(|h| h.len() > 1) else {
        return meta.to_owned();
    };
    let home = home.trim_end_matches('/');
    let mut out = String::with_capacity(meta.len());
    let mut rest = meta;
    while let Some(pos) = rest.find(home) {
        let at_boundary = pos == 0 || rest[..pos].ends_with([' ', '=', '\'', '"']);
        let after = &rest[pos + home.len()..];
        let ends_path = after.is_empty() || after.starts_with(['/', ' ']);
        out.push_str(&rest[..pos]);
        if at_boundary && ends_path {
            out.push('~');
        } else {
            out.push_str(home);
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

fn is_path_like(value: &str) -> bool {
    if value.is_empty()
        || value.contains(' ')
        || value.contains("://")
        || value.contains('·')
        || value.contains("&&")
        || value.contains("||")
    {
        return false;
    }
    // `^~?(/[^\s]+)+$`
    let body = value.strip_prefix('~').unwrap_or(value);
    body.len() > 1 && body.starts_with('/') && !body.chars().any(char::is_whitespace)
}

fn longest_backtick_run(value: &str) -> usize {
    let (mut longest, mut current) = (0, 0);
    for c in value.chars() {
        if c == '`' {
            current += 1;
            longest = longest.max(current);
        } else {
            current = 0;
        }
    }
    longest
}

/// `value` as an inline code span whose delimiter is one backtick longer than any run inside.
pub fn wrap_inline_code(value: &str) -> String {
    let delimiter = "`".repeat(longest_backtick_run(value) + 1);
    let pad = if value.starts_with('`') || value.ends_with('`') || value.contains('\n') {
        " "
    } else {
        ""
    };
    format!("{delimiter}{pad}{value}{pad}{delimiter}")
}

fn format_meta(tool_name: &str, meta: &str, markdown: bool) -> String {
    let wrap = |v: &str| {
        if markdown {
            wrap_inline_code(v)
        } else {
            v.to_owned()
        }
    };
    let key = tool_name.trim().to_lowercase();
    if key == "exec" || key == "bash" {
        let (flags, body): (Vec<&str>, Vec<&str>) = meta
            .split(" · ")
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .partition(|p| *p == "elevated" || *p == "pty");
        if !flags.is_empty() {
            let body = body.join(" · ");
            if body.is_empty() {
                return flags.join(" · ");
            }
            return format!("{} · {}", flags.join(" · "), wrap(&body));
        }
    }
    wrap(meta)
}

/// The summary of one or more calls of `tool_name` with their metas (paths, commands, …).
/// Path-like metas are grouped by directory (`dir/{a, b}`), others kept as they are; in
/// markdown the metas become an inline code span.
pub fn format_tool_aggregate(
    tool_name: &str,
    metas: &[&str],
    markdown: bool,
    home: Option<&Path>,
) -> String {
    let (emoji, label) = tool_display(tool_name);
    let prefix = format!("{emoji} {label}");
    let metas: Vec<String> = metas
        .iter()
        .filter(|m| !m.is_empty())
        .map(|m| shorten_home(m, home))
        .collect();
    if metas.is_empty() {
        return prefix;
    }
    let mut raw: Vec<&str> = Vec::new();
    // Directories in first-seen order with their file names.
    let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
    for m in &metas {
        if !is_path_like(m) || m.contains('→') {
            raw.push(m);
            continue;
        }
        let (dir, base) = m.rsplit_once('/').unwrap_or((".", m));
        match groups.iter_mut().find(|(d, _)| *d == dir) {
            Some((_, files)) => files.push(base),
            None => groups.push((dir, vec![base])),
        }
    }
    let grouped = groups.into_iter().map(|(dir, files)| {
        let brace = if files.len() > 1 {
            format!("{{{}}}", files.join(", "))
        } else {
            files.concat()
        };
        if dir == "." {
            brace
        } else {
            format!("{dir}/{brace}")
        }
    });
    let segments: Vec<String> = raw.into_iter().map(str::to_owned).chain(grouped).collect();
    let meta = segments.join("; ");
    format!("{prefix}: {}", format_meta(tool_name, &meta, markdown))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregate_vectors() {
        assert_eq!(format_tool_aggregate("fs", &[""], false, None), "🧩 Fs");
        let out = format_tool_aggregate(
            "  fs  ",
            &["~/dir/a.txt", "~/dir/b.txt", "note", "a→b"],
            false,
            None,
        );
        assert!(out.starts_with("🧩 Fs"), "{out}");
        for part in ["~/dir/{a.txt, b.txt}", "note", "a→b"] {
            assert!(out.contains(part), "{out} lacks {part}");
        }
        assert_eq!(out, "🧩 Fs: note; a→b; ~/dir/{a.txt, b.txt}");
        assert!(
            format_tool_aggregate("fs", &["~/dir/a.txt"], true, None).contains("`~/dir/a.txt`")
        );
        assert_eq!(
            format_tool_aggregate("fs", &["name `with` ticks"], true, None),
            "🧩 Fs: ``name `with` ticks``"
        );
        // Source note: the design brief quotes `🛠️ elevated · …` (an older test); the current
        // `tool-meta.ts` keeps the label, `🛠️ Exec: elevated · …`, and the source wins.
        let home = Path::new("/Users/test");
        assert_eq!(
            format_tool_aggregate(
                "exec",
                &["cd /Users/test/dir && gemini 2>&1 · elevated"],
                true,
                Some(home)
            ),
            "🛠️ Exec: elevated · `cd ~/dir && gemini 2>&1`"
        );
        assert_eq!(
            format_tool_aggregate("fs", &["/tmp/dir/a.txt", "/tmp/dir/b.txt"], false, None),
            "🧩 Fs: /tmp/dir/{a.txt, b.txt}"
        );
        assert_eq!(
            format_tool_aggregate("fs", &["/only"], false, None),
            "🧩 Fs: /only"
        );
        assert_eq!(format_tool_aggregate("", &[], false, None), "🧩 Tool");
    }

    #[test]
    fn display_table_and_home_shortening() {
        assert_eq!(tool_display("bash"), ("🛠️", "Exec".to_owned()));
        assert_eq!(tool_display("READ"), ("📖", "Read".to_owned()));
        assert_eq!(tool_display("recall"), ("🧩", "Recall".to_owned()));
        let home = Path::new("/home/ann");
        let cases = [
            ("/home/ann/src/a.rs", "~/src/a.rs"),
            ("cat /home/ann", "cat ~"),
            ("/home/anna/x", "/home/anna/x"),
            ("/srv/home/ann/x", "/srv/home/ann/x"),
        ];
        for (meta, want) in cases {
            assert_eq!(shorten_home(meta, Some(home)), want, "{meta}");
        }
        assert_eq!(
            format_tool_aggregate(
                "read",
                &["/home/ann/a.rs", "/home/ann/b.rs"],
                false,
                Some(home)
            ),
            "📖 Read: ~/{a.rs, b.rs}"
        );
        assert_eq!(
            format_tool_aggregate("exec", &["pty · elevated"], true, None),
            "🛠️ Exec: pty · elevated"
        );
    }

    #[test]
    fn code_spans_pad_when_needed() {
        let cases = [
            ("plain", "`plain`"),
            ("`start", "`` `start ``"),
            ("a\nb", "` a\nb `"),
            ("x ``` y", "````x ``` y````"),
        ];
        for (value, want) in cases {
            assert_eq!(wrap_inline_code(value), want, "{value:?}");
        }
    }
}
