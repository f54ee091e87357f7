#!/usr/bin/env python3
# NOT CI. Usage: gen.py OUT.db NODES ACTIONS
# A reference-shaped 100,000-node lineage (user / assistant+tool call / tool result / assistant,
# PI_HEAD on the deepest) with 1,000 actions, half on the lineage, as ref.mjs writes it.
import hashlib, json, random, sqlite3, sys
path, n, nact = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
random.seed(7)
words = "the of and to in is that for it as with was on be by this are or an at from code file test".split()
def text(i, lo, hi):
    k = random.randint(lo, hi); out = []
    while sum(len(w) + 1 for w in out) < k: out.append(random.choice(words))
    return " ".join(out)[:k]
db = sqlite3.connect(path)
db.executescript("""
CREATE TABLE IF NOT EXISTS blobs (hash TEXT PRIMARY KEY, type TEXT NOT NULL, content TEXT NOT NULL, thought_signature TEXT);
CREATE TABLE IF NOT EXISTS nodes (id TEXT PRIMARY KEY, parent_id TEXT, role TEXT NOT NULL, parts_list TEXT NOT NULL, timestamp INTEGER NOT NULL, config_json TEXT, thought_signatures TEXT, system_prompt_hash TEXT, external_id TEXT);
CREATE TABLE IF NOT EXISTS refs (name TEXT PRIMARY KEY, node_id TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS action_log (id INTEGER PRIMARY KEY AUTOINCREMENT, timestamp INTEGER NOT NULL, action_type TEXT NOT NULL, from_node TEXT, to_node TEXT, metadata TEXT);
CREATE INDEX IF NOT EXISTS idx_nodes_parent ON nodes(parent_id);
CREATE INDEX IF NOT EXISTS idx_nodes_external_id ON nodes(external_id);
PRAGMA journal_mode = WAL; PRAGMA user_version = 4;
""")
def blob(t, content):
    c = json.dumps(content, separators=(",", ":"))
    h = hashlib.sha256((t + c).encode()).hexdigest()
    db.execute("INSERT OR IGNORE INTO blobs VALUES (?,?,?,NULL)", (h, t, c)); return h
T0 = 1767225600000
config = json.dumps({"model": {"provider": "anthropic", "id": "claude-sonnet-4-5"}, "thinkingLevel": "off"})
sp = blob("text", "You are a helpful coding assistant working in /work/project.")
parent = None; lineage = []
for i in range(n):
    m = i % 4; cfg = None
    if m == 0: role, parts = "user", [blob("text", text(i, 20, 300))]
    elif m == 1:
        role, cfg = "assistant", config
        parts = [blob("text", text(i, 20, 200)), blob("tool_call", {"id": f"call_{i}", "name": "read", "arguments": {"path": f"src/file_{i % 97}.rs", "offset": i % 13}})]
    elif m == 2: role, parts = "toolResult", [blob("tool_result", {"toolCallId": f"call_{i-1}", "toolName": "read", "content": [{"type": "text", "text": text(i, 40, 600)}], "isError": False})]
    else: role, cfg, parts = "assistant", config, [blob("text", text(i, 20, 400))]
    nid = hashlib.sha256(f"node-{i}".encode()).hexdigest()
    db.execute("INSERT INTO nodes VALUES (?,?,?,?,?,?,NULL,?,?)", (nid, parent, role, json.dumps(parts, separators=(",", ":")), T0 + i * 1000, cfg, sp, f"{i:08x}"))
    parent = nid; lineage.append(nid)
db.execute("INSERT OR REPLACE INTO refs VALUES ('PI_HEAD', ?)", (parent,))
kinds = ["BOOT", "INCARNATE", "HYDRATE_GHOST", "SESSION_SWITCH"]
for k in range(nact):
    kind = kinds[k % 4]
    to = random.choice(lineage) if k % 2 == 0 else hashlib.sha256(f"off-{k}".encode()).hexdigest()
    frm = random.choice(lineage)
    md = None
    if kind == "INCARNATE": md = json.dumps({"carryover_message": text(k, 20, 700)})
    elif kind == "HYDRATE_GHOST": md = text(k, 10, 80)
    elif kind == "SESSION_SWITCH": md = json.dumps({"session": f"s-{k}", "cwd": "/work/project"})
    db.execute("INSERT INTO action_log (timestamp, action_type, from_node, to_node, metadata) VALUES (?,?,?,?,?)", (T0 + (n + k) * 1000, kind, None if kind == "BOOT" else frm, to, md))
db.commit(); db.close()
