#!/usr/bin/env python3
"""Run one command and record its wall time and resource usage.

usage: measure.py OUT NAME=VALUE... COMMAND [ARGS...]

Runs COMMAND under GNU time (`/usr/bin/time -f '%M %U %S'`) with exactly the NAME=VALUE
environment (like `env -i`), stdin/stdout/stderr inherited, and writes `wall_s max_rss_kb user_s
sys_s` to OUT. Peak RSS and CPU times are GNU time's; wall time is taken here with a monotonic
clock around the whole run, because GNU time's `%e` has a 10 ms resolution (it includes GNU
time's own fork and exec, well under a millisecond). The command is not spawned from Python
directly: a child's peak RSS counts the memory of the process it was forked from until its exec,
and Python's ~10 MB would swamp a small binary's figure. Exits with the command's exit code.
"""
import subprocess
import sys
import time

GNU_TIME = "/usr/bin/time"


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out, rest = sys.argv[1], sys.argv[2:]
    env = {}
    while rest and "=" in rest[0] and not rest[0].startswith("/"):
        name, value = rest.pop(0).split("=", 1)
        env[name] = value
    if not rest:
        sys.exit("measure.py: no command given")
    usage = out + ".rusage"
    start = time.perf_counter()
    code = subprocess.call([GNU_TIME, "-f", "%M %U %S", "-o", usage, "--"] + rest, env=env)
    wall = time.perf_counter() - start
    with open(usage) as f:
        # GNU time writes "Command exited with non-zero status N" first on failure
        rss, user, system = f.read().split("\n")[-2].split()
    with open(out, "w") as f:
        f.write("%.6f %s %s %s\n" % (wall, rss, user, system))
    sys.exit(code)


if __name__ == "__main__":
    main()
