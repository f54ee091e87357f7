#!/usr/bin/env python3
# Process-level measurement for BENCHMARKS.md (## filo-tui); not a cargo bench.
# Launch filo in a pty (100x30), time until the first frame shows the prompt hints, then measure
# idle CPU and RSS over 5 s, then quit with ctrl+c twice. Usage: tui_launch.py <filo> <home> <cwd>
import os, pty, sys, time, select, struct, fcntl, termios, statistics
filo, home, cwd = sys.argv[1:4]
runs = []
idle = None
for run in range(int(os.environ.get("RUNS", "10"))):
    t0 = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(cwd)
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
        env = {"HOME": home, "PATH": "/usr/bin:/bin", "TERM": "xterm-256color", "MOCK_API_KEY": "x"}
        os.execve(filo, [filo], env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    buf = b""
    while b"enter to send" not in buf:
        r, _, _ = select.select([fd], [], [], 5)
        if not r:
            raise SystemExit("no first frame: %r" % buf[-500:])
        try:
            buf += os.read(fd, 65536)
        except OSError:
            raise SystemExit("filo exited: %r" % buf[-800:])
    runs.append((time.perf_counter() - t0) * 1000)
    if run == 0:
        def cpu():
            f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            return int(f[11]) + int(f[12])
        end = time.time() + 0.5
        while time.time() < end:
            r, _, _ = select.select([fd], [], [], 0.1)
            if r:
                os.read(fd, 65536)
        c0 = cpu(); w0 = time.perf_counter()
        # keep draining output while idle
        end = time.time() + 5
        drained = 0
        while time.time() < end:
            r, _, _ = select.select([fd], [], [], 0.2)
            if r:
                drained += len(os.read(fd, 65536))
        c1 = cpu(); w1 = time.perf_counter()
        hz = os.sysconf("SC_CLK_TCK")
        rss = [l for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS")][0].split()[1]
        idle = ((c1 - c0) / hz / (w1 - w0) * 100, int(rss) / 1024, drained)
    os.write(fd, b"\x03"); time.sleep(0.05); os.write(fd, b"\x03")
    os.waitpid(pid, 0)
    os.close(fd)
print("launch to first frame ms: min %.1f median %.1f max %.1f (n=%d)" % (min(runs), statistics.median(runs), max(runs), len(runs)))
print("idle: cpu %.2f%% over 5 s, rss %.1f MiB, bytes written while idle %d" % idle)
