//! `filo-mock-server <text|tool|stream>`: serve the endless scripted mock provider on 127.0.0.1, print
//! its URL on stdout, and exit when stdin closes (the benchmark driver holds stdin open), writing
//! one summary line per request served to stderr.

use std::io::{Read, Write};

use anyhow::{Context, bail};
use filo_bench::{EndlessMock, Scenario};

const USAGE: &str = "usage: filo-mock-server <text|tool|stream>";

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(name), None) = (args.next(), args.next()) else {
        bail!("{USAGE}");
    };
    let Some(scenario) = Scenario::from_name(&name) else {
        bail!("unknown scenario `{name}`; {USAGE}");
    };
    let mock = EndlessMock::start(scenario)
        .await
        .context("cannot listen on 127.0.0.1")?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{}", mock.url()).context("cannot write the URL to stdout")?;
    stdout.flush().context("cannot write the URL to stdout")?;
    drop(stdout);
    tokio::task::spawn_blocking(|| {
        // Anything written to stdin is ignored; only its end matters.
        let mut sink = Vec::new();
        std::io::stdin().lock().read_to_end(&mut sink)
    })
    .await
    .context("the stdin watcher panicked")?
    .context("cannot read stdin")?;
    let mut stderr = std::io::stderr().lock();
    for line in mock.request_summaries() {
        writeln!(stderr, "{line}").context("cannot write the request log to stderr")?;
    }
    Ok(())
}
