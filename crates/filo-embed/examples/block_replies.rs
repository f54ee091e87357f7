//! Embeds filo and prints the block replies of one prompt, as a chat channel would send them.
//!
//! ```sh
//! scripts/local-model.sh start
//! cargo run -p filo-embed --example block_replies -- llamacpp/local "Write a haiku about Rust"
//! ```
//!
//! The first argument is `provider/model` (any provider of filo's catalog or
//! `~/.filo/agent/models.json`, its key from the usual variable or `auth-profiles.json`), the rest
//! is the prompt. State (sessions, auth profiles, `filo-embed.json`) lives in `~/.filo`, and the
//! turn is mirrored into the Playfilo memory at `~/.playfilo/playfilo.db`.

// An example is a binary: it talks to its user on stdout and stderr.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;
use std::sync::Arc;

use filo_embed::clock::SystemClock;
use filo_embed::config::CONFIG_FILE;
use filo_embed::run::params::BlockReplyConfig;
use filo_embed::stream::chunker::Chunking;
use filo_embed::subscriber::machine::BlockBreak;
use filo_embed::{BlockReply, EmbedConfig, EmbedDeps, EmbedPaths, Embedder, ReplySink, RunParams};
use futures::future::BoxFuture;

/// The channel: each block reply is one message.
struct Printer;

impl ReplySink for Printer {
    fn block_reply(&self, b: BlockReply) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Some(text) = b.text {
                println!("── block ──\n{text}");
            }
        })
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let model = args.next().unwrap_or_else(|| "llamacpp/local".to_owned());
    let prompt: Vec<String> = args.collect();
    let prompt = if prompt.is_empty() {
        "Say hello in five words.".to_owned()
    } else {
        prompt.join(" ")
    };
    let (provider, model_id) = model
        .split_once('/')
        .ok_or_else(|| anyhow::anyhow!("the model is provider/model, e.g. llamacpp/local"))?;

    // Only `main` reads the process environment; the embedder gets explicit values.
    let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| ".".into()));
    let paths = EmbedPaths::new(None, home.clone(), std::env::temp_dir());
    let config = EmbedConfig::load(&paths.state_dir.join(CONFIG_FILE))?;
    for w in &config.warnings {
        eprintln!("warning: {w}");
    }
    let (registry, warnings) = filo_core::loader::load_registry(&home.join(".filo/agent"));
    for w in warnings {
        eprintln!("warning: {w}");
    }
    let embedder = Embedder::new(EmbedDeps {
        config,
        paths,
        registry,
        env: filo_ai::Env::from_vars(std::env::vars()),
        client: None,
        clock: Arc::new(SystemClock),
        api_key: None,
    })?;

    let workspace = std::env::current_dir()?;
    let mut params = RunParams::new("example-block-replies", workspace, prompt);
    params.provider = Some(provider.to_owned());
    params.model = Some(model_id.to_owned());
    params.block_reply = Some(BlockReplyConfig {
        break_mode: BlockBreak::TextEnd,
        chunking: Some(Chunking::new(200, 800)),
    });
    let result = embedder.run(params, Arc::new(Printer)).await?;

    for w in &result.meta.warnings {
        eprintln!("warning: {w}");
    }
    if let Some(meta) = &result.meta.agent_meta {
        eprintln!(
            "── {}/{} · {} payload(s) · {:?}",
            meta.provider,
            meta.model,
            result.payloads.len(),
            result.meta.duration
        );
    }
    // Errors the user should see (rate limits, overflow, timeouts) arrive as error payloads.
    let failed = result.payloads.iter().any(|p| p.is_error);
    for p in result.payloads.iter().filter(|p| p.is_error) {
        eprintln!("error: {}", p.text.as_deref().unwrap_or(""));
    }
    embedder.shutdown(std::time::Duration::from_secs(5)).await;
    if failed || !result.meta.warnings.is_empty() {
        std::process::exit(1);
    }
    Ok(())
}
