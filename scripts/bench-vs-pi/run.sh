#!/usr/bin/env bash
# filo vs pi on this machine, same mock provider, same prompts. NOT part of CI.
#
#   scripts/bench-vs-pi/run.sh            # build filo (release), install pi if missing, measure
#   RUNS=5 RUNS_100K=3 SKIP_BUILD=1 scripts/bench-vs-pi/run.sh
#
# Cases: `--version`; a one-shot print-mode prompt; a two-turn tool loop (the model calls `bash`
# once, then answers); resuming a 10,000- and a 100,000-entry pi v3 session with a print-mode
# prompt (`--session <file>`, a fresh copy of the generated file each run). Each case: one
# untimed warm-up run, then RUNS timed runs (RUNS_100K for the 100k resume) under measure.py
# (wall clock around spawn + wait4; peak RSS and CPU from the child's rusage, the figures GNU
# time's %M %U %S report); the table shows medians. Every run's exit code and answer
# are checked. filo is measured with its default (Playfilo DAG on) and with `--no-dag`; before
# each resume run the DAG database is reset to its state after the tool-loop case (it holds the
# earlier cases' sessions, never the resumed one: "first resume in filo of a pi session").
#
# pi is installed with npm into $PI_PREFIX (default ~/.cache/filo-bench/pi), never into the repo.
# The mock (`filo-mock-server`, crate filo-bench) listens on 127.0.0.1 only; each tool gets its
# own temporary HOME and agent dir whose models.json names it as provider `mock`
# (openai-completions, baseUrl = mock URL + /v1). pi runs with PI_OFFLINE=1 (no update check,
# no telemetry), since filo makes no startup network calls either.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
RUNS=${RUNS:-5}
RUNS_100K=${RUNS_100K:-3}
PI_PACKAGE=${PI_PACKAGE:-@mariozechner/pi-coding-agent@0.73.1}
PI_PREFIX=${PI_PREFIX:-$HOME/.cache/filo-bench/pi}
PI="$PI_PREFIX/node_modules/.bin/pi"
FILO="$ROOT/target/release/filo"
MOCK="$ROOT/target/release/filo-mock-server"
OUT=${OUT:-$ROOT/target/bench-vs-pi}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/filo-vs-pi.XXXXXX")
MOCK_FD=
cleanup() {
    if [ -n "$MOCK_FD" ]; then exec {MOCK_FD}>&-; fi
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

if [ "${SKIP_BUILD:-0}" != 1 ]; then
    (cd "$ROOT" && cargo build --release -p filo-cli -p filo-bench)
fi
if [ ! -x "$PI" ]; then
    npm install --prefix "$PI_PREFIX" --no-audit --no-fund "$PI_PACKAGE"
fi

mkdir -p "$OUT" "$WORK/project" "$WORK/filo-home/agent" "$WORK/pi-home/agent"
PROJECT="$WORK/project"
RESULTS="$OUT/results.tsv"
printf 'case\ttool\trun\twall_s\tmax_rss_kb\tuser_s\tsys_s\n' >"$RESULTS"

echo "generating sessions" >&2
python3 "$HERE/gen_session.py" 10000 "$WORK/s10k.jsonl" "$PROJECT"
python3 "$HERE/gen_session.py" 100000 "$WORK/s100k.jsonl" "$PROJECT"

# start_mock SCENARIO LOG: a fresh mock (its stdin is our fd MOCK_FD; closing it stops it),
# then point both tools' models.json at it.
start_mock() {
    stop_mock
    exec {MOCK_FD}> >("$MOCK" "$1" >"$WORK/url" 2>"$2")
    local url=""
    for _ in $(seq 100); do
        url=$(cat "$WORK/url" 2>/dev/null || true)
        [ -n "$url" ] && break
        sleep 0.05
    done
    [ -n "$url" ] || { echo "the mock did not start" >&2; exit 1; }
    local models
    models=$(printf '{"providers":{"mock":{"baseUrl":"%s/v1","api":"openai-completions","apiKey":"MOCK_API_KEY","models":[{"id":"mock-model","contextWindow":1000000,"maxTokens":4096}]}}}' "$url")
    echo "$models" >"$WORK/filo-home/agent/models.json"
    echo "$models" >"$WORK/pi-home/agent/models.json"
}
stop_mock() {
    if [ -n "$MOCK_FD" ]; then
        exec {MOCK_FD}>&-
        MOCK_FD=
        wait 2>/dev/null || true
        rm -f "$WORK/url"
    fi
}

# CMD := the environment (nothing else is passed) and command line of TOOL (filo | filo-nodag | pi).
set_cmd() {
    case $1 in
        filo) CMD=(PATH="$PATH" HOME="$WORK/filo-home" FILO_AGENT_DIR="$WORK/filo-home/agent"
            MOCK_API_KEY=mock-secret "$FILO") ;;
        filo-nodag) CMD=(PATH="$PATH" HOME="$WORK/filo-home" FILO_AGENT_DIR="$WORK/filo-home/agent"
            MOCK_API_KEY=mock-secret "$FILO" --no-dag) ;;
        pi) CMD=(PATH="$PATH" HOME="$WORK/pi-home" PI_CODING_AGENT_DIR="$WORK/pi-home/agent"
            PI_OFFLINE=1 MOCK_API_KEY=mock-secret "$PI") ;;
    esac
}

# measure CASE TOOL RUNS EXPECT SESSION|- ARGS...: one warm-up, then RUNS timed runs; each run must
# exit 0 and its output (stdout + stderr: pi prints its version on stderr) must contain EXPECT. With a SESSION, each run resumes a fresh copy of it.
measure() {
    local case=$1 tool=$2 runs=$3 expect=$4 session=$5; shift 5
    local args=("$@") run
    set_cmd "$tool"
    for run in $(seq 0 "$runs"); do
        local extra=()
        if [ "$session" != - ]; then
            cp "$session" "$WORK/resume.jsonl"
            extra=(--session "$WORK/resume.jsonl")
            # The DAG as it was before any resume run: it must not know this session yet, or
            # filo resumes from the DAG lineage instead of the file (see BENCHMARKS.md).
            rm -rf "$WORK/filo-home/.playfilo"
            if [ -d "$WORK/playfilo-base" ]; then
                cp -a "$WORK/playfilo-base" "$WORK/filo-home/.playfilo"
            fi
        fi
        (cd "$PROJECT" && python3 "$HERE/measure.py" "$WORK/time" \
            "${CMD[@]}" "${extra[@]}" "${args[@]}" </dev/null >"$WORK/stdout" 2>"$WORK/stderr") || {
            echo "$case/$tool run $run failed:" >&2; cat "$WORK/stderr" >&2; exit 1; }
        cat "$WORK/stdout" "$WORK/stderr" | grep -qF -- "$expect" || {
            echo "$case/$tool run $run: unexpected output:" >&2; cat "$WORK/stdout" "$WORK/stderr" >&2; exit 1; }
        if [ "$run" -gt 0 ]; then
            printf '%s\t%s\t%s\t%s\n' "$case" "$tool" "$run" "$(tail -1 "$WORK/time" | tr ' ' '\t')" >>"$RESULTS"
        fi
    done
    echo "  $case / $tool done" >&2
}

TEXT="Hello from the benchmark mock."
TOOL_ANSWER="The command printed filo-bench-tool-output."
MODEL=(--provider mock --model mock-model)
TOOLS=(pi filo filo-nodag)

for tool in "${TOOLS[@]}"; do
    start_mock text "$OUT/mock-version-$tool.log"
    measure version "$tool" "$RUNS" "." - --version
    start_mock text "$OUT/mock-oneshot-$tool.log"
    measure oneshot "$tool" "$RUNS" "$TEXT" - "${MODEL[@]}" -p "Say hello."
    start_mock tool "$OUT/mock-toolloop-$tool.log"
    measure toolloop "$tool" "$RUNS" "$TOOL_ANSWER" - "${MODEL[@]}" -p "Run the command and report."
    if [ "$tool" = filo ] && [ -d "$WORK/filo-home/.playfilo" ]; then
        cp -a "$WORK/filo-home/.playfilo" "$WORK/playfilo-base"
    fi
    start_mock text "$OUT/mock-resume10k-$tool.log"
    measure resume10k "$tool" "$RUNS" "$TEXT" "$WORK/s10k.jsonl" "${MODEL[@]}" -p "Continue."
    start_mock text "$OUT/mock-resume100k-$tool.log"
    measure resume100k "$tool" "$RUNS_100K" "$TEXT" "$WORK/s100k.jsonl" "${MODEL[@]}" -p "Continue."
    stop_mock
done

python3 "$HERE/table.py" "$RESULTS"
echo >&2
echo "raw runs: $RESULTS; mock request logs: $OUT/mock-*.log" >&2
