#!/usr/bin/env node
// filo's bundled model catalog (crates/filo-ai/data/catalog.json), generated from pi's.
//
// Refresh it from an installed pi (the package is the source of truth):
//
//   npm install --prefix /tmp/pi16 @earendil-works/pi-coding-agent@1.6.0
//   node scripts/catalog/generate.mjs --pi /tmp/pi16
//
// Two stages. `extract` reads what pi knows about its providers out of the installed packages
// into a plain JSON snapshot: pi-ai's model table (`MODELS` of models.generated.js), the
// environment variables pi reads for each provider's key (asked of pi-ai's own `findEnvKeys`),
// each provider's name (the coding agent's display name, else its OAuth login's) and pi's
// default model per provider. `build` turns a snapshot
// into filo's catalog: provider records (id, name, wire API, base URL, key variables) and every
// model as pi describes it, plus the providers that are filo's own (local servers, below).
//
// The output is deterministic: providers in the order of pi's default-model table (the order pi
// tries them when it picks a first model), then any other pi provider by id, then filo's own;
// each provider's models with pi's default first, then by id; one record per line, keys in a
// fixed order, nested maps sorted.
//
//   --pi <prefix>         the npm prefix pi is installed in (extract, then build)
//   --snapshot <file>     build from a snapshot instead of an installed pi
//   --write-snapshot <f>  also write the extracted snapshot (with --trim: a trimmed one)
//   --trim <n>            keep at most n models per provider in the written snapshot (pi's
//                         default first; the catalog is still built from all of them): how the
//                         test fixture scripts/catalog/fixture/pi-snapshot.json was made
//   --out <file|->        where the catalog goes (default: crates/filo-ai/data/catalog.json)
//
// The test `catalog_is_generated_from_pi` (crates/filo-ai/tests/suite/catalog.rs) runs `build`
// on the fixture snapshot and checks that every record it produces is in the checked-in
// catalog as it is here.

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, "../..");

// Providers that are filo's own: local OpenAI-compatible servers that need no key and take any
// model id (pi reaches them only through a models.json entry). Kept as they were.
const FILO_PROVIDERS = [
  {
    id: "ollama",
    name: "Ollama",
    api: "openai-completions",
    baseUrl: "http://127.0.0.1:11434/v1",
    envKeys: [],
    keyless: true,
    anyModel: true,
    compat: {
      supportsStore: false,
      supportsDeveloperRole: false,
      maxTokensField: "max_tokens",
      supportsStrictMode: false,
    },
  },
  {
    id: "llamacpp",
    name: "llama.cpp",
    api: "openai-completions",
    baseUrl: "http://127.0.0.1:8080/v1",
    envKeys: [],
    keyless: true,
    anyModel: true,
    compat: {
      supportsStore: false,
      supportsDeveloperRole: false,
      maxTokensField: "max_tokens",
      supportsStrictMode: false,
    },
  },
];

function parseArgs(argv) {
  const args = {};
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[i + 1];
    if (!flag.startsWith("--") || value === undefined) {
      throw new Error(`usage: generate.mjs (--pi <prefix> | --snapshot <file>) [--out <file|->] [--write-snapshot <file>] [--trim <n>]; got ${flag}`);
    }
    args[flag.slice(2)] = value;
    i++;
  }
  if (!args.pi === !args.snapshot) {
    throw new Error("give exactly one of --pi <prefix> and --snapshot <file>");
  }
  return args;
}

// ---- extract: what the installed pi knows -------------------------------------------------

async function extract(prefix) {
  const scope = path.join(prefix, "node_modules", "@earendil-works");
  if (!fs.existsSync(scope)) {
    throw new Error(`${scope} does not exist: install @earendil-works/pi-coding-agent under --pi`);
  }
  const load = (pkg, file) => import(pathToFileURL(path.join(scope, pkg, "dist", file)).href);
  const version = JSON.parse(fs.readFileSync(path.join(scope, "pi-ai", "package.json"), "utf8")).version;
  // pi-ai 1.x keeps chat, image and classifier models in separate tables; filo's catalog is
  // the chat table (the one `pi --list-models` shows).
  const { MODELS } = await load("pi-ai", "models.generated.js");
  const { findEnvKeys } = await load("pi-ai", "env-api-keys.js");
  const { builtinProviders } = await load("pi-ai", "providers/all.js");
  const { defaultModelPerProvider } = await load("pi-coding-agent", "core/model-resolver.js");
  // Each built-in provider carries its display name.
  const displayNames = {};
  for (const provider of builtinProviders()) displayNames[provider.id] = provider.name;
  // `findEnvKeys` answers the variables that are set, in pi's order: with every variable set,
  // that is all of them.
  const everySet = new Proxy({}, { get: () => "set" });
  const envKeys = {};
  for (const provider of Object.keys(MODELS)) {
    envKeys[provider] = findEnvKeys(provider, everySet) ?? [];
  }
  return {
    source: `@earendil-works/pi-ai ${version}`,
    defaultModels: defaultModelPerProvider,
    displayNames,
    envKeys,
    models: MODELS,
  };
}

function trim(snapshot, n) {
  const models = {};
  for (const [provider, table] of Object.entries(snapshot.models)) {
    const ids = orderedIds(table, snapshot.defaultModels[provider]).slice(0, n);
    models[provider] = Object.fromEntries(ids.map((id) => [id, table[id]]));
  }
  return { ...snapshot, models };
}

// ---- build: filo's catalog from a snapshot --------------------------------------------------

const byCodePoint = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

function orderedIds(table, defaultId) {
  const ids = Object.keys(table).sort(byCodePoint);
  return defaultId && ids.includes(defaultId) ? [defaultId, ...ids.filter((id) => id !== defaultId)] : ids;
}

function sortedMap(map) {
  return Object.fromEntries(
    Object.keys(map)
      .sort(byCodePoint)
      .map((k) => {
        const v = map[k];
        return [k, v && typeof v === "object" && !Array.isArray(v) ? sortedMap(v) : v];
      }),
  );
}

// Fields pi 1.6 gives some models that filo carries into its catalog as pi writes them: image
// and request limits, prompt-cache lifetimes, and the Radius gateway's routing data (its lab,
// whether it is offered, the providers behind it, whether it is free).
const CARRIED = ["inputLimits", "promptCache", "lab", "enabled", "providers", "free"];
const COST_KEYS = new Set(["input", "output", "cacheRead", "cacheWrite", "tiers"]);

/** A model record with filo's key order; optional fields only when pi has them. */
function modelRecord(m) {
  // pi 1.x tags every model of its chat table `type: "chat"`; anything else is not a chat model.
  if (m.type !== undefined && m.type !== "chat") {
    throw new Error(`${m.provider}/${m.id}: model type ${m.type} in pi's chat table`);
  }
  const out = {
    id: m.id,
    name: m.name,
    provider: m.provider,
    api: m.api,
    baseUrl: m.baseUrl,
    reasoning: m.reasoning,
  };
  if (m.thinkingLevelMap) out.thinkingLevelMap = sortedMap(m.thinkingLevelMap);
  out.input = m.input;
  out.cost = { input: m.cost.input, output: m.cost.output, cacheRead: m.cost.cacheRead, cacheWrite: m.cost.cacheWrite };
  if (m.cost.tiers) out.cost.tiers = m.cost.tiers;
  const unknownCost = Object.keys(m.cost).filter((k) => !COST_KEYS.has(k));
  if (unknownCost.length > 0) {
    throw new Error(`${m.provider}/${m.id}: cost fields filo's catalog does not carry yet: ${unknownCost.join(", ")}`);
  }
  out.contextWindow = m.contextWindow;
  out.maxTokens = m.maxTokens;
  if (m.headers) out.headers = sortedMap(m.headers);
  if (m.compat) out.compat = sortedMap(m.compat);
  for (const key of CARRIED) {
    if (m[key] !== undefined) out[key] = m[key] && typeof m[key] === "object" && !Array.isArray(m[key]) ? sortedMap(m[key]) : m[key];
  }
  const known = new Set(["id", "name", "api", "provider", "baseUrl", "reasoning", "thinkingLevelMap", "input", "cost", "contextWindow", "maxTokens", "headers", "compat", "type", ...CARRIED]);
  const unknown = Object.keys(m).filter((k) => !known.has(k));
  if (unknown.length > 0) {
    // A field pi added that filo's Model does not know: stop rather than drop it silently.
    throw new Error(`${m.provider}/${m.id}: fields filo's catalog does not carry yet: ${unknown.join(", ")}`);
  }
  return out;
}

// Variables pi lists with a provider's keys that are not keys: pi 1.x sends
// ANTHROPIC_AUTH_TOKEN as `Authorization: Bearer` (its `getEnvApiKey` skips it), which filo
// does not do yet, so it is not one of the variables filo takes a key from.
const NOT_KEYS = ["ANTHROPIC_AUTH_TOKEN"];

/** A provider record: its default model's wire API and base URL stand for the provider's. */
function providerRecord(snapshot, provider, first) {
  const name = snapshot.displayNames[provider];
  if (!name) throw new Error(`pi has no display name for provider ${provider}`);
  return {
    id: provider,
    name,
    api: first.api,
    baseUrl: first.baseUrl,
    envKeys: (snapshot.envKeys[provider] ?? []).filter((k) => !NOT_KEYS.includes(k)),
  };
}

function build(snapshot) {
  const pi = Object.keys(snapshot.models);
  const ordered = [
    ...Object.keys(snapshot.defaultModels).filter((p) => pi.includes(p)),
    ...pi.filter((p) => !(p in snapshot.defaultModels)).sort(byCodePoint),
  ];
  const own = new Set(FILO_PROVIDERS.map((p) => p.id));
  const providers = [];
  const models = [];
  for (const provider of ordered) {
    if (own.has(provider)) throw new Error(`pi now has a provider ${provider}; filo's own entry would hide it`);
    const table = snapshot.models[provider];
    const ids = orderedIds(table, snapshot.defaultModels[provider]);
    if (ids.length === 0) continue;
    providers.push(providerRecord(snapshot, provider, table[ids[0]]));
    for (const id of ids) models.push(modelRecord(table[id]));
  }
  providers.push(...FILO_PROVIDERS);
  return { source: snapshot.source, providers, models };
}

/** One record per line: small diffs when pi changes a model. */
function render(catalog) {
  const lines = (records) => records.map((r) => "  " + JSON.stringify(r)).join(",\n");
  return `{\n "source": ${JSON.stringify(catalog.source)},\n "providers": [\n${lines(catalog.providers)}\n ],\n "models": [\n${lines(catalog.models)}\n ]\n}\n`;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const snapshot = args.snapshot ? JSON.parse(fs.readFileSync(args.snapshot, "utf8")) : await extract(args.pi);
  if (args["write-snapshot"]) {
    const kept = args.trim ? trim(snapshot, Number(args.trim)) : snapshot;
    fs.writeFileSync(args["write-snapshot"], JSON.stringify(kept, null, 1) + "\n");
  }
  const text = render(build(snapshot));
  const out = args.out ?? path.join(REPO, "crates/filo-ai/data/catalog.json");
  if (out === "-") process.stdout.write(text);
  else fs.writeFileSync(out, text);
}

main().catch((e) => {
  process.stderr.write(`generate.mjs: ${e.message}\n`);
  process.exit(1);
});
