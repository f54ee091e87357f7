//! `write`: create or overwrite a file, creating parent directories.

use filo_agent::{AgentTool, Concurrency, ToolCallContext, ToolError, ToolOutput};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::args::parse_args;
use crate::error::Error;
use crate::paths::resolve_to_cwd;
use crate::support::cancellable;

const DESCRIPTION: &str = "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. Automatically creates parent directories.";

#[derive(Debug, Deserialize)]
struct WriteArgs {
    path: String,
    content: String,
}

crate::support::settings_tool!(
    /// The `write` tool.
    WriteTool, "write"
);

impl WriteTool {
    async fn run(&self, args: WriteArgs) -> Result<ToolOutput, Error> {
        let path = resolve_to_cwd(
            &args.path,
            &self.settings.cwd,
            self.settings.home.as_deref(),
        );
        // Opening a FIFO for writing blocks until a reader appears; a device or socket is not a
        // file to overwrite. Directories keep pi's EISDIR error from the open below.
        if let Ok(meta) = tokio::fs::metadata(&path).await
            && !meta.is_file()
            && !meta.is_dir()
        {
            return Err(Error::message(format!(
                "Cannot write {}: it is {}, not a regular file.",
                path.display(),
                crate::fileread::kind(&meta)
            )));
        }
        if let Some(parent) = path.parent() {
            tokio::fs::create_dir_all(parent)
                .await
                .map_err(|e| Error::io("mkdir", parent, e))?;
        }
        tokio::fs::write(&path, args.content.as_bytes())
            .await
            .map_err(|e| Error::io("open", &path, e))?;
        // pi 1.6 (0.85) no longer reports the size.
        Ok(ToolOutput::text(format!(
            "Successfully wrote to {}",
            args.path
        )))
    }
}

impl AgentTool for WriteTool {
    fn name(&self) -> &str {
        "write"
    }

    fn label(&self) -> &str {
        "write"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path to the file to write (relative or absolute)"},
                "content": {"type": "string", "description": "Content to write to the file"}
            },
            "required": ["path", "content"]
        })
    }

    fn concurrency(&self) -> Concurrency {
        Concurrency::Exclusive
    }

    fn execute(&self, ctx: ToolCallContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        async move {
            let args: WriteArgs = parse_args("write", &ctx.args)?;
            Ok(cancellable(&ctx.cancel, self.run(args)).await?)
        }
        .boxed()
    }
}
