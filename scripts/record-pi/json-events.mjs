// Record pi 1.6's JSON-mode event stream for one tool round (the model calls `bash` with
// `echo hi`, then answers "Done."). NOT part of CI.
//
//   node scripts/record-pi/json-events.mjs --pi /work/pi16 --out json-tool-round.json
//   node scripts/record-pi/json-events.mjs --pi /work/pi16 --filo target/debug/filo --out f.json
//
// Same temporary HOME and mock as ./rpc-client.mjs. The output is every stdout line of
// `--mode json --no-session "use the tool"` as JSON, the temporary directory replaced by <TMP>.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { startMock } from "./mock.mjs";

function arg(name) {
  const i = process.argv.indexOf(name);
  return i === -1 ? undefined : process.argv[i + 1];
}

const PI = arg("--pi");
const FILO = arg("--filo");
const OUT = arg("--out");
if (!PI || !OUT) {
  console.error("usage: json-events.mjs --pi <pi prefix> [--filo <filo binary>] --out <file>");
  process.exit(2);
}
const CLI = join(PI, "node_modules/@earendil-works/pi-coding-agent/dist/cli.js");

const mock = await startMock();
const WORK = mkdtempSync(join(tmpdir(), "pi16-json-"));
const HOME = join(WORK, "home");
const PROJECT = join(WORK, "project");
mkdirSync(PROJECT, { recursive: true });
const models = {
  providers: {
    mock: {
      baseUrl: `${mock.url}/v1`,
      api: "openai-completions",
      apiKey: "MOCK_API_KEY",
      models: [{ id: "mock-model", contextWindow: 100000, maxTokens: 1000 }],
    },
  },
};
for (const dir of [join(HOME, ".pi/agent"), join(HOME, ".filo/agent")]) {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "models.json"), JSON.stringify(models));
}
const args = ["--provider", "mock", "--model", "mock-model", "--mode", "json", "--no-session", "use the tool"];
const [command, argv] = FILO ? [FILO, args] : [process.execPath, [CLI, ...args]];
// Asynchronously: the mock answers from this process's event loop.
const stdout = await new Promise((resolve, reject) => {
  const child = spawn(command, argv, {
    cwd: PROJECT,
    env: { PATH: process.env.PATH ?? "", HOME, PI_OFFLINE: "1", MOCK_API_KEY: "mock-secret" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  child.on("error", reject);
  child.on("exit", (code) => (code === 0 ? resolve(out) : reject(new Error(`exit ${code}`))));
});
await mock.close();
rmSync(WORK, { recursive: true, force: true });
const events = stdout
  .split("\n")
  .filter((l) => l.trim())
  .map((l) => JSON.parse(l.replaceAll(WORK, "<TMP>")));
writeFileSync(OUT, `${JSON.stringify(events, null, 2)}\n`);
process.stderr.write(`${events.length} events\n`);
