#!/usr/bin/env node
// Record what pi 0.73.1 sends and builds for the wire APIs filo added in issue 14 (Azure OpenAI
// Responses, Google Vertex, Mistral, Amazon Bedrock ConverseStream). NOT part of CI.
//
//   npm install --prefix /tmp/pi073 @mariozechner/pi-coding-agent@0.73.1
//   FILO_UPDATE_FIXTURES=1 cargo nextest run -p filo-ai -E 'test(/pi073_apis/)'   # writes *.stream
//   node scripts/record-pi/record-apis.mjs /tmp/pi073 crates/filo-ai/tests/fixtures/pi073-apis [api ...]
//
// For each API, `<api>.stream` holds the exact bytes filo-testkit's mock sends for the fixture
// reply (the Rust test checks they still are). A server on 127.0.0.1 answers pi's one request with
// those bytes; pi's `streamSimple` runs with the shared `context.json` (placeholders filled in per
// API) and the options below. `<api>.pi.json` keeps pi's request (method, path, headers that are
// not transport noise, JSON body) and its final assistant message (timestamp zeroed).
import { readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [piPrefix, dir, ...only] = process.argv.slice(2);
const ai = await import(pathToFileURL(join(piPrefix, "node_modules/@mariozechner/pi-ai/dist/index.js")).href);

const CASES = {
    "azure-openai-responses": {
        model: () => ai.getModel("azure-openai-responses", "gpt-5"),
        env: (url) => ({ AZURE_OPENAI_API_KEY: "azure-test", AZURE_OPENAI_BASE_URL: `${url}/openai/v1` }),
        contentType: "text/event-stream; charset=utf-8",
        callId: "call_prev|fc_prev",
    },
    "google-vertex": {
        model: () => ai.getModel("google-vertex", "gemini-2.5-flash"),
        baseUrl: (url) => url,
        env: () => ({ GOOGLE_CLOUD_API_KEY: "vertex-test" }),
        contentType: "text/event-stream",
        callId: "call_prev",
    },
    "mistral-conversations": {
        model: () => ai.getModel("mistral", "magistral-medium-latest"),
        baseUrl: (url) => `${url}/mistral`,
        env: () => ({ MISTRAL_API_KEY: "mistral-test" }),
        contentType: "text/event-stream",
        callId: "call_prev",
    },
    // The catalog model unchanged: with AWS_REGION set, the SDK honours the endpoint override
    // variable. HTTP/1.1 because the mock is not an HTTP/2 server. The AWS SDK signs with the
    // example keys; the signature is kept (with the raw body and every signed header) so the
    // Rust test can recompute it.
    "bedrock-converse-stream": {
        model: () => ai.getModel("amazon-bedrock", "us.anthropic.claude-sonnet-4-20250514-v1:0"),
        env: (url) => ({
            AWS_ACCESS_KEY_ID: "AKIDEXAMPLE",
            AWS_SECRET_ACCESS_KEY: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            AWS_REGION: "us-west-2",
            AWS_ENDPOINT_URL_BEDROCK_RUNTIME: url,
            AWS_BEDROCK_FORCE_HTTP1: "1",
        }),
        contentType: "application/vnd.amazon.eventstream",
        callId: "call_prev",
        signed: true,
    },
};

const NOISE = new Set(["host", "connection", "content-length", "accept-encoding", "user-agent", "accept-language", "sec-fetch-mode"]);
const volatile = (name) => NOISE.has(name) || name.startsWith("x-stainless-") || name.startsWith("amz-sdk-");

async function record(api, spec) {
    const stream = readFileSync(join(dir, `${api}.stream`));
    const requests = [];
    const server = createServer((req, res) => {
        const chunks = [];
        req.on("data", (c) => chunks.push(c));
        req.on("end", () => {
            const text = Buffer.concat(chunks).toString("utf8");
            const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !volatile(k)).sort());
            const entry = { method: req.method, path: req.url, headers, body: JSON.parse(text) };
            if (spec.signed) {
                const names = /SignedHeaders=([^,]+)/.exec(req.headers.authorization ?? "")?.[1].split(";") ?? [];
                entry.signedHeaders = Object.fromEntries(names.map((n) => [n, req.headers[n]]));
                entry.rawBody = text;
            }
            requests.push(entry);
            res.writeHead(200, { "content-type": spec.contentType });
            res.end(stream);
        });
    });
    await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
    const url = `http://127.0.0.1:${server.address().port}`;
    const saved = { ...process.env };
    Object.assign(process.env, spec.env(url));
    try {
        const model = { ...spec.model(), ...(spec.baseUrl ? { baseUrl: spec.baseUrl(url) } : {}) };
        const template = readFileSync(join(dir, "context.json"), "utf8")
            .replaceAll("$API", model.api)
            .replaceAll("$PROVIDER", model.provider)
            .replaceAll("$MODEL", model.id)
            .replaceAll("$CALL_ID", spec.callId);
        const context = JSON.parse(template);
        const options = { reasoning: "high", sessionId: "session-1", maxRetries: 0 };
        const message = await ai.completeSimple(model, context, options);
        message.timestamp = 0;
        const out = { request: requests[0], message };
        writeFileSync(join(dir, `${api}.pi.json`), `${JSON.stringify(out, null, 2)}\n`);
        console.log(`${api}: ${message.stopReason} ${message.errorMessage ?? ""}`);
    } finally {
        process.env = saved;
        server.close();
    }
}

for (const [api, spec] of Object.entries(CASES)) {
    if (only.length === 0 || only.includes(api)) await record(api, spec);
}
