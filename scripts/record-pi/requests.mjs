#!/usr/bin/env node
// Records the request bodies an installed pi sends for one prompt with every built-in tool,
// against a mock server on 127.0.0.1 speaking each wire API, into
// crates/filo-cli/tests/fixtures/pi-<version>/requests.json. Tests compare filo's tool
// declarations (and the other request fields filo shares) with these, byte for byte.
//
//   node scripts/record-pi/requests.mjs [--pi /work/pi16]
//
// pi runs offline in a fresh HOME whose models.json points a `mock` provider at the server.

import { spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const args = process.argv.slice(2);
const prefix = args[0] === "--pi" && args[1] ? args[1] : "/work/pi16";
const pkg = path.join(prefix, "node_modules", "@earendil-works", "pi-coding-agent");
const version = JSON.parse(fs.readFileSync(path.join(pkg, "package.json"), "utf8")).version;
const cli = path.join(pkg, "dist", "cli.js");

const sse = (events) => events.map(([event, data]) => (event ? `event: ${event}\n` : "") + `data: ${JSON.stringify(data)}\n\n`).join("");

// One text reply per API, in the shape each wire sends.
const REPLIES = {
  "openai-completions": () =>
    sse([
      [null, { id: "c1", object: "chat.completion.chunk", choices: [{ index: 0, delta: { role: "assistant", content: "ok" } }] }],
      [null, { id: "c1", object: "chat.completion.chunk", choices: [{ index: 0, delta: {}, finish_reason: "stop" }], usage: { prompt_tokens: 10, completion_tokens: 1, total_tokens: 11 } }],
    ]) + "data: [DONE]\n\n",
  "openai-responses": () =>
    sse([
      ["response.created", { type: "response.created", response: { id: "resp_1" } }],
      ["response.output_item.added", { type: "response.output_item.added", output_index: 0, item: { type: "message", id: "msg_1", role: "assistant", content: [] } }],
      ["response.output_text.delta", { type: "response.output_text.delta", item_id: "msg_1", output_index: 0, content_index: 0, delta: "ok" }],
      ["response.output_item.done", { type: "response.output_item.done", output_index: 0, item: { type: "message", id: "msg_1", role: "assistant", status: "completed", content: [{ type: "output_text", text: "ok", annotations: [] }] } }],
      ["response.completed", { type: "response.completed", response: { id: "resp_1", status: "completed", usage: { input_tokens: 10, output_tokens: 1, total_tokens: 11 } } }],
    ]),
  "anthropic-messages": () =>
    sse([
      ["message_start", { type: "message_start", message: { id: "msg_1", type: "message", role: "assistant", content: [], model: "mock-model", usage: { input_tokens: 10, output_tokens: 0 } } }],
      ["content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }],
      ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "ok" } }],
      ["content_block_stop", { type: "content_block_stop", index: 0 }],
      ["message_delta", { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 1 } }],
      ["message_stop", { type: "message_stop" }],
    ]),
};

async function record(api, extraArgs) {
  const bodies = [];
  const server = http.createServer((req, res) => {
    let text = "";
    req.on("data", (c) => (text += c));
    req.on("end", () => {
      bodies.push({ path: req.url, headers: req.headers, body: JSON.parse(text) });
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end(REPLIES[api]());
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const port = server.address().port;
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "pi-req-"));
  try {
    const agent = path.join(home, ".pi", "agent");
    fs.mkdirSync(agent, { recursive: true });
    const baseUrl = api === "anthropic-messages" ? `http://127.0.0.1:${port}` : `http://127.0.0.1:${port}/v1`;
    const models = { providers: { mock: { baseUrl, api, apiKey: "MOCK_KEY", models: [{ id: "mock-model", contextWindow: 100000, maxTokens: 1000 }] } } };
    fs.writeFileSync(path.join(agent, "models.json"), JSON.stringify(models));
    const project = path.join(home, "project");
    fs.mkdirSync(project);
    const child = spawn(process.execPath, [cli, "--provider", "mock", "--model", "mock-model", "--no-session", ...extraArgs, "-p", "hi"], {
      cwd: project,
      env: { PATH: process.env.PATH, HOME: home, PI_OFFLINE: "1", MOCK_KEY: "mock-secret" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (c) => (stderr += c));
    const code = await new Promise((r) => child.on("close", r));
    if (code !== 0) throw new Error(`pi exited ${code}: ${stderr}`);
  } finally {
    server.close();
    fs.rmSync(home, { recursive: true, force: true });
  }
  return bodies;
}

const out = { pi: `@earendil-works/pi-coding-agent ${version}` };
const allTools = ["--tools", "read,bash,edit,write,grep,find,ls"];
for (const api of Object.keys(REPLIES)) {
  out[api] = await record(api, allTools);
  out[`${api} no tools`] = await record(api, ["--no-tools"]);
}
const dest = path.join(REPO, `crates/filo-cli/tests/fixtures/pi-${version}/requests.json`);
fs.writeFileSync(dest, JSON.stringify(out, null, 1) + "\n");
process.stdout.write(`wrote ${dest}\n`);
