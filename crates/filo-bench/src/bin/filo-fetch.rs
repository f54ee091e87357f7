//! `filo-fetch URL BODY`: the bare transfer a streaming benchmark compares against — POST `BODY`
//! (JSON) to `URL` (`http://127.0.0.1:PORT/path`) over one plain HTTP/1.1 connection, read the
//! whole answer to its end and print its size in bytes. No parsing, no TLS, no runtime: what any
//! client must at least spend to receive the stream, process start included.

use std::io::{Read, Write};
use std::net::TcpStream;

use anyhow::{Context, bail};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(url), Some(body), None) = (args.next(), args.next(), args.next()) else {
        bail!("usage: filo-fetch URL BODY");
    };
    let rest = url
        .strip_prefix("http://")
        .context("only http:// URLs are fetched")?;
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let mut stream =
        TcpStream::connect(host).with_context(|| format!("cannot connect to {host}"))?;
    let request = format!(
        "POST /{path} HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream
        .write_all(request.as_bytes())
        .context("cannot send the request")?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0usize;
    loop {
        match stream.read(&mut buf).context("cannot read the answer")? {
            0 => break,
            n => total += n,
        }
    }
    writeln!(std::io::stdout(), "{total}").context("cannot write to stdout")?;
    Ok(())
}
