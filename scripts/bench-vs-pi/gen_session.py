#!/usr/bin/env python3
"""Write a pi JSONL v3 session file of exactly N entries (plus the header line).

usage: gen_session.py N OUT.jsonl CWD [--no-compaction]

The conversation repeats a realistic coding-agent cycle -- user prompt, 0-3 rounds of
(assistant text + bash tool call, tool result), assistant answer -- with entries of a few hundred bytes, each entry a
child of the previous one (`parentId` chain, ids of 8 hex chars). Unless --no-compaction is
given, a `compaction` entry follows every ~1,000 entries, keeping the last ~100 entries before
it, as a long-lived session has; the context a resume sends is then bounded (~1,000 messages) while
both tools still read and index the whole file. The last entry is an assistant answer
(a `session_info` entry makes the count come out exact where needed). Output is
deterministic (seeded) so both tools resume byte-identical files.
"""
import json
import random
import sys
from datetime import datetime, timedelta, timezone

PROVIDER, MODEL, API = "mock", "mock-model", "openai-completions"
WORDS = ("the function returns a value when the input file is parsed and each line of the "
         "session is checked against the expected schema before the tool result is written "
         "back to the model so that it can decide the next step").split()


def text(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n))


def usage(rng):
    inp, out = rng.randint(800, 4000), rng.randint(20, 300)
    return {"input": inp, "output": out, "cacheRead": 0, "cacheWrite": 0, "totalTokens": inp + out,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    compaction = "--no-compaction" not in sys.argv
    if len(args) != 3:
        sys.exit(__doc__)
    n, out_path, cwd = int(args[0]), args[1], args[2]
    rng = random.Random(n)
    t0 = datetime(2026, 11, 1, tzinfo=timezone.utc)
    ids = set()
    state = {"i": 0, "parent": None}
    entries = []

    def new_id():
        while True:
            i = "%08x" % rng.getrandbits(32)
            if i not in ids:
                ids.add(i)
                return i

    def when():
        return t0 + timedelta(seconds=7 * state["i"])

    def iso():
        return when().strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (state["i"] % 1000)

    def ms():
        return int(when().timestamp() * 1000) + state["i"] % 1000

    def add(kind, **fields):
        e = {"type": kind, "id": new_id(), "parentId": state["parent"], "timestamp": iso()}
        e.update(fields)
        entries.append(e)
        state["parent"] = e["id"]
        state["i"] += 1
        return e

    def assistant(content, stop):
        return {"role": "assistant", "content": content, "api": API, "provider": PROVIDER,
                "model": MODEL, "usage": usage(rng), "stopReason": stop, "timestamp": ms()}

    add("model_change", provider=PROVIDER, modelId=MODEL)
    add("thinking_level_change", thinkingLevel="off")
    call = 0
    since_compaction = 0
    while len(entries) < n:
        r = n - len(entries)
        if compaction and since_compaction >= 1000 and r > 10:
            # keep from the first user message among the last ~100 entries
            j = len(entries) - 100
            while entries[j]["type"] != "message" or entries[j]["message"]["role"] != "user":
                j += 1
            add("compaction", summary="## Goal\n" + text(rng, 60) + "\n## Progress\n" + text(rng, 80),
                firstKeptEntryId=entries[j]["id"], tokensBefore=rng.randint(90000, 120000),
                details={"readFiles": ["src/lib.rs"], "modifiedFiles": ["src/main.rs"]}, fromHook=False)
            since_compaction = 0
            continue
        if r % 2 == 1 and r <= 9:
            add("session_info", name="benchmark session")
            continue
        # one cycle: user, k x (assistant tool call, tool result), assistant answer
        k = rng.choice((0, 1, 1, 2, 3)) if r > 8 else (r - 2) // 2
        add("message", message={"role": "user", "content": [{"type": "text", "text": text(rng, 30)}],
                                 "timestamp": ms()})
        for _ in range(k):
            call += 1
            cid = "call_%06d" % call
            add("message", message=assistant(
                [{"type": "text", "text": text(rng, 20)},
                 {"type": "toolCall", "id": cid, "name": "bash",
                  "arguments": {"command": "grep -n 'fn ' src/file_%d.rs" % call}}], "toolUse"))
            add("message", message={"role": "toolResult", "toolCallId": cid, "toolName": "bash",
                                     "content": [{"type": "text", "text": text(rng, 40)}],
                                     "isError": False, "timestamp": ms()})
        add("message", message=assistant([{"type": "text", "text": text(rng, 35)}], "stop"))
        since_compaction += 2 + 2 * k
    header = {"type": "session", "version": 3, "id": "0b1e5e55-%04x-4%03x-8%03x-%012x" % (
        n % 0x10000, rng.getrandbits(12), rng.getrandbits(12), rng.getrandbits(48)),
        "timestamp": t0.strftime("%Y-%m-%dT%H:%M:%S.000Z"), "cwd": cwd}
    with open(out_path, "w", encoding="utf-8") as f:
        for obj in [header] + entries:
            f.write(json.dumps(obj, separators=(",", ":"), ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
