// pi 1.6's own `RpcClient` driven through a script of steps, against pi itself or against
// `filo --mode rpc`. NOT part of CI (CI has no Node 24); the opt-in live test in filo-cli runs it.
//
//   node scripts/record-pi/rpc-client.mjs --pi /work/pi16 --out steps.json            # pi itself
//   node scripts/record-pi/rpc-client.mjs --pi /work/pi16 --filo target/debug/filo --out f.json
//
// The agent runs in a temporary HOME whose models.json (both ~/.pi/agent and ~/.filo/agent) names
// the mock of ./mock.mjs as provider `mock`, with PI_OFFLINE=1. Output: every step's outcome
// (`pass`, and `error` when it failed) and the raw protocol lines, each with the step it belongs
// to: the commands written to stdin and the records read from stdout. A step fails when the
// client throws, times out (10 s) or its check does not hold.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";

import { startMock } from "./mock.mjs";

function arg(name) {
  const i = process.argv.indexOf(name);
  return i === -1 ? undefined : process.argv[i + 1];
}

const PI = arg("--pi");
const FILO = arg("--filo");
const OUT = arg("--out");
if (!PI || !OUT) {
  console.error("usage: rpc-client.mjs --pi <pi prefix> [--filo <filo binary>] --out <file>");
  process.exit(2);
}
const PKG = join(PI, "node_modules/@earendil-works/pi-coding-agent");
const { RpcClient } = await import(pathToFileURL(join(PKG, "dist/modes/rpc/rpc-client.js")).href);

const STEP_TIMEOUT_MS = 10_000;
// A client call that outlives its failed step rejects later; that step is already recorded.
process.on("unhandledRejection", () => {});
const mock = await startMock();
const WORK = mkdtempSync(join(tmpdir(), "pi16-rpc-"));
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
function writeAgentFile(name, value) {
  for (const dir of [join(HOME, ".pi/agent"), join(HOME, ".filo/agent")]) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, name), JSON.stringify(value));
  }
}
writeAgentFile("models.json", models);

// RpcClient starts `node <cliPath> --mode rpc …`; for filo the "CLI" is a shim that runs the
// binary with the same arguments and streams, and passes SIGTERM on.
let cliPath = join(PKG, "dist/cli.js");
if (FILO) {
  cliPath = join(WORK, "filo-shim.mjs");
  writeFileSync(
    cliPath,
    `import { spawn } from "node:child_process";
const child = spawn(${JSON.stringify(FILO)}, process.argv.slice(2), { stdio: "inherit" });
for (const s of ["SIGTERM", "SIGHUP", "SIGINT"]) process.on(s, () => child.kill(s));
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
`,
  );
}

const frames = [];
let current = "start";

function newClient() {
  const client = new RpcClient({
    cliPath,
    cwd: PROJECT,
    provider: "mock",
    model: "mock-model",
    env: {
      HOME,
      PI_OFFLINE: "1",
      MOCK_API_KEY: "mock-secret",
      PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ""}`,
    },
  });
  const handleLine = client.handleLine.bind(client);
  client.handleLine = (line) => {
    try {
      frames.push({ step: current, dir: "out", frame: JSON.parse(line) });
    } catch {
      frames.push({ step: current, dir: "out", raw: line });
    }
    handleLine(line);
  };
  const send = client.send.bind(client);
  client.send = (command) => {
    // The id the client is about to give the command.
    frames.push({ step: current, dir: "in", frame: { ...command, id: `req_${client.requestId + 1}` } });
    return send(command);
  };
  return client;
}

function check(ok, what) {
  if (!ok) throw new Error(`check failed: ${what}`);
}

function within(promise, ms = STEP_TIMEOUT_MS) {
  let timer;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`step timed out after ${ms} ms`)), ms);
    }),
  ]);
}

/** Events seen from now on, until `stop()`. */
function watch(client) {
  const events = [];
  const stop = client.onEvent((e) => events.push(e));
  return { events, stop };
}

const steps = [];
async function step(name, body) {
  current = name;
  const started = Date.now();
  try {
    await within(Promise.resolve().then(body));
    steps.push({ name, pass: true });
  } catch (e) {
    steps.push({ name, pass: false, error: String(e?.message ?? e).split("\n")[0] });
  }
  process.stderr.write(`${steps.at(-1).pass ? "PASS" : "FAIL"} ${name} (${Date.now() - started} ms)\n`);
}

const ctx = {};
const client = newClient();
await client.start();

await step("getState", async () => {
  const s = await client.getState();
  ctx.sessionFile = s.sessionFile;
  check(s.model?.id === "mock-model" && typeof s.sessionId === "string", "model and session id");
  check(s.isStreaming === false && s.messageCount === 0, "idle and empty");
});
await step("getAvailableModels", async () => {
  const models = await client.getAvailableModels();
  check(models.some((m) => m.provider === "mock" && m.id === "mock-model"), "mock-model listed");
});
await step("getAvailableThinkingLevels", async () => {
  const levels = await client.getAvailableThinkingLevels();
  check(JSON.stringify(levels) === '["off"]', `levels ${JSON.stringify(levels)}`);
});
await step("promptAndWait", async () => {
  const events = await client.promptAndWait("hello", undefined, STEP_TIMEOUT_MS);
  const types = events.map((e) => e.type);
  check(types.includes("agent_end") && types.at(-1) === "agent_settled", `events ${types}`);
  const update = events.find((e) => e.type === "message_update");
  check(update && update.usage && !("message" in update), "delta message_update with usage");
  check(!("partial" in update.assistantMessageEvent), "no partial");
  const end = events.find((e) => e.type === "agent_end");
  check(end.willRetry === false, "agent_end.willRetry");
  const start = events.find((e) => e.type === "message_start" && e.message.role === "assistant");
  check(start.message.stopReason === "pending", `assistant message_start stopReason ${start.message.stopReason}`);
});
await step("getLastAssistantText", async () => {
  const t = await client.getLastAssistantText();
  check(t === "Hello there.", `text ${JSON.stringify(t)}`);
});
await step("prompt disposition and tool round", async () => {
  const w = watch(client);
  const idle = client.waitForIdle(STEP_TIMEOUT_MS);
  const disposition = await client.prompt("use the tool");
  check(disposition === "started", `disposition ${disposition}`);
  await idle;
  w.stop();
  const start = w.events.find(
    (e) => e.type === "message_update" && e.assistantMessageEvent.type === "toolcall_start",
  );
  check(start?.assistantMessageEvent.id === "call_1", "toolcall_start.id");
  check(start?.assistantMessageEvent.toolName === "bash", "toolcall_start.toolName");
  const end = w.events.find((e) => e.type === "tool_execution_end");
  check(typeof end?.durationMs === "number", "tool_execution_end.durationMs");
  check(end.result.content[0].text.includes("hi"), "tool output");
});
await step("getMessages", async () => {
  const messages = await client.getMessages();
  const roles = messages.filter((m) => m.role !== "system").map((m) => m.role);
  check(
    JSON.stringify(roles) === '["user","assistant","user","assistant","toolResult","assistant"]',
    `roles ${roles}`,
  );
});
await step("bash streams its output", async () => {
  const w = watch(client);
  const r = await client.bash("echo from-bash");
  w.stop();
  check(r.output === "from-bash\n" && r.exitCode === 0 && r.cancelled === false, `result ${JSON.stringify(r)}`);
  const updates = w.events.filter((e) => e.type === "bash_execution_update");
  check(updates.map((e) => e.delta).join("") === "from-bash\n", "bash_execution_update deltas");
  check(updates.every((e) => typeof e.id === "string"), "bash_execution_update.id");
});
await step("abortBash", async () => {
  await client.abortBash();
});
await step("getSessionStats", async () => {
  const s = await client.getSessionStats();
  check(s.userMessages === 2 && s.assistantMessages === 3 && s.toolCalls === 1, JSON.stringify(s));
  check(s.toolResults === 1 && typeof s.tokens.total === "number", "tool results and tokens");
});
await step("setThinkingLevel max", async () => {
  // RpcClient.setThinkingLevel ignores the response; ask the same and require success.
  await client.setThinkingLevel("max");
  client.getData(await client.send({ type: "set_thinking_level", level: "max" }));
  const s = await client.getState();
  check(s.thinkingLevel === "off", `level ${s.thinkingLevel} (mock-model does not reason)`);
});
await step("cycleThinkingLevel", async () => {
  const r = await client.cycleThinkingLevel();
  check(r === null, `cycle ${JSON.stringify(r)}`);
});
await step("queue modes", async () => {
  await client.setSteeringMode("all");
  await client.setFollowUpMode("all");
  const s = await client.getState();
  check(s.steeringMode === "all" && s.followUpMode === "all", "modes");
});
await step("auto compaction and retry", async () => {
  await client.setAutoCompaction(false);
  await client.setAutoCompaction(true);
  await client.setAutoRetry(true);
  await client.abortRetry();
  check((await client.getState()).autoCompactionEnabled === true, "autoCompactionEnabled");
});
await step("steer, followUp and clearQueue while streaming", async () => {
  const idle = client.waitForIdle(STEP_TIMEOUT_MS);
  check((await client.prompt("be slow")) === "started", "started");
  check((await client.steer("turn left")) === "queued", "steer queued");
  check((await client.followUp("then stop")) === "queued", "followUp queued");
  const cleared = await client.clearQueue();
  check(
    JSON.stringify(cleared) === '{"steering":["turn left"],"followUp":["then stop"]}',
    `cleared ${JSON.stringify(cleared)}`,
  );
  await idle;
  check((await client.getState()).pendingMessageCount === 0, "queues empty");
});
await step("abort while streaming", async () => {
  const w = watch(client);
  const idle = client.waitForIdle(STEP_TIMEOUT_MS);
  check((await client.prompt("be slow again")) === "started", "started");
  await new Promise((r) => setTimeout(r, 200));
  await client.abort();
  await idle;
  w.stop();
  const settled = w.events.find((e) => e.type === "agent_settled");
  check(settled?.aborted === true, `agent_settled ${JSON.stringify(settled)}`);
});
await step("getForkMessages", async () => {
  const messages = await client.getForkMessages();
  ctx.firstUser = messages[0];
  check(messages[0]?.text === "hello" && typeof messages[0].entryId === "string", JSON.stringify(messages));
});
await step("getEntries", async () => {
  const all = await client.getEntries();
  check(Array.isArray(all.entries) && all.entries.length > 3, "entries");
  check(all.leafId === all.entries.at(-1).id, "leafId is the last entry");
  const after = await client.getEntries(all.entries[1].id);
  check(after.entries.length === all.entries.length - 2, "since skips up to the cursor");
  check(after.leafId === all.leafId, "same leaf");
});
await step("getEntries with an unknown cursor fails", async () => {
  let failed = false;
  try {
    await client.getEntries("no-such-entry");
  } catch (e) {
    failed = /no-such-entry/.test(e.message);
  }
  check(failed, "rejected naming the cursor");
});
await step("getTree", async () => {
  const t = await client.getTree();
  check(Array.isArray(t.tree) && t.tree.length >= 1, "tree");
  const node = t.tree[0];
  check(node.entry && Array.isArray(node.children), "node shape");
  check(typeof t.leafId === "string", "leafId");
});
await step("setSessionName", async () => {
  await client.setSessionName("rpc client test");
  check((await client.getState()).sessionName === "rpc client test", "named");
});
await step("getCommands", async () => {
  check(Array.isArray(await client.getCommands()), "list");
});
await step("exportHtml", async () => {
  const r = await client.exportHtml(join(WORK, "export.html"));
  check(existsSync(r.path) && readFileSync(r.path, "utf8").includes("<html"), "written");
});
await step("unknown command is answered", async () => {
  let error;
  try {
    await within(client.send({ type: "no_such_command" }).then((r) => client.getData(r)), 3000);
  } catch (e) {
    error = e.message;
  }
  check(error === "Unknown command: no_such_command", `error ${error}`);
});
await step("compact a small session", async () => {
  let error;
  try {
    await client.compact();
  } catch (e) {
    error = e.message;
  }
  check(error === "Nothing to compact (session too small)", `error ${error}`);
});
await step("clone", async () => {
  const before = await client.getState();
  const r = await client.clone();
  const after = await client.getState();
  check(r.cancelled === false && after.sessionId !== before.sessionId, JSON.stringify(r));
});
await step("fork", async () => {
  const r = await client.fork(ctx.firstUser.entryId);
  check(r.text === "hello" && r.cancelled === false, JSON.stringify(r));
});
await step("newSession", async () => {
  const r = await client.newSession();
  check(r.cancelled === false && (await client.getState()).messageCount === 0, JSON.stringify(r));
});
await step("switchSession", async () => {
  const r = await client.switchSession(ctx.sessionFile);
  const s = await client.getState();
  check(r.cancelled === false && s.sessionFile === ctx.sessionFile, JSON.stringify(r));
});
await client.stop();

// A second agent whose compaction keeps only the newest entry: a manual compaction succeeds.
writeAgentFile("settings.json", { compaction: { keepRecentTokens: 1 } });
const second = newClient();
await second.start();
await step("compact", async () => {
  await second.promptAndWait("hello", undefined, STEP_TIMEOUT_MS);
  await second.promptAndWait("hello again", undefined, STEP_TIMEOUT_MS);
  const r = await second.compact();
  check(r.summary.startsWith("## Goal\nsummary"), `summary ${JSON.stringify(r.summary)}`);
  check(typeof r.estimatedTokensAfter === "number", "estimatedTokensAfter");
  check(typeof r.usage?.totalTokens === "number", "usage");
});
await second.stop();
await mock.close();
rmSync(WORK, { recursive: true, force: true });

const normalised = JSON.parse(JSON.stringify({ target: FILO ? "filo" : "pi 1.6.0", steps, frames }).replaceAll(WORK, "<TMP>"));
writeFileSync(OUT, `${JSON.stringify(normalised, null, 2)}\n`);
const passed = steps.filter((s) => s.pass).length;
process.stderr.write(`${passed} of ${steps.length} steps passed\n`);
