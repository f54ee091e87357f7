//! filo's agent directory and the read-only fallback to pi's.
//!
//! A pi user already has `models.json`, `auth.json`, `settings.json`, `skills/`, `prompts/`,
//! `themes/` and `keybindings.json` in pi's agent directory. Each of them that filo's own directory lacks is read from
//! pi's instead, decided once when [`AgentDirs::new`] looks at both directories. Nothing is ever
//! written to pi's directory: writers take their path from [`AgentDirs::own`], and a file first
//! read from pi's directory is copied into filo's own, with the change, on its first write
//! (`Settings::save`, `AuthStorage`), after which filo reads its own copy.

use std::path::{Path, PathBuf};

/// A file or folder of the agent directory that may come from pi's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AgentItem {
    Models,
    Auth,
    Settings,
    Skills,
    Prompts,
    Themes,
    Keybindings,
}

impl AgentItem {
    /// Every item, in the order the notice names them.
    pub const ALL: [AgentItem; 7] = [
        AgentItem::Models,
        AgentItem::Auth,
        AgentItem::Settings,
        AgentItem::Skills,
        AgentItem::Prompts,
        AgentItem::Themes,
        AgentItem::Keybindings,
    ];

    /// The entry's name inside an agent directory.
    pub fn file_name(self) -> &'static str {
        match self {
            AgentItem::Models => "models.json",
            AgentItem::Auth => "auth.json",
            AgentItem::Settings => "settings.json",
            AgentItem::Skills => "skills",
            AgentItem::Prompts => "prompts",
            AgentItem::Themes => "themes",
            AgentItem::Keybindings => "keybindings.json",
        }
    }

    /// How the notice names it (folders with a trailing `/`).
    pub fn shown(self) -> &'static str {
        match self {
            AgentItem::Models => "models.json",
            AgentItem::Auth => "auth.json",
            AgentItem::Settings => "settings.json",
            AgentItem::Skills => "skills/",
            AgentItem::Prompts => "prompts/",
            AgentItem::Themes => "themes/",
            AgentItem::Keybindings => "keybindings.json",
        }
    }
}

/// filo's agent directory, and pi's when some items are read from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDirs {
    own: PathBuf,
    /// pi's directory, when at least one item is read from it.
    pi: Option<PathBuf>,
    /// The items read from pi's directory, in [`AgentItem::ALL`] order.
    from_pi: Vec<AgentItem>,
    /// Whether the working folder's protected resources (project settings, skills, prompt
    /// templates, themes, SYSTEM.md; see [`crate::trust`]) may be read. True unless the caller
    /// decided otherwise with [`AgentDirs::with_project_trust`].
    project_trusted: bool,
}

impl AgentDirs {
    /// Look at both directories: every item missing from `own` and present in `pi` is read from
    /// `pi`. The same directory twice (filo pointed at pi's) is one directory, filo's own.
    pub fn new(own: PathBuf, pi: Option<PathBuf>) -> AgentDirs {
        let pi = pi.filter(|pi| !same_dir(&own, pi));
        let from_pi: Vec<AgentItem> = match &pi {
            Some(pi) => AgentItem::ALL
                .into_iter()
                .filter(|i| !own.join(i.file_name()).exists() && pi.join(i.file_name()).exists())
                .collect(),
            None => Vec::new(),
        };
        AgentDirs {
            own,
            pi: pi.filter(|_| !from_pi.is_empty()),
            from_pi,
            project_trusted: true,
        }
    }

    /// These directories, with the project's protected resources allowed or not (the project
    /// trust decision, [`crate::trust::resolve`]).
    pub fn with_project_trust(mut self, trusted: bool) -> AgentDirs {
        self.project_trusted = trusted;
        self
    }

    /// Whether the working folder's protected resources may be read.
    pub fn project_trusted(&self) -> bool {
        self.project_trusted
    }

    /// Only filo's own directory (embedders, tests).
    pub fn own_only(own: PathBuf) -> AgentDirs {
        AgentDirs::new(own, None)
    }

    /// filo's agent directory: every write goes here.
    pub fn own(&self) -> &Path {
        &self.own
    }

    /// pi's agent directory, when something is read from it.
    pub fn pi(&self) -> Option<&Path> {
        self.pi.as_deref()
    }

    /// The items read from pi's directory.
    pub fn from_pi(&self) -> &[AgentItem] {
        &self.from_pi
    }

    /// The directory `item` is read from.
    pub fn source(&self, item: AgentItem) -> &Path {
        match &self.pi {
            Some(pi) if self.from_pi.contains(&item) => pi,
            _ => &self.own,
        }
    }

    /// Where `item` is read from.
    pub fn read_path(&self, item: AgentItem) -> PathBuf {
        self.source(item).join(item.file_name())
    }

    /// Where `item` is written: always filo's own directory.
    pub fn write_path(&self, item: AgentItem) -> PathBuf {
        self.own.join(item.file_name())
    }

    /// One line for the user when something is read from pi's directory.
    pub fn notice(&self) -> Option<String> {
        let pi = self.pi.as_ref()?;
        let names: Vec<&str> = self.from_pi.iter().map(|i| i.shown()).collect();
        let list = match names.as_slice() {
            [] => return None,
            [one] => (*one).to_string(),
            [init @ .., last] => format!("{} and {last}", init.join(", ")),
        };
        Some(format!(
            "reading {list} from pi's agent directory {} (read-only; filo's own {} has none, and changes are saved there)",
            pi.display(),
            self.own.display()
        ))
    }
}

/// Whether two paths name one directory (the same text, or the same directory once resolved).
fn same_dir(a: &Path, b: &Path) -> bool {
    if a == b {
        return true;
    }
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let own = t.path().join("filo");
        let pi = t.path().join("pi");
        std::fs::create_dir_all(&own).unwrap();
        std::fs::create_dir_all(&pi).unwrap();
        (t, own, pi)
    }

    #[test]
    fn each_item_missing_from_filo_is_read_from_pi() {
        let (_t, own, pi) = dirs();
        std::fs::write(pi.join("models.json"), "{}").unwrap();
        std::fs::write(pi.join("settings.json"), "{}").unwrap();
        std::fs::write(own.join("settings.json"), "{}").unwrap();
        std::fs::create_dir(pi.join("skills")).unwrap();
        std::fs::create_dir(pi.join("prompts")).unwrap();
        std::fs::create_dir(own.join("prompts")).unwrap();
        let d = AgentDirs::new(own.clone(), Some(pi.clone()));
        assert_eq!(d.from_pi(), [AgentItem::Models, AgentItem::Skills]);
        assert_eq!(d.read_path(AgentItem::Models), pi.join("models.json"));
        assert_eq!(d.write_path(AgentItem::Models), own.join("models.json"));
        assert_eq!(d.read_path(AgentItem::Settings), own.join("settings.json"));
        assert_eq!(d.source(AgentItem::Skills), pi);
        assert_eq!(d.source(AgentItem::Prompts), own);
        // Present nowhere: filo's own path (created there when written).
        assert_eq!(d.read_path(AgentItem::Auth), own.join("auth.json"));
        assert_eq!(
            d.notice().unwrap(),
            format!(
                "reading models.json and skills/ from pi's agent directory {} (read-only; filo's own {} has none, and changes are saved there)",
                pi.display(),
                own.display()
            )
        );
    }

    #[test]
    fn nothing_to_borrow_means_no_pi_dir_and_no_notice() {
        let (_t, own, pi) = dirs();
        std::fs::write(own.join("auth.json"), "{}").unwrap();
        std::fs::write(pi.join("auth.json"), "{}").unwrap();
        for d in [
            AgentDirs::new(own.clone(), Some(pi.clone())),
            AgentDirs::new(own.clone(), Some(own.join("missing"))),
            AgentDirs::own_only(own.clone()),
        ] {
            assert_eq!((d.pi(), d.from_pi(), d.notice()), (None, &[][..], None));
            assert_eq!(d.read_path(AgentItem::Auth), own.join("auth.json"));
        }
    }

    #[test]
    fn filo_pointed_at_pis_directory_reads_it_as_its_own() {
        let (_t, _own, pi) = dirs();
        std::fs::write(pi.join("models.json"), "{}").unwrap();
        let spelled_otherwise = pi.join(".").join("..").join("pi");
        let d = AgentDirs::new(spelled_otherwise.clone(), Some(pi.clone()));
        assert_eq!((d.pi(), d.notice()), (None, None));
        assert_eq!(
            d.read_path(AgentItem::Models),
            spelled_otherwise.join("models.json")
        );
    }

    #[test]
    fn the_notice_lists_every_item_in_order() {
        let (_t, own, pi) = dirs();
        for i in AgentItem::ALL {
            match i {
                AgentItem::Skills | AgentItem::Prompts | AgentItem::Themes => {
                    std::fs::create_dir(pi.join(i.file_name())).unwrap();
                }
                _ => std::fs::write(pi.join(i.file_name()), "{}").unwrap(),
            }
        }
        let d = AgentDirs::new(own, Some(pi));
        let notice = d.notice().unwrap();
        assert!(
            notice.starts_with(
                "reading models.json, auth.json, settings.json, skills/, prompts/, themes/ and keybindings.json from pi's agent directory "
            ),
            "{notice}"
        );
        assert!(!notice.contains('\n'));
    }
}
