//! The terminal around the UI: what the environment says about it (external editor, Wayland,
//! image protocol), handing it over to another program (`$VISUAL`/`$EDITOR` on Ctrl+G) or to
//! the shell (Ctrl+Z) and taking it back, and reading an image from the clipboard.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use crossterm::event::{
    DisableBracketedPaste, EnableBracketedPaste, KeyboardEnhancementFlags,
    PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};

use crate::app::App;
use crate::cells::Cell;

/// How the terminal shows images inline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageProtocol {
    /// The kitty graphics protocol (kitty, Ghostty, WezTerm).
    Kitty,
    /// iTerm2's inline images (`OSC 1337;File=`).
    ITerm2,
}

/// What the environment says about the terminal and its surroundings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TermEnv {
    /// `$VISUAL`, else `$EDITOR`.
    pub editor: Option<String>,
    /// A Wayland session (`WAYLAND_DISPLAY`, `XDG_SESSION_TYPE=wayland`): the clipboard is read
    /// with `wl-paste` first.
    pub wayland: bool,
    /// The inline image protocol, `None` where images get a placeholder.
    pub images: Option<ImageProtocol>,
    /// Where temporary files go (`$TMPDIR`, else `/tmp`).
    pub tmp_dir: PathBuf,
}

impl TermEnv {
    /// Read from environment variables through `get` (no global lookups in here), as pi does:
    /// no images inside tmux or screen; kitty, Ghostty and WezTerm speak kitty's protocol,
    /// iTerm2 its own.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> TermEnv {
        let val = |k: &str| get(k).filter(|v| !v.is_empty());
        let lower = |k: &str| val(k).unwrap_or_default().to_lowercase();
        let (term, program) = (lower("TERM"), lower("TERM_PROGRAM"));
        let images =
            if val("TMUX").is_some() || term.starts_with("tmux") || term.starts_with("screen") {
                None
            } else if val("KITTY_WINDOW_ID").is_some()
                || program == "kitty"
                || program == "ghostty"
                || term.contains("ghostty")
                || val("GHOSTTY_RESOURCES_DIR").is_some()
                || val("WEZTERM_PANE").is_some()
                || program == "wezterm"
            {
                Some(ImageProtocol::Kitty)
            } else if val("ITERM_SESSION_ID").is_some() || program == "iterm.app" {
                Some(ImageProtocol::ITerm2)
            } else {
                None
            };
        TermEnv {
            editor: val("VISUAL").or_else(|| val("EDITOR")),
            wayland: val("WAYLAND_DISPLAY").is_some() || lower("XDG_SESSION_TYPE") == "wayland",
            images,
            tmp_dir: val("TMPDIR").map_or_else(|| PathBuf::from("/tmp"), PathBuf::from),
        }
    }
}

/// Work that needs the terminal to itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TermJob {
    /// Ctrl+Z: back to the shell until resumed.
    Suspend,
    /// Ctrl+G: the editor's text in `$VISUAL`/`$EDITOR`.
    ExternalEditor,
}

/// Raw mode, the alternate screen, bracketed paste and the keyboard protocol (where the terminal
/// has it: Shift+Ctrl+P and the like become distinguishable).
pub(crate) fn enter() -> std::io::Result<()> {
    enable_raw_mode()?;
    crossterm::execute!(
        std::io::stdout(),
        EnterAlternateScreen,
        EnableBracketedPaste,
        PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
    )
}

/// The terminal as it was before [`enter`].
pub(crate) fn leave() {
    let _ = crossterm::execute!(std::io::stdout(), PopKeyboardEnhancementFlags);
    let _ = disable_raw_mode();
    let _ = crossterm::execute!(
        std::io::stdout(),
        DisableBracketedPaste,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
}

/// Do `job` with the terminal handed over; the caller redraws everything afterwards.
pub(crate) fn run_job(job: TermJob, app: &mut App) {
    match job {
        TermJob::Suspend => suspend(app),
        TermJob::ExternalEditor => external_editor(app),
    }
}

fn suspend(app: &mut App) {
    leave();
    // The whole process group stops, as with Ctrl+Z at a shell; this returns once resumed.
    let stopped = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(0),
        nix::sys::signal::Signal::SIGTSTP,
    );
    if let Err(e) = enter() {
        app.state.push(Cell::Error(format!(
            "Could not take the terminal back: {e}"
        )));
    }
    if let Err(e) = stopped {
        app.state
            .push(Cell::Error(format!("Could not suspend: {e}")));
    }
}

fn external_editor(app: &mut App) {
    let Some(cmd) = app.options.term.editor.clone() else {
        app.state.push(Cell::Warning(
            "No editor configured. Set $VISUAL or $EDITOR environment variable.".into(),
        ));
        return;
    };
    let file = app
        .options
        .term
        .tmp_dir
        .join(format!("filo-editor-{}.md", filo_session::ids::now_ms()));
    let text = app.state.editor.expanded();
    if let Err(e) = std::fs::write(&file, &text) {
        app.state.push(Cell::Error(format!(
            "Could not write {}: {e}",
            file.display()
        )));
        return;
    }
    let mut words = cmd.split_whitespace();
    let program = words.next().unwrap_or_default().to_string();
    leave();
    let status = Command::new(&program)
        .args(words)
        .arg(&file)
        .stdin(Stdio::inherit())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .status();
    let back = enter();
    match status {
        Ok(s) if s.success() => match std::fs::read_to_string(&file) {
            Ok(t) => {
                let t = t.strip_suffix('\n').unwrap_or(&t);
                app.state.editor.set_text(t);
            }
            Err(e) => app.state.push(Cell::Error(format!(
                "Could not read {}: {e}",
                file.display()
            ))),
        },
        // A failed edit keeps the text as it was (as in pi).
        Ok(s) => app.state.push(Cell::Warning(format!(
            "{program} exited with {s}; the editor's text is unchanged"
        ))),
        Err(e) => app
            .state
            .push(Cell::Error(format!("Could not run {program}: {e}"))),
    }
    let _ = std::fs::remove_file(&file);
    if let Err(e) = back {
        app.state.push(Cell::Error(format!(
            "Could not take the terminal back: {e}"
        )));
    }
    let _ = std::io::stdout().flush();
}

/// The image types pi takes from the clipboard, preferred first, with their file extension.
const IMAGE_TYPES: &[(&str, &str)] = &[
    ("image/png", "png"),
    ("image/jpeg", "jpg"),
    ("image/webp", "webp"),
    ("image/gif", "gif"),
];

/// Run `program args`, its output when it succeeds; `Err(true)` when it is not installed.
fn output(program: &str, args: &[String]) -> Result<Vec<u8>, bool> {
    match Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
    {
        Ok(o) if o.status.success() => Ok(o.stdout),
        Ok(_) => Err(false),
        Err(e) => Err(e.kind() == std::io::ErrorKind::NotFound),
    }
}

/// The first of the clipboard's types that is an image we take.
fn pick_type(listed: &[u8]) -> Option<(&'static str, &'static str)> {
    let listed = String::from_utf8_lossy(listed);
    let types: Vec<&str> = listed.lines().map(str::trim).collect();
    IMAGE_TYPES
        .iter()
        .find(|(mime, _)| types.iter().any(|t| t.split(';').next() == Some(*mime)))
        .copied()
}

/// The arguments that make `program` list the clipboard's types, and read one type.
fn clipboard_args(program: &str, mime: Option<&str>) -> Vec<String> {
    let v: Vec<&str> = match (program, mime) {
        ("wl-paste", None) => vec!["--list-types"],
        ("wl-paste", Some(t)) => vec!["--type", t, "--no-newline"],
        (_, None) => vec!["-selection", "clipboard", "-t", "TARGETS", "-o"],
        (_, Some(t)) => vec!["-selection", "clipboard", "-t", t, "-o"],
    };
    v.into_iter().map(str::to_string).collect()
}

/// An image from the clipboard as `(bytes, extension)`; `Err(true)` when the tool is missing.
fn read_with(program: &str) -> Result<Option<(Vec<u8>, &'static str)>, bool> {
    let listed = output(program, &clipboard_args(program, None))?;
    let Some((mime, ext)) = pick_type(&listed) else {
        return Ok(None);
    };
    match output(program, &clipboard_args(program, Some(mime))) {
        Ok(bytes) if !bytes.is_empty() => Ok(Some((bytes, ext))),
        Ok(_) | Err(false) => Ok(None),
        Err(true) => Err(true),
    }
}

/// Ctrl+V: the clipboard's image written to a temporary file, or a message saying why not.
pub(crate) fn clipboard_image(env: &TermEnv) -> Result<PathBuf, String> {
    let tools: &[&str] = if env.wayland {
        &["wl-paste", "xclip"]
    } else {
        &["xclip", "wl-paste"]
    };
    let mut any_tool = false;
    for tool in tools {
        match read_with(tool) {
            Ok(Some((bytes, ext))) => {
                let path = env.tmp_dir.join(format!(
                    "filo-clipboard-{}.{ext}",
                    filo_session::ids::now_ms()
                ));
                std::fs::write(&path, bytes)
                    .map_err(|e| format!("Could not save the image to {}: {e}", path.display()))?;
                return Ok(path);
            }
            Ok(None) => any_tool = true,
            Err(missing) => any_tool |= !missing,
        }
    }
    if any_tool {
        Err("No image in the clipboard".into())
    } else {
        Err("Pasting an image needs wl-paste (Wayland) or xclip (X11); neither is installed".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> TermEnv {
        let map: std::collections::HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect();
        TermEnv::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn the_image_protocol_is_detected_as_pi_does() {
        assert_eq!(
            env(&[("KITTY_WINDOW_ID", "1")]).images,
            Some(ImageProtocol::Kitty)
        );
        assert_eq!(
            env(&[("TERM_PROGRAM", "WezTerm")]).images,
            Some(ImageProtocol::Kitty)
        );
        assert_eq!(
            env(&[("TERM", "xterm-ghostty")]).images,
            Some(ImageProtocol::Kitty)
        );
        assert_eq!(
            env(&[("TERM_PROGRAM", "iTerm.app")]).images,
            Some(ImageProtocol::ITerm2)
        );
        assert_eq!(env(&[("TERM", "xterm-256color")]).images, None);
        // tmux and screen swallow the sequences.
        assert_eq!(
            env(&[("KITTY_WINDOW_ID", "1"), ("TMUX", "/tmp/x")]).images,
            None
        );
        assert_eq!(
            env(&[("ITERM_SESSION_ID", "w0"), ("TERM", "screen")]).images,
            None
        );
    }

    #[test]
    fn visual_wins_over_editor() {
        assert_eq!(env(&[("EDITOR", "vi")]).editor.as_deref(), Some("vi"));
        let both = env(&[("EDITOR", "vi"), ("VISUAL", "code --wait")]);
        assert_eq!(both.editor.as_deref(), Some("code --wait"));
        assert_eq!(env(&[]).editor, None);
    }

    #[test]
    fn the_preferred_image_type_is_picked() {
        assert_eq!(
            pick_type(b"TARGETS\ntext/plain\nimage/jpeg\nimage/png\n"),
            Some(("image/png", "png"))
        );
        assert_eq!(pick_type(b"image/gif\n"), Some(("image/gif", "gif")));
        assert_eq!(pick_type(b"text/plain\n"), None);
    }
}
