#!/usr/bin/env bash
# Stream a 20,000-delta answer, whole process, against the bare transfer of the same bytes. NOT CI.
#
#   scripts/bench-vs-pi/stream.sh [RUNS]          # default RUNS=11; PI=/path/to/pi/dist/cli.js adds pi
#
# The mock (`target/release/filo-mock-server stream`, OpenAI chat completions on 127.0.0.1)
# answers every request with the same 20,000 words, one `chat.completion.chunk` per word (~2.9 MB
# of SSE). Cases, each run in turn so all see the same load (one warm-up round first):
#   fetch         target/release/filo-fetch: POST, read the answer to its end, nothing else —
#                 the least any client spends, process start included
#   filo          filo --no-session -p (print mode: the answer on stdout, no session file)
#   filo-session  filo --no-dag -p (the session file written too)
#   filo-dag      filo -p (session file and Playfilo memory)
#   pi            node $PI --no-session -p (when PI is set)
#   filo-before   $BEFORE --no-session -p (when BEFORE names another filo binary: a paired
#                 before/after of the `filo` case)
# Every run must exit 0 and (but fetch) print the whole answer. Wall time, peak RSS and CPU come
# from measure.py; prints min / median per case and the overhead over `fetch`.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
RUNS=${1:-11}
FILO=${FILO:-$ROOT/target/release/filo}
FETCH="$ROOT/target/release/filo-fetch"
OUT=${OUT:-$ROOT/target/bench-vs-pi}

. "$HERE/mock.sh"
start_mock stream stream 32000
mkdir -p "$OUT"
BODY='{"model":"mock-model","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Write at length."}]}'
RESULTS="$OUT/stream-runs.tsv"
printf 'case\trun\twall_s\tmax_rss_kb\tuser_s\tsys_s\n' >"$RESULTS"
ENV=(PATH="$PATH" HOME="$WORK/home" FILO_AGENT_DIR="$WORK/home/agent" PI_CODING_AGENT_DIR="$WORK/home/agent"
     PI_OFFLINE=1 MOCK_API_KEY=mock-secret)
MODEL=(--provider mock --model mock-model)

one() {
    local case=$1 run=$2 cmd
    case $case in
        fetch) cmd=("$FETCH" "$URL/v1/chat/completions" "$BODY") ;;
        filo) cmd=("$FILO" --no-session "${MODEL[@]}" -p "Write at length.") ;;
        filo-session) cmd=("$FILO" --no-dag "${MODEL[@]}" -p "Write at length.") ;;
        filo-dag) cmd=("$FILO" "${MODEL[@]}" -p "Write at length.") ;;
        pi) cmd=(node "$PI" --no-session "${MODEL[@]}" -p "Write at length.") ;;
        filo-before) cmd=("$BEFORE" --no-session "${MODEL[@]}" -p "Write at length.") ;;
    esac
    (cd "$WORK/project" && python3 "$HERE/measure.py" "$WORK/time" "${ENV[@]}" "${cmd[@]}" \
        </dev/null >"$WORK/stdout" 2>"$WORK/stderr") || {
        echo "$case failed:" >&2; cat "$WORK/stderr" >&2; exit 1; }
    if [ "$case" != fetch ]; then
        grep -qF "w19999 end-of-stream." "$WORK/stdout" || {
            echo "$case: the answer did not arrive whole:" >&2; tail -c 300 "$WORK/stdout" "$WORK/stderr" >&2; exit 1; }
    fi
    [ "$run" -gt 0 ] && printf '%s\t%s\t%s\n' "$case" "$run" "$(tail -1 "$WORK/time" | tr ' ' '\t')" >>"$RESULTS"
    return 0
}

CASES=(fetch filo filo-session filo-dag)
[ -n "${BEFORE:-}" ] && CASES+=(filo-before)
[ -n "${PI:-}" ] && CASES+=(pi)
for run in $(seq 0 "$RUNS"); do
    for case in "${CASES[@]}"; do one "$case" "$run"; done
done

python3 - "$RESULTS" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
cases = list(dict.fromkeys(r["case"] for r in rows))
med = {c: statistics.median(float(r["wall_s"]) for r in rows if r["case"] == c) for c in cases}
print("| case | runs | wall min / median | over fetch (median) | peak RSS median | CPU (user+sys) median |")
print("|---|---:|---:|---:|---:|---:|")
for c in cases:
    rs = [r for r in rows if r["case"] == c]
    walls = [float(r["wall_s"]) * 1000 for r in rs]
    rss = statistics.median(int(r["max_rss_kb"]) for r in rs) / 1024
    cpu = statistics.median(float(r["user_s"]) + float(r["sys_s"]) for r in rs) * 1000
    over = (med[c] / med["fetch"] - 1) * 100
    print(f"| {c} | {len(rs)} | {min(walls):.1f} / {statistics.median(walls):.1f} ms | {over:+.0f} % | {rss:.1f} MiB | {cpu:.0f} ms |")
PY
