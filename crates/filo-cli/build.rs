//! Packed relative relocations for the `filo` binary where the C library can load them.
//!
//! A position-independent executable carries one relocation record (24 bytes) for every pointer
//! in its read-only data; the dynamic loader reads them all and writes every page they point
//! into before `main` runs. Packed (`DT_RELR`) relocations describe the same pointers in a
//! bitmap a few kilobytes long: the 1 MB table is never read, start-up does less, and the
//! resident memory of a short run drops by about as much (BENCHMARKS.md, issue 16). A binary
//! with packed relocations needs glibc 2.36 or later to start, so they are used only when the
//! binary is built for the machine building it and that machine's glibc has them.
//! `FILO_PLAIN_RELOCS=1` turns this off (to build a binary for an older system elsewhere).

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=FILO_PLAIN_RELOCS");
    if std::env::var_os("FILO_PLAIN_RELOCS").is_some_and(|v| v != "0") {
        return;
    }
    let target = std::env::var("TARGET").unwrap_or_default();
    let host = std::env::var("HOST").unwrap_or_default();
    // Built for this machine (so its glibc is the one that will load the binary), on the two
    // architectures whose linkers (lld, GNU ld >= 2.38 on x86-64) are known to pack them.
    let arch_ok = target.starts_with("x86_64-") || target.starts_with("aarch64-");
    if target != host || !target.ends_with("-linux-gnu") || !arch_ok {
        return;
    }
    if host_glibc().is_some_and(|v| v >= (2, 36)) {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// The host's glibc version, from `getconf GNU_LIBC_VERSION` ("glibc 2.36").
fn host_glibc() -> Option<(u32, u32)> {
    let out = Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let version = text.trim().strip_prefix("glibc ")?;
    let mut parts = version.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}
