#!/usr/bin/env python3
"""Print the filo-vs-pi tables (medians) from run.sh's results.tsv."""
import csv
import statistics
import sys

CASES = [("version", "cold start `--version`"), ("oneshot", "one-shot `-p` prompt"),
         ("toolloop", "two-turn tool loop (`bash`)"), ("resume10k", "resume 10k-entry session"),
         ("resume100k", "resume 100k-entry session")]


def main():
    runs = {}
    with open(sys.argv[1], newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            runs.setdefault((row["case"], row["tool"]), []).append(row)

    def med(case, tool, key):
        rows = runs.get((case, tool))
        return statistics.median(float(r[key]) for r in rows) if rows else None

    def cpu(case, tool):
        rows = runs.get((case, tool))
        if not rows:
            return None
        return statistics.median(float(r["user_s"]) + float(r["sys_s"]) for r in rows)

    def secs(v):
        return "-" if v is None else ("%.0f ms" % (v * 1000) if v < 10 else "%.1f s" % v)

    def mb(kb):
        return "-" if kb is None else "%.1f MB" % (kb / 1024)

    def ratio(a, b):
        return "-" if not a or not b else "%.1f×" % (a / b)

    print("| case | pi wall | filo wall | speed-up | filo --no-dag wall | pi peak RSS | filo peak RSS "
          "| pi/filo memory | filo --no-dag RSS | pi CPU | filo CPU | filo --no-dag CPU | runs |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for case, label in CASES:
        pw, fw, nw = (med(case, t, "wall_s") for t in ("pi", "filo", "filo-nodag"))
        pm, fm, nm = (med(case, t, "max_rss_kb") for t in ("pi", "filo", "filo-nodag"))
        pc, fc, nc = (cpu(case, t) for t in ("pi", "filo", "filo-nodag"))
        n = len(runs.get((case, "filo"), []))
        print(f"| {label} | {secs(pw)} | {secs(fw)} | {ratio(pw, fw)} | {secs(nw)} | {mb(pm)} "
              f"| {mb(fm)} | {ratio(pm, fm)} | {mb(nm)} | {secs(pc)} | {secs(fc)} | {secs(nc)} | {n} |")


if __name__ == "__main__":
    main()
