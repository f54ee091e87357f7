//! `read`: text files with offset/limit and truncation notices, images as attachments.

use std::path::Path;

use base64::Engine;
use filo_agent::{AgentTool, Concurrency, ToolCallContext, ToolError, ToolOutput};
use filo_ai::ContentBlock;
use futures::FutureExt;
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::args::{js_number, parse_args, to_count};
use crate::error::Error;
use crate::fileread::{Contents, MAX_READ_BYTES, read_regular_async};
use crate::image::{ImageLimits, prepare_image, prepare_image_with, sniff_image_mime};
use crate::paths::resolve_read_path;
use crate::support::{blocking, cancellable, text_output};
use crate::truncate::{DEFAULT_MAX_BYTES, Limits, TruncatedBy, format_size, truncate_head};

const DESCRIPTION: &str = "Read the contents of a file. Supports text files and images (jpg, png, gif, webp, bmp). Images are sent as attachments. For text files, output is truncated to 2000 lines or 50KB (whichever is hit first). Use offset/limit for large files. When you need the full file, continue with offset until complete.";

#[derive(Debug, Deserialize)]
struct ReadArgs {
    path: String,
    #[serde(default, deserialize_with = "crate::args::lenient_number")]
    offset: Option<f64>,
    #[serde(default, deserialize_with = "crate::args::lenient_number")]
    limit: Option<f64>,
}

crate::support::settings_tool!(
    /// The `read` tool.
    ReadTool, "read"
);

impl ReadTool {
    async fn run(
        &self,
        args: ReadArgs,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<ToolOutput, Error> {
        let path = resolve_read_path(
            &args.path,
            &self.settings.cwd,
            self.settings.home.as_deref(),
        );
        let contents = cancellable(cancel, read_file(&path)).await?;
        match sniff_image_mime(&contents.bytes[..contents.bytes.len().min(4100)]) {
            Some(mime) => {
                if !contents.complete {
                    return Err(too_large(&args.path, contents.file_size, "An image"));
                }
                let resize = self.settings.auto_resize_images;
                let bytes = contents.bytes;
                blocking(cancel, move |_| Ok(image_output(bytes, mime, resize))).await
            }
            None if contents.complete => {
                text_file_output(&String::from_utf8_lossy(&contents.bytes), &args, None)
            }
            None => {
                // Only whole lines of the prefix: the cut line would be shown as if it ended there.
                let bytes = &contents.bytes;
                let end = memrchr_newline(bytes).unwrap_or(bytes.len());
                let prefix = Prefix {
                    file_size: contents.file_size,
                };
                text_file_output(&String::from_utf8_lossy(&bytes[..end]), &args, Some(prefix))
            }
        }
    }
}

/// The part of a file past [`MAX_READ_BYTES`] is never read; this describes what was.
#[derive(Debug, Clone, Copy)]
struct Prefix {
    file_size: u64,
}

impl Prefix {
    fn notice(&self, path: &str, lines_read: usize) -> String {
        let next = lines_read + 1;
        format!(
            "[File is {}; only its first {} ({lines_read} whole lines) were read. Use bash to read on from line {next}: sed -n '{next},+1999p' {path}]",
            format_size(usize::try_from(self.file_size).unwrap_or(usize::MAX)),
            format_size(usize::try_from(MAX_READ_BYTES).unwrap_or(usize::MAX)),
        )
    }
}

fn memrchr_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().rposition(|&b| b == b'\n')
}

fn too_large(path: &str, size: u64, what: &str) -> Error {
    Error::message(format!(
        "{what} of {} is larger than the read limit of {}: {path}",
        format_size(usize::try_from(size).unwrap_or(usize::MAX)),
        format_size(usize::try_from(MAX_READ_BYTES).unwrap_or(usize::MAX)),
    ))
}

/// A regular file's bytes up to [`MAX_READ_BYTES`]; a directory is pi's EISDIR error, any other
/// non-regular file (FIFO, device, socket) is refused before it is opened.
async fn read_file(path: &Path) -> Result<Contents, Error> {
    let meta = tokio::fs::metadata(path)
        .await
        .map_err(|e| Error::io("access", path, e))?;
    if meta.is_dir() {
        return Err(Error::message(
            "EISDIR: illegal operation on a directory, read",
        ));
    }
    read_regular_async(path, MAX_READ_BYTES).await
}

fn image_output(bytes: Vec<u8>, mime: &'static str, resize: bool) -> ToolOutput {
    let engine = base64::engine::general_purpose::STANDARD;
    let (data, mime_type, note) = if resize {
        let prepared = prepare_image(bytes, mime);
        let note = prepared.dimension_note();
        (engine.encode(&prepared.bytes), prepared.mime_type, note)
    } else if mime == "image/bmp" {
        // No provider takes BMP: converted to PNG even when resizing is off, never scaled.
        let unbounded = ImageLimits {
            max_dimension: u32::MAX,
            max_bytes: usize::MAX,
        };
        let prepared = prepare_image_with(bytes, mime, unbounded);
        (engine.encode(&prepared.bytes), prepared.mime_type, None)
    } else {
        (engine.encode(&bytes), mime.to_string(), None)
    };
    let mut text = format!("Read image file [{mime_type}]");
    if let Some(note) = note {
        text.push('\n');
        text.push_str(&note);
    }
    ToolOutput {
        content: vec![
            ContentBlock::text(text),
            ContentBlock::image(data, mime_type),
        ],
        details: None,
    }
}

/// Select lines, truncate, and add pi's continuation notices.
fn text_file_output(
    text: &str,
    args: &ReadArgs,
    prefix: Option<Prefix>,
) -> Result<ToolOutput, Error> {
    let lines: Vec<&str> = text.split('\n').collect();
    let total = lines.len();
    let start = args.offset.map_or(0, |o| to_count(o - 1.0));
    if let Some(prefix) = prefix.filter(|_| start >= total) {
        let shown = args.offset.map_or(0.0, |o| o);
        return Err(Error::message(format!(
            "Offset {} is beyond the part of the file that was read.\n{}",
            js_number(shown),
            prefix.notice(&args.path, total)
        )));
    }
    if start >= total {
        let shown = args
            .offset
            .map_or_else(|| "undefined".to_string(), js_number);
        return Err(Error::message(format!(
            "Offset {shown} is beyond end of file ({total} lines total)"
        )));
    }
    let end = match args.limit {
        Some(limit) => start.saturating_add(to_count(limit)).min(total),
        None => total,
    };
    let selected = lines[start..end].join("\n");
    let truncation = truncate_head(&selected, Limits::default());
    let first = start + 1;
    let mut details = Map::new();
    let output = if truncation.first_line_exceeds_limit {
        let size = format_size(lines[start].len());
        details.insert("truncation".into(), truncation.to_json());
        format!(
            "[Line {first} is {size}, exceeds {} limit. Use bash: sed -n '{first}p' {} | head -c {DEFAULT_MAX_BYTES}]",
            format_size(DEFAULT_MAX_BYTES),
            args.path
        )
    } else if truncation.truncated {
        let last = first + truncation.output_lines - 1;
        let notice = match truncation.truncated_by {
            Some(TruncatedBy::Lines) | None => format!(
                "\n\n[Showing lines {first}-{last} of {total}. Use offset={} to continue.]",
                last + 1
            ),
            Some(TruncatedBy::Bytes) => format!(
                "\n\n[Showing lines {first}-{last} of {total} ({} limit). Use offset={} to continue.]",
                format_size(DEFAULT_MAX_BYTES),
                last + 1
            ),
        };
        let text = format!("{}{notice}", truncation.content);
        details.insert("truncation".into(), truncation.to_json());
        text
    } else if args.limit.is_some() && end < total {
        format!(
            "{}\n\n[{} more lines in file. Use offset={} to continue.]",
            truncation.content,
            total - end,
            end + 1
        )
    } else {
        truncation.content
    };
    let output = match prefix {
        Some(prefix) => format!("{output}\n\n{}", prefix.notice(&args.path, total)),
        None => output,
    };
    Ok(text_output(output, details))
}

impl AgentTool for ReadTool {
    fn name(&self) -> &str {
        "read"
    }

    fn label(&self) -> &str {
        "read"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path to the file to read (relative or absolute)"},
                "offset": {"type": "number", "description": "Line number to start reading from (1-indexed)"},
                "limit": {"type": "number", "description": "Maximum number of lines to read"}
            },
            "required": ["path"]
        })
    }

    fn concurrency(&self) -> Concurrency {
        Concurrency::Shared
    }

    fn execute(&self, ctx: ToolCallContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        async move {
            let args: ReadArgs = parse_args("read", &ctx.args)?;
            Ok(self.run(args, &ctx.cancel).await?)
        }
        .boxed()
    }
}
