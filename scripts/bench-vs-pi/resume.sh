#!/usr/bin/env bash
# Resume a 10,000- and a 100,000-entry session with two filo binaries, in paired runs. NOT CI.
#
#   scripts/bench-vs-pi/resume.sh BEFORE_FILO AFTER_FILO [RUNS]   # default RUNS=7
#
# The same generated files (gen_session.py), the same mock (target/release/filo-mock-server text),
# the same command as run.sh's resume case: `filo [--no-dag] --session <fresh copy>
# --provider mock --model mock-model -p "Continue."`. Each run measures BEFORE then AFTER (a
# warm-up pair first), so both see the same load; every run must exit 0 with the mock's answer.
# Wall time, peak RSS and CPU come from measure.py. With MODES="nodag dag" the DAG case runs too: each run starts from an
# empty Playfilo database (the first resume in filo of a session pi wrote). Prints a markdown
# table of min / median per case and binary; raw runs go to $OUT/resume-pairs.tsv.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BEFORE=$(realpath "${1:?usage: resume.sh BEFORE_FILO AFTER_FILO [RUNS]}")
AFTER=$(realpath "${2:?usage: resume.sh BEFORE_FILO AFTER_FILO [RUNS]}")
RUNS=${3:-7}
OUT=${OUT:-$ROOT/target/bench-vs-pi}
CASES=${CASES:-"10000 100000"}
MODES=${MODES:-nodag}

. "$HERE/mock.sh"
start_mock resume text 4096
mkdir -p "$OUT"
RESULTS="$OUT/resume-pairs.tsv"
printf 'case\tbinary\trun\twall_s\tmax_rss_kb\tuser_s\tsys_s\n' >"$RESULTS"

# one CASE LABEL BIN MODE SESSION: resume a fresh copy of SESSION once; append the figures.
one() {
    local case=$1 label=$2 bin=$3 mode=$4 session=$5 run=$6 flags=()
    [ "$mode" = nodag ] && flags=(--no-dag)
    cp "$session" "$WORK/resume.jsonl"
    rm -rf "$WORK/home/.playfilo"
    (cd "$WORK/project" && python3 "$HERE/measure.py" "$WORK/time" PATH="$PATH" HOME="$WORK/home" \
        FILO_AGENT_DIR="$WORK/home/agent" MOCK_API_KEY=mock-secret "$bin" "${flags[@]}" \
        --session "$WORK/resume.jsonl" --provider mock --model mock-model -p "Continue." \
        </dev/null >"$WORK/stdout" 2>"$WORK/stderr") || {
        echo "$case/$label failed:" >&2; cat "$WORK/stderr" >&2; exit 1; }
    grep -qF "Hello from the benchmark mock." "$WORK/stdout" || {
        echo "$case/$label: unexpected output:" >&2; cat "$WORK/stdout" "$WORK/stderr" >&2; exit 1; }
    if [ "$run" -gt 0 ]; then
        printf '%s\t%s\t%s\t%s\n' "$case" "$label" "$run" "$(tail -1 "$WORK/time" | tr ' ' '\t')" >>"$RESULTS"
    fi
}

for n in $CASES; do
    python3 "$HERE/gen_session.py" "$n" "$WORK/s$n.jsonl" "$WORK/project"
    for mode in $MODES; do
        for run in $(seq 0 "$RUNS"); do
            one "resume $n $mode" before "$BEFORE" "$mode" "$WORK/s$n.jsonl" "$run"
            one "resume $n $mode" after "$AFTER" "$mode" "$WORK/s$n.jsonl" "$run"
        done
        echo "  resume $n $mode done" >&2
    done
done

python3 - "$RESULTS" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
cases = list(dict.fromkeys(r["case"] for r in rows))
print("| case | binary | runs | wall min / median | peak RSS min / median | CPU (user+sys) median |")
print("|---|---|---:|---:|---:|---:|")
for c in cases:
    for b in ("before", "after"):
        rs = [r for r in rows if r["case"] == c and r["binary"] == b]
        wall = sorted(float(r["wall_s"]) * 1000 for r in rs)
        rss = sorted(int(r["max_rss_kb"]) / 1024 for r in rs)
        cpu = statistics.median(float(r["user_s"]) + float(r["sys_s"]) for r in rs) * 1000
        print("| %s | %s | %d | %.0f / %.0f ms | %.1f / %.1f MiB | %.0f ms |" % (
            c, b, len(rs), wall[0], statistics.median(wall), rss[0], statistics.median(rss), cpu))
EOF
