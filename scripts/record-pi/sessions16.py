"""pi >= 1.6 session cases for `record.py` (NOT part of CI): the session files pi writes with its
1.6 entry kinds, and the exact request it sends when it resumes each. Loaded by `record.py`,
which passes itself as `h` (the mock, the scripted turns, the temporary HOME and `pi`).

For each wire (`openai`: the openai-completions mock, provider `mock`; `anthropic`: the
anthropic-messages mock, provider `mockant`) `session16_case` records `session16-<wire>.jsonl`
and `session16-<wire>.resume.requests.json`:

1. `-p "run echo"`: pi's first system entry (every prompt section, `toolsAdded`), a tool round;
2. an `AGENTS.md` appears and the run is resumed: pi appends a system *patch* mid-session
   (the `project_context` section) before the user message; the first reply fails (HTTP 500), pi
   retries and writes a `context_edit` omitting the failed assistant message;
3. `/compact` over RPC: a compaction entry with `systemMessage` (the replayed prompt and tools);
4. resumed once more (`final question`): the request pi 1.6 sends for the whole file is kept.
"""
import json
import os
import shutil
import subprocess

h = None  # the record module

WIRES = {"openai": "mock", "anthropic": "mockant"}


def run(provider, args, model="mock-model"):
    return subprocess.run([h.NODE, h.PI, "--provider", provider, "--model", model, *args], cwd=h.PROJECT,
                          env=h.ENV, capture_output=True, text=True, timeout=180)


def clean_sessions():
    shutil.rmtree(f"{h.AGENT}/sessions", ignore_errors=True)
    agents = os.path.join(h.PROJECT, "AGENTS.md")
    if os.path.exists(agents):
        os.remove(agents)


def session16_case():
    settings = f"{h.AGENT}/settings.json"
    json.dump({"retry": {"enabled": True, "maxRetries": 2, "baseDelayMs": 10},
               "compaction": {"keepRecentTokens": 10}}, open(settings, "w"))
    try:
        for wire, provider in WIRES.items():
            clean_sessions()
            h.TURNS[:] = [{"calls": [("call_1", "bash", json.dumps({"command": "echo hi"}))]}, {"text": "Done."}]
            h.REQUESTS.clear()
            r = run(provider, ["-p", "run echo"])
            assert r.returncode == 0, r.stderr
            (session,) = h.sessions()
            open(os.path.join(h.PROJECT, "AGENTS.md"), "w").write("Always answer in English.\n")
            h.TURNS[:] = [{"error": (500, {"error": {"message": "internal error", "type": "server_error"}})},
                          {"text": "Recovered."}]
            r = run(provider, ["-p", "--session", session, "second question"])
            assert r.returncode == 0, r.stderr
            # /compact over RPC: the summary turn.
            h.TURNS[:] = [dict(h.SUMMARY)]
            p = subprocess.Popen([h.NODE, h.PI, "--provider", provider, "--model", "mock-model", "--mode", "rpc",
                                  "--session", session], cwd=h.PROJECT, env=h.ENV, stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            p.stdin.write(json.dumps({"id": "c1", "type": "compact"}) + "\n")
            p.stdin.flush()
            for line in p.stdout:
                o = json.loads(line)
                if o.get("type") == "response" and o.get("id") == "c1":
                    assert o.get("success"), o
                    break
            p.stdin.close()
            p.wait(timeout=60)
            h.TURNS[:] = [{"text": "Final."}]
            h.REQUESTS.clear()
            r = run(provider, ["-p", "--session", session, "final question"])
            assert r.returncode == 0, r.stderr
            shutil.copy(session, os.path.join(h.OUT, f"session16-{wire}.jsonl"))
            h.save(f"session16-{wire}.resume.requests.json", h.REQUESTS[:])
    finally:
        os.remove(settings)
        clean_sessions()


