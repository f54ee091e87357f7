#!/usr/bin/env python3
"""Record a pi release's outputs as fixtures for filo's compatibility tests. NOT part of CI.

    python3 scripts/record-pi/record.py <pi-prefix> <version> <out-dir> [case ...]

    npm install --prefix /tmp/pi073 @mariozechner/pi-coding-agent@0.73.1
    python3 scripts/record-pi/record.py /tmp/pi073 0.73.1 crates/filo-cli/tests/fixtures/pi073 [case ...]
    python3 scripts/record-pi/record.py /work/pi16 1.6.0 crates/filo-cli/tests/fixtures/pi-1.6.0

The package is `@mariozechner/pi-coding-agent` up to 0.73 and `@earendil-works/pi-coding-agent`
from 0.74 on; the installed version must be the one named. The prefix's own `node` is used when
it has one (`PI_NODE` overrides). With no case named, a version >= 1.6 records the session cases
of `sessions16.py` (session16_case); an older one the 0.73.1 cases below. The mock serves the
openai-completions wire (provider `mock`) and, on `/messages`, the anthropic-messages wire
(provider `mockant`).

Cases (all by default): edit_case, rpc_cases, compaction_cases, queue_cases, flags_case, flags_more_case,
resume_picker_case,
http_error_cases, refusal_case, compaction_thinking_case, list_models_case, branch_case,
filo_session_case (which reads `filo.session.jsonl` from the output directory: a session filo
wrote, made by filo-cli's ignored test `write_the_filo_session_fixture`), tree_screen_case (pi's
/tree screen in tmux; needs tmux), resource_settings_case.

A scripted OpenAI-chat-completions mock listens on 127.0.0.1 only; pi runs with a temporary HOME
and agent dir whose models.json names it as provider `mock`, PI_OFFLINE=1. Each case keeps the
request bodies pi sent (`*.requests.json`), and the session file or RPC output it wrote.
Volatile values are replaced: the temporary directory by `<TMP>`, session ids, timestamps and
the date are left as recorded in session files (filo reads them as data) but normalised in
request/RPC fixtures (see `normalise`).
"""
import json, os, re, shlex, shutil, subprocess, sys, tempfile, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PI_PREFIX, VERSION, OUT = sys.argv[1], sys.argv[2], sys.argv[3]


def version_tuple(v):
    return tuple(int(p) for p in re.findall(r"\d+", v)[:3])


# pi moved from the `@mariozechner` npm scope to `@earendil-works` at 0.74.0.
SCOPE = "@mariozechner" if version_tuple(VERSION) <= (0, 73, 99) else "@earendil-works"
PKG = os.path.join(PI_PREFIX, "node_modules", SCOPE, "pi-coding-agent")
PI = os.path.join(PKG, "dist/cli.js")
NODE = os.environ.get("PI_NODE") or (os.path.join(PI_PREFIX, "node_modules/.bin/node")
                                     if os.path.exists(os.path.join(PI_PREFIX, "node_modules/.bin/node")) else "node")
_installed = json.load(open(os.path.join(PKG, "package.json")))["version"]
if _installed != VERSION:
    sys.exit(f"{PKG} is pi {_installed}, not {VERSION}")
TURNS, REQUESTS = [], []


def chunk(delta, finish=None, usage=None):
    c = {"id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0, "model": "mock-model",
         "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if usage:
        c["usage"] = usage
    return "data: " + json.dumps(c) + "\n\n"


def reply(turn):
    usage = turn.get("usage", {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110})
    out = [chunk({"role": "assistant", "content": ""})]
    if "text" in turn:
        out.append(chunk({"content": turn["text"]}))
    for i, (cid, name, args) in enumerate(turn.get("calls", [])):
        out.append(chunk({"tool_calls": [{"index": i, "id": cid, "type": "function",
                                          "function": {"name": name, "arguments": args}}]}))
    out.append(chunk({}, "tool_calls" if turn.get("calls") else "stop", usage))
    out.append("data: [DONE]\n\n")
    return "".join(out)


def anthropic_reply(turn):
    """The same scripted turn as an Anthropic Messages stream (provider `mockant`)."""
    u = turn.get("usage", {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110})

    def ev(kind, data):
        data = dict(data, type=kind)
        return f"event: {kind}\ndata: {json.dumps(data)}\n\n"

    out = [ev("message_start", {"message": {"id": "msg_mock", "type": "message", "role": "assistant",
                                            "model": "mock-model", "content": [], "stop_reason": None,
                                            "usage": {"input_tokens": u["prompt_tokens"], "output_tokens": 1}}})]
    index = 0
    if "thinking" in turn:
        out.append(ev("content_block_start", {"index": index, "content_block": {"type": "thinking", "thinking": ""}}))
        out.append(ev("content_block_delta", {"index": index, "delta": {"type": "thinking_delta",
                                                                        "thinking": turn["thinking"]}}))
        out.append(ev("content_block_delta", {"index": index, "delta": {"type": "signature_delta",
                                                                        "signature": "sig-mock"}}))
        out.append(ev("content_block_stop", {"index": index}))
        index += 1
    if "text" in turn:
        out.append(ev("content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}}))
        out.append(ev("content_block_delta", {"index": index, "delta": {"type": "text_delta", "text": turn["text"]}}))
        out.append(ev("content_block_stop", {"index": index}))
        index += 1
    for cid, name, args in turn.get("calls", []):
        out.append(ev("content_block_start", {"index": index, "content_block": {"type": "tool_use", "id": cid,
                                                                                "name": name, "input": {}}}))
        out.append(ev("content_block_delta", {"index": index, "delta": {"type": "input_json_delta",
                                                                        "partial_json": args}}))
        out.append(ev("content_block_stop", {"index": index}))
        index += 1
    stop = turn.get("anthropic_stop") or ("tool_use" if turn.get("calls") else "end_turn")
    out.append(ev("message_delta", {"delta": {"stop_reason": stop},
                                    "usage": {"output_tokens": u["completion_tokens"]}}))
    out.append(ev("message_stop", {}))
    return "".join(out)


class Mock(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        REQUESTS.append(json.loads(body))
        turn = TURNS.pop(0) if TURNS else {"text": "ok"}
        if "delay" in turn:
            import time
            time.sleep(turn["delay"])
        if "error" in turn:
            status, body = turn["error"]
            # A string body is sent as it is (text/plain), anything else as JSON.
            plain = isinstance(body, str)
            data = (body if plain else json.dumps(body)).encode()
            self.send_response(status)
            self.send_header("content-type", "text/plain" if plain else "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        data = (anthropic_reply(turn) if "/messages" in self.path else reply(turn)).encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


server = ThreadingHTTPServer(("127.0.0.1", 0), Mock)
threading.Thread(target=server.serve_forever, daemon=True).start()
URL = f"http://127.0.0.1:{server.server_address[1]}"
WORK = tempfile.mkdtemp(prefix=f"pi{VERSION}-")
HOME, AGENT, PROJECT = f"{WORK}/home", f"{WORK}/home/agent", f"{WORK}/project"
os.makedirs(AGENT)
os.makedirs(PROJECT)
json.dump({"providers": {"mock": {"baseUrl": URL + "/v1", "api": "openai-completions", "apiKey": "MOCK_API_KEY",
                                  "models": [{"id": "mock-model", "contextWindow": 100000, "maxTokens": 1000},
                                             {"id": "mock-thinker", "reasoning": True, "contextWindow": 100000,
                                              "maxTokens": 1000}]},
                       "mockant": {"baseUrl": URL, "api": "anthropic-messages", "apiKey": "MOCK_API_KEY",
                                   "models": [{"id": "mock-model", "contextWindow": 100000, "maxTokens": 1000},
                                              {"id": "mock-thinker", "reasoning": True, "contextWindow": 100000,
                                               "maxTokens": 1000}]}}},
          open(f"{AGENT}/models.json", "w"))
ENV = {"PATH": os.environ["PATH"], "HOME": HOME, "PI_CODING_AGENT_DIR": AGENT, "PI_OFFLINE": "1",
       "MOCK_API_KEY": "mock-secret"}
BASE = [NODE, PI, "--provider", "mock", "--model", "mock-model"]


def normalise(text):
    text = text.replace(WORK, "<TMP>")
    text = re.sub(r"Current date: \d{4}-\d\d-\d\d", "Current date: <DATE>", text)
    return text


def pi(args, stdin=None):
    return subprocess.run(BASE + args, cwd=PROJECT, env=ENV, input=stdin, capture_output=True, text=True, timeout=120)


def save(name, value):
    with open(os.path.join(OUT, name), "w") as f:
        f.write(normalise(json.dumps(value, indent=2, ensure_ascii=False)) + "\n")


def sessions():
    root = f"{AGENT}/sessions"
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs)


def edit_case():
    for name, text in {"a.txt": "one\ntwo\nthree\nfour\n", "b.txt": "x = 1\ny = 2\n", "c.txt": "left right\n",
                       "d.txt": "same same\n", "e.txt": "keep\n"}.items():
        open(f"{PROJECT}/{name}", "w").write(text)
    calls = [
        ("call_multi", "edit", json.dumps({"path": "a.txt", "edits": [{"oldText": "two", "newText": "TWO"},
                                                                    {"oldText": "four", "newText": "FOUR"}]})),
        ("call_legacy", "edit", json.dumps({"path": "b.txt", "oldText": "y = 2", "newText": "y = 3"})),
        ("call_string", "edit", json.dumps({"path": "c.txt", "edits": json.dumps([{"oldText": "left", "newText": "LEFT"}])})),
        ("call_overlap", "edit", json.dumps({"path": "e.txt", "edits": [{"oldText": "keep", "newText": "a"},
                                                                      {"oldText": "ee", "newText": "b"}]})),
        ("call_dup", "edit", json.dumps({"path": "d.txt", "edits": [{"oldText": "same", "newText": "S"}]})),
        ("call_empty", "edit", json.dumps({"path": "e.txt", "edits": []})),
        ("call_missing", "edit", json.dumps({"path": "nope.txt", "edits": [{"oldText": "a", "newText": "b"}]})),
    ]
    TURNS[:] = [{"calls": calls}, {"text": "Done."}]
    REQUESTS.clear()
    r = pi(["-p", "apply the edits"])
    assert r.returncode == 0, r.stderr
    files = {n: open(f"{PROJECT}/{n}").read() for n in sorted(os.listdir(PROJECT))}
    save("edit.requests.json", REQUESTS[:])
    save("edit.files-after.json", files)
    (session,) = sessions()
    shutil.copy(session, os.path.join(OUT, "edit.session.jsonl"))
    # Resume it: the context pi sends for a session holding multi-edit calls.
    TURNS[:] = [{"text": "Resumed."}]
    REQUESTS.clear()
    r = pi(["-p", "--session", session, "what did you change?"])
    assert r.returncode == 0, r.stderr
    save("edit.resume.requests.json", REQUESTS[:])


def rpc(name, steps, turns=(), args=("--no-session",), base=None):
    """Drive pi's RPC: each step is (line, wait) where wait is a predicate over the output so far
    that must hold before the next line is sent (None: send at once)."""
    import time
    TURNS[:] = list(turns)
    REQUESTS.clear()
    p = subprocess.Popen((base or BASE) + ["--mode", "rpc", *args], cwd=PROJECT, env=ENV, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out, lock = [], threading.Lock()

    def reader():
        for line in p.stdout:
            if line.strip():
                with lock:
                    out.append(json.loads(line))

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    for line, wait in steps:
        p.stdin.write(line + "\n")
        p.stdin.flush()
        deadline = time.time() + 30
        while wait is not None and time.time() < deadline:
            with lock:
                if wait(out):
                    break
            time.sleep(0.05)
        else:
            if wait is not None:
                raise RuntimeError(f"{name}: timed out after {line!r}")
    p.stdin.close()
    p.wait(timeout=30)
    t.join(timeout=5)
    save(f"rpc-{name}.json", out)
    return out


def answered(id_):
    return lambda out: any(o.get("type") == "response" and o.get("id") == id_ for o in out)


def ended(n=1):
    return lambda out: sum(o.get("type") == "agent_end" for o in out) >= n


def rpc_cases():
    os.makedirs(f"{PROJECT}/.pi/prompts", exist_ok=True)
    open(f"{PROJECT}/.pi/prompts/greet.md", "w").write("---\ndescription: Say hello\n---\nSay hello to $1\n")
    os.makedirs(f"{AGENT}/prompts", exist_ok=True)
    open(f"{AGENT}/prompts/plain.md", "w").write("Summarise the file\n")
    rpc("commands", [('{"id":"c1","type":"get_commands"}', answered("c1"))])
    rpc("errors", [("", None), ('{"id":"f1","type":"fork","entryId":"no-such-entry"}', answered("f1")),
                   ('{"id":"u1","type":"nope"}', None), ("not json", None),
                   ('{"id":"k1","type":"clone"}', answered("k1")),
                   ('{"id":"s0","type":"get_session_stats"}', answered("s0"))])
    rpc("session", [('{"id":"p1","type":"prompt","message":"hi"}', ended()),
                    ('{"id":"s1","type":"get_session_stats"}', answered("s1")),
                    ('{"id":"k1","type":"clone"}', answered("k1")),
                    ('{"id":"m1","type":"get_messages"}', answered("m1")),
                    ('{"id":"w1","type":"get_state"}', answered("w1"))],
        [{"text": "hello"}], args=())
    rpc("busy", [('{"id":"p1","type":"prompt","message":"slow"}', answered("p1")),
                 ('{"id":"p2","type":"prompt","message":"again"}', answered("p2")),
                 ('{"id":"p3","type":"prompt","message":"queued","streamingBehavior":"followUp"}', answered("p3")),
                 ('{"id":"a1","type":"get_state"}', ended())],
        [{"text": "slow answer", "delay": 1.5}, {"text": "follow-up answer"}])
    thinker = [NODE, PI, "--provider", "mock", "--model", "mock-thinker"]
    rpc("events", [('{"id":"n1","type":"set_session_name","name":"demo"}', answered("n1")),
                   ('{"id":"t1","type":"set_thinking_level","level":"high"}', answered("t1")),
                   ('{"id":"t2","type":"set_thinking_level","level":"high"}', answered("t2")),
                   ('{"id":"p1","type":"prompt","message":"hi"}', ended()),
                   ('{"id":"c1","type":"compact"}', answered("c1")),
                   ('{"id":"s9","type":"get_session_stats"}', answered("s9"))],
        [{"text": "hello"}, {"text": "## Goal\nsummary"}], args=(), base=thinker)


def compacted(reason, agent_ends=1):
    return lambda out: any(o.get("type") == "compaction_end" and o.get("reason") == reason for o in out) \
        and ended(agent_ends)(out)


OVERFLOW = (400, {"error": {"message": "This model's maximum context length is 1000 tokens. However, your messages "
                                      "resulted in 5000 tokens.", "type": "invalid_request_error",
                            "code": "context_length_exceeded"}})


# Every summary request gets the same answer: a split turn's two requests may arrive in either order.
SUMMARY = {"text": "## Goal\nsummary"}


def compaction_cases():
    """Automatic compaction over RPC (the process outlives it) and in JSON mode, with
    `keepRecentTokens: 1` so that there is history to summarise."""
    settings = f"{AGENT}/settings.json"
    json.dump({"compaction": {"keepRecentTokens": 1}}, open(settings, "w"))
    big = {"prompt_tokens": 90000, "completion_tokens": 10, "total_tokens": 90010}
    try:
        # Threshold: the second answer reports 90000 input tokens of a 100000 window.
        rpc("threshold", [('{"id":"p1","type":"prompt","message":"first"}', ended()),
                          ('{"id":"p2","type":"prompt","message":"second"}', compacted("threshold", 2)),
                          ('{"id":"s1","type":"get_session_stats"}', answered("s1"))],
            [{"text": "one"}, {"text": "two", "usage": big}, SUMMARY, SUMMARY])
        # Overflow: the second request is refused as too long; pi compacts and continues.
        rpc("overflow", [('{"id":"p1","type":"prompt","message":"first"}', ended()),
                         ('{"id":"p2","type":"prompt","message":"second"}', compacted("overflow", 3))],
            [{"text": "one"}, {"error": OVERFLOW}, SUMMARY, {"text": "recovered"}])
        # Manual compaction of a session whose whole history is kept: pi still asks the model.
        os.remove(settings)
        rpc("compact-small", [('{"id":"p1","type":"prompt","message":"hi"}', ended()),
                              ('{"id":"c1","type":"compact","customInstructions":"focus"}', answered("c1"))],
            [{"text": "hello"}, SUMMARY])
        save("rpc-compact-small.requests.json", REQUESTS[1:])
        json.dump({"compaction": {"keepRecentTokens": 1}}, open(settings, "w"))
        # JSON mode: the same threshold case; pi writes what it emitted before it exits.
        TURNS[:] = [{"text": "one"}, {"text": "two", "usage": big}, SUMMARY, SUMMARY]
        r = pi(["--mode", "json", "--no-session", "first", "second"])
        assert r.returncode == 0, r.stderr
        save("json-threshold.json", [json.loads(l) for l in r.stdout.splitlines() if l.strip()])
    finally:
        if os.path.exists(settings):
            os.remove(settings)


def queue_cases():
    """steer and follow_up while a slow answer streams, and a line pi ignores."""
    rpc("queue", [('{"id":"p1","type":"prompt","message":"slow"}', answered("p1")),
                  ('{"type":"extension_ui_response","id":"nobody","value":"x"}', None),
                  ('{"id":"s1","type":"steer","message":"turn left"}', answered("s1")),
                  ('{"id":"f1","type":"follow_up","message":"then stop"}', answered("f1")),
                  ('{"id":"g1","type":"get_state"}', ended())],
        [{"text": "slow answer", "delay": 1.5}, {"text": "steered"}, {"text": "followed"}])


def flags_case():
    """Command-line flags of 0.73.1: --list-models (only models with a key: the built-in catalog's
    have none here, fuzzy search, sizes),
    --models scoped cycling over RPC, and what -t / -nt / -nbt / -nc / repeated
    --append-system-prompt send to the model."""
    out = {}
    acme = {"baseUrl": URL + "/v1", "api": "openai-completions", "apiKey": "ACME_KEY",
            "models": [{"id": "acme-large", "contextWindow": 1048576, "maxTokens": 32768, "input": ["text", "image"],
                        "reasoning": True},
                       {"id": "acme-small-2", "contextWindow": 200000, "maxTokens": 8192},
                       {"id": "Acme-Tiny", "contextWindow": 999, "maxTokens": 1250}]}
    models = json.load(open(f"{AGENT}/models.json"))
    saved = json.dumps(models)
    models["providers"]["acme"] = acme
    json.dump(models, open(f"{AGENT}/models.json", "w"))
    env = dict(ENV, ACME_KEY="acme-secret")
    try:
        for name, args in [("all", []), ("search", ["acme 2"]), ("fuzzy", ["aclg"]), ("none", ["zzzz"])]:
            r = subprocess.run([NODE, PI, "--list-models", *args], cwd=PROJECT, env=env, capture_output=True,
                               text=True, timeout=120)
            # pi prints the table with console.log, which it sends to stderr outside a terminal.
            out["list-models " + name] = {"args": args, "stdout": r.stdout, "stderr": r.stderr,
                                          "code": r.returncode}
    finally:
        open(f"{AGENT}/models.json", "w").write(saved)
    # Scoped cycling: the first scoped model starts (with its level), ctrl+p's RPC twin cycles.
    r = subprocess.run([NODE, PI, "--mode", "rpc", "--no-session", "--models", "mock-thinker:high,mock/mock-model"],
                       cwd=PROJECT, env=ENV, capture_output=True, text=True, timeout=120,
                       input='{"id":"s","type":"get_state"}\n{"id":"c1","type":"cycle_model"}\n'
                             '{"id":"c2","type":"cycle_model"}\n')
    lines = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
    out["models scope"] = [{"id": l.get("id"), "model": (l.get("data") or {}).get("model", {}).get("id"),
                            "thinkingLevel": (l.get("data") or {}).get("thinkingLevel"),
                            "isScoped": (l.get("data") or {}).get("isScoped")} for l in lines if l.get("type") == "response"]
    # What reaches the model under the tool and prompt flags.
    open(f"{PROJECT}/AGENTS.md", "w").write("Project rule: be brief.\n")
    try:
        for name, args in [("default", []), ("-t", ["-t", "read,grep"]), ("-nt", ["-nt"]), ("-nbt", ["-nbt"]),
                           ("-nc", ["-nc"]),
                           ("append twice", ["--append-system-prompt", "First extra.", "--append-system-prompt",
                                             "Second extra."])]:
            TURNS[:] = [{"text": "ok"}]
            REQUESTS.clear()
            r = pi(["-p", "--no-session", *args, "hi"])
            body = REQUESTS[-1] if REQUESTS else {}
            system = next((m["content"] for m in body.get("messages", []) if m["role"] in ("system", "developer")), "")
            out["request " + name] = {"args": args, "code": r.returncode,
                                      "tools": [t["function"]["name"] for t in body.get("tools", [])],
                                      "agentsMd": "Project rule: be brief." in system,
                                      "appended": system[system.find("First extra."):][:40]
                                      if "First extra." in system else None}
    finally:
        os.remove(f"{PROJECT}/AGENTS.md")
    save("flags.json", out)


def flags_more_case():
    """More flags of 0.73.1 (`flags-more.json`): --fork's conflicts, misses and copy; --session
    misses; --skill / -ns, --prompt-template / -np as they reach the model; where --session-dir,
    PI_CODING_AGENT_SESSION_DIR and the `sessionDir` setting put a new session file."""
    out = {}

    def run(args, env=None, stdin=None):
        r = subprocess.run([NODE, PI, *args], cwd=PROJECT, env=env or ENV, input=stdin, capture_output=True,
                           text=True, timeout=120)
        return {"args": args, "code": r.returncode, "stdout": r.stdout, "stderr": r.stderr}

    # A session to fork: two turns.
    for f in sessions():
        os.remove(f)
    TURNS[:] = [{"text": "first answer"}, {"text": "second answer"}]
    pi(["-p", "first"])
    source = sessions()[-1]
    pi(["-p", "-c", "second"])
    src_lines = [json.loads(l) for l in open(source)]
    for name, extra in [("session", ["--session", source]), ("continue", ["-c"]), ("resume", ["-r"]),
                        ("no-session", ["--no-session"]),
                        ("all", ["--session", source, "-c", "-r", "--no-session"])]:
        out["fork conflict " + name] = run(["--fork", source, *extra, "-p", "x"])
    out["fork missing id"] = run(["--fork", "deadbeef", "-p", "x"])
    out["session missing id"] = run(["--session", "deadbeef", "-p", "x"])
    empty = f"{WORK}/empty.jsonl"
    open(empty, "w").close()
    out["fork empty file"] = run(["--fork", empty, "-p", "x"])
    headless = f"{WORK}/headless.jsonl"
    with open(headless, "w") as f:
        for line in src_lines[1:]:
            f.write(json.dumps(line) + "\n")
    out["fork headless file"] = run(["--fork", headless, "-p", "x"])
    # A fork by id prefix: a new file naming its source, every other entry copied as it was.
    before = set(sessions())
    TURNS[:] = [{"text": "forked answer"}]
    r = run(["--provider", "mock", "--model", "mock-model", "--fork", src_lines[0]["id"][:8], "-p", "third"])
    new = sorted(set(sessions()) - before)
    lines = [json.loads(l) for l in open(new[0])] if len(new) == 1 else []
    out["fork by id"] = {"code": r["code"], "stdout": r["stdout"], "files": len(new),
                         "header": {k: v for k, v in lines[0].items() if k not in ("id", "timestamp")} if lines else None,
                         "copied": lines[1:len(src_lines)] == src_lines[1:],
                         "after": [l.get("type") + ":" + (l.get("message") or {}).get("role", "")
                                   for l in lines[len(src_lines):]],
                         "requestUserTexts": [m["content"] if isinstance(m["content"], str) else m["content"][0]["text"]
                                              for m in REQUESTS[-1]["messages"] if m["role"] == "user"]}

    # Skills and prompt templates: one of each in the agent dir, one of each given by path.
    os.makedirs(f"{AGENT}/skills/tidy", exist_ok=True)
    open(f"{AGENT}/skills/tidy/SKILL.md", "w").write(
        "---\nname: tidy\ndescription: Tidy a file & keep <its> \"style\".\n---\nTidy steps.\n")
    os.makedirs(f"{WORK}/extra/lint", exist_ok=True)
    open(f"{WORK}/extra/lint/SKILL.md", "w").write(
        "---\nname: lint\ndescription: Lint the project.\n---\nLint steps.\n")
    os.makedirs(f"{AGENT}/prompts", exist_ok=True)
    open(f"{AGENT}/prompts/review.md", "w").write(
        "---\ndescription: Review a file\n---\nReview $1 carefully, then $@.\n")
    open(f"{WORK}/extra/explain.md", "w").write("Explain $ARGUMENTS in one line.\n")
    try:
        for name, args, prompt in [
                ("skills default", [], "hi"),
                ("skill path", ["--skill", f"{WORK}/extra/lint"], "hi"),
                ("skill file", ["--skill", f"{WORK}/extra/lint/SKILL.md"], "hi"),
                ("-ns", ["-ns"], "hi"),
                ("-ns skill path", ["-ns", "--skill", f"{WORK}/extra/lint"], "hi"),
                ("template default", [], "/review main.rs twice"),
                ("template path", ["--prompt-template", f"{WORK}/extra/explain.md"], "/explain the borrow checker"),
                ("-np", ["-np"], "/review main.rs twice"),
                ("-np template path", ["-np", "--prompt-template", f"{WORK}/extra/explain.md"],
                 "/explain the borrow checker"),
                ("skill command", [], "/skill:tidy now please")]:
            TURNS[:] = [{"text": "ok"}]
            REQUESTS.clear()
            r = pi(["-p", "--no-session", *args, prompt])
            body = REQUESTS[-1] if REQUESTS else {}
            system = next((m["content"] for m in body.get("messages", []) if m["role"] in ("system", "developer")), "")
            start = system.find("\n\nThe following skills")
            end = system.find("</available_skills>")
            user = [m["content"] for m in body.get("messages", []) if m["role"] == "user"]
            out["prompt " + name] = {"args": args, "prompt": prompt, "code": r.returncode, "stderr": r.stderr,
                                     "skills": system[start:end + len("</available_skills>")] if start >= 0 else None,
                                     "user": user[-1] if user else None}
    finally:
        shutil.rmtree(f"{AGENT}/skills")
        shutil.rmtree(f"{AGENT}/prompts")

    # Where a new session goes: --session-dir, the environment, the setting; the flag wins.
    def landed(root):
        found = sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)
        return [re.sub(r"[^/]*\.jsonl$", "<session>.jsonl", p) for p in found]

    settings = f"{AGENT}/settings.json"
    for name, args, env, setting in [
            ("flag", ["--session-dir", f"{WORK}/sd-flag"], {}, None),
            ("env", [], {"PI_CODING_AGENT_SESSION_DIR": f"{WORK}/sd-env"}, None),
            ("setting", [], {}, f"{WORK}/sd-setting"),
            ("flag over env and setting", ["--session-dir", f"{WORK}/sd-flag2"],
             {"PI_CODING_AGENT_SESSION_DIR": f"{WORK}/sd-env2"}, f"{WORK}/sd-setting2"),
            ("env over setting", [], {"PI_CODING_AGENT_SESSION_DIR": f"{WORK}/sd-env3"}, f"{WORK}/sd-setting3")]:
        if setting:
            json.dump({"sessionDir": setting}, open(settings, "w"))
        try:
            TURNS[:] = [{"text": "ok"}]
            r = subprocess.run(BASE + args + ["-p", "hi"], cwd=PROJECT, env=dict(ENV, **env), capture_output=True,
                               text=True, timeout=120)
        finally:
            if setting:
                os.remove(settings)
        dirs = sorted(d for d in os.listdir(WORK) if d.startswith("sd-"))
        out["session-dir " + name] = {"args": args, "env": env, "setting": setting, "code": r.returncode,
                                      "landed": {d: landed(f"{WORK}/{d}") for d in dirs}}
        for d in dirs:
            shutil.rmtree(f"{WORK}/{d}")
    save("flags-more.json", out)


# The sessions `resume_picker_case` offers: (id, first prompt, messages, age in hours).
PICKER_SESSIONS = [("00000000-0000-4000-8000-000000000001", "alpha topic", 2, 21.5),
                   ("00000000-0000-4000-8000-000000000002", "beta topic", 4, 20.5),
                   ("00000000-0000-4000-8000-000000000003", "gamma topic with a title long enough to be cut at "
                    "eighty columns", 2, 0.2)]


def write_picker_sessions(directory, cwd):
    """pi v3 session files of PICKER_SESSIONS, their times counted back from now."""
    import time
    os.makedirs(directory, exist_ok=True)
    now = time.time()
    for sid, topic, count, hours in PICKER_SESSIONS:
        ms = int((now - hours * 3600) * 1000)
        iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + ".%03dZ" % (ms % 1000)
        lines = [{"type": "session", "version": 3, "id": sid, "timestamp": iso, "cwd": cwd}]
        parent = None
        for i in range(count):
            role = "user" if i % 2 == 0 else "assistant"
            message = {"role": role, "content": [{"type": "text", "text": topic if i == 0 else f"{role} {i}"}],
                       "timestamp": ms}
            if role == "assistant":
                message.update({"api": "openai-completions", "provider": "mock", "model": "mock-model",
                                "stopReason": "stop", "usage": {"input": 1, "output": 1, "cacheRead": 0,
                                                                "cacheWrite": 0, "totalTokens": 2,
                                                                "cost": {"input": 0, "output": 0, "cacheRead": 0,
                                                                         "cacheWrite": 0, "total": 0}}})
            entry = {"type": "message", "id": f"{sid[-4:]}{i:04d}", "parentId": parent, "timestamp": iso,
                     "message": message}
            lines.append(entry)
            parent = entry["id"]
        name = iso.replace(":", "-").replace(".", "-") + "_" + sid + ".jsonl"
        with open(os.path.join(directory, name), "w") as f:
            f.writelines(json.dumps(l) + "\n" for l in lines)


def resume_picker_case():
    """`pi -r`'s session picker at start, in tmux at 80x24 and 120x40: the first screen, the screen
    after typing a filter, and what is left after Escape (`resume-picker.json`)."""
    import time
    encoded = "--" + PROJECT.strip("/").replace("/", "-") + "--"
    out = {"sessions": [{"id": i, "topic": t, "messages": n, "ageHours": h} for i, t, n, h in PICKER_SESSIONS]}

    def capture():
        return subprocess.run(["tmux", "capture-pane", "-p", "-t", "pir"], capture_output=True, text=True).stdout

    def wait(text):
        for _ in range(200):
            screen = capture()
            if text in screen:
                return "\n".join(l.rstrip() for l in screen.splitlines())
            time.sleep(0.05)
        raise SystemExit(f"pi's picker never showed {text!r}:\n{capture()}")

    for w, h in [(80, 24), (120, 40)]:
        shutil.rmtree(f"{AGENT}/sessions", ignore_errors=True)
        write_picker_sessions(f"{AGENT}/sessions/{encoded}", PROJECT)
        env = " ".join(f"{k}={v}" for k, v in dict(ENV, TERM="xterm-256color").items())
        subprocess.run(["tmux", "kill-session", "-t", "pir"], capture_output=True)
        subprocess.run(["tmux", "new-session", "-d", "-s", "pir", "-x", str(w), "-y", str(h), "-c", PROJECT,
                        f"env -i {env} node {PI} --provider mock --model mock-model -r; echo PI_EXIT=$?; sleep 60"],
                       check=True)
        try:
            first = wait("gamma topic")
            subprocess.run(["tmux", "send-keys", "-t", "pir", "-l", "alpha"], check=True)
            filtered = wait("> alpha")
            subprocess.run(["tmux", "send-keys", "-t", "pir", "Escape"], check=True)
            after = wait("PI_EXIT=")
        finally:
            subprocess.run(["tmux", "kill-session", "-t", "pir"], capture_output=True)
        out[f"{w}x{h}"] = {"first": first, "filtered": filtered, "after": after}
    shutil.rmtree(f"{AGENT}/sessions", ignore_errors=True)
    save("resume-picker.json", out)


# A non-2xx answer before any stream, per wire API: (name, provider, api, base path, status, body).
HTTP_ERRORS = [
    ("completions-json", "mock", "openai-completions", "/v1", 400,
     {"error": {"message": "Invalid value for 'temperature'.", "type": "invalid_request_error",
                "param": "temperature", "code": None}}),
    ("completions-no-message", "mock", "openai-completions", "/v1", 403, {"detail": "forbidden here"}),
    ("completions-text", "mock", "openai-completions", "/v1", 404, "no such route"),
    ("responses-json", "mock-responses", "openai-responses", "/v1", 400,
     {"error": {"message": "Unsupported parameter: 'reasoning'.", "type": "invalid_request_error",
                "param": "reasoning", "code": "unsupported_parameter"}}),
    ("anthropic-json", "mock-anthropic", "anthropic-messages", "", 400,
     {"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: must be positive"},
      "request_id": "req_mock_1"}),
    ("anthropic-text", "mock-anthropic", "anthropic-messages", "", 401, "unauthorized"),
    ("google-json", "mock-google", "google-generative-ai", "/v1beta", 400,
     {"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
                "status": "INVALID_ARGUMENT"}}),
]


def http_error_cases():
    """What pi shows for a provider's non-2xx answer: `-p` (exit code, stdout, stderr) and the
    assistant message's `errorMessage` in JSON mode, for each wire API."""
    models_path = f"{AGENT}/models.json"
    original = open(models_path).read()
    models = json.loads(original)
    for name, provider, api, base, *_ in HTTP_ERRORS:
        models["providers"].setdefault(provider, {"baseUrl": URL + base, "api": api, "apiKey": "MOCK_API_KEY",
                                                  "models": [{"id": "mock-model", "contextWindow": 100000,
                                                              "maxTokens": 1000}]})
    json.dump(models, open(models_path, "w"))
    out = []
    try:
        for name, provider, api, base, status, body in HTTP_ERRORS:
            args = [NODE, PI, "--provider", provider, "--model", "mock-model", "--no-session"]
            TURNS[:] = [{"error": (status, body)}]
            p = subprocess.run(args + ["-p", "hi"], cwd=PROJECT, env=ENV, capture_output=True, text=True,
                               timeout=120)
            TURNS[:] = [{"error": (status, body)}]
            j = subprocess.run(args + ["--mode", "json", "hi"], cwd=PROJECT, env=ENV, capture_output=True,
                               text=True, timeout=120)
            ends = [e for e in map(json.loads, filter(str.strip, j.stdout.splitlines()))
                    if e.get("type") == "message_end" and e["message"].get("role") == "assistant"]
            out.append({"name": name, "api": api, "status": status, "body": body,
                        "print": {"code": p.returncode, "stdout": p.stdout, "stderr": p.stderr},
                        "json": {"code": j.returncode, "stopReason": ends[-1]["message"]["stopReason"],
                                 "errorMessage": ends[-1]["message"].get("errorMessage")}})
    finally:
        open(models_path, "w").write(original)
    save("http-errors.json", out)


def refusal_case():
    """A provider that refuses the first request (HTTP 400 with OpenAI's JSON body, HTTP 404 with a
    text body) before any stream starts: every event pi writes in JSON mode, and over RPC."""
    out = {}
    for name, status, body in [
            ("400", 400, {"error": {"message": "Invalid value for 'temperature'.",
                                    "type": "invalid_request_error", "param": "temperature", "code": None}}),
            ("404", 404, "no such route")]:
        TURNS[:] = [{"error": (status, body)}]
        REQUESTS.clear()
        r = pi(["--mode", "json", "--no-session", "hi"])
        out["json " + name] = {"code": r.returncode, "requests": len(REQUESTS),
                               "events": [json.loads(l) for l in r.stdout.splitlines() if l.strip()]}
    out["rpc 400"] = rpc("refusal-rpc", [('{"id":"p1","type":"prompt","message":"hi"}', ended())],
                         [{"error": (400, {"error": {"message": "Invalid value for 'temperature'.",
                                                     "type": "invalid_request_error"}})}])
    os.remove(os.path.join(OUT, "rpc-refusal-rpc.json"))
    save("refusal.json", out)


def compaction_thinking_case():
    """The summary request of a manual compaction on a reasoning model at each thinking level the
    session can be set to (pi passes the session's level; `off` sends no reasoning)."""
    thinker = [NODE, PI, "--provider", "mock", "--model", "mock-thinker"]
    out = {}
    for level in ["off", "minimal", "high"]:
        rpc("compact-thinking", [(json.dumps({"id": "t1", "type": "set_thinking_level", "level": level}),
                                  answered("t1")),
                                 ('{"id":"p1","type":"prompt","message":"hi"}', ended()),
                                 ('{"id":"c1","type":"compact"}', answered("c1"))],
            [{"text": "hello"}, SUMMARY], base=thinker)
        out[level] = {"prompt": {k: v for k, v in REQUESTS[0].items() if k != "messages"},
                      "summary": {k: v for k, v in REQUESTS[1].items() if k != "messages"}}
    os.remove(os.path.join(OUT, "rpc-compact-thinking.json"))
    save("compact-thinking.requests.json", out)


# Keys for providers pi 0.73 added (and one it always had): --list-models shows their models.
LIST_KEYS = {"CLOUDFLARE_API_KEY": "cf", "MOONSHOT_API_KEY": "ms", "DEEPSEEK_API_KEY": "ds",
             "FIREWORKS_API_KEY": "fw", "XIAOMI_API_KEY": "xm", "ANTHROPIC_API_KEY": "an"}


def list_models_case():
    """--list-models of the built-in catalog alone (no models.json) with keys for a few providers
    in the environment, without a search and with two searches."""
    models_path = f"{AGENT}/models.json"
    saved = open(models_path).read()
    os.remove(models_path)
    out = {"keys": LIST_KEYS}
    try:
        for name, args in [("all", []), ("search kimi", ["kimi"]), ("search deepseek", ["deepseek"])]:
            r = subprocess.run([NODE, PI, "--list-models", *args], cwd=PROJECT, env=dict(ENV, **LIST_KEYS),
                               capture_output=True, text=True, timeout=120)
            out[name] = {"args": args, "stdout": r.stdout, "stderr": r.stderr, "code": r.returncode}
    finally:
        open(models_path, "w").write(saved)
    save("list-models.json", out)


# pi's own /tree code, run through its SDK: open a session file, move the leaf to the parent of
# the user message whose text is given (summarising the abandoned branch, as /tree offers), and
# send a new prompt from there. argv: session file, cwd, agent dir, the user message's text, prompt.
TREE_SCRIPT = """
import { createAgentSession, SessionManager, AuthStorage, ModelRegistry } from "%s";
const [file, cwd, agentDir, target, prompt] = process.argv.slice(2);
const authStorage = AuthStorage.create(agentDir + "/auth.json");
const modelRegistry = ModelRegistry.create(authStorage, agentDir + "/models.json");
const model = modelRegistry.find("mock", "mock-model");
const { session } = await createAgentSession({ cwd, agentDir, authStorage, modelRegistry, model,
  sessionManager: SessionManager.open(file) });
const entry = session.sessionManager.getEntries().find((e) => e.type === "message"
  && e.message.role === "user" && JSON.stringify(e.message.content).includes(target));
const moved = await session.navigateTree(entry.id, { summarize: true });
if (moved.cancelled || !moved.summaryEntry) throw new Error("navigateTree: " + JSON.stringify(moved));
await session.prompt(prompt);
session.dispose?.();
process.exit(0);
"""


def branch_case():
    """A session pi wrote with a multi-block edit, a manual compaction and an abandoned branch,
    and the request pi sends when resuming it. Over RPC (settings `compaction.keepRecentTokens: 1`
    so that the compaction drops history): `prompt` (a two-block `edit` of a.txt), `prompt`,
    `compact`, `prompt`; then pi's SDK moves the leaf back above the last prompt with a branch
    summary (`navigateTree`, what /tree does) and prompts again (a two-block `edit` of b.txt)."""
    open(f"{PROJECT}/a.txt", "w").write("one\ntwo\nthree\nfour\n")
    open(f"{PROJECT}/b.txt", "w").write("x = 1\ny = 2\n")
    for f in sessions():
        os.remove(f)
    settings = f"{AGENT}/settings.json"
    json.dump({"compaction": {"keepRecentTokens": 1}}, open(settings, "w"))
    edit_a = json.dumps({"path": "a.txt", "edits": [{"oldText": "two", "newText": "TWO"},
                                                    {"oldText": "four", "newText": "FOUR"}]})
    edit_b = json.dumps({"path": "b.txt", "edits": [{"oldText": "x = 1", "newText": "x = 10"},
                                                    {"oldText": "y = 2", "newText": "y = 20"}]})
    try:
        rpc("branch", [('{"id":"p1","type":"prompt","message":"edit a"}', ended()),
                       ('{"id":"p2","type":"prompt","message":"second"}', ended(2)),
                       ('{"id":"c1","type":"compact"}', answered("c1")),
                       ('{"id":"p3","type":"prompt","message":"after compaction"}', ended(3))],
            # A split turn asks for two summaries (in either order): both get the same answer.
            [{"calls": [("call_a", "edit", edit_a)]}, {"text": "Edited a."}, {"text": "two"},
             {"text": "## Goal\ncompaction summary"}, {"text": "## Goal\ncompaction summary"},
             {"text": "three"}], args=())
        os.remove(os.path.join(OUT, "rpc-branch.json"))
        assert not TURNS, TURNS
        (session,) = sessions()
        module = os.path.join(PKG, "dist/index.js")
        script = f"{WORK}/tree.mjs"
        open(script, "w").write(TREE_SCRIPT % module)
        TURNS[:] = [{"text": "## Goal\nbranch summary"}, {"calls": [("call_b", "edit", edit_b)]},
                    {"text": "Edited b."}]
        r = subprocess.run([NODE, script, session, PROJECT, AGENT, "after compaction", "another way"],
                           cwd=PROJECT, env=ENV, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr
        assert not TURNS, TURNS
    finally:
        os.remove(settings)
    shutil.copy(session, os.path.join(OUT, "branch.session.jsonl"))
    copy = f"{WORK}/branch-copy.jsonl"
    shutil.copy(session, copy)
    TURNS[:] = [{"text": "Resumed."}]
    REQUESTS.clear()
    r = pi(["-p", "--session", copy, "continue"])
    save("branch.resume.requests.json", REQUESTS[:])
    save("branch.resume.json", {"code": r.returncode, "stdout": r.stdout, "stderr": r.stderr})
    assert r.returncode == 0, r.stderr


def filo_session_case():
    """A session filo wrote (`filo.session.jsonl`, made by filo-cli's ignored test
    `write_the_filo_session_fixture`: the same steps as `branch_case`) resumed by pi:
    `pi -p --session <copy> continue`, the request pi sent, its exit code, stdout and stderr."""
    copy = f"{WORK}/filo-copy.jsonl"
    shutil.copy(os.path.join(OUT, "filo.session.jsonl"), copy)
    # pi -p refuses a session whose stored cwd is gone ("Stored session working directory does
    # not exist"): the generator's temporary project is made again, empty, for the run.
    cwd = json.loads(open(copy).readline())["cwd"]
    made = not os.path.exists(cwd)
    os.makedirs(cwd, exist_ok=True)
    TURNS[:] = [{"text": "Resumed."}]
    REQUESTS.clear()
    try:
        r = pi(["-p", "--session", copy, "continue"])
    finally:
        if made:
            shutil.rmtree(os.path.dirname(cwd) if os.path.basename(cwd) == "project" else cwd)
    save("filo.resume.requests.json", REQUESTS[:])
    save("filo.resume.json", {"code": r.returncode, "stdout": r.stdout, "stderr": r.stderr})
    assert r.returncode == 0, r.stderr


def tree_session(path, cwd):
    """A session with nested branches (written here, not by pi): `start` branches three ways,
    the first way branches again, the leaf is a label entry under the deepest answer."""
    entries, clock = [], [0]

    def stamp():
        clock[0] += 1
        return "2026-12-02T06:%02d:%02d.000Z" % (clock[0] // 60, clock[0] % 60)

    def msg(id_, parent, role, text):
        m = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": 1796191658000 + clock[0]}
        if role == "assistant":
            m.update({"api": "openai-completions", "provider": "mock", "model": "mock-model", "stopReason": "stop",
                      "usage": {"input": 100, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 110,
                                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}})
        entries.append({"type": "message", "id": id_, "parentId": parent, "timestamp": stamp(), "message": m})

    entries.append({"type": "session", "version": 3, "id": "0190a000-0000-7000-8000-000000000001",
                    "timestamp": stamp(), "cwd": cwd})
    for id_, parent, role, text in [
            ("u1", None, "user", "start"), ("a1", "u1", "assistant", "started"),
            ("u2", "a1", "user", "first idea"), ("a2", "u2", "assistant", "first answer"),
            ("u4", "a2", "user", "deep one"), ("a4", "u4", "assistant", "deep answer"),
            ("u3", "a1", "user", "second idea"), ("a3", "u3", "assistant", "second answer"),
            ("u6", "a1", "user", "third idea"),
            ("u5", "a2", "user", "deep two"), ("a5", "u5", "assistant", "deep two answer"),
            ("u7", "a5", "user", "keep going"), ("a7", "u7", "assistant", "kept going")]:
        msg(id_, parent, role, text)
    entries.append({"type": "label", "id": "l1", "parentId": "a7", "timestamp": stamp(), "targetId": "u3",
                    "label": "mark"})
    open(path, "w").write("".join(json.dumps(e, separators=(",", ":")) + "\n" for e in entries))


def tree_rows(screen):
    """The tree selector's rows of a captured screen: after the border under the search line (and
    the blank line after it) through the `(i/n)` status line, trailing blanks removed."""
    lines = [l.rstrip() for l in screen.split("\n")]
    start = next(i for i, l in enumerate(lines) if l.startswith("  Type to search:")) + 3
    end = next(i for i in range(start, len(lines)) if re.match(r"^  \(\d+/\d+\)", lines[i]))
    return lines[start:end + 1]


def tree_screen_case():
    """pi's /tree in a 98x30 tmux pane (the width inside the box filo draws in its 100x30 test
    pane) on `tree.session.jsonl` (nested branches; written by `tree_session`) and on
    `branch.session.jsonl`: the rows as first shown, then after each key of a sequence (ctrl+left
    moves to the branch start, then folds)."""
    import time
    tree = os.path.join(OUT, "tree.session.jsonl")
    tree_session(tree, "<CWD>")
    socket = f"pi-rec-{os.getpid()}"

    def tmux(*args):
        return subprocess.run(["tmux", "-L", socket, *args], capture_output=True, text=True, check=True).stdout

    def wait(needle):
        for _ in range(200):
            screen = tmux("capture-pane", "-p", "-t", "pi")
            if needle in screen:
                return screen
            time.sleep(0.05)
        raise RuntimeError(f"pi never showed {needle!r}:\n{screen}")

    def settle(before):
        time.sleep(0.3)
        for _ in range(100):
            screen = tmux("capture-pane", "-p", "-t", "pi")
            if screen != before:
                time.sleep(0.2)
                return tmux("capture-pane", "-p", "-t", "pi")
            time.sleep(0.05)
        return before

    out = {}
    for name, steps in [("tree", ["C-Left", "C-Left", "C-Left", "Up", "Up", "C-Left"]), ("branch", [])]:
        copy = f"{WORK}/{name}-copy.jsonl"
        lines = open(os.path.join(OUT, f"{name}.session.jsonl")).read().split("\n")
        header = json.loads(lines[0])
        header["cwd"] = PROJECT
        open(copy, "w").write("\n".join([json.dumps(header)] + lines[1:]))
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in {**ENV, "TERM": "xterm-256color"}.items())
        cmd = " ".join(shlex.quote(a) for a in BASE + ["--session", copy])
        tmux("new-session", "-d", "-s", "pi", "-x", "98", "-y", "30", "-c", PROJECT, f"env -i {env} {cmd}; sleep 60")
        try:
            wait("mock-model")
            tmux("send-keys", "-t", "pi", "-l", "/tree")
            time.sleep(0.5)
            tmux("send-keys", "-t", "pi", "Enter")
            screen = settle(wait("Session Tree"))
            shots = [{"keys": [], "rows": tree_rows(screen)}]
            for key in steps:
                tmux("send-keys", "-t", "pi", key)
                screen = settle(screen)
                shots.append({"keys": [key], "rows": tree_rows(screen)})
            out[name] = shots
        finally:
            tmux("kill-server")
    save("tree-screens.json", out)


# `resource_settings_case`: the files (`<AGENT>` the agent dir, `<HOME>` HOME, `<TMP>` the
# temporary directory; the project is `<TMP>/project`) and the settings cases.
RESOURCE_FILES = {
    "<AGENT>/skills/alpha/SKILL.md": "---\nname: alpha\ndescription: Alpha skill.\n---\nAlpha.\n",
    "<AGENT>/skills/beta/SKILL.md": "---\nname: beta\ndescription: Beta skill.\n---\nBeta.\n",
    "<AGENT>/extra-skills/gamma/SKILL.md": "---\nname: gamma\ndescription: Gamma skill.\n---\nGamma.\n",
    "<AGENT>/extra-skills/delta/SKILL.md": "---\nname: delta\ndescription: Delta skill.\n---\nDelta.\n",
    "<AGENT>/extra-skills/.gitignore": "delta/\n",
    "<AGENT>/extra-skills/node_modules/nm/SKILL.md": "---\nname: nm\ndescription: Never.\n---\nNo.\n",
    "<AGENT>/prompts/greet.md": "Greet $1.\n",
    "<AGENT>/prompts/bye.md": "Bye $1.\n",
    "<AGENT>/extra-prompts/sub/deep.md": "Deep $@.\n",
    "<AGENT>/extra-prompts/.hidden.md": "Hidden.\n",
    "<HOME>/hp/tilde.md": "Tilde $1.\n",
    "<TMP>/project/.pi/skills/proj/SKILL.md": "---\nname: proj\ndescription: Project skill.\n---\nProj.\n",
    "<TMP>/project/.pi/prompts/greet.md": "Project greet $1.\n",
    "<TMP>/project/.agents/skills/agentsk/SKILL.md":
        "---\nname: agentsk\ndescription: Agents skill.\n---\nAgents.\n",
    "<TMP>/shared/skills/omega/SKILL.md": "---\nname: omega\ndescription: Shared skill.\n---\nOmega.\n",
    "<TMP>/shared/prompts/share.md": "Share $1.\n",
}
RESOURCE_PROMPTS = ["/greet Ann", "/bye Bob", "/deep x y", "/share z", "/tilde t"]
RESOURCE_CASES = [
    ("nothing set", {}, {}),
    ("global plain paths", {"skills": ["extra-skills"], "prompts": ["extra-prompts", "~/hp"]}, {}),
    ("global globs", {"skills": ["extra-skills", "extra-skills/g*"], "prompts": ["extra-prompts", "**/deep.md"]}, {}),
    ("global excludes", {"skills": ["!beta"], "prompts": ["!bye.md"]}, {}),
    ("global force include and exclude",
     {"skills": ["extra-skills", "!*", "+extra-skills/gamma", "+skills/alpha", "+skills/beta", "-skills/beta"],
      "prompts": ["!*", "+prompts/bye.md"]}, {}),
    ("global overrides leave project skills", {"skills": ["!agentsk", "!proj"]}, {}),
    ("project paths and excludes", {},
     {"skills": ["../../shared/skills", "!proj"], "prompts": ["../../shared/prompts", "-prompts/greet.md"]}),
    ("project and global", {"skills": ["extra-skills", "-skills/alpha"], "prompts": ["!greet.md"]},
     {"skills": ["!agentsk", "../../shared/skills/*"], "prompts": ["../../shared/prompts/share.md"]}),
]


def resource_settings_case():
    """The `skills` / `prompts` settings lists of global and project settings (plain paths, globs,
    `!` excludes, `+` / `-` exact paths) as they reach the model: the skills block of the system
    prompt and the expansion of `/template` prompts (`resource-settings.json`)."""
    places = {"<AGENT>": AGENT, "<HOME>": HOME, "<TMP>": WORK}
    written = []
    for key, text in RESOURCE_FILES.items():
        tag, rest = key.split("/", 1)
        path = os.path.join(places[tag], rest)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "w").write(text)
        written.append(path)
    out = {"files": RESOURCE_FILES, "prompts": RESOURCE_PROMPTS, "cases": {}}
    global_settings, project_settings = f"{AGENT}/settings.json", f"{PROJECT}/.pi/settings.json"
    try:
        for name, global_, project in RESOURCE_CASES:
            json.dump(global_, open(global_settings, "w"))
            json.dump(project, open(project_settings, "w"))
            case = {"global": global_, "project": project, "skills": None, "user": []}
            for i, prompt in enumerate(RESOURCE_PROMPTS):
                TURNS[:] = [{"text": "ok"}]
                REQUESTS.clear()
                r = pi(["-p", "--no-session", prompt])
                body = REQUESTS[-1] if REQUESTS else {}
                messages = body.get("messages", [])
                if i == 0:
                    system = next((m["content"] for m in messages if m["role"] in ("system", "developer")), "")
                    start, end = system.find("\n\nThe following skills"), system.find("</available_skills>")
                    case["skills"] = system[start:end + len("</available_skills>")] if start >= 0 else None
                    case["code"] = r.returncode
                user = [m["content"] for m in messages if m["role"] == "user"]
                case["user"].append(user[-1] if user else None)
            out["cases"][name] = case
    finally:
        for f in (global_settings, project_settings):
            if os.path.exists(f):
                os.remove(f)
        for d in [f"{AGENT}/skills", f"{AGENT}/extra-skills", f"{AGENT}/prompts", f"{AGENT}/extra-prompts",
                  f"{HOME}/hp", f"{PROJECT}/.pi/skills", f"{PROJECT}/.pi/prompts", f"{PROJECT}/.agents",
                  f"{WORK}/shared"]:
            shutil.rmtree(d, ignore_errors=True)
    save("resource-settings.json", out)


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import sessions16
    sessions16.h = sys.modules[__name__]
    cases = dict(globals(), session16_case=sessions16.session16_case)
    only = sys.argv[4:]
    try:
        if only:
            for case in only:
                cases[case]()
            sys.exit(0)
        if version_tuple(VERSION) >= (1, 6, 0):
            sessions16.session16_case()
            sys.exit(0)
        edit_case()
        rpc_cases()
        compaction_cases()
        queue_cases()
        flags_case()
        flags_more_case()
        resume_picker_case()
        http_error_cases()
        refusal_case()
        compaction_thinking_case()
        list_models_case()
        branch_case()
        filo_session_case()
        tree_screen_case()
        resource_settings_case()
    finally:
        server.shutdown()
        shutil.rmtree(WORK, ignore_errors=True)
