//! filo-tools benchmarks (a bench binary that prints a table; no criterion).
//!
//! 1. grep over a generated tree (default 200 MB; `FILO_BENCH_GREP_MB` to change) through the
//!    real `GrepTool`, against `rg` invoked the way pi invokes it (`--json --line-number
//!    --color=never --hidden …`), when `rg` is on `PATH`.
//! 2. edit of a 10 MB file through the real `EditTool` (read, exact + normalised uniqueness check,
//!    diff, write) against a naive read-replace-write baseline.
//!
//! Each case: one warm-up run, then 5 timed runs; the table shows the median and the minimum.
#![allow(clippy::print_stdout)]

use std::error::Error;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use filo_agent::{AgentTool, ToolCallContext, ToolOutput};
use filo_tools::grep::{GrepQuery, find_matches};
use filo_tools::{EditTool, GrepTool, ToolSettings};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

type BoxResult<T> = Result<T, Box<dyn Error>>;

const RUNS: usize = 7;
const WORDS: [&str; 16] = [
    "lorem", "ipsum", "dolor", "sit", "amet", "value", "result", "config", "server", "client",
    "buffer", "stream", "token", "parse", "render", "update",
];

/// xorshift64: deterministic content without a rand dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn line(rng: &mut Rng, out: &mut String, line_no: u64) {
    let r = rng.next();
    if r.is_multiple_of(7919) {
        out.push_str("    fn stream_handler(input: &str) -> ZEPHYR_TOKEN_42 {\n");
        return;
    }
    if r.is_multiple_of(4001) {
        out.push_str("    fn parse_handler(input: &str) -> Result {\n");
        return;
    }
    out.push_str("    ");
    for i in 0..(6 + (r >> 8) % 6) {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(WORDS[((r >> (12 + 4 * (i % 12))) % 16) as usize]);
    }
    out.push_str(&format!(" = {line_no};\n"));
}

/// Write `megabytes` of source-like text as dirs of 50 KB files, plus extras excluded by an
/// `.ignore` file (honoured by both rg and filo without a git repository).
fn generate_tree(root: &Path, megabytes: usize) -> BoxResult<usize> {
    let files = megabytes * 20;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut written = 0;
    std::fs::write(root.join(".ignore"), "*.tmp\n")?;
    for f in 0..files {
        let dir = root.join(format!("d{:03}", f / 100));
        if f % 100 == 0 {
            std::fs::create_dir_all(&dir)?;
        }
        let mut text = String::with_capacity(52 * 1024);
        let mut n = 0;
        while text.len() < 50 * 1024 {
            n += 1;
            line(&mut rng, &mut text, n);
        }
        written += text.len();
        std::fs::write(dir.join(format!("f{:03}.rs", f % 100)), &text)?;
        if f % 500 == 0 {
            std::fs::write(dir.join("ignored.tmp"), &text)?;
        }
    }
    Ok(written)
}

fn block_on<F: std::future::Future>(rt: &tokio::runtime::Runtime, fut: F) -> F::Output {
    rt.block_on(fut)
}

fn call(rt: &tokio::runtime::Runtime, tool: &dyn AgentTool, args: &Value) -> BoxResult<ToolOutput> {
    block_on(
        rt,
        tool.execute(ToolCallContext::new("bench", args.clone())),
    )
    .map_err(|e| format!("{} failed: {e}", tool.name()).into())
}

/// Median and minimum of `RUNS` timed runs after one warm-up.
fn measure(mut run: impl FnMut() -> BoxResult<()>) -> BoxResult<(Duration, Duration)> {
    run()?;
    let mut times = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let start = Instant::now();
        run()?;
        times.push(start.elapsed());
    }
    times.sort();
    Ok((times[RUNS / 2], times[0]))
}

fn rg_available() -> bool {
    Command::new("rg")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// rg as pi runs it; returns the number of `match` events.
fn run_rg(root: &Path, pattern: &str, ignore_case: bool, literal: bool) -> BoxResult<usize> {
    let mut cmd = Command::new("rg");
    cmd.args(["--json", "--line-number", "--color=never", "--hidden"]);
    if ignore_case {
        cmd.arg("--ignore-case");
    }
    if literal {
        cmd.arg("--fixed-strings");
    }
    let out = cmd.arg(pattern).arg(root).stderr(Stdio::null()).output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text
        .lines()
        .filter(|l| l.starts_with("{\"type\":\"match\""))
        .count())
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

struct GrepCase {
    name: &'static str,
    pattern: &'static str,
    ignore_case: bool,
    literal: bool,
}

fn grep_bench(rt: &tokio::runtime::Runtime, rows: &mut Vec<String>) -> BoxResult<()> {
    let megabytes = std::env::var("FILO_BENCH_GREP_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200usize);
    let dir = tempfile::tempdir()?;
    let started = Instant::now();
    let bytes = generate_tree(dir.path(), megabytes)?;
    println!(
        "generated {:.1} MB in {} files under {} in {}",
        bytes as f64 / 1e6,
        megabytes * 20,
        dir.path().display(),
        ms(started.elapsed())
    );
    let settings = Arc::new(ToolSettings::new(dir.path()));
    let grep = GrepTool::with_settings(settings);
    let rg = rg_available();
    let cases = [
        GrepCase {
            name: "literal, rare",
            pattern: "ZEPHYR_TOKEN_42",
            ignore_case: false,
            literal: true,
        },
        GrepCase {
            name: "regex, rare",
            pattern: r"fn\s+[a-z]+_handler\(",
            ignore_case: false,
            literal: false,
        },
        GrepCase {
            name: "literal, ignore-case",
            pattern: "zephyr_token_42",
            ignore_case: true,
            literal: true,
        },
    ];
    for case in cases {
        let args = json!({"pattern": case.pattern, "ignoreCase": case.ignore_case, "literal": case.literal, "limit": 100000});
        let query = GrepQuery {
            pattern: case.pattern.to_string(),
            root: dir.path().to_path_buf(),
            glob: None,
            ignore_case: case.ignore_case,
            literal: case.literal,
            context: 0,
            limit: 100_000,
        };
        let (found, _) = find_matches(&query, &CancellationToken::new())?;
        let matches: usize = found.iter().map(|(_, lines)| lines.len()).sum();
        let (filo_med, filo_min) = measure(|| call(rt, &grep, &args).map(|_| ()))?;
        let rg_cols = if rg {
            let rg_matches = run_rg(dir.path(), case.pattern, case.ignore_case, case.literal)?;
            let (med, min) = measure(|| {
                run_rg(dir.path(), case.pattern, case.ignore_case, case.literal).map(|_| ())
            })?;
            format!("{} | {} | {rg_matches}", ms(med), ms(min))
        } else {
            "n/a (rg not installed) | n/a | n/a".to_string()
        };
        let cancel = CancellationToken::new();
        let (core_med, _) = measure(|| {
            find_matches(&query, &cancel)
                .map(|_| ())
                .map_err(Into::into)
        })?;
        rows.push(format!(
            "| grep {megabytes} MB: {} | {matches} | {} | {} | {} | {rg_cols} |",
            case.name,
            ms(filo_med),
            ms(filo_min),
            ms(core_med)
        ));
    }
    Ok(())
}

fn edit_bench(
    rt: &tokio::runtime::Runtime,
    rows: &mut Vec<String>,
    unicode: bool,
) -> BoxResult<()> {
    let dir = tempfile::tempdir()?;
    let path: PathBuf = dir.path().join("big.rs");
    let mut rng = Rng(42);
    let mut text = String::with_capacity(10_600_000);
    let mut n = 0;
    while text.len() < 10_000_000 {
        n += 1;
        if n == 80_000 {
            text.push_str("    let unique_marker = compute(\"the one line to change\");\n");
        } else if unicode && n % 1000 == 0 {
            text.push_str("    // caf\u{e9} \u{2014} \u{201c}quoted\u{201d}\n");
        } else {
            line(&mut rng, &mut text, n);
        }
    }
    let old = "    let unique_marker = compute(\"the one line to change\");";
    let new = "    let unique_marker = compute(\"changed\");";
    let tool = EditTool::with_settings(Arc::new(ToolSettings::new(dir.path())));
    let args = json!({"path": "big.rs", "oldText": old, "newText": new});
    let file_write = |content: &str| -> BoxResult<()> {
        let mut f = std::fs::File::create(&path)?;
        f.write_all(content.as_bytes())?;
        Ok(())
    };
    // Timed runs include restoring the file in both columns, so the comparison stays fair.
    let (filo_med, filo_min) = measure(|| {
        file_write(&text)?;
        call(rt, &tool, &args).map(|_| ())
    })?;
    let (plan_med, _) = measure(|| {
        filo_tools::edit::plan_edit(&text, "big.rs", old, new)
            .map(|_| ())
            .map_err(Into::into)
    })?;
    let (naive_med, naive_min) = measure(|| {
        file_write(&text)?;
        let content = std::fs::read_to_string(dir.path().join("big.rs"))?;
        let index = content.find(old).ok_or("marker missing")?;
        let mut out = String::with_capacity(content.len());
        out.push_str(&content[..index]);
        out.push_str(new);
        out.push_str(&content[index + old.len()..]);
        std::fs::write(dir.path().join("big.rs"), out)?;
        Ok(())
    })?;
    let label = if unicode {
        "edit 10 MB (some non-ASCII)"
    } else {
        "edit 10 MB (ASCII)"
    };
    rows.push(format!(
        "| {label} | 1 | {} | {} | plan only: {} | naive: {} | naive: {} | - |",
        ms(filo_med),
        ms(filo_min),
        ms(plan_med),
        ms(naive_med),
        ms(naive_min)
    ));
    Ok(())
}

/// One 100 MB file searched through the tool (single-threaded search) against `rg -j1`.
fn single_file_bench(rt: &tokio::runtime::Runtime, rows: &mut Vec<String>) -> BoxResult<()> {
    let dir = tempfile::tempdir()?;
    let mut rng = Rng(7);
    let mut text = String::with_capacity(105_000_000);
    let mut n = 0;
    while text.len() < 100_000_000 {
        n += 1;
        line(&mut rng, &mut text, n);
    }
    let path = dir.path().join("one.rs");
    std::fs::write(&path, &text)?;
    let grep = GrepTool::with_settings(Arc::new(ToolSettings::new(dir.path())));
    let args =
        json!({"pattern": "ZEPHYR_TOKEN_42", "path": "one.rs", "literal": true, "limit": 100000});
    let (med, min) = measure(|| call(rt, &grep, &args).map(|_| ()))?;
    let matches = text.matches("ZEPHYR_TOKEN_42").count();
    let rg_cols = if rg_available() {
        let run = || -> BoxResult<usize> {
            let out = Command::new("rg")
                .args([
                    "-j1",
                    "--json",
                    "--line-number",
                    "--color=never",
                    "--hidden",
                    "--fixed-strings",
                    "ZEPHYR_TOKEN_42",
                ])
                .arg(&path)
                .stderr(Stdio::null())
                .output()?;
            let text = String::from_utf8_lossy(&out.stdout);
            Ok(text
                .lines()
                .filter(|l| l.starts_with("{\"type\":\"match\""))
                .count())
        };
        let found = run()?;
        let (rmed, rmin) = measure(|| run().map(|_| ()))?;
        format!("{} | {} | {found}", ms(rmed), ms(rmin))
    } else {
        "n/a (rg not installed) | n/a | n/a".to_string()
    };
    rows.push(format!(
        "| grep one 100 MB file (rg -j1) | {matches} | {} | {} | - | {rg_cols} |",
        ms(med),
        ms(min)
    ));
    Ok(())
}

fn main() -> BoxResult<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let mut rows = Vec::new();
    grep_bench(&rt, &mut rows)?;
    single_file_bench(&rt, &mut rows)?;
    edit_bench(&rt, &mut rows, false)?;
    edit_bench(&rt, &mut rows, true)?;
    println!();
    println!(
        "| case | matches | filo tool median | filo tool min | filo core median | baseline median | baseline min | baseline matches |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for row in rows {
        println!("{row}");
    }
    Ok(())
}
