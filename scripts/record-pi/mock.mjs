// A scripted OpenAI chat-completions mock on 127.0.0.1 for recording pi (and driving filo) in
// RPC and JSON mode. NOT part of CI.
//
// Its frames are the ones filo-testkit's `MockProvider` sends for the same reply (a role chunk,
// the text one word per chunk, each tool call's opening chunk then 7-byte argument fragments, a
// finish chunk, a usage chunk when the request asked for it, `[DONE]`; chunk ids
// `chatcmpl-mock-<request number>`), so a recording of pi compares with filo run on the testkit
// mock delta for delta.
//
// The reply is chosen from the request, not from a queue, so the order of the steps does not
// matter: see `replyFor`.
import { createServer } from "node:http";

const CREATED = 1_700_000_000;
const ARG_FRAGMENT_BYTES = 7;

/** Words with their trailing whitespace (filo-testkit's `split_words`). */
export function splitWords(text) {
  const pieces = [];
  let start = 0;
  let seenWord = false;
  let inSpace = false;
  const chars = [...text];
  let offset = 0;
  for (const c of chars) {
    const space = /\s/u.test(c);
    if (!space && inSpace && seenWord) {
      pieces.push(text.slice(start, offset));
      start = offset;
    }
    seenWord ||= !space;
    inSpace = space;
    offset += c.length;
  }
  if (start < text.length) pieces.push(text.slice(start));
  return pieces;
}

/** Argument JSON cut into fragments of at most 7 UTF-8 bytes, on character boundaries. */
export function splitFragments(json) {
  const pieces = [];
  let current = "";
  let bytes = 0;
  for (const c of json) {
    const n = Buffer.byteLength(c);
    if (current && bytes + n > ARG_FRAGMENT_BYTES) {
      pieces.push(current);
      current = "";
      bytes = 0;
    }
    current += c;
    bytes += n;
  }
  if (current) pieces.push(current);
  return pieces;
}

function frames(reply, requestNumber, model, includeUsage) {
  const base = () => ({
    id: `chatcmpl-mock-${requestNumber}`,
    object: "chat.completion.chunk",
    created: CREATED,
    model,
    system_fingerprint: "fp_mock",
  });
  const chunk = (delta, finish = null) => {
    const v = base();
    v.choices = [{ index: 0, delta, logprobs: null, finish_reason: finish }];
    if (includeUsage) v.usage = null;
    return v;
  };
  const out = [chunk({ role: "assistant", content: "" })];
  if (reply.text) for (const w of splitWords(reply.text)) out.push(chunk({ content: w }));
  const calls = reply.calls ?? [];
  calls.forEach(([id, name], index) => {
    out.push(chunk({ tool_calls: [{ index, id, type: "function", function: { name, arguments: "" } }] }));
  });
  const fragments = calls.map(([, , args]) => splitFragments(JSON.stringify(args)));
  const longest = Math.max(0, ...fragments.map((f) => f.length));
  for (let round = 0; round < longest; round++) {
    fragments.forEach((parts, index) => {
      if (parts[round] !== undefined) {
        out.push(chunk({ tool_calls: [{ index, function: { arguments: parts[round] } }] }));
      }
    });
  }
  out.push(chunk({}, calls.length ? "tool_calls" : "stop"));
  if (includeUsage) {
    const last = base();
    last.choices = [];
    last.usage = {
      prompt_tokens: 100,
      completion_tokens: 10,
      total_tokens: 110,
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0 },
    };
    out.push(last);
  }
  return out.map((v) => `data: ${JSON.stringify(v)}\n\n`).join("") + "data: [DONE]\n\n";
}

function text(content) {
  if (typeof content === "string") return content;
  return (content ?? []).map((b) => b.text ?? "").join("");
}

/**
 * The reply for a request:
 * - a summary request (its system prompt asks for a summary): `## Goal\nsummary`;
 * - the last message a tool result: `Done.`;
 * - the last user message mentions `tool`: a `bash` call running `echo hi`;
 * - it mentions `slow`: `Slow answer.` after `delayMs` (default 1500);
 * - otherwise `Hello there.`
 */
export function replyFor(body) {
  const messages = body.messages ?? [];
  const system = messages.find((m) => m.role === "system" || m.role === "developer");
  if (system && /summar/i.test(text(system.content))) return { text: "## Goal\nsummary" };
  const last = messages[messages.length - 1];
  if (last?.role === "tool") return { text: "Done." };
  const lastUser = [...messages].reverse().find((m) => m.role === "user");
  const said = text(lastUser?.content);
  if (/\btool\b/.test(said)) return { calls: [["call_1", "bash", { command: "echo hi" }]] };
  if (/\bslow\b/.test(said)) return { text: "Slow answer.", delayMs: 1500 };
  return { text: "Hello there." };
}

/** Start the mock; resolves to `{url, requests, close}`. */
export async function startMock() {
  const requests = [];
  const server = createServer((req, res) => {
    let raw = "";
    req.on("data", (c) => (raw += c));
    req.on("end", () => {
      let body = {};
      try {
        body = JSON.parse(raw);
      } catch {
        // Not a JSON request: answered as any other.
      }
      requests.push(body);
      const n = requests.length;
      const reply = replyFor(body);
      const send = () => {
        if (res.destroyed) return;
        const data = frames(reply, n, body.model ?? "mock-model", body.stream_options?.include_usage === true);
        res.writeHead(200, { "content-type": "text/event-stream", "content-length": Buffer.byteLength(data) });
        res.end(data);
      };
      if (reply.delayMs) setTimeout(send, reply.delayMs);
      else send();
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}
