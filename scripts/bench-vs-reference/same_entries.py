#!/usr/bin/env python3
"""usage: same_entries.py REFERENCE_OUT FILO_OUT

Exit 0 when both files hold the same session entries: one JSON value per line, equal line by line
as values (object member order is not compared: pi reads entries as JSON). Else print the first
difference and exit 1.
"""
import json
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    ref, filo = (open(p, encoding="utf-8").read().splitlines() for p in sys.argv[1:])
    if len(ref) != len(filo):
        sys.exit(f"entries: {len(ref)} lines from the reference, {len(filo)} from filo")
    for n, (a, b) in enumerate(zip(ref, filo), 1):
        if json.loads(a) != json.loads(b):
            sys.exit(f"entries: line {n} differs:\n  reference: {a[:300]}\n  filo:      {b[:300]}")


if __name__ == "__main__":
    main()
