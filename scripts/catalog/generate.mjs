#!/usr/bin/env node
// filo's bundled model catalog (crates/filo-ai/data/catalog.json), generated from pi's.
//
// Refresh it from an installed pi (the package is the source of truth):
//
//   npm install --prefix /tmp/pi073 @mariozechner/pi-coding-agent@0.73.1
//   node scripts/catalog/generate.mjs --pi /tmp/pi073
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
  const scope = path.join(prefix, "node_modules", "@mariozechner");
  const load = (pkg, file) => import(pathToFileURL(path.join(scope, pkg, "dist", file)).href);
  const version = JSON.parse(fs.readFileSync(path.join(scope, "pi-ai", "package.json"), "utf8")).version;
  const { MODELS } = await load("pi-ai", "models.generated.js");
  const { findEnvKeys } = await load("pi-ai", "env-api-keys.js");
  const { BUILT_IN_PROVIDER_DISPLAY_NAMES } = await load("pi-coding-agent", "core/provider-display-names.js");
  const { defaultModelPerProvider } = await load("pi-coding-agent", "core/model-resolver.js");
  const { getOAuthProviders } = await load("pi-ai", "utils/oauth/index.js");
  // pi names a provider by its display name, else by its OAuth login's name (the subscription
  // providers have only that), else by its id.
  const displayNames = {};
  for (const provider of Object.keys(MODELS)) {
    const oauth = getOAuthProviders().find((p) => p.id === provider);
    displayNames[provider] = BUILT_IN_PROVIDER_DISPLAY_NAMES[provider] ?? oauth?.name ?? provider;
  }
  // `findEnvKeys` answers the variables that are set, in pi's order: with every variable set,
  // that is all of them.
  const realEnv = process.env;
  const envKeys = {};
  try {
    process.env = new Proxy({}, { get: () => "set" });
    for (const provider of Object.keys(MODELS)) {
      envKeys[provider] = findEnvKeys(provider) ?? [];
    }
  } finally {
    process.env = realEnv;
  }
  return {
    source: `@mariozechner/pi-ai ${version}`,
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

/** A model record with filo's key order; optional fields only when pi has them. */
function modelRecord(m) {
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
  out.contextWindow = m.contextWindow;
  out.maxTokens = m.maxTokens;
  if (m.headers) out.headers = sortedMap(m.headers);
  if (m.compat) out.compat = sortedMap(m.compat);
  const known = new Set(["id", "name", "api", "provider", "baseUrl", "reasoning", "thinkingLevelMap", "input", "cost", "contextWindow", "maxTokens", "headers", "compat"]);
  const unknown = Object.keys(m).filter((k) => !known.has(k));
  if (unknown.length > 0) {
    // A field pi added that filo's Model does not know: stop rather than drop it silently.
    throw new Error(`${m.provider}/${m.id}: fields filo's catalog does not carry yet: ${unknown.join(", ")}`);
  }
  return out;
}

/** A provider record: its default model's wire API and base URL stand for the provider's. */
function providerRecord(snapshot, provider, first) {
  const name = snapshot.displayNames[provider];
  if (!name) throw new Error(`pi has no display name for provider ${provider}`);
  return {
    id: provider,
    name,
    api: first.api,
    baseUrl: first.baseUrl,
    envKeys: snapshot.envKeys[provider] ?? [],
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
