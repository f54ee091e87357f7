//! Exec policy (`tools.exec.security`, C26): `full` runs anything, `deny` nothing, `allowlist`
//! only commands whose every simple command starts with a binary listed in `safeBins`.
//!
//! The allowlist check reads the command the way a POSIX shell splits it (quotes, escapes, the
//! separators `;`, `&`, `|`, newline) and refuses anything that would run a command it cannot
//! see: command substitution (`$(…)`, backquotes) and process substitution (`<(…)`, `>(…)`).

use serde::Deserialize;

/// `tools.exec.security`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExecSecurity {
    #[default]
    Full,
    Allowlist,
    Deny,
}

/// `tools.exec` (the part the policy reads).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecPolicy {
    #[serde(default)]
    pub security: ExecSecurity,
    #[serde(default)]
    pub safe_bins: Vec<String>,
}

/// Why a command may not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExecDenied {
    #[error("exec is disabled by tools.exec.security=deny")]
    Disabled,
    #[error("`{bin}` is not in tools.exec.safeBins (security=allowlist)")]
    NotAllowed { bin: String },
    #[error("command or process substitution is not allowed with tools.exec.security=allowlist")]
    Substitution,
    #[error("unterminated quote in command")]
    Unterminated,
}

impl ExecPolicy {
    /// Whether `command` may run under this policy.
    pub fn check(&self, command: &str) -> Result<(), ExecDenied> {
        match self.security {
            ExecSecurity::Full => Ok(()),
            ExecSecurity::Deny => Err(ExecDenied::Disabled),
            ExecSecurity::Allowlist => {
                for bin in command_heads(command)? {
                    if !self.safe_bins.iter().any(|s| s.trim() == bin) {
                        return Err(ExecDenied::NotAllowed { bin });
                    }
                }
                Ok(())
            }
        }
    }
}

/// The first word (after `NAME=value` assignments, quotes removed) of every simple command.
pub fn command_heads(command: &str) -> Result<Vec<String>, ExecDenied> {
    let mut heads = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = command.chars().peekable();
    let finish_command = |words: &mut Vec<String>, heads: &mut Vec<String>| {
        if let Some(head) = words.iter().find(|w| !is_assignment(w)) {
            heads.push(head.clone());
        }
        words.clear();
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(q) => word.push(q),
                        None => return Err(ExecDenied::Unterminated),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => word.extend(chars.next()),
                        Some('`') => return Err(ExecDenied::Substitution),
                        Some('$') if chars.peek() == Some(&'(') => {
                            return Err(ExecDenied::Substitution);
                        }
                        Some(q) => word.push(q),
                        None => return Err(ExecDenied::Unterminated),
                    }
                }
            }
            '\\' => {
                in_word = true;
                // A backslash-newline continues the line.
                match chars.next() {
                    Some('\n') | None => {}
                    Some(n) => word.push(n),
                }
            }
            '`' => return Err(ExecDenied::Substitution),
            '$' | '<' | '>' if chars.peek() == Some(&'(') => return Err(ExecDenied::Substitution),
            // `2>&1`, `<&3`, `&>file`: redirections, not separators.
            '&' if word.ends_with('>') || word.ends_with('<') || chars.peek() == Some(&'>') => {
                in_word = true;
                word.push(c);
            }
            ';' | '&' | '|' | '\n' | '(' | ')' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
                if c == '(' || c == ')' {
                    // Subshells and function bodies: the parenthesis itself is the head, which
                    // no safe-bin list contains.
                    words.push(c.to_string());
                }
                finish_command(&mut words, &mut heads);
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    finish_command(&mut words, &mut heads);
    Ok(heads)
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            let mut cs = name.chars();
            cs.next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && cs.all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowlist(bins: &[&str]) -> ExecPolicy {
        ExecPolicy {
            security: ExecSecurity::Allowlist,
            safe_bins: bins.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    #[test]
    fn heads_table() {
        let cases: &[(&str, &[&str])] = &[
            ("ls -la", &["ls"]),
            ("  ", &[]),
            ("FOO=1 BAR=2 git status", &["git"]),
            ("FOO=1", &[]),
            (
                "ls | wc -l && echo done; cat x\npwd",
                &["ls", "wc", "echo", "cat", "pwd"],
            ),
            ("'git' \"log\"", &["git"]),
            ("g\\it log", &["git"]),
            ("echo 'a;b|c' \"x&y\"", &["echo"]),
            ("ls & rm -rf /", &["ls", "rm"]),
            ("(rm x)", &["(", "rm"]),
            ("echo a >out.txt 2>&1", &["echo"]),
            ("make &>log; ls", &["make", "ls"]),
            ("a |& b", &["a", "b"]),
        ];
        for (cmd, want) in cases {
            assert_eq!(command_heads(cmd).unwrap(), *want, "{cmd}");
        }
    }

    #[test]
    fn policy_table() {
        let safe = allowlist(&["ls", "git", "wc", "echo"]);
        let cases: Vec<(&ExecPolicy, &str, Result<(), ExecDenied>)> = vec![
            (&safe, "ls -la | wc -l", Ok(())),
            (&safe, "FOO=1 git status; echo ok", Ok(())),
            (
                &safe,
                "ls; rm -rf /",
                Err(ExecDenied::NotAllowed { bin: "rm".into() }),
            ),
            (
                &safe,
                "ls && ./evil",
                Err(ExecDenied::NotAllowed {
                    bin: "./evil".into(),
                }),
            ),
            (
                &safe,
                "/bin/ls",
                Err(ExecDenied::NotAllowed {
                    bin: "/bin/ls".into(),
                }),
            ),
            (&safe, "echo $(rm -rf /)", Err(ExecDenied::Substitution)),
            (&safe, "echo \"$(id)\"", Err(ExecDenied::Substitution)),
            (&safe, "echo `id`", Err(ExecDenied::Substitution)),
            (
                &safe,
                "wc -l <(cat /etc/passwd)",
                Err(ExecDenied::Substitution),
            ),
            (&safe, "echo '$(not run)'", Ok(())),
            (&safe, "echo 'open", Err(ExecDenied::Unterminated)),
            (
                &safe,
                "(ls)",
                Err(ExecDenied::NotAllowed { bin: "(".into() }),
            ),
        ];
        for (policy, cmd, want) in cases {
            assert_eq!(policy.check(cmd), want, "{cmd}");
        }
        let full = ExecPolicy::default();
        assert_eq!(full.check("rm -rf / $(x)"), Ok(()));
        let deny = ExecPolicy {
            security: ExecSecurity::Deny,
            safe_bins: vec!["ls".into()],
        };
        assert_eq!(deny.check("ls"), Err(ExecDenied::Disabled));
        let parsed: ExecPolicy = serde_json::from_value(
            serde_json::json!({"security": "allowlist", "safeBins": ["jq"]}),
        )
        .unwrap();
        assert_eq!(parsed, allowlist(&["jq"]));
    }
}
