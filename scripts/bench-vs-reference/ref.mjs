// Drives the real Playfilo reference module (bundled by run.sh) for bench-vs-reference. NOT CI.
//
//   HOME=<data dir> REF_BUNDLE=<playfilo-db.cjs> node ref.mjs write lineage N ACTIONS
//   HOME=<data dir> REF_BUNDLE=<playfilo-db.cjs> node ref.mjs write children K DEPTH
//   HOME=<data dir> REF_BUNDLE=… REF_NOW=<ms> node ref.mjs time OP RUNS OUT [ARGS_JSON]
//   HOME=<data dir> REF_BUNDLE=… REF_NOW=<ms> node ref.mjs once OP OUT [ARGS_JSON]
//
// The module opens `$HOME/.playfilo/playfilo.db` when it is loaded, so each data set lives in its
// own HOME. `write` builds a data set with the module's own functions (storeBlob,
// commitNodeWithExternalId, setRef after every node as the pi shim does, logAction), with a
// deterministic clock (one second per node) and deterministic texts. `time` runs one read
// (life, recall, trace, entries) RUNS times in this process and prints its first/min/median
// milliseconds as JSON; `once` runs it once (run.sh times the whole process). Both write the
// read's output (for entries: one JSON entry per line) to OUT, for comparison with filo's.
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const ref = require(process.env.REF_BUNDLE);

// 2026-01-01T00:00:00Z; node i is written at T0 + i seconds.
export const T0 = 1767225600000;
const realNow = Date.now;
let clock = T0;
Date.now = () => clock;

function extId(i) {
    return createHash("sha256").update(`node-${i}`).digest("hex").slice(0, 8);
}

// A small deterministic generator, so both sides read the very same file contents.
let seed = 42;
function rand(n) {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return Math.floor((seed / 2147483648) * n);
}

const WORDS = [
    "the", "session", "tool", "reads", "file", "graph", "memory", "résumé", "naïve", "日本語",
    "agent", "lineage", "→", "node", "branch", "😀", "parent", "hash", "🧠", "commit",
];

function text(i, min, max) {
    const len = min + rand(max - min);
    let s = `Turn ${i}:`;
    while (s.length < len) {
        s += (rand(9) === 0 ? "\n" : " ") + WORDS[rand(WORDS.length)];
    }
    return s;
}

const CONFIG = JSON.stringify({
    agent: "pi",
    model: { provider: "anthropic", id: "claude-sonnet-4-5" },
    thinkingLevel: "off",
});

function writeLineage(n, actions) {
    const systemPrompt = ref.storeBlob("text", "You are a helpful coding assistant working in /work/project.");
    let parent = null;
    const lineage = [];
    const started = process.hrtime.bigint();
    for (let i = 0; i < n; i++) {
        clock = T0 + i * 1000;
        let role;
        let parts;
        let config;
        switch (i % 4) {
            case 0:
                role = "user";
                parts = [ref.storeBlob("text", text(i, 20, 300))];
                break;
            case 1:
                role = "assistant";
                config = CONFIG;
                parts = [
                    ref.storeBlob("text", text(i, 20, 200)),
                    ref.storeBlob("tool_call", {
                        id: `call_${i}`,
                        name: "read",
                        arguments: { path: `src/file_${i % 97}.rs`, offset: i % 13 },
                    }),
                ];
                break;
            case 2:
                role = "toolResult";
                parts = [
                    ref.storeBlob("tool_result", {
                        toolCallId: `call_${i - 1}`,
                        toolName: "read",
                        content: [{ type: "text", text: text(i, 40, 600) }],
                        isError: false,
                    }),
                ];
                break;
            default:
                role = "assistant";
                config = CONFIG;
                parts = [ref.storeBlob("text", text(i, 20, 400))];
        }
        parent = ref.commitNodeWithExternalId(parent, role, parts, extId(i), config, systemPrompt);
        ref.setRef("PI_HEAD", parent);
        lineage.push(parent);
    }
    const nodeSeconds = Number(process.hrtime.bigint() - started) / 1e9;
    const kinds = ["BOOT", "INCARNATE", "HYDRATE_GHOST", "SESSION_SWITCH"];
    for (let k = 0; k < actions; k++) {
        clock = T0 + (n + k) * 1000;
        const kind = kinds[k % kinds.length];
        // Half of the actions land on the lineage, half on nodes elsewhere.
        const to = k % 2 === 0 ? lineage[rand(lineage.length)] : createHash("sha256").update(`off-${k}`).digest("hex");
        const from = lineage[rand(lineage.length)];
        let metadata;
        if (kind === "INCARNATE") metadata = JSON.stringify({ carryover_message: text(k, 20, 700) });
        else if (kind === "HYDRATE_GHOST") metadata = text(k, 10, 80);
        else if (kind === "SESSION_SWITCH") metadata = JSON.stringify({ session: `s-${k}`, cwd: "/work/project" });
        ref.logAction(kind, kind === "BOOT" ? null : from, to, metadata);
    }
    return { nodes: n, actions, seconds: nodeSeconds, nodes_per_s: n / nodeSeconds, head: parent };
}

function writeChildren(k, depth) {
    let parent = null;
    let i = 0;
    const started = process.hrtime.bigint();
    const commit = (p, role) => {
        clock = T0 + i * 1000;
        const parts = [ref.storeBlob("text", text(i, 20, 200))];
        const id = ref.commitNodeWithExternalId(p, role, parts, extId(i), role === "assistant" ? CONFIG : undefined);
        i++;
        return id;
    };
    for (let j = 0; j < 5; j++) parent = commit(parent, j % 2 === 0 ? "user" : "assistant");
    let focus = null;
    for (let c = 0; c < k; c++) {
        const child = commit(parent, "user");
        let below = child;
        for (let d = 0; d < depth; d++) below = commit(below, d % 2 === 0 ? "assistant" : "user");
        if (c === Math.floor(k / 2)) focus = child;
    }
    ref.setRef("PI_HEAD", focus);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    return { nodes: i, seconds, nodes_per_s: i / seconds, head: focus };
}

function read(op, args) {
    switch (op) {
        case "life":
            return ref.handleLife(args);
        case "recall":
            return ref.handleRecall({ hash: "HEAD", ...args });
        case "trace":
            return ref.handleTrace(args);
        case "entries":
            return ref
                .loadEntriesFromDAG(ref.getRef("PI_HEAD"))
                .map((e) => JSON.stringify(e))
                .join("\n");
        default:
            throw new Error(`unknown read ${op}`);
    }
}

function output(op, args) {
    try {
        return read(op, args);
    } catch (e) {
        // The reference's own failure (trace past SQLite's variable limit) is its answer.
        return `THROWS: ${e.message}`;
    }
}

const [cmd, ...rest] = process.argv.slice(2);
if (cmd === "write") {
    const [kind, a, b] = rest;
    Date.now = () => clock;
    const result = kind === "lineage" ? writeLineage(Number(a), Number(b)) : writeChildren(Number(a), Number(b));
    process.stdout.write(`${JSON.stringify(result)}\n`);
} else if (cmd === "time" || cmd === "once") {
    const [op, ...more] = rest;
    const runs = cmd === "time" ? Number(more.shift()) : 1;
    const [out, argsJson] = more;
    const args = argsJson ? JSON.parse(argsJson) : {};
    clock = Number(process.env.REF_NOW ?? realNow());
    const times = [];
    let first;
    for (let r = 0; r < runs; r++) {
        const started = process.hrtime.bigint();
        const answer = output(op, args);
        times.push(Number(process.hrtime.bigint() - started) / 1e6);
        if (r === 0) first = answer;
    }
    writeFileSync(out, `${first}\n`);
    const sorted = [...times].sort((x, y) => x - y);
    process.stdout.write(
        `${JSON.stringify({ op, runs, first_ms: times[0], min_ms: sorted[0], median_ms: sorted[Math.floor(runs / 2)] })}\n`,
    );
} else {
    process.stderr.write("usage: see the head of ref.mjs\n");
    process.exit(2);
}
