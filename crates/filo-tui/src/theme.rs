//! Themes: the built-in dark and light palettes and pi-compatible theme JSON files (`{"name",
//! "vars"?, "colors": {key: "#rrggbb" | var name | 0–255 | ""}}`), rendered in true colour or
//! mapped to the ANSI-256 cube, or without any colour when `NO_COLOR` is set.

use std::collections::HashMap;
use std::path::Path;

use ratatui::style::{Color, Modifier, Style};
use serde_json::Value;

use crate::TuiError;

/// How many colours the terminal shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColorDepth {
    /// `NO_COLOR`: attributes only.
    None,
    Ansi256,
    TrueColor,
}

impl ColorDepth {
    /// From the environment values (`NO_COLOR`, `COLORTERM`), passed in.
    pub fn detect(no_color: Option<&str>, colorterm: Option<&str>) -> ColorDepth {
        if no_color.is_some_and(|v| !v.is_empty()) {
            return ColorDepth::None;
        }
        match colorterm {
            Some("truecolor" | "24bit") => ColorDepth::TrueColor,
            _ => ColorDepth::Ansi256,
        }
    }
}

/// The colour keys the UI uses (pi's names).
const KEYS: &[&str] = &[
    "accent",
    "border",
    "success",
    "error",
    "warning",
    "muted",
    "dim",
    "text",
    "thinkingText",
    "selectedBg",
    "userMessageBg",
    "toolPendingBg",
    "toolSuccessBg",
    "toolErrorBg",
    "toolTitle",
    "mdHeading",
    "mdLink",
    "mdCode",
    "mdCodeBlock",
    "mdQuote",
    "mdListBullet",
    "toolDiffAdded",
    "toolDiffRemoved",
    "toolDiffContext",
    "syntaxKeyword",
    "syntaxString",
    "syntaxComment",
];

const DARK: &[(&str, &str)] = &[
    ("accent", "#8abeb7"),
    ("border", "#5f87ff"),
    ("success", "#b5bd68"),
    ("error", "#cc6666"),
    ("warning", "#ffff00"),
    ("muted", "#808080"),
    ("dim", "#666666"),
    ("text", ""),
    ("thinkingText", "#808080"),
    ("selectedBg", "#3a3a4a"),
    ("userMessageBg", "#343541"),
    ("toolPendingBg", "#282832"),
    ("toolSuccessBg", "#283228"),
    ("toolErrorBg", "#3c2828"),
    ("toolTitle", ""),
    ("mdHeading", "#f0c674"),
    ("mdLink", "#81a2be"),
    ("mdCode", "#8abeb7"),
    ("mdCodeBlock", "#b5bd68"),
    ("mdQuote", "#808080"),
    ("mdListBullet", "#8abeb7"),
    ("toolDiffAdded", "#b5bd68"),
    ("toolDiffRemoved", "#cc6666"),
    ("toolDiffContext", "#808080"),
    ("syntaxKeyword", "#569cd6"),
    ("syntaxString", "#ce9178"),
    ("syntaxComment", "#6a9955"),
];

const LIGHT: &[(&str, &str)] = &[
    ("accent", "#5a8080"),
    ("border", "#547da7"),
    ("success", "#588458"),
    ("error", "#aa5555"),
    ("warning", "#9a7326"),
    ("muted", "#6c6c6c"),
    ("dim", "#8a8a8a"),
    ("text", ""),
    ("thinkingText", "#6c6c6c"),
    ("selectedBg", "#d0d0e0"),
    ("userMessageBg", "#e8e8e8"),
    ("toolPendingBg", "#e8e8f0"),
    ("toolSuccessBg", "#e8f0e8"),
    ("toolErrorBg", "#f0e8e8"),
    ("toolTitle", ""),
    ("mdHeading", "#9a7326"),
    ("mdLink", "#547da7"),
    ("mdCode", "#5a8080"),
    ("mdCodeBlock", "#588458"),
    ("mdQuote", "#6c6c6c"),
    ("mdListBullet", "#588458"),
    ("toolDiffAdded", "#588458"),
    ("toolDiffRemoved", "#aa5555"),
    ("toolDiffContext", "#6c6c6c"),
    ("syntaxKeyword", "#0000ff"),
    ("syntaxString", "#a31515"),
    ("syntaxComment", "#008000"),
];

/// A resolved palette.
#[derive(Debug, Clone)]
pub struct Theme {
    pub name: String,
    /// What code block lines of rendered markdown start with (`markdown.codeBlockIndent`; pi
    /// keeps it in its markdown theme too).
    pub code_block_indent: String,
    depth: ColorDepth,
    colors: HashMap<&'static str, Color>,
}

/// A colour spec of a theme file: hex, a 256-colour index, or empty for the terminal default.
fn parse_color(
    v: &Value,
    vars: &serde_json::Map<String, Value>,
    depth: ColorDepth,
) -> Option<Color> {
    match v {
        Value::Number(n) => n
            .as_u64()
            .and_then(|i| u8::try_from(i).ok())
            .map(Color::Indexed),
        Value::String(s) if s.is_empty() => Some(Color::Reset),
        Value::String(s) if s.starts_with('#') => parse_hex(s).map(|(r, g, b)| match depth {
            ColorDepth::TrueColor => Color::Rgb(r, g, b),
            ColorDepth::Ansi256 | ColorDepth::None => Color::Indexed(rgb_to_256(r, g, b)),
        }),
        Value::String(s) => vars
            .get(s)
            .filter(|inner| !matches!(inner, Value::String(x) if x == s))
            .and_then(|inner| parse_color(inner, &serde_json::Map::new(), depth)),
        _ => None,
    }
}

fn parse_hex(s: &str) -> Option<(u8, u8, u8)> {
    let h = s.strip_prefix('#')?;
    if h.len() != 6 {
        return None;
    }
    let n = u32::from_str_radix(h, 16).ok()?;
    Some(((n >> 16) as u8, (n >> 8) as u8, n as u8))
}

/// The nearest colour of xterm's 6×6×6 cube or grey ramp.
pub fn rgb_to_256(r: u8, g: u8, b: u8) -> u8 {
    let level = |c: u8| -> u8 {
        match c {
            0..=47 => 0,
            48..=114 => 1,
            _ => (c - 35) / 40,
        }
    };
    let steps = [0u8, 95, 135, 175, 215, 255];
    let (lr, lg, lb) = (level(r), level(g), level(b));
    let cube = 16 + 36 * lr + 6 * lg + lb;
    let dist = |a: (u8, u8, u8)| -> u32 {
        let d = |x: u8, y: u8| (i32::from(x) - i32::from(y)).unsigned_abs();
        d(a.0, r).pow(2) + d(a.1, g).pow(2) + d(a.2, b).pow(2)
    };
    let cube_rgb = (
        steps[usize::from(lr)],
        steps[usize::from(lg)],
        steps[usize::from(lb)],
    );
    let avg = ((u32::from(r) + u32::from(g) + u32::from(b)) / 3) as u8;
    let grey_idx = if avg < 8 { 0 } else { ((avg - 8) / 10).min(23) };
    let grey = 8 + grey_idx * 10;
    if dist((grey, grey, grey)) < dist(cube_rgb) {
        232 + grey_idx
    } else {
        cube
    }
}

impl Theme {
    /// A built-in theme by name (`dark`, `light`).
    pub fn builtin(name: &str, depth: ColorDepth) -> Option<Theme> {
        match name {
            "dark" => Some(Theme::from_table("dark", DARK, depth)),
            "light" => Some(Theme::from_table("light", LIGHT, depth)),
            _ => None,
        }
    }

    /// The dark theme.
    pub fn dark(depth: ColorDepth) -> Theme {
        Theme::from_table("dark", DARK, depth)
    }

    fn from_table(name: &str, table: &[(&'static str, &str)], depth: ColorDepth) -> Theme {
        let none = serde_json::Map::new();
        let colors = table
            .iter()
            .map(|(k, v)| {
                let c = parse_color(&Value::String((*v).to_string()), &none, depth);
                (*k, c.unwrap_or(Color::Reset))
            })
            .collect();
        Theme {
            code_block_indent: "  ".into(),
            name: name.to_string(),
            depth,
            colors,
        }
    }

    /// A theme from pi's JSON shape; missing keys come from `base` (or the dark theme).
    pub fn from_json(
        v: &Value,
        depth: ColorDepth,
        base: Option<&Theme>,
    ) -> Result<Theme, TuiError> {
        let colors_v = v
            .get("colors")
            .and_then(Value::as_object)
            .ok_or_else(|| TuiError::Theme("a theme needs a \"colors\" object".into()))?;
        let empty = serde_json::Map::new();
        let vars = v.get("vars").and_then(Value::as_object).unwrap_or(&empty);
        let mut colors = HashMap::new();
        for key in KEYS {
            let parsed = colors_v.get(*key).and_then(|c| parse_color(c, vars, depth));
            let color = match (parsed, base) {
                (Some(c), _) => c,
                (None, Some(b)) => b.color(key),
                (None, None) => Color::Reset,
            };
            colors.insert(*key, color);
        }
        let name = v
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("custom")
            .to_string();
        Ok(Theme {
            code_block_indent: "  ".into(),
            name,
            depth,
            colors,
        })
    }

    /// Load a theme file; keys it leaves out come from the dark theme.
    pub fn load(path: &Path, depth: ColorDepth) -> Result<Theme, TuiError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| TuiError::Theme(format!("{}: {e}", path.display())))?;
        let v: Value = serde_json::from_str(&text)
            .map_err(|e| TuiError::Theme(format!("{}: {e}", path.display())))?;
        Theme::from_json(&v, depth, Some(&Theme::dark(depth)))
    }

    /// A named built-in, else `<agent_dir>/themes/<name>.json` (see [`ThemeCatalog`] for the
    /// themes of the command line and the project).
    pub fn resolve(
        name: &str,
        agent_dir: Option<&Path>,
        depth: ColorDepth,
    ) -> Result<Theme, TuiError> {
        if let Some(t) = Theme::builtin(name, depth) {
            return Ok(t);
        }
        match agent_dir {
            Some(dir) => Theme::load(&dir.join("themes").join(format!("{name}.json")), depth),
            None => Err(TuiError::Theme(format!("unknown theme \"{name}\""))),
        }
    }

    pub fn color(&self, key: &str) -> Color {
        if self.depth == ColorDepth::None {
            return Color::Reset;
        }
        self.colors.get(key).copied().unwrap_or(Color::Reset)
    }

    /// Foreground style of a key.
    pub fn fg(&self, key: &str) -> Style {
        Style::default().fg(self.color(key))
    }

    /// Background style of a key.
    pub fn bg(&self, key: &str) -> Style {
        Style::default().bg(self.color(key))
    }

    /// The selected row: a background colour, or reverse video without colour.
    pub fn selected(&self) -> Style {
        match self.depth {
            ColorDepth::None => Style::default().add_modifier(Modifier::REVERSED),
            ColorDepth::Ansi256 | ColorDepth::TrueColor => self.bg("selectedBg"),
        }
    }

    pub fn depth(&self) -> ColorDepth {
        self.depth
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_from_env_values() {
        assert_eq!(
            ColorDepth::detect(Some("1"), Some("truecolor")),
            ColorDepth::None
        );
        assert_eq!(
            ColorDepth::detect(None, Some("24bit")),
            ColorDepth::TrueColor
        );
        assert_eq!(ColorDepth::detect(Some(""), None), ColorDepth::Ansi256);
    }

    #[test]
    fn pi_theme_json_with_vars_and_indices() {
        let v = serde_json::json!({
            "name": "mine",
            "vars": {"teal": "#008080"},
            "colors": {"accent": "teal", "error": 196, "text": ""}
        });
        let t = Theme::from_json(&v, ColorDepth::TrueColor, None).unwrap();
        assert_eq!(t.name, "mine");
        assert_eq!(t.color("accent"), Color::Rgb(0, 128, 128));
        assert_eq!(t.color("error"), Color::Indexed(196));
        assert_eq!(t.color("text"), Color::Reset);
        let t256 = Theme::from_json(&v, ColorDepth::Ansi256, None).unwrap();
        assert_eq!(t256.color("accent"), Color::Indexed(30));
    }

    #[test]
    fn no_color_drops_colours_and_bad_files_are_errors() {
        let t = Theme::builtin("light", ColorDepth::None).unwrap();
        assert_eq!(t.color("accent"), Color::Reset);
        assert!(
            Theme::from_json(&serde_json::json!({"name": "x"}), ColorDepth::Ansi256, None).is_err()
        );
        assert!(Theme::resolve("nope", None, ColorDepth::Ansi256).is_err());
    }

    #[test]
    fn grey_and_cube_mapping() {
        assert_eq!(rgb_to_256(0, 0, 0), 16);
        assert_eq!(rgb_to_256(255, 0, 0), 196);
        assert_eq!(rgb_to_256(128, 128, 128), 244);
    }
}
