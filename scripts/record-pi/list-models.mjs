#!/usr/bin/env node
// Records what an installed pi prints for `--list-models` with a (fake) key for every provider
// of filo's catalog, into crates/filo-cli/tests/fixtures/pi-<version>/list-models.json. The
// test `list_models_equals_pi_16` (crates/filo-cli/tests/suite/list_models_pi16.rs) runs filo
// with the same variables and compares the tables byte for byte.
//
//   node scripts/record-pi/list-models.mjs [--pi /work/pi16]
//
// pi runs offline (PI_OFFLINE=1) in a fresh HOME with nothing of this machine's environment but
// PATH and the recorded variables, so only the built-in catalog and the keys decide the table.

import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const args = process.argv.slice(2);
const prefix = args[0] === "--pi" && args[1] ? args[1] : "/work/pi16";
const pkg = path.join(prefix, "node_modules", "@earendil-works", "pi-coding-agent");
const version = JSON.parse(fs.readFileSync(path.join(pkg, "package.json"), "utf8")).version;
const cli = path.join(pkg, "dist", "cli.js");

// Every key variable of filo's catalog, plus what the providers without one need: AWS keys for
// Bedrock and Cloudflare's account and gateway ids.
const catalog = JSON.parse(fs.readFileSync(path.join(REPO, "crates/filo-ai/data/catalog.json"), "utf8"));
const names = new Set(catalog.providers.flatMap((p) => p.envKeys));
for (const extra of ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "CLOUDFLARE_ACCOUNT_ID", "CLOUDFLARE_GATEWAY_ID"]) {
  names.add(extra);
}
const keys = Object.fromEntries([...names].sort().map((n) => [n, `fake-${n.toLowerCase()}`]));

const cases = { all: [], "search opus": ["opus"], "search kimi": ["kimi"], "search nothing": ["zzzz-none"] };
const out = { pi: `@earendil-works/pi-coding-agent ${version}`, keys };
for (const [name, extraArgs] of Object.entries(cases)) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "pi-list-"));
  try {
    // Into files, not pipes: pi exits without waiting for a full pipe to drain, which would
    // cut a long table short.
    const outFile = path.join(home, "stdout");
    const errFile = path.join(home, "stderr");
    const stdout = fs.openSync(outFile, "w");
    const stderr = fs.openSync(errFile, "w");
    const run = spawnSync(process.execPath, [cli, "--list-models", ...extraArgs], {
      cwd: home,
      env: { PATH: process.env.PATH, HOME: home, PI_OFFLINE: "1", ...keys },
      stdio: ["ignore", stdout, stderr],
    });
    fs.closeSync(stdout);
    fs.closeSync(stderr);
    out[name] = {
      args: extraArgs,
      stdout: fs.readFileSync(outFile, "utf8"),
      stderr: fs.readFileSync(errFile, "utf8"),
      code: run.status,
    };
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
}
const dest = path.join(REPO, `crates/filo-cli/tests/fixtures/pi-${version}/list-models.json`);
fs.mkdirSync(path.dirname(dest), { recursive: true });
fs.writeFileSync(dest, JSON.stringify(out, null, 1) + "\n");
process.stdout.write(`wrote ${dest}\n`);
