#!/usr/bin/env python3
# NOT CI. Usage: measure.py RUNS BEFORE_BIN AFTER_BIN ARGS...
# Paired runs: before and after alternate, each a whole `filo dag …` process; wall time and the
# child's own peak RSS (wait4's ru_maxrss). Prints min / median per side and checks the outputs
# are byte-identical.
import os, subprocess, sys, time, statistics
runs = int(sys.argv[1]); before, after = sys.argv[2], sys.argv[3]; args = sys.argv[4:]
def one(binary):
    r, w = os.pipe()
    t = time.perf_counter()
    pid = os.posix_spawn(binary, [binary] + args, dict(os.environ, TZ="UTC"), file_actions=[(os.POSIX_SPAWN_DUP2, w, 1)])
    os.close(w)
    out = b""
    while True:
        chunk = os.read(r, 1 << 16)
        if not chunk: break
        out += chunk
    os.close(r)
    _, status, ru = os.wait4(pid, 0)
    return time.perf_counter() - t, ru.ru_maxrss, out, status
res = {before: [], after: []}; outs = {}
for i in range(runs):
    for b in ((before, after) if i % 2 == 0 else (after, before)):
        wall, rss, out, st = one(b)
        res[b].append((wall, rss)); outs.setdefault(b, out)
        assert out == outs[b]
same = outs[before] == outs[after]
for name, b in (("before", before), ("after", after)):
    w = [x[0] * 1000 for x in res[b]]; m = [x[1] / 1024 for x in res[b]]
    print(f"{name}: {min(w):.1f} / {statistics.median(w):.1f} ms, peak RSS {max(m):.1f} MiB (median {statistics.median(m):.1f})")
print("outputs identical" if same else "OUTPUTS DIFFER", len(outs[after]), "bytes")
