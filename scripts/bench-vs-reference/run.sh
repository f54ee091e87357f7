#!/usr/bin/env bash
# filo's Playfilo reads side by side with the real reference module. NOT CI.
#
#   scripts/bench-vs-reference/run.sh [RUNS]      # RUNS filo processes per case (default 11)
#
# The reference is the Playfilo storage module `playfilo-db.ts` published by Wuji Labs (the
# playtiss-backed variant, MIT). It is not part of this repository and is not downloaded here
# (this machine reaches only the package registries): put your copy at $PLAYFILO_DB_TS
# (default $REF_CACHE/playfilo-db.ts); the script prints its sha256 with the results. Its one
# import that is not on npm, `@playtiss/core`, is replaced by playtiss-core-stub.mjs, whose
# functions throw if called (none of the functions used here reaches them).
#
# Everything else goes to $REF_CACHE (default ~/.cache/filo/bench-vs-reference), outside the
# repository: better-sqlite3 and esbuild from npm, the bundled module, and the data sets, which
# the reference writes itself with its own functions (ref.mjs; written once, delete
# $REF_CACHE/data to rewrite them):
#   lineage-100000  a 100,000-node pi-like chain (user / assistant with a tool call / tool result /
#                   assistant), PI_HEAD on its deepest node, 1,000 actions (half on the lineage)
#   lineage-30000   the same at 30,000 nodes: the reference's trace binds one SQL variable per
#                   ancestor and fails past SQLite's limit (32,766), so trace is compared here too
#   children-1000   a parent with 1,000 children of 3 descendants each; PI_HEAD = the 501st child
#
# Per case: the reference's call in process (REF_RUNS calls, default 3: first, min, median),
# the reference as a whole process once (node start, module load, one call), and RUNS whole
# `filo dag …` processes (wall min / median, peak RSS via ../bench-vs-pi/measure.py). The
# outputs must be byte-identical (cmp), else the script stops. Clock and zone are fixed for both
# (REF_NOW / --now, TZ=UTC). Raw figures: $REF_CACHE/results.tsv; a markdown table on stdout.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
RUNS=${1:-11}
REF_RUNS=${REF_RUNS:-3}
REF_CACHE=${REF_CACHE:-$HOME/.cache/filo/bench-vs-reference}
PLAYFILO_DB_TS=${PLAYFILO_DB_TS:-$REF_CACHE/playfilo-db.ts}
FILO=$(realpath "${FILO:-$ROOT/target/release/filo}")
MEASURE="$ROOT/scripts/bench-vs-pi/measure.py"
# After every write of every data set (node i is written at 2026-01-01 + i s).
NOW=${REF_NOW:-1767426000000}
CASES=${CASES-"life-head life-no-children life-children recall-head trace-30k trace-100k entries-100k"}

if [ ! -f "$PLAYFILO_DB_TS" ]; then
    echo "bench-vs-reference: the reference module is not at $PLAYFILO_DB_TS" >&2
    echo "  (set PLAYFILO_DB_TS to your copy of Wuji Labs' playfilo-db.ts)" >&2
    exit 2
fi
[ -x "$FILO" ] || { echo "bench-vs-reference: no filo binary at $FILO (cargo build --release -p filo-cli, or set FILO)" >&2; exit 2; }

NODE_DIR="$REF_CACHE/node"
mkdir -p "$NODE_DIR"
if [ ! -d "$NODE_DIR/node_modules/better-sqlite3" ] || [ ! -x "$NODE_DIR/node_modules/.bin/esbuild" ]; then
    echo "== installing better-sqlite3 and esbuild into $NODE_DIR" >&2
    npm install --no-audit --no-fund --prefix "$NODE_DIR" better-sqlite3@12.4.1 esbuild@0.25.10 >&2
fi
BUNDLE="$NODE_DIR/playfilo-db.cjs"
if [ ! -f "$BUNDLE" ] || [ "$PLAYFILO_DB_TS" -nt "$BUNDLE" ] || [ "$HERE/playtiss-core-stub.mjs" -nt "$BUNDLE" ]; then
    "$NODE_DIR/node_modules/.bin/esbuild" "$PLAYFILO_DB_TS" --bundle --platform=node --format=cjs \
        --external:better-sqlite3 --alias:@playtiss/core="$HERE/playtiss-core-stub.mjs" \
        --outfile="$BUNDLE" --log-level=warning
fi

# dataset NAME KIND A B: the reference writes NAME once; prints its write figures.
dataset() {
    local name=$1 home="$REF_CACHE/data/$1"
    if [ ! -f "$home/write.json" ]; then
        echo "== the reference writes $name" >&2
        rm -rf "$home" && mkdir -p "$home"
        HOME="$home" REF_BUNDLE="$BUNDLE" node "$HERE/ref.mjs" write "$2" "$3" "$4" >"$home/write.json.tmp"
        mv "$home/write.json.tmp" "$home/write.json"
    fi
}
dataset lineage-100000 lineage 100000 1000
dataset lineage-30000 lineage 30000 1000
dataset children-1000 children 1000 3

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
RESULTS="$REF_CACHE/results.tsv"
printf 'case\tside\trun\twall_s\tmax_rss_kb\tuser_s\tsys_s\n' >"$RESULTS"
export TZ=UTC

# case LABEL DATASET REF_OP REF_ARGS FILO_ARGS...
case_() {
    local label=$1 name=$2 op=$3 args=$4; shift 4
    local home="$REF_CACHE/data/$name" db="$REF_CACHE/data/$name/.playfilo/playfilo.db"
    local inproc whole filo_walls=() filo_rss=() r
    inproc=$(HOME="$home" REF_BUNDLE="$BUNDLE" REF_NOW="$NOW" node "$HERE/ref.mjs" time "$op" "$REF_RUNS" "$WORK/ref.out" "$args")
    python3 "$MEASURE" "$WORK/t" PATH="$PATH" HOME="$home" TZ=UTC REF_BUNDLE="$BUNDLE" REF_NOW="$NOW" \
        node "$HERE/ref.mjs" once "$op" "$WORK/ref-once.out" "$args" >/dev/null
    whole=$(cat "$WORK/t")
    printf '%s\treference\t1\t%s\n' "$label" "$(tr ' ' '\t' <"$WORK/t")" >>"$RESULTS"
    "$FILO" dag --db "$db" --now "$NOW" "$@" >"$WORK/filo.out"
    local same=identical
    if grep -q '^THROWS: ' "$WORK/ref.out"; then
        same="reference throws: $(sed -n 's/^THROWS: //p' "$WORK/ref.out" | head -c 60)"
    elif [ "$op" = entries ] && ! cmp -s "$WORK/ref.out" "$WORK/filo.out"; then
        # Entries are JSON: the same values line by line; member order may differ.
        python3 "$HERE/same_entries.py" "$WORK/ref.out" "$WORK/filo.out" || exit 1
        same="same entries (as JSON values; member order differs)"
    elif ! cmp -s "$WORK/ref.out" "$WORK/filo.out"; then
        echo "bench-vs-reference: $label: filo's output differs from the reference's:" >&2
        diff "$WORK/ref.out" "$WORK/filo.out" | head -20 >&2
        exit 1
    fi
    for r in $(seq "$RUNS"); do
        python3 "$MEASURE" "$WORK/t" PATH="$PATH" HOME="$home" TZ=UTC \
            "$FILO" dag --db "$db" --now "$NOW" "$@" >/dev/null
        printf '%s\tfilo\t%s\t%s\n' "$label" "$r" "$(tr ' ' '\t' <"$WORK/t")" >>"$RESULTS"
    done
    python3 - "$label" "$inproc" "$whole" "$same" "$RESULTS" <<'EOF'
import json, statistics, sys
label, inproc, whole, same, results = sys.argv[1:]
ref = json.loads(inproc)
wall, rss = whole.split()[:2]
rows = [l.split("\t") for l in open(results).read().splitlines()[1:]]
filo = [r for r in rows if r[0] == label and r[1] == "filo"]
walls = sorted(float(r[3]) * 1000 for r in filo)
rsss = [int(r[4]) / 1024 for r in filo]
ms = lambda v: f"{v:.1f}" if v < 100 else f"{v:.0f}"
print(f"| {label} | {ms(ref['first_ms'])} / {ms(ref['min_ms'])} / {ms(ref['median_ms'])} ms "
      f"| {ms(float(wall) * 1000)} ms · {int(rss) / 1024:.0f} MiB "
      f"| {ms(walls[0])} / {ms(statistics.median(walls))} ms · {max(rsss):.1f} MiB "
      f"| {ref['min_ms'] / walls[0]:.2f}× | {same} |")
EOF
}

# agree DATASET REF_OP REF_ARGS FILO_ARGS...: one more read, outputs compared, not timed.
AGREED=0
agree() {
    local name=$1 op=$2 args=$3; shift 3
    local home="$REF_CACHE/data/$name" db="$REF_CACHE/data/$name/.playfilo/playfilo.db"
    HOME="$home" REF_BUNDLE="$BUNDLE" REF_NOW="$NOW" node "$HERE/ref.mjs" once "$op" "$WORK/agree.ref" "$args" >/dev/null
    "$FILO" dag --db "$db" --now "$NOW" "$@" >"$WORK/agree.filo"
    if ! cmp -s "$WORK/agree.ref" "$WORK/agree.filo"; then
        echo "bench-vs-reference: $name $op $args: filo's output differs from the reference's:" >&2
        diff "$WORK/agree.ref" "$WORK/agree.filo" | head -20 >&2
        exit 1
    fi
    AGREED=$((AGREED + 1))
}
if [ "${AGREE:-1}" = 1 ]; then
    # Every filter mode, budgets past both ends, nodes named by pi:<id> and by bare external id.
    mid=$(node -e 'const c=require("crypto");process.stdout.write(c.createHash("sha256").update("node-15001").digest("hex").slice(0,8))')
    tc=$(node -e 'const c=require("crypto");process.stdout.write(c.createHash("sha256").update("node-15002").digest("hex").slice(0,8))')
    for name in lineage-30000 lineage-100000; do
        agree "$name" life '{"ancestors":10,"filter_mode":"all"}' life --ancestors 10 --filter-mode all
        agree "$name" life '{"ancestors":12,"filter_mode":"no-tools"}' life --ancestors 12 --filter-mode no-tools
        agree "$name" life '{"ancestors":9,"filter_mode":"user-only"}' life --ancestors 9 --filter-mode user-only
        agree "$name" life "{\"focus_hash\":\"pi:$mid\",\"ancestors\":6}" life --focus-hash "pi:$mid" --ancestors 6
        agree "$name" life "{\"focus_hash\":\"$tc\",\"max_depth\":2}" life --focus-hash "$tc" --max-depth 2
        agree "$name" recall '{"budget":20000,"context_budget":50}' recall HEAD --budget 20000 --context-budget 50
        agree "$name" recall '{"budget":300,"context_budget":900,"filter_mode":"user-only"}' recall HEAD --budget 300 --context-budget 900 --filter-mode user-only
        agree "$name" recall "{\"hash\":\"pi:$mid\",\"filter_mode\":\"no-tools\"}" recall "pi:$mid" --filter-mode no-tools
    done
    agree lineage-30000 trace '{"limit":1000,"filter_mode":"all"}' trace --limit 1000 --filter-mode all
    agree lineage-30000 trace '{"limit":200,"filter_mode":"switches"}' trace --limit 200 --filter-mode switches
    agree children-1000 life '{"filter_mode":"all","ancestors":1}' life --filter-mode all --ancestors 1
    agree children-1000 life '{"children":false}' life --children false
fi

echo "reference module: $(sha256sum "$PLAYFILO_DB_TS" | cut -c1-16)…  filo: $FILO  load: $(cut -d' ' -f1-3 /proc/loadavg)"
for name in lineage-100000 lineage-30000 children-1000; do
    echo "written by the reference: $name $(cat "$REF_CACHE/data/$name/write.json")"
done
# The reference's write rate now, on this machine: a fresh 2,000-node lineage, statement by
# statement as the pi shim writes (blobs, node, PI_HEAD after every node).
mkdir -p "$WORK/write-home"
[ "$AGREED" -gt 0 ] && echo "further reads compared (not timed): $AGREED, every output byte-identical"
echo "reference writing a fresh 2,000-node lineage now: $(HOME="$WORK/write-home" REF_BUNDLE="$BUNDLE" node "$HERE/ref.mjs" write lineage 2000 0)"
echo
echo "| case | reference in process: first / min / median | reference whole process | filo whole process: min / median · peak RSS | reference in-process min ÷ filo whole-process min | outputs |"
echo "|---|---:|---:|---:|---:|---|"
for c in $CASES; do
    case $c in
        life-head) case_ "$c" lineage-100000 life '{}' life ;;
        life-no-children) case_ "$c" lineage-100000 life '{"children":false}' life --children false ;;
        life-children) case_ "$c" children-1000 life '{}' life ;;
        recall-head) case_ "$c" lineage-100000 recall '{}' recall HEAD ;;
        trace-30k) case_ "$c" lineage-30000 trace '{}' trace ;;
        trace-100k) case_ "$c" lineage-100000 trace '{}' trace ;;
        entries-100k) case_ "$c" lineage-100000 entries '{}' entries ;;
        *) echo "unknown case $c" >&2; exit 2 ;;
    esac
done
