//! The themes a run can use, by name: the built-in `dark` and `light`, the JSON files of the
//! theme directories (`<agent dir>/themes/`, `<cwd>/.pi/themes/`, skipped with `--no-themes`) and
//! the files or directories given with `--theme` (always read). A file's theme is called by its
//! `"name"` field, else by its file name without `.json`; the first file with a name wins.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::TuiError;
use crate::theme::{ColorDepth, Theme};

const BUILTIN: &[&str] = &["dark", "light"];

/// Where themes are looked for.
#[derive(Debug, Clone, Default)]
pub struct ThemeSources {
    /// Directories searched unless `no_themes` (missing ones are fine).
    pub dirs: Vec<PathBuf>,
    /// `--theme` paths: a `.json` file or a directory of them (a missing one is reported).
    pub paths: Vec<PathBuf>,
    /// `--no-themes`: skip `dirs`.
    pub no_themes: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct ThemeFile {
    name: String,
    stem: String,
    path: PathBuf,
}

/// The named themes found at start (or at `/reload`).
#[derive(Debug, Clone)]
pub struct ThemeCatalog {
    depth: ColorDepth,
    files: Vec<ThemeFile>,
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
        .collect();
    v.sort();
    v
}

/// A theme file's name: its `"name"`, else the file stem. Unreadable files are reported.
fn theme_file(path: &Path, warnings: &mut Vec<String>) -> Option<ThemeFile> {
    let stem = path.file_stem()?.to_string_lossy().into_owned();
    let parsed = std::fs::read_to_string(path)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str::<Value>(&t).map_err(|e| e.to_string()));
    match parsed {
        Ok(v) => Some(ThemeFile {
            name: v
                .get("name")
                .and_then(Value::as_str)
                .filter(|n| !n.trim().is_empty())
                .map_or_else(|| stem.clone(), str::to_string),
            stem,
            path: path.to_path_buf(),
        }),
        Err(e) => {
            warnings.push(format!("Theme {}: {e}", path.display()));
            None
        }
    }
}

impl ThemeCatalog {
    /// Only the built-in themes.
    pub fn builtin(depth: ColorDepth) -> ThemeCatalog {
        ThemeCatalog {
            depth,
            files: Vec::new(),
        }
    }

    /// Find the themes of `sources`; problems (a missing `--theme` path, a file that is not
    /// JSON) come back as warnings and the theme is left out.
    pub fn discover(sources: &ThemeSources, depth: ColorDepth) -> (ThemeCatalog, Vec<String>) {
        let mut warnings = Vec::new();
        let mut files: Vec<ThemeFile> = Vec::new();
        let add = |f: ThemeFile, files: &mut Vec<ThemeFile>| {
            if !BUILTIN.contains(&f.name.as_str()) && !files.iter().any(|x| x.name == f.name) {
                files.push(f);
            }
        };
        // `--theme` files come first, so they win over a discovered theme of the same name.
        for p in &sources.paths {
            if p.is_dir() {
                for f in json_files(p) {
                    if let Some(t) = theme_file(&f, &mut warnings) {
                        add(t, &mut files);
                    }
                }
            } else if p.is_file() {
                if let Some(t) = theme_file(p, &mut warnings) {
                    add(t, &mut files);
                }
            } else {
                warnings.push(format!("Theme path does not exist: {}", p.display()));
            }
        }
        if !sources.no_themes {
            for d in &sources.dirs {
                for f in json_files(d) {
                    if let Some(t) = theme_file(&f, &mut warnings) {
                        add(t, &mut files);
                    }
                }
            }
        }
        (ThemeCatalog { depth, files }, warnings)
    }

    /// Every theme name, sorted (built-ins included).
    pub fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = BUILTIN.iter().map(|s| s.to_string()).collect();
        v.extend(self.files.iter().map(|f| f.name.clone()));
        v.sort();
        v.dedup();
        v
    }

    /// The colour depth themes are resolved for.
    pub fn depth(&self) -> ColorDepth {
        self.depth
    }

    /// The theme called `name` (by its name, or by its file name without `.json`).
    pub fn get(&self, name: &str) -> Result<Theme, TuiError> {
        if let Some(t) = Theme::builtin(name, self.depth) {
            return Ok(t);
        }
        let file = self
            .files
            .iter()
            .find(|f| f.name == name)
            .or_else(|| self.files.iter().find(|f| f.stem == name))
            .ok_or_else(|| TuiError::Theme(format!("unknown theme \"{name}\"")))?;
        let mut t = Theme::load(&file.path, self.depth)?;
        t.name = file.name.clone();
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, file: &str, name: Option<&str>) -> PathBuf {
        let p = dir.join(file);
        let mut v = serde_json::json!({"colors": {"accent": "#ff0000"}});
        if let Some(n) = name {
            v["name"] = n.into();
        }
        std::fs::write(&p, v.to_string()).unwrap();
        p
    }

    #[test]
    fn command_line_files_stay_without_the_directories() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("themes");
        std::fs::create_dir_all(&dir).unwrap();
        write(&dir, "ocean.json", None);
        let cli = write(tmp.path(), "x.json", Some("sunset"));
        let sources = ThemeSources {
            dirs: vec![dir.clone(), tmp.path().join("missing")],
            paths: vec![cli.clone(), tmp.path().join("nope.json")],
            no_themes: false,
        };
        let (cat, warnings) = ThemeCatalog::discover(&sources, ColorDepth::TrueColor);
        assert_eq!(cat.names(), vec!["dark", "light", "ocean", "sunset"]);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("nope.json"), "{warnings:?}");
        let sunset = cat.get("sunset").unwrap();
        assert_eq!(sunset.name, "sunset");
        assert_eq!(
            sunset.color("accent"),
            ratatui::style::Color::Rgb(255, 0, 0)
        );
        assert_eq!(cat.get("x").unwrap().name, "sunset", "found by file name");

        let no_dirs = ThemeSources {
            no_themes: true,
            ..sources
        };
        let (cat, _) = ThemeCatalog::discover(&no_dirs, ColorDepth::TrueColor);
        assert_eq!(cat.names(), vec!["dark", "light", "sunset"]);
        assert!(cat.get("ocean").is_err());
        assert!(cat.get("dark").is_ok());
    }
}
